"""The Debian package installed for real, as a person would: install, use, upgrade, remove.

    python packaging/debian_check.py dist/imprint-desktop_<version>_<arch>.deb

Run by ``packaging/build.py`` after it made the package, as root (CI runs as root; dpkg needs
it). It refuses to run where Imprint's package is already installed, so it never replaces
someone's installation. Every step as a person meets it, in a home folder of its own:

1. ``dpkg -i``: the bundle in /opt/imprint-desktop, ``/usr/bin/imprint``, the desktop entry
   (valid, pointing at the installed launcher) and the icons;
2. the window opened under Xvfb by the desktop entry's command, and one question answered by the
   starter model through ``imprint`` on PATH; a setting saved, so the person has a config file
   and data (the conversation) under their home;
3. an upgrade: a second build with a higher version installed over it; the person's files are
   byte for byte the same and the new version's files are in place;
4. ``dpkg -r``, then ``dpkg --purge``: every file the package installed is gone, the person's
   files are still there, unchanged, and nothing else is left in their home.

Prints the install time, the first paint and the answer time. Exit code 0 when every step
passed, 1 otherwise.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from imprint_desktop import __version__
from imprint_desktop.commands.desktop import ICON_SIZES

import build  # the smoke test's pieces
import debian

UPGRADE_MARKER = Path("_internal") / "upgrade-check.txt"
IMPRINT = "/usr/bin/imprint"  # debian.COMMAND, written out for tests/unit/test_system_deps.py


class CheckError(Exception):
    """A step of the check failed; the message says which and what was found."""


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    """The output of a command that must succeed."""
    if result.returncode != 0:
        command = shlex.join(str(part) for part in result.args)
        raise CheckError(f"{command}: {result.returncode} {result.stderr[-2000:]}")
    return result.stdout


def dpkg(*arguments: str) -> str:
    """Run dpkg, which must succeed; its output."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return succeeded(
        subprocess.run(
            ["dpkg", *arguments], env=env, capture_output=True, text=True, check=False, timeout=300
        )
    )


def status() -> str:
    """dpkg's status of the package (``install ok installed``), or "" when dpkg has no record."""
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status} ${Version}", debian.PACKAGE],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else ""


