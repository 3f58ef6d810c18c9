"""The ``imprint`` command line.

Run bare, it opens the window. Subcommands (DESIGN §4) drive the same engine without one; each lives
in :mod:`imprint_desktop.commands`, one module per command, and is imported only when it runs (or
its own ``--help`` is asked for): people script ``imprint settings get`` and ``imprint workspace
search`` in loops, so a call must not pay for the research engine, the model hub or Qt that other
commands need. :data:`COMMANDS` lists them with their one-line summaries, which is all ``imprint
--help`` shows. ``tests/e2e/test_cli_imports.py`` pins what each command may import.

Exit codes: 0 success, 1 error, 2 bad usage or bad settings, 130 interrupted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Literal, NamedTuple, NoReturn

from imprint_desktop import __version__

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Command(NamedTuple):
    """A subcommand: its name, the line ``imprint --help`` shows, and the module that owns it.

    The module has ``configure(parser)``, which adds its arguments and a ``handler``, and may have
    ``ended_early(argv, code, message)``, told when the command ends before its handler runs
    (its arguments do not parse: code 2; Ctrl+C while it loads: 130).
    """

    name: str
    summary: str
    module: str


COMMANDS = (
    Command(
        "ask",
        "research a question in a folder of documents and answer it",
        "imprint_desktop.commands.ask",
    ),
    Command("settings", "list, get, set or reset settings", "imprint_desktop.commands.settings"),
    Command(
        "workspace",
        "index a folder of documents and search it",
        "imprint_desktop.commands.workspace",
    ),
    Command("models", "find, download and manage GGUF models", "imprint_desktop.commands.models"),
    Command(
        "desktop-integration",
        "add Imprint to (or remove it from) the desktop's application menu",
        "imprint_desktop.commands.desktop",
    ),
)


class _Parser(argparse.ArgumentParser):
    """argparse, remembering the message of a usage error for the command that failed to parse."""

    last_error = ""

    def error(self, message: str) -> NoReturn:
        _Parser.last_error = message
        super().error(message)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``imprint``; only the command named in ``argv`` gets its full arguments."""
    parser = _Parser(
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
    # Paths stay text until the window opens: pathlib is not loaded for ``imprint --help``.
    gui.add_argument("--config", help="settings file to use instead of the default")
    gui.add_argument(
        "--quit-after", type=float, metavar="SECONDS", help="close the window after SECONDS"
    )
    gui.add_argument(
        "--screenshot", metavar="PNG", help="save a picture of the window when it closes"
    )
    gui.set_defaults(handler=_run_gui)

    named = command_named(argv)
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.summary)
        if command is named:
            importlib.import_module(command.module).configure(sub)
    return parser


def command_named(argv: Sequence[str]) -> Command | None:
    """The command ``argv`` runs: its first word that is not an option (``imprint`` itself takes
    no option with a value)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return next((command for command in COMMANDS if command.name == first), None)


def _run_gui(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415 - see build_parser

    from imprint_desktop import app  # noqa: PLC0415 - Qt only when a window is wanted

    config, screenshot = getattr(args, "config", None), getattr(args, "screenshot", None)
    return app.run(
        config=Path(config) if config else None,
        quit_after=getattr(args, "quit_after", None),
        screenshot=Path(screenshot) if screenshot else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``imprint`` with ``argv``. Without, it runs the command line's as the process itself
    (the console script, ``python -m imprint_desktop``, the frozen launcher), which ends when
    this returns: then it also sets up the process for a short life (:func:`_one_blas_thread`,
    :func:`_collector`), which a caller's process is spared."""
    whole_process = argv is None
    words = list(sys.argv[1:] if argv is None else argv)
    if whole_process:
        _one_blas_thread()
        _collector("loading")
    try:
        parser = build_parser(words)
        try:
            args = parser.parse_args(words)
        except SystemExit as stop:
            if stop.code == EXIT_USAGE:
                _ended_early(words, EXIT_USAGE, _Parser.last_error)
            raise
    except KeyboardInterrupt:  # while the command was being loaded
        print("imprint: interrupted", file=sys.stderr)
        _ended_early(words, EXIT_INTERRUPTED, "interrupted before the command began")
        return EXIT_INTERRUPTED
    if whole_process:
        _collector("loaded")
    import logging  # noqa: PLC0415 - not for ``imprint --help``

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
    finally:
        if whole_process and handler is not _run_gui:
            _collector("ending")


def _one_blas_thread() -> None:
    """Have numpy's BLAS (OpenBLAS) start with one thread, unless the person chose a number.

    OpenBLAS starts a thread per core as numpy is imported, and they spin for a while before
    they sleep: on a busy computer that took 50 to 170 ms of ``imprint workspace search``'s
    start (issue 28). Nothing Imprint does gains from them: passages are scored with ``einsum``,
    which does not use BLAS, and the sentence encoder, the one user of BLAS, limits it to one
    thread while it runs anyway. It must be said before numpy is first imported, which is when
    OpenBLAS reads it."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _collector(stage: Literal["loading", "loaded", "ending"]) -> None:
    """Spare a short-lived process the cycle collector's sweeps of what it loaded (issue 28).

    The imports of a command make tens of thousands of objects that live as long as the process
    (38,000 that the collector tracks in ``imprint workspace search``), and the collector,
    started by the count of new objects, sweeps them again and again while they are made (56
    times, 10 ms); as the interpreter shuts down it sweeps every object several times more (40
    to 60 ms). So the collector is off while the command is ``loading``; once it is ``loaded``,
    what was loaded is frozen (never swept again) and the collector is on for the command's own
    work; when the command is ``ending``, everything is frozen, and the shutdown sweeps nothing.
    Exit handlers still run, and what must reach the disk did when its owner committed or
    closed it. The window's process is left to end as it always has."""
    if stage == "loading":
        gc.disable()
        return
    gc.freeze()
    if stage == "loaded":
        gc.enable()


def _ended_early(words: Sequence[str], code: int, message: str) -> None:
    """Tell the command's module, if it is loaded and wants to know, that it ended before it
    ran (``imprint ask --json`` prints its one object even then)."""
    named = command_named(words)
    module = sys.modules.get(named.module) if named is not None else None
    told = getattr(module, "ended_early", None)
    if told is not None:
        told(words, code, message)
