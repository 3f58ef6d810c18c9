"""installer.nsi run for real under Wine: per-user install, upgrade, uninstall, per-machine.

The script is compiled by makensis for amd64 (Debian's wine64 runs 64-bit Windows programs
without any 32-bit library) against packaging/build.py's staged Windows layout, and run silently
the way a person's command or a deployment tool runs it, in a private Wine prefix on Xvfb. What
Wine cannot show (the frozen app itself, file permissions, an elevation prompt, the installer's
pages) is listed in packaging/README.md.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from types import ModuleType

import pytest

from imprint_desktop import __version__
from tests.support.display import xvfb

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_WINE64 = "/usr/lib/wine/wine64"  # Debian and Ubuntu keep it off PATH
DEBIAN_WINESERVER = "/usr/lib/wine/wineserver64"
WINE64 = shutil.which("wine64") or (DEBIAN_WINE64 if Path(DEBIAN_WINE64).exists() else None)
WINESERVER = shutil.which("wineserver") or (
    DEBIAN_WINESERVER if Path(DEBIAN_WINESERVER).exists() else None
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        WINE64 is None or WINESERVER is None,
        reason="wine64 is not installed (scripts/system-deps.sh test installs it on Debian/Ubuntu)",
    ),
]

OLD_VERSION = "0.0.1"
UNINSTALL_KEY = r"Software\Microsoft\Windows\CurrentVersion\Uninstall\imprint-desktop"
# Names NSIS could misread in the uninstall list: "$" starts a variable or a define.
ODD_FILES = (
    "_internal/resources/odd/$INSTDIR and ${APP_NAME} cost $$5.txt",
    "_internal/resources/odd/Übersicht – 概要.md",
)
SETTINGS = r"AppData\Roaming\imprint-desktop\config.toml"
DATA = r"AppData\Local\imprint-desktop\history.sqlite3"


# --- building the installers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("imprint_build", ROOT / "packaging" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Installer:
    """An installer and the files it installs (paths relative to the install folder)."""

    exe: Path
    version: str
    files: dict[str, bytes]
    size_kb: int  # EstimatedSize: the files' sizes, each rounded up to whole KB


def _make_installer(
    build: ModuleType, folder: Path, version: str, extra: dict[str, bytes]
) -> Installer:
    staged = build.stage_windows_layout(folder / "imprint", None)
    for name, content in extra.items():
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_bytes(content)
    for path in staged.rglob("*.dll"):  # each version's own bytes
        path.write_bytes(f"MZ {path.name} of Imprint {version}".encode())
    listing = build.write_uninstall_list(staged, folder / "uninstall-files.nsh")
    exe = build.compile_installer(
        staged, folder / f"ImprintSetup-{version}.exe", listing, version, target="amd64-unicode"
    )
    files = {
        path.relative_to(staged).as_posix(): path.read_bytes()
        for path in staged.rglob("*")
        if path.is_file()
    }
    size_kb = sum(math.ceil(len(content) / 1024) for content in files.values())
    return Installer(exe, version, files, size_kb)


@pytest.fixture(scope="module")
def installers(
    build: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Installer, Installer]:
    """(an older version with a file the new one no longer has, this version with odd names)."""
    folder = tmp_path_factory.mktemp("installers")
    old = _make_installer(
        build, folder / "old", OLD_VERSION, {"_internal/retired-in-0.0.2.dll": b"MZ old"}
    )
    new = _make_installer(
        build, folder / "new", __version__, {name: name.encode() for name in ODD_FILES}
    )
    return old, new


# --- Wine --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with xvfb(1024, 768) as name:
        yield name


@dataclass
class Wine:
    """A private Wine prefix (its own C: drive and registry) and the environment to run in it."""

    prefix: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 60) -> int:
        """Run a Windows program to its end; its exit code."""
        assert WINE64 is not None
        done = subprocess.run(
            [WINE64, *args], env=self.env, capture_output=True, timeout=timeout, check=False
        )
        return done.returncode

    def install(self, installer: Installer, *options: str, folder: str | None = None) -> int:
        """Run ``installer`` silently; its exit code. NSIS takes ``/D=`` last and unquoted, and
        Wine quotes an argument holding a space, so the folder goes over in words."""
        words = f"/D={folder}".split(" ") if folder is not None else []
        return self.run(str(installer.exe), "/S", *options, *words)

    def settle(self) -> None:
        """Wait until every program of the prefix has ended and the registry is written out."""
        assert WINESERVER is not None
        subprocess.run([WINESERVER, "-w"], env=self.env, timeout=60, check=True)

    def path(self, windows: str) -> Path:
        """The Linux path of ``C:\\...``."""
        drive, *parts = PureWindowsPath(windows).parts
        assert drive.upper() == "C:\\", windows
        return self.prefix.joinpath("drive_c", *parts)

    @property
    def profile(self) -> str:
        """The Windows path of the person's profile folder (C:\\users\\<name>)."""
        (name,) = [
            p.name for p in (self.prefix / "drive_c" / "users").iterdir() if p.name != "Public"
        ]
        return f"C:\\users\\{name}"

    def registry(self, machine: bool) -> dict[str, str | int] | None:
        """The Add/Remove Programs entry (HKLM when ``machine``, else HKCU), or None."""
        return read_key(self.prefix / ("system.reg" if machine else "user.reg"), UNINSTALL_KEY)


