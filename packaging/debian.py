"""The Debian package of the frozen bundle: ``dist/imprint-desktop_<version>_<arch>.deb``.

    python packaging/debian.py [--dist dist/imprint] [--output DIR]   # what build.py runs

The package installs the bundle into ``/opt/imprint-desktop``, the command ``/usr/bin/imprint``
(a link to the bundle's launcher), the desktop entry and the hicolor icons. It is made with
``dpkg-deb`` from a staged tree; nothing is compiled on the person's machine.

No maintainer scripts: the desktop database and the icon cache are refreshed by the file
triggers of ``desktop-file-utils`` and ``hicolor-icon-theme`` (on every Debian and Ubuntu
desktop), and dpkg itself removes exactly the files it installed. The person's settings and data
live under their home folder, where dpkg never looks, so neither removal nor purge touches them.

``Depends`` is the list below plus the C library of the build machine. :func:`check_depends`
holds it to what the bundle really links: every library outside the bundle that ``ldd`` finds
for its programs and libraries must come from a listed package (or one a listed package depends
on), and every listed library package must own one of those libraries.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop import APP_ID, __version__  # noqa: E402 - the checkout's, not an installed one
from imprint_desktop.commands.desktop import ICON_SIZES, desktop_entry  # noqa: E402

PACKAGE = APP_ID
INSTALL_DIR = Path("/opt") / APP_ID
COMMAND = Path("/usr/bin/imprint")
# The libraries the bundle takes from the system (packaging/imprint.spec keeps the rest inside),
# by the Debian package that ships each. The C library is added with the build machine's version.
LIBRARY_DEPENDS = (
    "libxcb1",  # X11: Qt's xcb platform plugin
    "libgl1",  # OpenGL, which Qt's GUI library links
    "libegl1",
    "libdrm2",  # Qt's EGLFS/KMS support
    "libwayland-client0",  # Qt's Wayland platform plugin
    "libwayland-cursor0",
    "libwayland-egl1",
)
# Needed without being linked: the bundled fontconfig reads /etc/fonts, whose package brings a font.
OTHER_DEPENDS = ("fontconfig-config",)
# The C library, its loader and the kernel's virtual library: the libc6 entry covers them.
C_LIBRARY = "libc6"
DESCRIPTION = """\
local research assistant for your own documents
 Imprint points a language model at a folder of documents and lets it research
 a question: it searches and reads the files, then writes an answer that cites
 its sources. The model runs on this computer (a GGUF file run by llama.cpp,
 included) or on an OpenAI-compatible server."""


class PackageError(Exception):
    """The package could not be made, or its Depends do not match the bundle."""


# --- what the package holds --------------------------------------------------------------------


def architecture() -> str:
    """dpkg's name for this machine's architecture (``amd64``, ``arm64``)."""
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()


def c_library_version() -> str:
    """The glibc version of the build machine: the frozen programs need at least that one."""
    name, _, number = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    if name != "glibc" or not number:
        raise PackageError("not built against glibc: a Debian package needs a glibc build")
    return number


def depends() -> list[str]:
    return [f"{C_LIBRARY} (>= {c_library_version()})", *LIBRARY_DEPENDS, *OTHER_DEPENDS]


def control(version: str, arch: str, installed_kb: int, depends: Iterable[str]) -> str:
    """The package's DEBIAN/control: the fields dpkg needs, and what apt and app stores show."""
    fields = {
        "Package": PACKAGE,
        "Version": version,
        "Architecture": arch,
        "Maintainer": "Imprint Desktop developers <imprint-desktop@users.noreply.github.com>",
        "Installed-Size": str(installed_kb),
        "Depends": ", ".join(depends),
        "Section": "utils",
        "Priority": "optional",
        "Description": DESCRIPTION,
    }
    return "".join(f"{key}: {value}\n" for key, value in fields.items())


