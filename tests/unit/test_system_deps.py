"""Every program the tests, scripts and packaging start comes from `scripts/system-deps.sh test`.

The README's test command installs the system packages first, so a program missing from that list
passes on a machine that happens to have it and fails on a new one. The programs are read from
the code, not kept by hand (tests/support/program_reader.py): every ``subprocess``/``os.exec*``/
``asyncio`` launch and every ``shutil.which`` in Python, and every command of the shell scripts,
CI and the Makefile. A program
the code starts must have its Debian package in :data:`PACKAGES` (else the guard fails: say which
package brings it), and that package must be in the `test` list or on every Debian system. A
launch whose program cannot be read from the code fails too.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.support.program_reader import Launch, Unreadable, python_launches, shell_launches

ROOT = Path(__file__).resolve().parents[2]
PYTHON_TREES = ("tests", "scripts", "packaging", "bench", ".ci", "imprint_desktop")
SHELL_FILES = ("scripts/*.sh", ".ci/run", "Makefile")

# The package of scripts/system-deps.sh's lists that puts each program on a Debian or Ubuntu
# machine (its own package, or the listed package that depends on it).
PACKAGES: dict[str, str] = {
    "Xvfb": "xvfb",
    "xauth": "xauth",
    "xdotool": "xdotool",
    "dbus-daemon": "dbus",  # its own package since Debian 12, which dbus depends on
    "dbus-run-session": "dbus",
    "dbus-launch": "dbus-x11",
    "gnome-keyring-daemon": "gnome-keyring",
    "desktop-file-validate": "desktop-file-utils",
    "makensis": "nsis",
    "wine64": "wine64",
    "wineserver": "wine64",
    "wineserver64": "wine64",
    "mount": "mount",
    "umount": "mount",
    "tesseract": "tesseract-ocr",
    "make": "build-essential",  # make is a dependency of build-essential
    "cmake": "cmake",
    "apt-get": "apt",
    "dpkg-query": "dpkg",
    "dpkg": "dpkg",
    "dpkg-deb": "dpkg",
    "ldd": "libc-bin",
    "bash": "bash",
    "sh": "dash",
    "grep": "grep",
    "sed": "sed",
    "find": "findutils",
    "tar": "tar",
    "cat": "coreutils",
    "cut": "coreutils",
    "date": "coreutils",
    "dirname": "coreutils",
    "id": "coreutils",
    "rm": "coreutils",
    "sha256sum": "coreutils",
}
# Programs the code asks for only when they are there, and works without (reviewed, with why).
OPTIONAL: dict[str, str] = {
    "nvidia-smi": "the model recommendations ask it about an NVIDIA GPU; without it there is none",
    "vulkaninfo": "asked for a GPU's free memory when nothing else tells; without it none is seen",
}
# On every Debian and Ubuntu system: Essential packages, and apt, which installs all the others.
BASE_SYSTEM = frozenset(
    {
        "apt",
        "bash",
        "coreutils",
        "dash",
        "dpkg",
        "findutils",
        "grep",
        "libc-bin",
        "sed",
        "tar",
        "util-linux",
    }
)

# --- the repository ----------------------------------------------------------------------------


def own_programs() -> set[str]:
    """The launchers the project installs into its environment (pyproject's scripts)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return set(project.get("scripts", {})) | set(project.get("gui-scripts", {}))


def python_files() -> Iterator[Path]:
    for tree in PYTHON_TREES:
        # Not this file: it looks up the programs it found, through a variable it cannot read.
        yield from sorted(p for p in (ROOT / tree).rglob("*.py") if p != Path(__file__).resolve())


@functools.cache
def repository_launches() -> tuple[list[Launch], list[Unreadable]]:
    launches: list[Launch] = []
    unreadable: list[Unreadable] = []
    for path in python_files():
        where = str(path.relative_to(ROOT))
        try:
            found, unknown = python_launches(path.read_text("utf-8"), where)
        except SyntaxError as error:
            unreadable.append(Unreadable(f"{where}:{error.lineno}", "does not parse"))
            continue
        launches += found
        unreadable += unknown
    for pattern in SHELL_FILES:
        for path in sorted(ROOT.glob(pattern)):
            launches += shell_launches(path.read_text("utf-8"), str(path.relative_to(ROOT)))
    skipped = own_programs() | set(OPTIONAL)
    return [launch for launch in launches if launch.program not in skipped], unreadable


def listed_packages(purpose: str = "test") -> set[str]:
    """What `scripts/system-deps.sh PURPOSE` installs, as the script itself lists it."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "system-deps.sh"), purpose, "--list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return set(result.stdout.split())


def problems(launches: Iterable[Launch], listed: set[str]) -> list[str]:
    """One sentence per program whose package is unknown or not installed by the list."""
    found = []
    for launch in launches:
        package = PACKAGES.get(launch.program)
        if package is None:
            found.append(
                f"{launch.program} ({launch.where}) has no known Debian package: add it to "
                "PACKAGES in tests/unit/test_system_deps.py and to scripts/system-deps.sh test"
            )
        elif package not in listed and package not in BASE_SYSTEM:
            found.append(
                f"{launch.program} ({launch.where}) comes from the Debian package {package}, "
                "which `scripts/system-deps.sh test` does not install: add it to the test list"
            )
    return sorted(set(found))


# --- the guard ---------------------------------------------------------------------------------


def test_every_program_the_code_starts_is_installed_by_the_test_list() -> None:
    launches, _ = repository_launches()
    found = problems(launches, listed_packages())
    assert not found, "\n".join(found)


def test_every_launch_names_a_program_the_guard_can_read() -> None:
    _, unreadable = repository_launches()
    assert not unreadable, (
        "the guard cannot tell which program these start: start it by its name (or sys.executable "
        "or a path the code builds), or through a variable given those:\n"
        + "\n".join(f"{u.where}: {u.code}" for u in unreadable)
    )


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="system-deps.sh installs on apt only")
def test_every_program_the_code_starts_is_on_this_machine() -> None:
    """Where the README's test command can install them, they are all here (on PATH, or where
    the code looks). A launch that may run one of several programs needs one of them."""
    launches, _ = repository_launches()
    sites: dict[str, list[Launch]] = {}
    for launch in launches:
        if not launch.probe:
            sites.setdefault(launch.where, []).append(launch)
    absent = sorted(
        {
            f"{uses[0].program} ({where}) is not installed: "
            + (
                f"scripts/system-deps.sh test installs it (package {PACKAGES[uses[0].program]})"
                if uses[0].program in PACKAGES
                else "no Debian package is known for it"
            )
            for where, uses in sites.items()
            if not any(
                shutil.which(use.program) or (use.path and Path(use.path).exists()) for use in uses
            )
        }
    )
    assert not absent, "\n".join(absent)


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg to ask")
def test_each_program_is_shipped_by_its_package_or_a_dependency_of_it() -> None:
    """PACKAGES is checked against dpkg's own records for the programs installed here."""
    launches, _ = repository_launches()
    located: dict[str, str] = {}
    for launch in launches:
        where = shutil.which(launch.program) or (
            launch.path if launch.path and Path(launch.path).exists() else None
        )
        if where is not None and launch.program in PACKAGES:
            located[launch.program] = str(Path(where).resolve())
    # dpkg records a merged-/usr program under either name.
    candidates = {path for p in located.values() for path in (p, re.sub(r"^/usr/", "/", p))}
    searched = subprocess.run(
        ["dpkg-query", "-S", *sorted(candidates)], capture_output=True, text=True, check=False
    ).stdout
    owners: dict[str, set[str]] = {}
    for line in searched.splitlines():
        packages, _, path = line.partition(": ")
        owners.setdefault(path, set()).update(p.split(":")[0] for p in packages.split(", "))
    listed = sorted({PACKAGES[program] for program in located})
    depends = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n", *listed],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    brought = {
        package: {package, *re.findall(r"(?:^|[,|]\s*)([a-z0-9][a-z0-9+.-]+)", rest.strip())}
        for package, _, rest in (line.partition("\t") for line in depends.splitlines())
    }
    wrong = []
    for program, path in sorted(located.items()):
        shipped = owners.get(path, set()) | owners.get(re.sub(r"^/usr/", "/", path), set())
        if shipped and not shipped & brought.get(PACKAGES[program], {PACKAGES[program]}):
            wrong.append(f"{program}: PACKAGES says {PACKAGES[program]}, dpkg {sorted(shipped)}")
    assert not wrong, "\n".join(wrong)


