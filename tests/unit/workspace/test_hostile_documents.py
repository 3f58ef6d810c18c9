"""Documents made to cost far more than their size: work that grows with them only as they grow,
text bounded whatever they ask for, a reader that leaves nothing of them readable and dies with
the indexing process, and a sentence a person reads for every file not fully read (issue 38)."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace import ExtractionLimits, IndexReport, WorkspaceIndex, extract
from imprint_desktop.core.workspace import records as records_module
from imprint_desktop.core.workspace.extract import Extracted
from imprint_desktop.core.workspace.files import FileEntry
from imprint_desktop.core.workspace.formats import opendocument, pdf, text
from imprint_desktop.core.workspace.isolation import IsolatedExtractor
from tests.unit.workspace import hostile_files
from tests.unit.workspace.conftest import write

ROOT = Path(__file__).parents[3]
NO_OCR = ExtractionLimits(ocr=False)
needs_tesseract = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v tesseract"], capture_output=True).returncode != 0,
    reason="tesseract-ocr is installed by scripts/system-deps.sh test",
)


def problems(report: IndexReport) -> dict[str, tuple[str, str]]:
    return {problem.path: (problem.kind, problem.reason) for problem in report.problems}


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.02)


# --- no work grows faster than the document --------------------------------------------------


_TABLES = """
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE, size INTEGER, mtime_ns INTEGER,
    digest TEXT, format TEXT, title TEXT, lines INTEGER, status TEXT, note TEXT, date TEXT,
    dated TEXT, superseded TEXT NOT NULL DEFAULT '');
CREATE TABLE passages (id INTEGER PRIMARY KEY, file_id INTEGER, start_line INTEGER,
    end_line INTEGER, page INTEGER, section TEXT, heading TEXT, text TEXT, place TEXT);
"""


@pytest.fixture
def db() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.executescript(_TABLES)
    yield connection
    connection.close()


def paged(count: int) -> Extracted:
    """A document of ``count`` one-line pages, each also a place (a slide)."""
    return Extracted(
        "Pages",
        tuple(f"page {number} says little" for number in range(1, count + 1)),
        tuple(range(1, count + 1)),
        "pdf",
        tuple(text.Place(number, f"slide {number}") for number in range(1, count + 1)),
    )


def steps_to_store(db: sqlite3.Connection, document: Extracted, path: str) -> int:
    """The lines of the index's own Python run to store ``document``: its work, counted."""
    steps = 0
    package = str(ROOT / "imprint_desktop")

    def trace(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal steps
        if not frame.f_code.co_filename.startswith(package):
            return None
        if event == "line":
            steps += 1
        return trace

    entry = FileEntry(path, 1, 1)
    sys.settrace(trace)
    try:
        assert records_module.store(db, entry, document, path, None)
    finally:
        sys.settrace(None)
    return steps


def test_storing_a_document_takes_work_in_proportion_to_its_pages_and_passages(
    db: sqlite3.Connection,
) -> None:
    """Every passage's page and place used to be found by walking the pages from the first:
    twice the pages took four times the work (100,000 one-line pages, 531 s)."""
    single = steps_to_store(db, paged(1500), "a.pdf")
    double = steps_to_store(db, paged(3000), "b.pdf")
    assert 1.8 < double / single < 2.3, (single, double)
    rows = db.execute(
        "SELECT page, place FROM passages JOIN files ON files.id = file_id "
        "WHERE path = 'b.pdf' ORDER BY start_line"
    ).fetchall()
    assert rows[:2] == [(1, "slide 1"), (2, "slide 2")]
    assert rows[-1] == (3000, "slide 3000")


def test_pages_and_places_found_in_one_walk_are_the_ones_found_one_by_one() -> None:
    lines = tuple(f"line {number}" for number in range(1, 41))
    places = (text.Place(3, "sheet A", (0, 0, 7, 8, 9)), text.Place(9, "sheet B"))
    document = Extracted("T", lines, (1, 5, 5, 20), "pdf", places)
    where = document.locator()
    for first, last in [(1, 2), (2, 4), (3, 6), (5, 5), (9, 12), (19, 30), (40, 40)]:
        assert where.page_of(first) == document.page_of(first)
        assert where.place_of(first, last) == document.place_of(first, last)
    assert where.place_of(3, 7) == "sheet A, rows 7-9"
    assert where.page_of(2) == 1  # asked about an earlier line: walked again from the top


class _StopAfter(threading.Event):
    """A Stop that is set once it has been looked at ``looks`` times."""

    def __init__(self, looks: int) -> None:
        super().__init__()
        self.looks = looks

    def is_set(self) -> bool:
        self.looks -= 1
        return self.looks < 0


def test_stop_between_batches_of_passages_keeps_nothing_of_the_file(
    db: sqlite3.Connection,
) -> None:
    db.execute("BEGIN")
    db.execute("INSERT INTO files (path, title) VALUES ('earlier.md', 'kept')")
    stop = _StopAfter(1)  # the first batch is written, then Stop
    stored = records_module.store(
        db, FileEntry("big.pdf", 1, 1), paged(3000), "d", None, cancel=stop
    )
    assert not stored
    assert stop.looks < 0
    db.execute("COMMIT")
    assert db.execute("SELECT path FROM files").fetchall() == [("earlier.md",)]
    assert db.execute("SELECT count(*) FROM passages").fetchone() == (0,)


def test_pages_slides_and_sheets_are_read_up_to_a_cap_and_the_cut_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text, "MAX_PARTS", 5)
    monkeypatch.setattr(pdf, "MAX_PARTS", 5)
    pages = extract("many.pdf", hostile_files.many_page_pdf(12))
    assert len(pages.page_starts) == 5
    assert pages.lines[-1] == "page 5"
    assert pages.gaps == "only its first 5 of its 12 pages were read"

    slides = extract("empty.odp", hostile_files.empty_slides_odp(40))
    assert [place.name for place in slides.places] == [f"slide {n}" for n in range(1, 6)]
    assert slides.gaps == "only its first 5 slides were read"

    sheets = extract("many.ods", hostile_files.repeated_ods(sheets=8, rows=1))
    assert len(sheets.places) == 5
    assert "only its first 5 sheets were read" in sheets.gaps


