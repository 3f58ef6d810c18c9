"""installer.nsi compiles with makensis (warnings are errors) against a staged Windows layout, and
its uninstaller's file list names exactly the files of the bundle."""

from __future__ import annotations

import importlib.util
import re
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
def build() -> ModuleType:
    """packaging/build.py, the script CI and release builds run (not a package of ours)."""
    spec = importlib.util.spec_from_file_location("imprint_build", ROOT / "packaging" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_uninstall_list_names_exactly_the_bundle(build: ModuleType, tmp_path: Path) -> None:
    staged = build.stage_windows_layout(tmp_path / "imprint", None)
    (staged / "_internal" / "empty-folder").mkdir()
    listing = build.write_uninstall_list(staged, tmp_path / "files.nsh").read_text("utf-8")

    deleted = set(re.findall(r'^Delete "\$INSTDIR\\(.+)"$', listing, re.MULTILINE))
    removed = re.findall(r'^RMDir "\$INSTDIR\\(.+)"$', listing, re.MULTILINE)
    files = {
        str(p.relative_to(staged)).replace("/", "\\") for p in staged.rglob("*") if p.is_file()
    }
    folders = {
        str(p.relative_to(staged)).replace("/", "\\") for p in staged.rglob("*") if p.is_dir()
    }
    assert deleted == files and "imprint-gui.exe" in deleted
    assert set(removed) == folders and "_internal\\empty-folder" in removed
    depth = [name.count("\\") for name in removed]
    assert depth == sorted(depth, reverse=True)  # a folder is emptied before its parent
    assert "RMDir /r" not in listing


def test_dollar_signs_in_file_names_stay_literal_in_the_uninstall_list(
    build: ModuleType, tmp_path: Path
) -> None:
    bundle = tmp_path / "imprint"
    (bundle / "odd").mkdir(parents=True)
    (bundle / "odd" / "$INSTDIR ${APP_NAME} $$.txt").write_bytes(b"")
    (bundle / "odd" / "Übersicht.md").write_bytes(b"")
    listing = build.write_uninstall_list(bundle, tmp_path / "files.nsh")

    lines = listing.read_text("utf-8-sig").splitlines()
    assert r'Delete "$INSTDIR\odd\$$INSTDIR $$${U+7B}APP_NAME} $$$$.txt"' in lines
    assert r'Delete "$INSTDIR\odd\Übersicht.md"' in lines
    assert listing.read_bytes().startswith(b"\xef\xbb\xbf")  # makensis reads it as UTF-8


def test_a_file_name_nsis_cannot_quote_fails_the_build(build: ModuleType, tmp_path: Path) -> None:
    bundle = tmp_path / "imprint"
    bundle.mkdir()
    (bundle / 'say "hi".txt').write_bytes(b"")
    with pytest.raises(build.BuildError, match="cannot quote"):
        build.write_uninstall_list(bundle, tmp_path / "files.nsh")


def test_installer_script_compiles(build: ModuleType, tmp_path: Path) -> None:
    assert shutil.which("makensis"), "install nsis (the README's test command does)"
    staged = build.stage_windows_layout(tmp_path / "imprint", None)
    # A name makensis would read as a variable and a define if the list did not escape it
    # (-WX: "unknown variable" is an error).
    (staged / "_internal" / "$price ${APP_NAME}.txt").write_bytes(b"")
    listing = build.write_uninstall_list(staged, tmp_path / "files.nsh")
    setup = tmp_path / f"ImprintSetup-{__version__}.exe"

    build.compile_installer(staged, setup, listing, __version__)

    assert setup.read_bytes()[:2] == b"MZ" and setup.stat().st_size > 100_000


def test_the_script_refuses_to_compile_without_the_uninstall_list(tmp_path: Path) -> None:
    makensis = shutil.which("makensis")
    assert makensis, "install nsis (the README's test command does)"
    bundle = tmp_path / "imprint"
    bundle.mkdir()
    (bundle / "imprint.exe").write_bytes(b"MZ")
    result = subprocess.run(
        [
            makensis,
            "-WX",
            f"-DVERSION={__version__}",
            f"-DDIST_DIR={bundle}",
            f"-DOUT_FILE={tmp_path / 'setup.exe'}",
            str(ROOT / "installer.nsi"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0 and "FILE_LIST" in result.stdout + result.stderr
    assert not (tmp_path / "setup.exe").exists()