# --- the reading itself --------------------------------------------------------------------------


def test_the_reader_finds_programs_however_they_are_started() -> None:
    source = """
import os, shutil, subprocess, sys
from subprocess import Popen as Spawn
from pathlib import Path
WINE = shutil.which("wine64") or "/usr/lib/wine/wine64"
command = ["makensis", "-WX"]
subprocess.run(["desktop-file-validate", "imprint.desktop"], check=True)
Spawn(command)
subprocess.run([WINE, "setup.exe"])
subprocess.run([str(Path(WINE).with_name("wineserver64")), "-w"])
os.execvp("xdotool", ["xdotool"])
shutil.which("Xvfb")
subprocess.run("mount -t tmpfs", shell=True)
subprocess.run([sys.executable, "-m", "imprint_desktop"])
subprocess.run([str(Path("dist") / "imprint.exe")])
"""
    launches, unreadable = python_launches(source, "x.py")
    assert unreadable == []
    assert {(x.program, x.path) for x in launches} == {
        ("wine64", None),
        ("wine64", "/usr/lib/wine/wine64"),
        ("makensis", None),
        ("desktop-file-validate", None),
        ("wineserver64", None),
        ("xdotool", None),
        ("Xvfb", None),
        ("mount", None),
    }


def test_a_launch_the_reader_cannot_read_is_reported() -> None:
    source = "import subprocess\ndef run(program):\n    subprocess.run([program, '-x'])\n"
    launches, unreadable = python_launches(source, "x.py")
    assert launches == [] and [u.where for u in unreadable] == ["x.py:3"]