# --- amplification is bounded by the text it makes ----------------------------------------------


def text_of(document: Extracted) -> int:
    return sum(len(line) + 1 for line in document.lines)


def test_a_spreadsheet_of_repeated_rows_stops_at_the_text_bound_without_making_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six sheets of 50,000 rows of 200 cells, from 2 KB: hundreds of megabytes of text once
    written out. The reader stops making text at the bound, not after."""
    cleaned = 0
    one_line = text.one_line

    def counted(cell: str) -> str:
        nonlocal cleaned
        cleaned += 1
        return one_line(cell)

    monkeypatch.setattr(text, "one_line", counted)
    data = hostile_files.repeated_ods()
    assert len(data) < 4096
    document = extract("budget.ods", data, max_chars=200_000)
    assert 190_000 < text_of(document) <= 200_000
    assert "more text than the 200,000 characters one document may give" in document.gaps
    assert "workspace.max_text_mb" in document.gaps
    assert cleaned < 20_000  # the cells of a few dozen rows, not of 300,000


def test_a_workbook_whose_cells_share_one_long_string_stops_at_the_text_bound() -> None:
    data = hostile_files.shared_string_xlsx(rows=100, columns=100, size=1000)  # 10 MB of text
    document = extract("shared.xlsx", data, max_chars=100_000)
    assert 90_000 < text_of(document) <= 100_000
    assert "only its beginning was read" in document.gaps
    assert document.places[0].name == "sheet Sheet"


def test_the_text_bound_is_a_setting_that_reaches_the_reader_and_the_index(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "budget.ods").parent.mkdir(parents=True)
    (root / "budget.ods").write_bytes(hostile_files.repeated_ods())
    (root / "shared.xlsx").write_bytes(hostile_files.shared_string_xlsx(rows=100, columns=100))
    write(root, "long.txt", "a line of plain text\n" * 20_000)
    limits = ExtractionLimits(ocr=False, max_text_chars=50_000)
    with WorkspaceIndex(root, extraction=limits) as index:
        report = index.update()
        found = problems(report)
        assert set(found) == {"budget.ods", "shared.xlsx", "long.txt"}
        for kind, reason in found.values():
            assert kind == "partial"
            assert "more text than the 50,000 characters one document may give" in reason
        stored = index.search("amplified", 50)
    assert stored and all(hit.path == "budget.ods" for hit in stored)


def test_an_answer_with_more_text_than_allowed_is_cut_or_refused_by_the_indexing_process(
    tmp_path: Path,
) -> None:
    """A worker a file managed to subvert may send anything: the indexing process cuts text past
    the bound, and refuses unread an answer larger than any allowed text could make."""
    limits = ExtractionLimits(
        base_seconds=60, max_text_chars=10_000, reader=hostile_files.oversized, ocr=False
    )
    with IsolatedExtractor(limits) as reader:
        twice = reader.extract("a.pdf", b"%PDF-1.4\n" + hostile_files.MARKER + b"2\n")
        assert text_of(twice) <= 10_000
        assert "one document may give" in twice.gaps
        with pytest.raises(DocumentError, match="answer far larger than the text one document"):
            reader.extract("b.pdf", b"%PDF-1.4\n" + hostile_files.MARKER + b"2000\n")
        assert reader.extract("c.md.pdf", hostile_files.many_page_pdf(2)).lines == (
            "page 1",
            "page 2",
        )


# --- nothing of a document is left readable by others -----------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_the_readers_files_are_private_and_removed_when_it_is_stopped_at_its_limit(
    tmp_path: Path,
) -> None:
    report = tmp_path / "image-path"
    seen: dict[str, int] = {}

    def look() -> None:
        wait_until(report.exists, 60, "the page image")
        image = Path(report.read_text(encoding="utf-8"))
        seen["file"] = stat.S_IMODE(image.stat().st_mode)
        seen["folder"] = stat.S_IMODE(image.parent.stat().st_mode)
        report.with_suffix(".seen").write_text(str(image), encoding="utf-8")

    limits = ExtractionLimits(
        base_seconds=3, seconds_per_mb=0.0, reader=hostile_files.leaves_a_page_image
    )
    looker = threading.Thread(target=look)
    looker.start()
    with IsolatedExtractor(limits) as reader, pytest.raises(DocumentError, match="longer than 3 s"):
        reader.extract("scan.pdf", b"%PDF-1.4\n" + hostile_files.MARKER + str(report).encode())
    looker.join()
    image = Path(report.with_suffix(".seen").read_text(encoding="utf-8"))
    assert (seen["file"], seen["folder"]) == (0o600, 0o700)
    assert image.parent.name.startswith("imprint-reader-")
    assert not image.exists()
    assert not image.parent.exists()  # the worker's whole folder went with it


# --- the reader dies with its parent -------------------------------------------------------------


_INDEX_A_SLOW_DOCUMENT = """
import sys
from pathlib import Path

