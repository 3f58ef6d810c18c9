"""What a command's process spends besides its imports (issue 28), seen from inside it as it ends.

``imprint workspace search`` runs here as a real process (``python -m imprint_desktop``) that
reports, from an exit handler, how many threads numpy's BLAS was started with and what the cycle
collector has left to sweep at shutdown. (``test_cli_imports.py`` pins what a command imports;
``bench/bench_cli.py`` measures the time.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.exit_report import run_reporting

pytestmark = pytest.mark.e2e

#: What the process holds as it exits (:func:`.exit_report.run_reporting`).
_STATE = """
import gc, threadpoolctl
def state():
    pools = threadpoolctl.threadpool_info()
    return {
        "blas_threads": [pool["num_threads"] for pool in pools if pool["user_api"] == "blas"],
        "tracked": len(gc.get_objects()),
        "frozen": gc.get_freeze_count(),
    }
"""


@pytest.fixture
def env(imprint_env: dict[str, str]) -> dict[str, str]:
    """No BLAS thread count of the caller's: the command decides (or the test, as a person)."""
    return {name: value for name, value in imprint_env.items() if name != "OPENBLAS_NUM_THREADS"}


@pytest.fixture
def folder(tmp_path: Path, env: dict[str, str]) -> Path:
    """An indexed folder whose vectors are kept: a search loads numpy and reads them."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keepers.md").write_text("# Keepers\n\nAda Quill kept the light.\n", "utf-8")
    for action in (["index", str(folder)], ["search", str(folder), "Quill", "--json"]):
        subprocess.run(
            [sys.executable, "-m", "imprint_desktop", "workspace", *action],
            env=env,
            capture_output=True,
            check=True,
            timeout=60,
        )
    return folder


def searched(env: dict[str, str], tmp_path: Path, folder: Path) -> dict[str, Any]:
    """What `imprint workspace search FOLDER "Quill kept" --json` held as it ended."""
    report = tmp_path / "report.json"
    search = ["workspace", "search", str(folder), "Quill kept", "--json"]
    done = run_reporting(env, report, _STATE, *search)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)[0]["path"] == "keepers.md"
    state: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return state


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts one thread on one core")
def test_a_search_starts_numpys_blas_with_one_thread(
    env: dict[str, str], tmp_path: Path, folder: Path
) -> None:
    assert searched(env, tmp_path, folder)["blas_threads"] == [1]


def test_the_blas_threads_a_person_asks_for_are_kept(
    env: dict[str, str], tmp_path: Path, folder: Path
) -> None:
    env["OPENBLAS_NUM_THREADS"] = "2"
    assert searched(env, tmp_path, folder)["blas_threads"] == [2]


def test_a_search_leaves_the_shutdown_nothing_to_sweep(
    env: dict[str, str], tmp_path: Path, folder: Path
) -> None:
    """What it loaded and made is frozen when the command returns: only what the exit handlers
    made since is left to the collector."""
    state = searched(env, tmp_path, folder)
    assert state["frozen"] > 10_000
    assert state["tracked"] < 1_000
