"""Entry script of the frozen app: both ``imprint`` and ``imprint-gui`` run the command line.

Without a command it opens the window, so the windowed launcher (no console on Windows) needs no
code of its own.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    # The PDF reader runs in a worker process started with "spawn": in the frozen app that
    # process starts this same program, which must become the worker, not a second Imprint.
    multiprocessing.freeze_support()
    from imprint_desktop.cli import main

    sys.exit(main())