from imprint_desktop.core.workspace import ExtractionLimits, WorkspaceIndex
from tests.unit.workspace import hostile_files

if __name__ == "__main__":
    root, db = Path(sys.argv[1]), Path(sys.argv[2])
    limits = ExtractionLimits(base_seconds=3600, reader=hostile_files.announcing)
    with WorkspaceIndex(root, db_path=db, extraction=limits) as index:
        index.update(embed=False)
"""


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return state in ("Z", "X")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_the_reader_ends_when_the_indexing_process_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "w"
    pid_file = tmp_path / "worker.pid"
    write(root, "slow.pdf", "placeholder").write_bytes(
        b"%PDF-1.4\n" + hostile_files.MARKER + str(pid_file).encode() + b"\n"
    )
    script = tmp_path / "index_slow.py"
    script.write_text(_INDEX_A_SLOW_DOCUMENT, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    indexing = subprocess.Popen(
        [sys.executable, str(script), str(root), str(tmp_path / "index.sqlite3")],
        cwd=ROOT,
        env=environment,
    )
    try:
        wait_until(lambda: pid_file.exists() or indexing.poll() is not None, 60, "the worker")
        assert indexing.poll() is None, "the indexing process ended before its worker read"
        worker = int(pid_file.read_text(encoding="ascii"))
        assert not _gone(worker)
        indexing.send_signal(signal.SIGKILL)
        indexing.wait(timeout=10)
        wait_until(lambda: _gone(worker), 10, "the worker to end with its parent")
    finally:
        if indexing.poll() is None:
            indexing.kill()
            indexing.wait()


# --- every file not fully read says why, in words ---------------------------------------------


def test_a_pdf_none_of_whose_pages_holds_text_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "blank.pdf").parent.mkdir(parents=True)
    (root / "blank.pdf").write_bytes(hostile_files.many_page_pdf(3, text=False))
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        report = index.update()
    assert problems(report) == {"blank.pdf": ("no_text", "no text was found on any of its pages")}


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as container:
        for name, body in members.items():
            container.writestr(name, body)
    return buffer.getvalue()


def test_every_reason_is_a_sentence_without_class_names_or_python_objects(
    tmp_path: Path,
) -> None:
    root = tmp_path / "w"
    root.mkdir()
    broken = {
        "not-a-zip.docx": b"just some bytes, not a ZIP",
        "wrong-zip.docx": _zip({"hello.txt": b"hi"}),
        "wrong-zip.xlsx": _zip({"hello.txt": b"hi"}),
        "wrong-zip.pptx": _zip({"[Content_Types].xml": b"<nonsense"}),
        "wrong-zip.odt": _zip({"content.xml": b"<unclosed"}),
        "wrong-zip.epub": _zip({"mimetype": b"application/epub+zip"}),
        "broken.pdf": b"%PDF-1.4\nnothing a PDF holds\n",
        "broken.png": b"\x89PNG\r\n\x1a\nnot really",
        "empty.docx": b"",
    }
    for name, data in broken.items():
        (root / name).write_bytes(data)
    with WorkspaceIndex(root, extraction=ExtractionLimits(ocr=True)) as index:
        found = problems(index.update())
    assert set(found) == set(broken)
    for name, (_kind, reason) in found.items():
        assert "Error" not in reason and "Exception" not in reason, (name, reason)
        assert " at 0x" not in reason and "<" not in reason, (name, reason)
        assert reason[:1].islower() and not reason.endswith("."), (name, reason)
        assert len(reason.split()) >= 5, (name, reason)
    assert found["wrong-zip.xlsx"][1] == (
        "it could not be read as an Excel workbook: the file is damaged, or is not what its "
        "name says"
    )
    assert found["broken.pdf"][1] == (
        "it could not be opened as a PDF: the file is damaged, or is not a PDF"
    )


def test_the_time_stated_is_the_time_enforced_when_ocr_pages_add_to_it(tmp_path: Path) -> None:
    """A file stopped while a page was being recognised is given its own time and that page's:
    the reason states the time it was given, not the file's own part of it."""
    root = tmp_path / "w"
    write(root, "scan.pdf", "placeholder").write_bytes(b"%PDF-1.4\n" + hostile_files.MARKER)
    limits = ExtractionLimits(
        base_seconds=0.5, seconds_per_mb=0.0, ocr_page_seconds=1, reader=hostile_files.stuck_page
    )
    with WorkspaceIndex(root, extraction=limits) as index:
        started = time.monotonic()
        report = index.update()
        took = time.monotonic() - started
    kind, reason = problems(report)["scan.pdf"]
    stated = float(reason.split("took longer than ", 1)[1].split(" s", 1)[0])
    assert kind == "skipped"
    assert stated >= 5  # the page's second and its margin, not the file's half second
    assert stated <= took + 0.5
    assert "for OCR of its pages" in reason


