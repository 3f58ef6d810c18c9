"""`imprint workspace index` started while another Imprint updates the same index says it waits,
then updates what is left; `search` meanwhile answers at once from the index as it stood, and says
so (issue 38)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import index_path_for
from imprint_desktop.core.workspace.database import Connections
from imprint_desktop.core.workspace.update import NOT_WAITED, WAITING
from tests.e2e.conftest import Imprint, write_notes

pytestmark = pytest.mark.e2e

FILES = 30


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "notes", FILES)


def test_an_index_run_waits_for_another_and_a_search_does_not(
    imprint: Imprint, imprint_env: dict[str, str], notes: Path
) -> None:
    assert imprint("workspace", "index", str(notes)).returncode == 0
    db_path = index_path_for(notes)
    before = db_path.stat().st_ino
    (notes / "late.md").write_text("# Late\n\nlocktest latecomer\n")
    another = Connections(db_path, notes)  # stands for another Imprint, in the middle of an update
    try:
        with another.updates.held():
            waiting = subprocess.Popen(
                [sys.executable, "-m", "imprint_desktop", "workspace", "index", str(notes)],
                env=imprint_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert waiting.stderr is not None
            assert waiting.stderr.readline().strip() == f"{WAITING}…"
            searched = imprint("workspace", "search", str(notes), "latecomer", "--json")
            assert searched.returncode == 0, searched.stderr
            assert json.loads(searched.stdout) == []  # as it stood: late.md is not in it yet
            assert NOT_WAITED in searched.stderr
        out, err = waiting.communicate(timeout=60)
    finally:
        another.close_all()
    assert waiting.returncode == 0, err
    assert f"{FILES + 1} documents indexed" in out and "1 added" in out
    found = imprint("workspace", "search", str(notes), "latecomer", "--json")
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["late.md"]
    assert db_path.stat().st_ino == before