def installed_kb(tree: Path) -> int:
    """Installed-Size as dpkg counts it: each file rounded up to whole KiB, links as one."""
    total = 0
    for path in tree.rglob("*"):
        if path.is_symlink() or path.is_dir():
            total += 1
        else:
            total += -(-path.stat().st_size // 1024)
    return total


def stage(bundle: Path, root: Path, version: str) -> Path:
    """Lay out the package's tree under ``root`` (emptied first); returns ``root``.

    The bundle is hard-linked where it can be (same file system), so staging costs no copy.
    """
    if root.exists():
        shutil.rmtree(root)
    target = root / INSTALL_DIR.relative_to("/")
    target.parent.mkdir(parents=True)
    shutil.copytree(bundle, target, symlinks=True, copy_function=_link_or_copy)
    command = root / COMMAND.relative_to("/")
    command.parent.mkdir(parents=True)
    command.symlink_to(INSTALL_DIR / "imprint")
    share = root / "usr" / "share"
    entry = share / "applications" / f"{APP_ID}.desktop"
    entry.parent.mkdir(parents=True)
    entry.write_text(desktop_entry([str(INSTALL_DIR / "imprint-gui")]), encoding="utf-8")
    icons = share / "icons" / "hicolor"
    for size in ICON_SIZES:
        side = f"{size}x{size}"
        (icons / side / "apps").mkdir(parents=True)
        shutil.copyfile(
            ROOT / "resources" / "linux" / "icons" / side / f"{APP_ID}.png",
            icons / side / "apps" / f"{APP_ID}.png",
        )
    (icons / "scalable" / "apps").mkdir(parents=True)
    shutil.copyfile(
        ROOT / "resources" / "icons" / "imprint.svg", icons / "scalable" / "apps" / f"{APP_ID}.svg"
    )
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
        folder.chmod(0o755)  # a temporary folder is 0700; installed folders must be readable
    debian = root / "DEBIAN"
    debian.mkdir(mode=0o755)
    text = control(version, architecture(), installed_kb(root), depends())
    (debian / "control").write_text(text, encoding="utf-8")
    return root


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def build(root: Path, output: Path, compression: str = "zstd") -> Path:
    """``dpkg-deb --build`` the staged tree, files owned by root, into ``output``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(root), str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise PackageError(f"dpkg-deb failed: {result.stderr.strip()}")
    return output


def file_name(version: str, arch: str) -> str:
    return f"{PACKAGE}_{version}_{arch}.deb"


# --- Depends, checked against the bundle ---------------------------------------------------------


def ldd_libraries(output: str) -> dict[str, str]:
    """The libraries ``ldd`` resolved, name to path (``not found`` ones map to ``""``)."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(\S+|not found)", line)
        if match:
            name, path = match.groups()
            found[name] = "" if path == "not" else path
        elif match := re.match(r"\s*(/\S+)\s+\(0x", line):  # the loader, by its path
            found[Path(match.group(1)).name] = match.group(1)
    return found


def _is_elf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


def system_libraries(bundle: Path) -> dict[str, str]:
    """Every library outside ``bundle`` that its programs and libraries load, name to path.

    Run with the bundle's library folder on the search path, as its launcher runs them.
    """
    internal = bundle / "_internal"
    env = {**os.environ, "LD_LIBRARY_PATH": str(internal)}
    outside: dict[str, str] = {}
    missing: set[str] = set()
    for path in sorted(bundle.rglob("*")):
        if path.is_symlink() or not path.is_file() or not _is_elf(path):
            continue
        result = subprocess.run(
            ["ldd", str(path)], capture_output=True, text=True, env=env, check=False
        )
        for name, where in ldd_libraries(result.stdout).items():
            if not where:
                missing.add(f"{name} (for {path.relative_to(bundle)})")
            elif not Path(where).resolve().is_relative_to(bundle.resolve()):
                outside[name] = where
    if missing:
        raise PackageError("libraries not found on this machine: " + ", ".join(sorted(missing)))
    return outside


