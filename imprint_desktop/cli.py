"""The ``imprint`` command line.

Run bare, it opens the window. Subcommands (DESIGN §4) drive the same engine without one; each lives
in :mod:`imprint_desktop.commands` and registers its own parser. Qt is imported only when the window
is asked for, so the subcommands start fast and run where there is no display.

Exit codes: 0 success, 1 error, 2 bad usage or bad settings, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from imprint_desktop import __version__
from imprint_desktop.commands import ask as ask_command
from imprint_desktop.commands import desktop as desktop_command
from imprint_desktop.commands import models as models_command
from imprint_desktop.commands import settings as settings_command
from imprint_desktop.commands import workspace as workspace_command

EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imprint",
        description="Imprint Desktop: a research assistant for your own documents. "
        "Run without a command to open the window.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (twice for debug detail)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    gui = subparsers.add_parser("gui", help="open the window (the default)")
    gui.add_argument("--config", type=Path, help="settings file to use instead of the default")
    gui.add_argument(
        "--quit-after", type=float, metavar="SECONDS", help="close the window after SECONDS"
    )
    gui.add_argument(
        "--screenshot", type=Path, metavar="PNG", help="save a picture of the window when it closes"
    )
    gui.set_defaults(handler=_run_gui)

    ask_command.add_parser(subparsers)
    settings_command.add_parser(subparsers)
    workspace_command.add_parser(subparsers)
    models_command.add_parser(subparsers)
    desktop_command.add_parser(subparsers)
    return parser


def _run_gui(args: argparse.Namespace) -> int:
    from imprint_desktop import app  # noqa: PLC0415 - Qt only when a window is wanted

    return app.run(
        config=getattr(args, "config", None),
        quit_after=getattr(args, "quit_after", None),
        screenshot=getattr(args, "screenshot", None),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
    )
    # Problems worth a person's attention are printed by the commands themselves.
    if args.verbose == 0:
        logging.getLogger("imprint_desktop").setLevel(logging.ERROR)
    handler = getattr(args, "handler", _run_gui)
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        print("imprint: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`imprint settings list | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