def read_key(hive: Path, key: str) -> dict[str, str | int] | None:
    """The values of ``key`` in a Wine registry file (strings and DWORDs), or None without it."""
    header = "[" + key.replace("\\", "\\\\").lower() + "]"
    values: dict[str, str | int] | None = None
    for line in hive.read_text("utf-8", errors="replace").splitlines():
        if line.startswith("["):
            if values is not None:
                break
            if line.lower().split("] ")[0] + "]" == header or line.lower() == header:
                values = {}
            continue
        if values is None:
            continue
        match = re.match(r'^"((?:[^"\\]|\\.)*)"=(.*)$', line)
        if match is None:
            continue
        name, raw = match.group(1), match.group(2)
        if raw.startswith("dword:"):
            values[name] = int(raw[6:], 16)
        elif raw.startswith('"'):
            values[name] = re.sub(r"\\(.)", r"\1", raw[1:-1])
    return values


@pytest.fixture(scope="module")
def booted_prefix(display: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wine]:
    """A Wine prefix made once (wineboot, about 15 s); each test gets its own copy of it. Its
    700 MB are removed afterwards."""
    root = tmp_path_factory.mktemp("wine")
    home = root / "home"
    (home / "Desktop").mkdir(parents=True)  # Wine links the Windows desktop to $HOME/Desktop
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "WINEPREFIX": str(root / "prefix"),
        "WINEARCH": "win64",
        "WINEDEBUG": "-all",
        # No .NET or HTML engine to offer, no Linux menu entries for the shortcuts.
        "WINEDLLOVERRIDES": "mscoree,mshtml=;winemenubuilder.exe=d",
        "DISPLAY": display,
    }
    wine = Wine(root / "prefix", env)
    assert wine.run("wineboot", "--init", timeout=110) == 0
    wine.settle()
    yield wine
    shutil.rmtree(wine.prefix)


@pytest.fixture
def wine(booted_prefix: Wine, tmp_path: Path) -> Iterator[Wine]:
    """A copy of the booted prefix: Wine's own large files shared (linked), the rest copied.
    Afterwards only C:\\windows goes: what a test installed stays to look at."""

    def copy(source: str, target: str) -> None:
        if source.endswith((".dll", ".exe", ".drv", ".sys", ".ocx", ".cpl", ".acm", ".tlb")):
            os.link(source, target)  # Wine's programs and libraries: read, never written
        else:
            shutil.copy2(source, target)

    prefix = tmp_path / "prefix"
    shutil.copytree(booted_prefix.prefix, prefix, symlinks=True, copy_function=copy)
    wine = Wine(prefix, {**booted_prefix.env, "WINEPREFIX": str(prefix)})
    yield wine
    wine.settle()
    shutil.rmtree(prefix / "drive_c" / "windows")