def test_the_reader_finds_the_commands_of_shell_scripts_and_makefiles() -> None:
    script = """#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."  # a comment naming xdotool
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install: gcc; xvfb" >&2
fi
hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y \\
    wine64
.venv/bin/python -m pip install x && makensis -WX x.nsi
"""
    found = {(launch.program, launch.where) for launch in shell_launches(script, "s.sh")}
    assert found == {
        ("apt-get", "s.sh:4"),
        ("sha256sum", "s.sh:7"),
        ("cut", "s.sh:7"),
        ("apt-get", "s.sh:8"),
        ("makensis", "s.sh:10"),
    }
    makefile = (
        "test: lint\n"
        "\t$(PYTHON_BIN)/pytest $(ARGS)\n"
        '\tfor s in b/*.py; do $(P)/python "$$s" || exit 1; done\n'
        "\tXvfb :9 &\n"
    )
    assert {launch.program for launch in shell_launches(makefile, "Makefile")} == {"Xvfb"}


def test_a_program_missing_from_the_list_is_named_with_its_package() -> None:
    launches = [Launch("makensis", "tests/e2e/test_packaging.py:81"), Launch("Xvfb", "a.py:1")]
    assert problems(launches, {"xvfb"}) == [
        "makensis (tests/e2e/test_packaging.py:81) comes from the Debian package nsis, which "
        "`scripts/system-deps.sh test` does not install: add it to the test list"
    ]
    (unknown,) = problems([Launch("frobnicate", "b.py:2")], {"xvfb"})
    assert unknown.startswith("frobnicate (b.py:2) has no known Debian package")


def test_the_repository_reading_finds_the_programs_the_suite_is_known_to_start() -> None:
    programs = {launch.program for launch in repository_launches()[0]}
    assert {"Xvfb", "xdotool", "makensis", "gnome-keyring-daemon", "wine64", "mount"} <= programs


def test_the_debian_packages_dependencies_are_installed_by_the_test_list() -> None:
    """`make package` installs the Debian package with dpkg -i, which installs no dependency
    itself: on a new machine each package its Depends names must already be there."""
    import importlib.util
    import sys

    name = "imprint_debian"
    spec = importlib.util.spec_from_file_location(name, ROOT / "packaging" / "debian.py")
    assert spec is not None and spec.loader is not None
    debian = sys.modules.get(name) or importlib.util.module_from_spec(spec)
    if name not in sys.modules:
        sys.modules[name] = debian  # its dataclasses look their module up there
        spec.loader.exec_module(debian)
    wanted = {*debian.LIBRARY_DEPENDS, *debian.OTHER_DEPENDS}
    assert wanted <= listed_packages("test"), wanted - listed_packages("test")