@needs_tesseract
def test_ocr_of_one_file_stops_at_its_page_cap_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "frames.tiff").parent.mkdir(parents=True)
    (root / "frames.tiff").write_bytes(hostile_files.many_frame_tiff(5))
    limits = ExtractionLimits(ocr_max_pages=2)
    with WorkspaceIndex(root, extraction=limits) as index:
        report = index.update()
    kind, reason = problems(report)["frames.tiff"]
    assert "OCR read only the first 2 of its 5 frames: OCR reads at most 2 pages of one file" in (
        reason
    )
    assert kind in ("partial", "no_text")


@needs_tesseract
def test_ocr_of_one_file_stops_at_its_time_in_all_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "frames.tiff").parent.mkdir(parents=True)
    (root / "frames.tiff").write_bytes(hostile_files.many_frame_tiff(60))
    limits = ExtractionLimits(ocr_file_seconds=2)
    with WorkspaceIndex(root, extraction=limits) as index:
        started = time.monotonic()
        report = index.update()
        took = time.monotonic() - started
    _kind, reason = problems(report)["frames.tiff"]
    assert "OCR spends at most 2 s on one file" in reason
    assert "of its 60 frames" in reason
    assert took < 30


def test_the_opendocument_reader_keeps_row_numbers_while_it_streams() -> None:
    """Rows go to the writer as they are read: the row numbers of a sheet still match."""
    data = hostile_files.repeated_ods(sheets=1, rows=2, cell="north")
    document = extract("two.ods", data)
    sheet = document.places[0]
    assert sheet.name == "sheet S1"
    assert max(sheet.rows) == 400
    assert opendocument.MAX_SHEET_ROWS == 50_000
