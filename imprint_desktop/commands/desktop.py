"""``imprint desktop-integration``: add Imprint to the application menu of a Linux desktop.

``install`` copies the desktop entry and the hicolor icons into the person's own data folder
(``$XDG_DATA_HOME``, by default ``~/.local/share``); no administrator rights are needed.
``uninstall`` removes exactly those files and nothing else. The entry's ``Exec`` line points at the
launcher this command runs from: ``imprint-gui`` beside the frozen ``imprint``, the ``imprint-gui``
script of the environment, or else this Python with ``-m imprint_desktop``.

Exit codes: 0 done, 1 a file could not be written or removed, 2 not available on this platform.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from imprint_desktop import APP_ID
from imprint_desktop.core import resources

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_UNSUPPORTED = 2

ICON_SIZES = (48, 128, 256)
_TEMPLATE_EXEC = "Exec=imprint-gui"
_TEMPLATE_TRY_EXEC = "TryExec=imprint-gui"


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of this command (its one-line summary is in :mod:`imprint_desktop.cli`)."""
    parser.description = (
        "Install or remove the desktop entry and icons of Imprint for this user "
        "(Linux; follows $XDG_DATA_HOME)."
    )
    parser.add_argument("action", choices=("install", "uninstall"))
    parser.set_defaults(handler=run)


def data_home(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """``$XDG_DATA_HOME`` when set to an absolute path (as the spec asks), else ~/.local/share."""
    env = os.environ if environ is None else environ
    value = env.get("XDG_DATA_HOME", "")
    if value and Path(value).is_absolute():
        return Path(value)
    return Path.home() / ".local" / "share"


def installed_files(home: Path) -> list[Path]:
    """Every file ``install`` writes under ``home``, and so every file ``uninstall`` removes."""
    icons = [home / "icons" / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png" for n in ICON_SIZES]
    return [home / "applications" / f"{APP_ID}.desktop", *icons]


def launch_command() -> list[str]:
    """The program and arguments that open the window of this installation."""
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).with_name("imprint-gui"))]
    script = shutil.which("imprint-gui")
    if script:
        return [str(Path(script).resolve())]
    return [sys.executable, "-m", "imprint_desktop"]


def _quoted(argument: str) -> str:
    """One argument of a desktop entry's Exec key, quoted when it holds reserved characters."""
    if not any(c in argument for c in " \t\n\"'\\><~|&;$*?#()`"):
        return argument
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in argument)
    return f'"{escaped}"'


def desktop_entry(command: list[str]) -> str:
    """The shipped desktop entry with ``Exec``/``TryExec`` pointing at ``command``."""
    template = resources.resource("linux", f"{APP_ID}.desktop").read_text(encoding="utf-8")
    replacements = {
        _TEMPLATE_EXEC: "Exec=" + " ".join(_quoted(part) for part in command),
        _TEMPLATE_TRY_EXEC: f"TryExec={command[0]}",
    }
    return "\n".join(replacements.get(line, line) for line in template.splitlines()) + "\n"


def install(home: Path, command: list[str]) -> list[Path]:
    """Write the desktop entry and icons under ``home``; returns the files written."""
    entry, *icons = installed_files(home)
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(desktop_entry(command), encoding="utf-8")
    for size, target in zip(ICON_SIZES, icons, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(
            resources.resource("linux", "icons", f"{size}x{size}", f"{APP_ID}.png"), target
        )
    return [entry, *icons]


def uninstall(home: Path) -> list[Path]:
    """Remove what :func:`install` wrote (only those files); returns the files removed."""
    removed = []
    for path in installed_files(home):
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def run(args: argparse.Namespace) -> int:
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        print(
            "imprint: desktop integration is for Linux desktops; the Windows installer "
            "adds the shortcuts there",
            file=sys.stderr,
        )
        return EXIT_UNSUPPORTED
    home = data_home()
    try:
        if args.action == "install":
            paths = install(home, launch_command())
            verb = "installed"
        else:
            paths = uninstall(home)
            verb = "removed"
    except OSError as error:
        print(f"imprint: {error.strerror or error} ({error.filename})", file=sys.stderr)
        return EXIT_ERROR
    for path in paths:
        print(f"{verb} {path}")
    if not paths:
        print("nothing to remove: Imprint was not in the application menu")
    return EXIT_OK
