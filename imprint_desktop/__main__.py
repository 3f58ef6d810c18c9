"""``python -m imprint_desktop``: the same entry point as the ``imprint`` command."""

import sys

from imprint_desktop.cli import main

sys.exit(main())
