"""PDFs are read in a worker process: a file that hangs, eats memory or crashes the reader is
skipped with its reason, committed work stays, Stop ends indexing at once, and a skipped file is
tried again only once it changes."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import (
    ExtractionLimits,
    IndexProgress,
    IndexReport,
    Workspace,
    WorkspaceIndex,
)
from imprint_desktop.core.workspace.isolation import IsolatedExtractor
from tests.support.settings import make_config
from tests.unit.workspace import hostile_files
from tests.unit.workspace.conftest import SAMPLE, run_tool, write

#: A little time for the worker to start and a file to be read, far less than any test waits.
QUICK = ExtractionLimits(base_seconds=1.5, seconds_per_mb=0.0)


def hostile_pdf(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.4\n" + hostile_files.MARKER + b"\n%%EOF\n")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write(root, "a-first.md", "# First\n\nThe quay was paved with setts.\n")
    shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", root / "b-report.pdf")
    write(root, "d-last.md", "# Last\n\nA heron stood on the breakwater.\n")
    return root


def reasons(report: IndexReport) -> dict[str, str]:
    return {problem.path: problem.reason for problem in report.problems}


def refuse_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("no file should be extracted")

    monkeypatch.setattr(IsolatedExtractor, "extract", refused)


def test_a_pdf_that_takes_too_long_is_skipped_then_tried_again_only_once_it_changes(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = folder / "c-slow.pdf"
    slow.write_bytes(hostile_files.slow_pdf())  # real PDFium, seconds a page
    with WorkspaceIndex(folder, extraction=QUICK) as index:
        first = index.update()
        assert "took longer than 2 s" in reasons(first)["c-slow.pdf"]
        assert "tried again when the file changes" in reasons(first)["c-slow.pdf"]
        assert (first.added, first.documents) == (4, 3)
        assert [hit.path for hit in index.search("generator fault")] == ["b-report.pdf"]
        assert [problem.path for problem in index.problems()] == ["c-slow.pdf"]

        with monkeypatch.context() as patch:
            refuse_extraction(patch)
            os.utime(slow, ns=(1, 1))  # touched, same bytes: still not read again
            again = index.update()
        assert reasons(again) == reasons(first)
        assert (again.added, again.updated) == (0, 0)

        shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", slow)  # now it really changed
        os.utime(slow, ns=(2, 2))
        changed = index.update()
        assert changed.problems == ()
        assert (changed.updated, changed.documents) == (1, 4)


def test_stop_ends_indexing_inside_a_hanging_pdf_at_once_and_keeps_what_was_committed(
    folder: Path, tmp_path: Path
) -> None:
    hostile_pdf(folder / "c-hangs.pdf")
    db = tmp_path / "index.sqlite3"
    forever = ExtractionLimits(base_seconds=3600, reader=hostile_files.hanging)
    cancel = CancelToken()
    reached = threading.Event()
    reports: list[IndexReport] = []

    def progress(event: IndexProgress) -> None:
        if event.path == "c-hangs.pdf":
            reached.set()

    def index_in_background() -> None:
        with WorkspaceIndex(folder, db_path=db, extraction=forever) as index:
            reports.append(index.update(progress=progress, cancel=cancel))

    worker = threading.Thread(target=index_in_background)
    worker.start()
    try:
        assert reached.wait(timeout=60)
        # Every file before the hanging one is committed: another connection already finds it.
        with WorkspaceIndex(folder, db_path=db) as reader:
            assert [hit.path for hit in reader.search("setts")] == ["a-first.md"]
            assert [hit.path for hit in reader.search("generator fault")] == ["b-report.pdf"]
        stopped = time.monotonic()
    finally:
        cancel.cancel()
        worker.join(timeout=30)
    assert not worker.is_alive()
    assert time.monotonic() - stopped < 5.0
    assert reports[0].cancelled
    assert "c-hangs.pdf" not in reasons(reports[0])  # stopped, not failed: tried again next time
    assert multiprocessing.active_children() == []

    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, reader=hostile_files.hanging)
    with WorkspaceIndex(folder, db_path=db, extraction=limits) as index:
        report = index.update()
    assert "took longer than 1 s" in reasons(report)["c-hangs.pdf"]
    assert (report.added, report.documents) == (2, 3)


@pytest.mark.skipif(sys.platform != "linux", reason="the memory limit is Linux-only")
def test_a_pdf_that_eats_memory_is_stopped_by_the_workers_limit(folder: Path) -> None:
    hostile_pdf(folder / "c-greedy.pdf")
    limits = ExtractionLimits(
        base_seconds=60, memory_bytes=256 * 2**20, reader=hostile_files.memory_hungry
    )
    started = time.monotonic()
    with WorkspaceIndex(folder, extraction=limits) as index:
        report = index.update()
        assert time.monotonic() - started < 30
        assert "more memory than allowed" in reasons(report)["c-greedy.pdf"]
        assert report.documents == 3  # the reader carried on with the next PDF


def test_a_pdf_that_kills_the_reader_is_skipped_and_the_next_pdf_still_read(folder: Path) -> None:
    hostile_pdf(folder / "a-crash.pdf")
    limits = ExtractionLimits(base_seconds=60, reader=hostile_files.crashing)
    with WorkspaceIndex(folder, extraction=limits) as index:
        report = index.update()
        assert "document reader stopped while reading it" in reasons(report)["a-crash.pdf"]
        assert [hit.path for hit in index.search("generator fault")] == ["b-report.pdf"]


def test_an_answer_that_makes_no_sense_is_refused(folder: Path) -> None:
    hostile_pdf(folder / "a-odd.pdf")
    limits = ExtractionLimits(base_seconds=60, reader=hostile_files.nonsense)
    with WorkspaceIndex(folder, extraction=limits) as index:
        report = index.update()
        assert "answer that makes no sense" in reasons(report)["a-odd.pdf"]
        assert [hit.path for hit in index.search("generator fault")] == ["b-report.pdf"]


def test_text_files_need_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "w"
    write(root, "one.md", "# One\n\nPlain text is read in this process.\n")
    refuse_extraction(monkeypatch)
    with WorkspaceIndex(root) as index:
        assert index.update().documents == 1


def test_read_document_refuses_a_skipped_pdf_without_reading_it_again(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile_pdf(folder / "c-hangs.pdf")
    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, reader=hostile_files.hanging)
    with Workspace(folder, extraction=limits) as workspace:
        workspace.index.update()
        refuse_extraction(monkeypatch)
        result = run_tool(
            Toolbox(workspace, make_config().tools, None), "read_document", {"path": "c-hangs.pdf"}
        )
    assert result.status == "error"
    assert "skipped when the workspace was indexed" in result.content
    assert "took longer than 1 s" in result.content


def test_read_document_of_a_hanging_pdf_not_yet_indexed_gives_up_at_the_limit(
    folder: Path,
) -> None:
    hostile_pdf(folder / "c-hangs.pdf")
    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, reader=hostile_files.hanging)
    with Workspace(folder, extraction=limits) as workspace:
        with pytest.raises(DocumentError, match=r"c-hangs\.pdf cannot be read: reading it took"):
            workspace.read("c-hangs.pdf")
        relative, document = workspace.read("b-report.pdf")  # a fresh worker for the next one
    assert relative == "b-report.pdf"
    assert document.title == "Harwick Coast Light Service - Annual Report 1998"
    assert multiprocessing.active_children() == []