def installed_files() -> list[Path]:
    """What dpkg installed for the package that is not a folder (folders like /usr are shared)."""
    listed = succeeded(
        subprocess.run(
            ["dpkg-query", "-L", debian.PACKAGE],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    ).splitlines()
    return [Path(line) for line in listed if line and not Path(line).is_dir()]


def person_environment(home: Path) -> dict[str, str]:
    """A person's session: their own home, nothing of Imprint's configured, no XDG overrides."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("IMPRINT_", "PYTHON", "XDG_", "QT_"))
    }
    env.update({"HOME": str(home), "HF_HUB_OFFLINE": "1"})
    return env


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@contextmanager
def display() -> Iterator[str]:
    """Xvfb on a display number it picks; yields ``DISPLAY``."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            number = pipe.readline().strip().decode()
        if not number:
            raise CheckError("Xvfb did not start")
        yield f":{number}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def entry_command(entry: Path) -> list[str]:
    """The installed desktop entry's Exec, as a launcher runs it (no field codes here)."""
    for line in entry.read_text(encoding="utf-8").splitlines():
        if line.startswith("Exec="):
            return shlex.split(line.removeprefix("Exec="))
    raise CheckError(f"{entry} has no Exec line")


def install(deb: Path) -> float:
    started = time.monotonic()
    dpkg("-i", str(deb))
    return time.monotonic() - started


def check_installed(expected_version: str) -> None:
    if not status().startswith("install ok installed"):
        raise CheckError(f"dpkg says {status()!r} after installing")
    launcher = debian.INSTALL_DIR / "imprint"
    if Path(IMPRINT) != debian.COMMAND or debian.COMMAND.resolve() != launcher:
        raise CheckError(f"{debian.COMMAND} does not lead to {launcher}")
    entry = Path("/usr/share/applications") / f"{debian.PACKAGE}.desktop"
    succeeded(
        subprocess.run(
            ["desktop-file-validate", str(entry)],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    )
    program = Path(entry_command(entry)[0])
    if not (program.is_relative_to(debian.INSTALL_DIR) and os.access(program, os.X_OK)):
        raise CheckError(f"the desktop entry starts {program}, not the installed launcher")
    icons = Path("/usr/share/icons/hicolor")
    for size in (*(f"{n}x{n}" for n in ICON_SIZES), "scalable"):
        if not list((icons / size / "apps").glob(f"{debian.PACKAGE}.*")):
            raise CheckError(f"no {size} icon installed")
    env = person_environment(Path("/nonexistent"))
    version = succeeded(
        subprocess.run(
            [IMPRINT, "--version"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    )
    if expected_version not in version:
        raise CheckError(f"imprint --version says {version!r}, not {expected_version}")


def use(home: Path, work: Path, model: Path | None) -> dict[str, float]:
    """The person's first session: a setting saved, the window, one question answered (the
    window's screenshot goes to ``work``)."""
    env = person_environment(home)
    succeeded(
        subprocess.run(
            [IMPRINT, "settings", "set", "chat.max_tokens", "64"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    )
    entry = Path("/usr/share/applications") / f"{debian.PACKAGE}.desktop"
    try:
        with display() as name:
            window_env = {**env, "DISPLAY": name, "QT_QPA_PLATFORM": "xcb"}
            times = build.smoke_window(entry_command(entry), window_env, work, model)
        if model is not None:
            workspace = debian.INSTALL_DIR / "_internal" / "resources" / "sample-workspace"
            times["answer"] = build.smoke_answer(debian.COMMAND, workspace, env, model)
    except build.BuildError as error:
        raise CheckError(str(error)) from None
    return times


def upgrade_package(bundle: Path, work: Path, version: str) -> Path:
    """A build of ``bundle`` with a higher version and one file more (uncompressed: quicker)."""
    newer = f"{version}+upgrade.check"
    root = debian.stage(bundle, work / "upgrade-root", newer)
    marker = root / debian.INSTALL_DIR.relative_to("/") / UPGRADE_MARKER
    marker.write_text(f"installed by {newer}\n", encoding="utf-8")
    try:
        return debian.build(root, work / debian.file_name(newer, debian.architecture()), "none")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check(deb: Path, bundle: Path, version: str) -> dict[str, float]:
    if os.geteuid() != 0:
        raise CheckError("dpkg -i needs root (CI runs as root)")
    if status():
        raise CheckError(
            f"{debian.PACKAGE} is already known to dpkg ({status()}): not touching it "
            f"(sudo dpkg --purge {debian.PACKAGE} first, to run this check)"
        )
    starter = build.starter_model()
    with tempfile.TemporaryDirectory(prefix="imprint-deb-check-") as folder:
        work = Path(folder)
        home = work / "home"
        home.mkdir()
        model = None if starter is None else build.model_outside_its_package(starter, work)
        try:
            times = {"install": install(deb)}
            check_installed(version)
            print(f"ok: installed in {times['install']:.1f} s; launcher, entry and icons in place")
            times |= use(home, work, model)
            person = files_under(home)
            if not any(name.startswith(".config/") for name in person) or not any(
                name.startswith(".local/share/") for name in person
            ):
                raise CheckError(f"no config and data under the home folder: {sorted(person)}")
            newer = upgrade_package(bundle, work, version)
            install(newer)
            check_installed(version)
            if not (debian.INSTALL_DIR / UPGRADE_MARKER).is_file() or "+upgrade" not in status():
                raise CheckError(f"the upgrade did not replace the package: {status()}")
            if files_under(home) != person:
                raise CheckError("the upgrade changed the person's files")
            print(f"ok: upgraded to {status().split()[-1]}; the person's files unchanged")
            installed = installed_files()
            dpkg("-r", debian.PACKAGE)
            left = [str(path) for path in installed if path.exists() or path.is_symlink()]
            if left or debian.INSTALL_DIR.exists():
                raise CheckError(f"dpkg -r left installed files: {left[:10]}")
            dpkg("--purge", debian.PACKAGE)
            if status() and "not-installed" not in status():
                raise CheckError(f"dpkg still knows the package after purging: {status()}")
            if files_under(home) != person:
                raise CheckError("removing the package changed the person's files")
            print(f"ok: removed and purged; {len(person)} files of the person's left untouched")
        finally:
            if status() and "not-installed" not in status():
                subprocess.run(
                    ["dpkg", "--purge", debian.PACKAGE],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=300,
                )
    return times


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        times = check(Path(args[0]).resolve(), build.BUNDLE, __version__)
    except CheckError as error:
        print(f"package check failed: {error}", file=sys.stderr)
        return 1
    for name, seconds in times.items():
        print(f"package {name:<11}{seconds:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
