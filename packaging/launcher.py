"""Entry script of the frozen app: both ``imprint`` and ``imprint-gui`` run the command line.

Without a command it opens the window, so the windowed launcher (no console on Windows) needs no
code of its own.
"""

import sys

from imprint_desktop.cli import main

if __name__ == "__main__":
    sys.exit(main())