# --- what is installed -------------------------------------------------------------------------


def installed_files(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


def per_user_folder(wine: Wine) -> str:
    return wine.profile + r"\AppData\Local\Programs\Imprint"


def start_menu(wine: Wine, machine: bool) -> Path:
    base = r"C:\ProgramData" if machine else wine.profile + r"\AppData\Roaming"
    return wine.path(base + r"\Microsoft\Windows\Start Menu\Programs\Imprint.lnk")


def points_at_the_app(shortcut: Path) -> bool:
    """A Windows shortcut (.lnk) whose target is Imprint's window launcher."""
    data = shortcut.read_bytes()
    target = "imprint-gui.exe"
    return data[:4] == b"L\x00\x00\x00" and (
        target.encode() in data or target.encode("utf-16-le") in data
    )


def uninstall_silently(wine: Wine, entry: dict[str, str | int], *options: str) -> int:
    """Run the entry's QuietUninstallString as Windows would, and wait for the copy it starts."""
    command = str(entry["QuietUninstallString"])
    match = re.match(r'^"([^"]+)"(.*)$', command)
    assert match is not None, command
    code = wine.run(match.group(1), *match.group(2).split(), *options)
    wine.settle()
    return code


def person_data(wine: Wine) -> dict[Path, bytes]:
    """The person's settings and data, written as Imprint would; returns them to compare."""
    files = {
        wine.path(f"{wine.profile}\\{SETTINGS}"): b"[chat]\nresearch_timeout_sec = 60\n",
        wine.path(f"{wine.profile}\\{DATA}"): b"SQLite format 3\x00 conversations",
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return files


# --- the tests ---------------------------------------------------------------------------------


def test_a_silent_per_user_install_puts_everything_in_place(
    wine: Wine, installers: tuple[Installer, Installer]
) -> None:
    _, new = installers
    assert wine.install(new) == 0
    wine.settle()

    folder = wine.path(per_user_folder(wine))
    files = installed_files(folder)
    uninstaller = files.pop("Uninstall.exe")
    assert files == new.files  # every staged file, byte for byte, and nothing else
    assert uninstaller[:2] == b"MZ"
    assert points_at_the_app(start_menu(wine, machine=False))
    assert points_at_the_app(wine.path(f"{wine.profile}\\Desktop\\Imprint.lnk"))
    entry = wine.registry(machine=False)
    assert entry is not None
    assert entry["DisplayName"] == "Imprint"
    assert entry["DisplayVersion"] == __version__
    assert entry["Publisher"] == "Imprint Desktop developers"
    assert entry["InstallLocation"] == per_user_folder(wine)
    assert entry["UninstallString"] == f'"{per_user_folder(wine)}\\Uninstall.exe" /CURRENTUSER'
    assert entry["QuietUninstallString"] == f"{entry['UninstallString']} /S"
    assert entry["EstimatedSize"] == new.size_kb
    assert wine.registry(machine=True) is None


def test_an_upgrade_keeps_the_persons_data_and_leaves_no_old_file(
    wine: Wine, installers: tuple[Installer, Installer]
) -> None:
    old, new = installers
    assert wine.install(old) == 0
    folder = wine.path(per_user_folder(wine))
    assert installed_files(folder).keys() == {*old.files, "Uninstall.exe"}
    data = person_data(wine)
    before = {path: path.stat().st_mtime_ns for path in data}

    assert wine.install(new) == 0
    wine.settle()

    files = installed_files(folder)
    files.pop("Uninstall.exe")
    assert files == new.files  # the retired file is gone, every other one is the new version's
    assert {path: path.read_bytes() for path in data} == data
    assert {path: path.stat().st_mtime_ns for path in data} == before
    entry = wine.registry(machine=False)
    assert entry is not None and entry["DisplayVersion"] == __version__
    assert start_menu(wine, machine=False).is_file()


@pytest.mark.parametrize("remove_data", [False, True], ids=["keeping-data", "removing-data"])
def test_a_silent_uninstall_removes_exactly_what_was_installed(
    wine: Wine, installers: tuple[Installer, Installer], remove_data: bool
) -> None:
    _, new = installers
    assert wine.install(new) == 0
    wine.settle()
    folder = wine.path(per_user_folder(wine))
    mine = {"my notes.txt": b"mine", "_internal/resources/my-prompt.md": b"also mine"}
    for name, content in mine.items():
        (folder / name).write_bytes(content)
    data = person_data(wine)
    entry = wine.registry(machine=False)
    assert entry is not None

    options = ["/REMOVEDATA"] if remove_data else []
    assert uninstall_silently(wine, entry, *options) == 0

    assert installed_files(folder) == mine  # the person's files stay, and only they
    remaining = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_dir()}
    assert remaining == {"_internal", "_internal/resources"}  # only the folders holding them
    assert wine.registry(machine=False) is None
    assert not start_menu(wine, machine=False).exists()
    assert not wine.path(f"{wine.profile}\\Desktop\\Imprint.lnk").exists()
    for path, content in data.items():
        if remove_data:
            assert not path.parent.exists()
        else:
            assert path.read_bytes() == content


def test_a_per_machine_install_goes_to_program_files_and_uninstalls_cleanly(
    wine: Wine, installers: tuple[Installer, Installer]
) -> None:
    _, new = installers
    assert wine.install(new, "/ALLUSERS") == 0
    wine.settle()

    folder = wine.path(r"C:\Program Files\Imprint")
    files = installed_files(folder)
    assert files.pop("Uninstall.exe")[:2] == b"MZ"
    assert files == new.files
    entry = wine.registry(machine=True)
    assert entry is not None
    assert entry["InstallLocation"] == r"C:\Program Files\Imprint"
    assert entry["UninstallString"] == r'"C:\Program Files\Imprint\Uninstall.exe" /ALLUSERS'
    assert wine.registry(machine=False) is None
    assert points_at_the_app(start_menu(wine, machine=True))
    assert points_at_the_app(wine.path(r"C:\users\Public\Desktop\Imprint.lnk"))

    assert uninstall_silently(wine, entry) == 0

    assert not folder.exists()
    assert wine.registry(machine=True) is None
    assert not start_menu(wine, machine=True).exists()
    assert not wine.path(r"C:\users\Public\Desktop\Imprint.lnk").exists()


def test_a_per_machine_install_outside_program_files_is_refused(
    wine: Wine, installers: tuple[Installer, Installer]
) -> None:
    """Elsewhere standard users could change the files, Uninstall.exe among them, which the
    elevated installer of the next version runs."""
    _, new = installers
    for folder in (
        r"C:\Imprint",
        r"C:\Program Files\..\Imprint",
        r"C:\Program Files Other\Imprint",
    ):
        assert wine.install(new, "/ALLUSERS", folder=folder) == 4, folder
    wine.settle()
    assert not wine.path(r"C:\Imprint").exists()
    assert not wine.path(r"C:\Program Files Other").exists()
    assert not wine.path(r"C:\Program Files\Imprint").exists()
    assert wine.registry(machine=True) is None
    assert not start_menu(wine, machine=True).exists()


def test_a_per_user_install_may_go_to_a_folder_of_the_persons_choice(
    wine: Wine, installers: tuple[Installer, Installer]
) -> None:
    _, new = installers
    assert wine.install(new, folder=r"C:\My Tools\Imprint") == 0
    wine.settle()
    files = installed_files(wine.path(r"C:\My Tools\Imprint"))
    files.pop("Uninstall.exe")
    assert files == new.files
    entry = wine.registry(machine=False)
    assert entry is not None and entry["InstallLocation"] == r"C:\My Tools\Imprint"