def owners(paths: Iterable[str]) -> dict[str, str]:
    """The Debian package owning each path (dpkg records a merged-/usr path under /usr or not)."""
    wanted: dict[str, str] = {}
    for path in paths:
        real = str(Path(path).resolve())
        for name in {path, real, re.sub(r"^/usr/", "/", real), "/usr" + real}:
            wanted[name] = path
    result = subprocess.run(
        ["dpkg-query", "-S", *sorted(wanted)], capture_output=True, text=True, check=False
    )
    found: dict[str, str] = {}
    for line in result.stdout.splitlines():
        packages, _, where = line.partition(": ")
        if where in wanted:
            found[wanted[where]] = packages.split(",")[0].split(":")[0].strip()
    return found


def installed_depends(packages: Iterable[str]) -> dict[str, set[str]]:
    """Each installed package's Depends and Pre-Depends (names only), for these and what they
    bring, as far as they go."""
    graph: dict[str, set[str]] = {}
    todo = set(packages)
    while todo:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n", *sorted(todo)],
            capture_output=True,
            text=True,
            check=False,
        )
        graph.update({name: set() for name in todo})
        for line in result.stdout.splitlines():
            name, _, rest = line.partition("\t")
            graph[name] = set(re.findall(r"(?:^|[,|]\s*)([a-z0-9][a-z0-9+.-]+)", rest.strip()))
        todo = {d for deps in graph.values() for d in deps} - set(graph)
    return graph


def brought(declared: Iterable[str], graph: Mapping[str, set[str]]) -> set[str]:
    """The declared packages and everything they depend on, transitively."""
    seen: set[str] = set()
    todo = list(declared)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def depends_problems(
    needed: Mapping[str, str], declared: Iterable[str], graph: Mapping[str, set[str]]
) -> list[str]:
    """What is wrong with ``declared`` for the libraries ``needed`` (library to package): a
    library no declared package brings, a declared library package that owns none of them."""
    names = [re.split(r"[\s(]", entry, maxsplit=1)[0] for entry in declared]
    covered = brought(names, graph)
    problems = [
        f"{library} comes from {package}, which Depends does not bring"
        for library, package in sorted(needed.items())
        if package not in covered
    ]
    used = set(needed.values())
    problems += [
        f"{name} is in Depends but the bundle links none of its libraries"
        for name in names
        if name in LIBRARY_DEPENDS and name not in used
    ]
    return problems


def check_depends(bundle: Path) -> list[str]:
    """Hold Depends to the bundle's system libraries; returns the packages of those libraries."""
    paths = system_libraries(bundle)
    package_of = owners(paths.values())
    unowned = sorted(name for name, where in paths.items() if where not in package_of)
    if unowned:
        raise PackageError("no Debian package owns these libraries: " + ", ".join(unowned))
    needed = {name: package_of[where] for name, where in paths.items()}
    names = [re.split(r"[\s(]", entry, maxsplit=1)[0] for entry in depends()]
    problems = depends_problems(needed, depends(), installed_depends(names))
    if problems:
        raise PackageError("Depends does not match the bundle: " + "; ".join(problems))
    return sorted(set(needed.values()))


# --- command -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    deb: Path
    needed: list[str]  # the packages of the libraries the bundle links


def make(bundle: Path, output_dir: Path, work: Path, version: str = __version__) -> Built:
    """Check Depends against ``bundle``, stage it and build the package into ``output_dir``."""
    needed = check_depends(bundle)
    root = stage(bundle, work / "root", version)
    try:
        deb = build(root, output_dir / file_name(version, architecture()))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Built(deb, needed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist" / "imprint")
    parser.add_argument("--output", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    try:
        built = make(args.dist, args.output, ROOT / "build" / "deb")
    except PackageError as error:
        print(f"package failed: {error}", file=sys.stderr)
        return 1
    print(f"ok: {built.deb} (the bundle links libraries of {', '.join(built.needed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
