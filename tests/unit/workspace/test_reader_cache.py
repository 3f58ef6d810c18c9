"""A document read again is not parsed again while it is unchanged (issue 28): ``read_document``
reads a long file one range of lines at a time, and a PDF costs a parse in the worker each time.

The reader keeps extracted text under the file's stamp — device, inode, size and modification
time — whatever the format, so a changed or replaced file is parsed afresh, and it keeps no more
than its limit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import Cancelled
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Extracted, Workspace
from imprint_desktop.core.workspace import reader as reader_module
from imprint_desktop.core.workspace.isolation import IsolatedExtractor, Stop
from imprint_desktop.core.workspace.reader import DocumentReader, FileStamp
from tests.support.settings import make_config
from tests.unit.workspace.conftest import SAMPLE, run_tool, write


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write(root, "notes.md", "# Notes\n\n" + "".join(f"Line {n} of the notes.\n" for n in range(40)))
    shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", root / "report.pdf")
    return root


@pytest.fixture
def pdf_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the PDFs the worker was asked to parse, in order."""
    calls: list[str] = []
    original = IsolatedExtractor.extract

    def counted(
        self: IsolatedExtractor, name: str, data: bytes, cancel: Stop | None = None
    ) -> Extracted:
        calls.append(name)
        return original(self, name, data, cancel)

    monkeypatch.setattr(IsolatedExtractor, "extract", counted)
    return calls


@pytest.fixture
def text_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files parsed in this process, in order."""
    calls: list[str] = []
    original = reader_module.extract

    def counted(name: str, data: bytes, *limits: int) -> Extracted:
        calls.append(name)
        return original(name, data, *limits)

    monkeypatch.setattr(reader_module, "extract", counted)
    return calls


def test_read_document_parses_an_unchanged_pdf_once(folder: Path, pdf_parses: list[str]) -> None:
    with Workspace(folder) as workspace:
        toolbox = Toolbox(workspace, make_config().tools, None)
        first = run_tool(toolbox, "read_document", {"path": "report.pdf", "end_line": 5})
        second = run_tool(
            toolbox, "read_document", {"path": "report.pdf", "start_line": 6, "end_line": 12}
        )
        again = run_tool(toolbox, "read_document", {"path": "report.pdf", "end_line": 5})
    assert pdf_parses == ["report.pdf"]
    assert first.status == second.status == "ok", (first.content, second.content)
    assert again.content == first.content and second.content != first.content


def test_every_format_is_kept_alike(folder: Path, text_parses: list[str]) -> None:
    with Workspace(folder) as workspace:
        _, first = workspace.read("notes.md")
        _, again = workspace.read("./notes.md")
    assert again == first and text_parses == ["notes.md"]


def test_a_file_changed_in_place_is_parsed_again(folder: Path, pdf_parses: list[str]) -> None:
    pdf = folder / "report.pdf"
    with Workspace(folder) as workspace:
        workspace.read("report.pdf")
        info = pdf.stat()
        os.utime(pdf, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # same size
        _, changed = workspace.read("report.pdf")
        workspace.read("report.pdf")
    assert pdf_parses == ["report.pdf", "report.pdf"]
    assert changed.title == "Harwick Coast Light Service - Annual Report 1998"


def test_a_file_replaced_by_another_of_the_same_size_and_time_is_parsed_again(
    folder: Path, text_parses: list[str]
) -> None:
    notes = folder / "notes.md"
    with Workspace(folder) as workspace:
        _, before = workspace.read("notes.md")
        info = notes.stat()
        swap = folder / "swap.tmp"
        swap.write_text(notes.read_text(encoding="utf-8").replace("Line 7", "Line 8"), "utf-8")
        os.utime(swap, ns=(info.st_atime_ns, info.st_mtime_ns))
        swap.replace(notes)  # a new file (another inode) in its place, as editors save
        assert (notes.stat().st_size, notes.stat().st_mtime_ns) == (info.st_size, info.st_mtime_ns)
        _, after = workspace.read("notes.md")
    assert text_parses == ["notes.md", "notes.md"]
    assert before.lines != after.lines


def test_what_is_kept_stays_under_the_limit_dropping_the_least_recently_read(
    text_parses: list[str],
) -> None:
    def stamp(inode: int) -> FileStamp:
        return FileStamp(device=1, inode=inode, size=100, mtime_ns=5)

    words = "x" * 60
    with DocumentReader(kept_characters=150) as reader:
        reader.read("a.txt", words.encode(), stamp=stamp(1))
        reader.read("b.txt", words.encode(), stamp=stamp(2))
        reader.read("a.txt", words.encode(), stamp=stamp(1))  # kept; now the most recent
        reader.read("c.txt", words.encode(), stamp=stamp(3))  # b goes to make room
        reader.read("a.txt", words.encode(), stamp=stamp(1))
        reader.read("b.txt", words.encode(), stamp=stamp(2))
        reader.read("d.txt", ("y" * 400).encode(), stamp=stamp(4))  # larger than the limit
        reader.read("d.txt", ("y" * 400).encode(), stamp=stamp(4))
        reader.read("e.txt", words.encode())  # no stamp: nothing is kept
        reader.read("e.txt", words.encode())
    assert text_parses == ["a.txt", "b.txt", "c.txt", "b.txt", "d.txt", "d.txt", "e.txt", "e.txt"]


def test_a_stopped_read_keeps_nothing(folder: Path, pdf_parses: list[str]) -> None:
    stop = CancelToken()
    stop.cancel()
    with Workspace(folder) as workspace:
        with pytest.raises(Cancelled):
            workspace.read("report.pdf", stop)
        _, document = workspace.read("report.pdf")
    assert pdf_parses == ["report.pdf", "report.pdf"] and document.page_starts
