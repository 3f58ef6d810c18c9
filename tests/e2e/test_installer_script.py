"""installer.nsi compiles with makensis (warnings are errors) against a staged bundle."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from imprint_desktop import __version__

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_installer_script_compiles(tmp_path: Path) -> None:
    makensis = shutil.which("makensis")
    assert makensis, "install nsis (the README's test command does)"
    bundle = tmp_path / "imprint"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "imprint.exe").write_bytes(b"MZ stand-in for the frozen launcher")
    (bundle / "_internal" / "base_library.zip").write_bytes(b"PK")
    setup = tmp_path / f"ImprintSetup-{__version__}.exe"
    result = subprocess.run(
        [
            makensis,
            "-WX",
            "-V2",
            f"-DVERSION={__version__}",
            f"-DDIST_DIR={bundle}",
            f"-DOUT_FILE={setup}",
            str(ROOT / "installer.nsi"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert setup.read_bytes()[:2] == b"MZ" and setup.stat().st_size > 30_000
