"""The Debian package's pieces (packaging/debian.py) without a PyInstaller build.

The package of the real bundle is made, installed, used, upgraded and removed by `make package`
(packaging/debian_check.py, as root in CI). Here a stand-in bundle is packaged for real with
dpkg-deb and read back with it, and the Depends check is fed what ldd and dpkg would say.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from imprint_desktop import __version__

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def debian() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "imprint_debian", ROOT / "packaging" / "debian.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _fake_bundle(root: Path) -> Path:
    for name in ("imprint", "imprint-gui", "_internal/llama_cpp/lib/libllama.so"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"stand-in " + name.encode())
    (root / "imprint").chmod(0o755)
    (root / "imprint-gui").chmod(0o755)
    return root


LDD_OUTPUT = """\
\tlinux-vdso.so.1 (0x00007ffd6a5f2000)
\tlibQt6Gui.so.6 => /opt/b/_internal/libQt6Gui.so.6 (0x00007f0e1c800000)
\tlibEGL.so.1 => /lib/x86_64-linux-gnu/libEGL.so.1 (0x00007f0e1d1e1000)
\tlibxcb-util.so.1 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e1c61f000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e1d2a6000)
"""


def test_ldd_output_is_read_into_libraries_and_their_paths(debian: ModuleType) -> None:
    assert debian.ldd_libraries(LDD_OUTPUT) == {
        "libQt6Gui.so.6": "/opt/b/_internal/libQt6Gui.so.6",
        "libEGL.so.1": "/lib/x86_64-linux-gnu/libEGL.so.1",
        "libxcb-util.so.1": "",
        "libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6",
        "ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2",
    }


GRAPH = {
    "libc6": {"libgcc-s1"},
    "libgcc-s1": {"libc6"},
    "libgl1": {"libc6", "libglx0", "libglvnd0"},
    "libglx0": {"libc6", "libglvnd0"},
    "libglvnd0": {"libc6"},
    "libxcb1": {"libc6"},
}


def test_depends_that_bring_every_linked_library_pass(debian: ModuleType) -> None:
    needed = {"libc.so.6": "libc6", "libGL.so.1": "libgl1", "libGLX.so.0": "libglx0"}
    assert debian.depends_problems(needed, ["libc6 (>= 2.36)", "libgl1"], GRAPH) == []


def test_a_linked_library_no_dependency_brings_is_named(debian: ModuleType) -> None:
    needed = {"libc.so.6": "libc6", "libxcb.so.1": "libxcb1"}
    assert debian.depends_problems(needed, ["libc6 (>= 2.36)"], GRAPH) == [
        "libxcb.so.1 comes from libxcb1, which Depends does not bring"
    ]


def test_a_library_package_the_bundle_does_not_link_is_named(debian: ModuleType) -> None:
    needed = {"libc.so.6": "libc6"}
    assert debian.depends_problems(needed, ["libc6 (>= 2.36)", "libxcb1"], GRAPH) == [
        "libxcb1 is in Depends but the bundle links none of its libraries"
    ]


def test_depends_names_the_build_machines_c_library_and_the_listed_packages(
    debian: ModuleType,
) -> None:
    entries = debian.depends()
    assert entries[0].startswith("libc6 (>= 2.")
    assert entries[1:] == [*debian.LIBRARY_DEPENDS, *debian.OTHER_DEPENDS]


def test_the_control_file_has_the_fields_dpkg_and_apt_read(debian: ModuleType) -> None:
    text = debian.control("1.2.3", "amd64", 4096, ["libc6 (>= 2.36)", "libxcb1"])
    fields = dict(
        line.split(": ", 1) for line in text.splitlines() if line and not line.startswith(" ")
    )
    assert fields["Package"] == "imprint-desktop"
    assert fields["Version"] == "1.2.3"
    assert fields["Architecture"] == "amd64"
    assert fields["Installed-Size"] == "4096"
    assert fields["Depends"] == "libc6 (>= 2.36), libxcb1"
    assert fields["Maintainer"] and fields["Description"]
    assert text.endswith("\n")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (every Debian system)")
def test_a_staged_bundle_becomes_a_package_dpkg_reads(debian: ModuleType, tmp_path: Path) -> None:
    bundle = _fake_bundle(tmp_path / "imprint")
    root = debian.stage(bundle, tmp_path / "root", __version__)
    deb = debian.build(root, tmp_path / "out" / debian.file_name(__version__, "amd64"))

    info = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Package", "Version", "Depends"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"Package: imprint-desktop\nVersion: {__version__}\n" in info
    assert "Depends: libc6 (>= 2." in info
    listing = subprocess.run(
        ["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    entries = {line.split()[-1] if " -> " not in line else line.split()[-3] for line in listing}
    assert {
        "./opt/imprint-desktop/imprint",
        "./opt/imprint-desktop/imprint-gui",
        "./opt/imprint-desktop/_internal/llama_cpp/lib/libllama.so",
        "./usr/bin/imprint",
        "./usr/share/applications/imprint-desktop.desktop",
        "./usr/share/icons/hicolor/48x48/apps/imprint-desktop.png",
        "./usr/share/icons/hicolor/256x256/apps/imprint-desktop.png",
        "./usr/share/icons/hicolor/scalable/apps/imprint-desktop.svg",
    } <= entries
    assert all(" root/root " in line for line in listing)  # never the builder's user
    (link,) = [line for line in listing if "./usr/bin/imprint " in line]
    assert link.endswith("-> /opt/imprint-desktop/imprint")
    (launcher,) = [line for line in listing if line.endswith("./opt/imprint-desktop/imprint")]
    assert launcher.startswith("-rwxr-xr-x")
    # No maintainer scripts: dpkg's file triggers refresh the menu and icon caches.
    control = subprocess.run(
        ["dpkg-deb", "--info", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    assert not any(script in control for script in ("postinst", "postrm", "prerm", "preinst"))


def test_the_packaged_desktop_entry_starts_the_installed_launcher(
    debian: ModuleType, tmp_path: Path
) -> None:
    root = debian.stage(_fake_bundle(tmp_path / "imprint"), tmp_path / "root", __version__)
    entry = (root / "usr/share/applications/imprint-desktop.desktop").read_text("utf-8")
    assert "Exec=/opt/imprint-desktop/imprint-gui\n" in entry
    assert "TryExec=/opt/imprint-desktop/imprint-gui\n" in entry
    assert "Icon=imprint-desktop\n" in entry
    if shutil.which("desktop-file-validate"):
        subprocess.run(
            ["desktop-file-validate", str(root / "usr/share/applications/imprint-desktop.desktop")],
            check=True,
        )
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    assert all(folder.stat().st_mode & 0o777 == 0o755 for folder in folders)
