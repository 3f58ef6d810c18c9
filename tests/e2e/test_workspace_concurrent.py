"""`imprint workspace` beside another program and beside itself (issue 38): a search while another
program holds the index's write lock answers at once and leaves the index in place; `index` runs
started together on a new folder all succeed (and each file is indexed once)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import index_path_for
from imprint_desktop.core.workspace.database import BUSY_SECONDS
from tests.e2e.conftest import Imprint, write_notes

pytestmark = pytest.mark.e2e

FILES = 60


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "notes", FILES)


def test_a_search_while_another_program_holds_the_write_lock(imprint: Imprint, notes: Path) -> None:
    """The issue's repro: the search used to wait out the busy timeout, then delete the index
    the holder was writing (its work lost)."""
    assert imprint("workspace", "index", str(notes)).returncode == 0
    db_path = index_path_for(notes)
    before = db_path.stat().st_ino
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        found = imprint("workspace", "search", str(notes), "word7", "--json")
        seconds = time.monotonic() - started
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["path"] == "n007.md"
        assert seconds < BUSY_SECONDS / 2  # it never waited on the holder
        holder.execute("INSERT INTO meta (key, value) VALUES ('holder', 'kept')")
        holder.execute("COMMIT")
    finally:
        holder.close()
    assert db_path.stat().st_ino == before
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'holder'").fetchone() == ("kept",)


def test_index_runs_started_together_on_a_new_folder_all_succeed(
    imprint_env: dict[str, str], notes: Path
) -> None:
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "imprint_desktop", "workspace", "index", str(notes), "--json"],
            env=imprint_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [run.communicate(timeout=90) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in results]
    reports = [json.loads(out) for out, _ in results]
    assert [report["documents"] for report in reports] == [FILES] * 3
    assert sum(report["added"] for report in reports) == FILES  # each file indexed once
    assert [report["embedded_passages"] for report in reports] == [FILES] * 3
    db_path = index_path_for(notes)
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(DISTINCT path), count(*) FROM files").fetchone() == (
            FILES,
            FILES,
        )
