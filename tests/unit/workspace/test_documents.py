"""The documents people keep: Office, OpenDocument, EPUB and RTF files read with their structure,
ZIP bombs refused, scans reported or read with OCR, and every passage dated and marked when its
document looks superseded."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import (
    ExtractionLimits,
    IndexReport,
    SearchHit,
    Workspace,
    WorkspaceIndex,
    extract,
)
from imprint_desktop.core.workspace.formats.archive import checked_zip
from tests.support import documents
from tests.support.settings import make_config
from tests.unit.workspace.conftest import run_tool, write

NO_OCR = ExtractionLimits(ocr=False)
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract-ocr is installed by scripts/system-deps.sh test",
)


def best(index: WorkspaceIndex, query: str) -> SearchHit:
    hits = index.search(query, 3)
    assert hits, f"nothing found for {query!r}"
    return hits[0]


def problems(report: IndexReport) -> dict[str, tuple[str, str]]:
    return {problem.path: (problem.kind, problem.reason) for problem in report.problems}


@pytest.fixture
def office(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    documents.docx_file(
        root / "brief.docx",
        "Product brief: Falcon",
        [
            ("Pricing", "The Falcon sells for 56,000 dollars per unit."),
            ("Launch", "It ships in May."),
        ],
        [("Region", "Units", "Owner"), ("North", "120", "Okafor"), ("South", "95", "Lindqvist")],
    )
    documents.xlsx_file(
        root / "figures.xlsx",
        [
            ("Summary", [("Note",), ("Quarterly figures",)]),
            (
                "Revenue",
                [
                    ("Region", "Q1", "Q2"),
                    ("Andover", 1200, 1300),
                    (None, None, None),
                    ("Bexhill", 800, 900),
                    ("Cromer", 40, 45),
                ],
            ),
        ],
    )
    documents.pptx_file(
        root / "deck.pptx",
        [(f"Topic {n}", f"Point {n}", "") for n in range(1, 4)]
        + [("Roadmap", "The gyroscope module arrives next", "Mention the marmalade budget")],
    )
    documents.odt_file(
        root / "policy.odt",
        "Leave policy",
        [("Allowance", "Staff take 27 days of leave.")],
        [("Grade", "Days"), ("Junior", "25"), ("Senior", "29")],
    )
    documents.ods_file(
        root / "budget.ods",
        [("Costs", [("Dept", "Amount"), ("Plumbing", 5000), ("Hosting", 3100)])],
    )
    documents.odp_file(
        root / "talk.odp", [("Welcome", "Hello all"), ("Harbour plan", "Dredging starts in June")]
    )
    documents.epub_file(
        root / "book.epub",
        "The Lighthouse Book",
        [("Beginnings", "Keepers trimmed wicks."), ("Storms", "The cormorant returned.")],
        date="2024-05-01",
    )
    documents.rtf_file(root / "memo.rtf", ["Quarterly memo", "The ferry leaves at noon sharp."])
    return root


def test_every_office_format_is_indexed_with_its_structure(office: Path) -> None:
    with WorkspaceIndex(office, extraction=NO_OCR) as index:
        report = index.update()
        assert report.problems == ()
        assert report.documents == 8

        price = best(index, "Falcon price dollars unit")
        assert (price.path, price.title, price.section) == (
            "brief.docx",
            "Product brief: Falcon",
            "Pricing",
        )
        row = best(index, "Lindqvist")
        assert "Region: South; Units: 95; Owner: Lindqvist" in row.text  # a row under its header

        revenue = best(index, "Bexhill")
        assert revenue.path == "figures.xlsx"
        assert "Region: Bexhill; Q1: 800; Q2: 900" in revenue.text
        assert revenue.place.startswith("sheet Revenue, rows ")
        assert revenue.location.startswith("sheet Revenue, rows 1-5, lines ")  # row 3 is empty

        slide = best(index, "gyroscope")
        assert (slide.path, slide.place) == ("deck.pptx", "slide 4")
        assert slide.section == "Slide 4: Roadmap"
        assert best(index, "marmalade").place == "slide 4"  # speaker notes are read

        leave = best(index, "Senior days")
        assert leave.path == "policy.odt" and "Grade: Senior; Days: 29" in leave.text
        assert best(index, "Plumbing").place.startswith("sheet Costs, rows ")
        dredging = best(index, "dredging")
        assert (dredging.path, dredging.place) == ("talk.odp", "slide 2")
        storm = best(index, "cormorant")
        assert (storm.path, storm.place, storm.title) == (
            "book.epub",
            "chapter 2",
            "The Lighthouse Book",
        )
        assert (storm.date, storm.dated) == ("2024-05-01", "properties")
        assert best(index, "ferry noon").path == "memo.rtf"


def test_office_files_are_read_in_the_isolated_reader(office: Path) -> None:
    """A reader that never returns stands for a parser stuck on a hostile file: the index gives up
    on each at the time limit instead of hanging, as it does for PDFs."""
    from tests.unit.workspace import hostile_files

    for path in office.iterdir():
        path.write_bytes(path.read_bytes() + hostile_files.MARKER)
    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, reader=hostile_files.hanging)
    with WorkspaceIndex(office, extraction=limits) as index:
        report = index.update()
    assert len(report.problems) == 8
    assert all("took longer than" in reason for _kind, reason in problems(report).values())


def test_a_zip_bomb_is_refused_with_its_reason_and_the_rest_indexed(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.zip_bomb(root / "huge.docx")
    write(root, "fine.md", "# Fine\n\nAn ordinary aardvark.\n")
    assert (root / "huge.docx").stat().st_size < 200_000
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        report = index.update()
        assert index.search("aardvark")[0].path == "fine.md"
    kind, reason = problems(report)["huge.docx"]
    assert kind == "skipped"
    assert "ZIP bomb" in reason and "would expand" in reason


def test_a_container_expanding_past_the_total_limit_is_refused() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as container:
        for number in range(3):
            container.writestr(f"part{number}.xml", b"x" * 4000)
    checked_zip(buffer.getvalue(), "Word", max_bytes=12_000)
    with pytest.raises(DocumentError, match="would expand to"):
        checked_zip(buffer.getvalue(), "Word", max_bytes=11_999)
    with pytest.raises(DocumentError, match="not a readable Word file"):
        checked_zip(b"PK\x03\x04 not really", "Word")


def test_a_scan_without_ocr_is_reported_not_silently_indexed_as_empty(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.scanned_pdf(root / "scan.pdf", [["Invoice 4471"], ["Total due 980 euros"]])
    documents.scanned_image(root / "receipt.png", ["Paid in full"])
    write(root, "fine.md", "# Fine\n\nAn ordinary aardvark.\n")
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        report = index.update()
        assert report.documents == 1  # a scan is not counted as indexed
        assert problems(report) == {
            "scan.pdf": (
                "no_text",
                "it has no text layer (a scan?); OCR is turned off (workspace.ocr)",
            ),
            "receipt.png": (
                "no_text",
                "an image has no text layer; OCR is turned off (workspace.ocr)",
            ),
        }
        assert index.problems() == list(report.problems)  # kept until the file changes


@needs_tesseract
def test_ocr_reads_scanned_pdf_pages_and_images(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.scanned_pdf(root / "scan.pdf", [["Invoice number 4471"], ["Total due 980 euros"]])
    documents.scanned_image(root / "receipt.png", ["Paid in full by Quentin"])
    with WorkspaceIndex(root) as index:
        report = index.update()
        assert report.problems == ()
        total = best(index, "total due euros")
        assert (total.path, total.page) == ("scan.pdf", 2)
        assert "980" in total.text
        assert best(index, "Quentin").path == "receipt.png"


@needs_tesseract
def test_a_scan_read_without_ocr_is_read_again_once_ocr_is_on(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.scanned_pdf(root / "scan.pdf", [["Invoice number 4471"]])
    db_path = tmp_path / "index.sqlite3"
    with WorkspaceIndex(root, db_path=db_path, extraction=NO_OCR) as index:
        assert problems(index.update())["scan.pdf"][0] == "no_text"
        assert index.update().updated == 0  # unchanged, and OCR still off: not read again
    with WorkspaceIndex(root, db_path=db_path) as index:
        report = index.update()
        assert (report.updated, report.problems) == (1, ())
        assert best(index, "invoice").path == "scan.pdf"
        assert index.update().updated == 0  # read with OCR: not again


def test_ocr_time_grows_page_by_page(tmp_path: Path) -> None:
    """Each page announced (as OCR announces its pages) gets the page's allowance: a long scan is
    read to the end however far past the file's own limit it runs."""
    from tests.unit.workspace import hostile_files

    root = tmp_path / "w"
    write(root, "long-scan.pdf", "placeholder").write_bytes(b"%PDF-1.4\n" + hostile_files.MARKER)
    limits = ExtractionLimits(
        base_seconds=0.5, seconds_per_mb=0.0, ocr_page_seconds=5, reader=hostile_files.slow_pages
    )
    with WorkspaceIndex(root, extraction=limits) as index:
        report = index.update()
    assert "took longer than" not in problems(report)["long-scan.pdf"][1]  # read, not stopped


@needs_tesseract
def test_a_page_ocr_cannot_finish_in_its_time_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.scanned_pdf(root / "scan.pdf", [["A page tesseract cannot finish in time"]])
    with WorkspaceIndex(root, extraction=ExtractionLimits(ocr_page_seconds=0.01)) as index:
        report = index.update()
    assert problems(report)["scan.pdf"] == ("no_text", "OCR gave up on page 1 at its time limit")


def test_documents_carry_their_date_and_whether_they_look_superseded(tmp_path: Path) -> None:
    root = tmp_path / "w"
    documents.docx_file(
        root / "product/brief-final.docx",
        "Falcon product brief",
        [("", "Date: 10 February 2026"), ("Pricing", "The Falcon costs 56,000 dollars.")],
    )
    write(
        root,
        "product/brief-draft.md",
        "# Falcon brief (draft)\n\nUpdated 2026-01-20\n\nThe Falcon costs 54,000 dollars.\n",
    )
    write(
        root,
        "product/archive/concept.md",
        "# Falcon concept\n\nDate: March 2025\n\nThe Falcon costs 52,000 dollars.\n",
    )
    write(
        root, "finance/forecast-2025.md", "# Forecast\n\nAs of 2025-06-30 revenue is 3.1 million.\n"
    )
    write(
        root, "finance/forecast-2026.md", "# Forecast\n\nAs of 2026-06-30 revenue is 3.4 million.\n"
    )
    write(root, "stations/old-quay.md", "# Old Quay\n\nThe quay light is automatic.\n")
    undated = write(root, "notes.md", "# Notes\n\nNothing dated here about falcons.\n")
    os.utime(undated, (1_700_000_000, 1_700_000_000))
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        index.update()
        hits = {hit.path: hit for hit in index.search("Falcon costs dollars", 8)}
        final = hits["product/brief-final.docx"]
        assert (final.date, final.dated, final.superseded) == ("2026-02-10", "label", "")
        assert final.currency == "dated 2026-02-10, stated at its top"
        draft = hits["product/brief-draft.md"]
        assert draft.date == "2026-01-20"
        assert draft.superseded == "a draft; the final is product/brief-final.docx"
        concept = hits["product/archive/concept.md"]
        assert (concept.date, concept.superseded) == ("2025-03", 'its folder says "archive"')
        assert concept.currency == (
            'dated 2025-03, stated at its top; looks superseded: its folder says "archive"'
        )
        old = best(index, "revenue million 2025")
        older = {hit.path: hit for hit in index.search("forecast revenue", 4)}
        assert older["finance/forecast-2025.md"].superseded == (
            "finance/forecast-2026.md is a newer version (2026-06-30)"
        )
        assert older["finance/forecast-2026.md"].superseded == ""
        assert old.path.startswith("finance/")
        assert best(index, "quay light automatic").superseded == ""  # a place called Old Quay
        notes = best(index, "nothing dated")
        assert (notes.date, notes.dated) == ("2023-11-14", "modified")
        assert notes.currency == "modified 2023-11-14"

        # The newer forecast goes: the older one is current again.
        (root / "finance/forecast-2026.md").unlink()
        index.update()
        assert best(index, "forecast revenue").superseded == ""


def test_search_results_show_the_model_each_passages_date_and_standing(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write(root, "brief.md", "# Brief\n\nDate: 2026-02-10\n\nThe Falcon costs 56,000 dollars.\n")
    write(
        root,
        "archive/brief.md",
        "# Brief\n\nDate: 2025-03-01\n\nThe Falcon costs 52,000 dollars.\n",
    )
    with Workspace(root, extraction=NO_OCR) as workspace:
        workspace.index.update()
        toolbox = Toolbox(workspace, make_config().tools, None)
        result = run_tool(toolbox, "search_workspace", {"query": "Falcon costs"})
    assert "brief.md, lines 1-5 — Brief (dated 2026-02-10, stated at its top)" in result.content
    assert (
        "archive/brief.md, lines 1-5 — Brief (dated 2025-03-01, stated at its top; looks "
        'superseded: its folder says "archive")' in result.content
    )
    assert "the current one holds" in result.content
    assert {item.currency for item in result.evidence} == {
        "dated 2026-02-10, stated at its top",
        'dated 2025-03-01, stated at its top; looks superseded: its folder says "archive"',
    }


def test_extract_reads_a_stated_date_near_the_top() -> None:
    cases = {
        "# Memo\n\nIssued: 3rd April 2025\n": "2025-04-03",
        "# Memo\n\nLast updated: March 4, 2024\n": "2024-03-04",
        "# Plan 2030\n\nVersion 2 — as of Sept 2026\n": "2026-09",
        "# Memo\n\nNo date at all, only 1999 as a number.\n": "",
    }
    for text, date in cases.items():
        assert extract("memo.md", text.encode()).date == date, text


def test_read_document_names_slides_and_sheets_and_the_documents_standing(office: Path) -> None:
    os.utime(office / "deck.pptx", (1_700_000_000, 1_700_000_000))
    with Workspace(office, extraction=NO_OCR) as workspace:
        workspace.index.update()
        toolbox = Toolbox(workspace, make_config().tools, None)
        deck = run_tool(toolbox, "read_document", {"path": "deck.pptx"})
        sheet = run_tool(toolbox, "read_document", {"path": "figures.xlsx"})
    assert deck.content.startswith("deck.pptx — Topic 1 (modified 2023-11-14) — lines 1-")
    assert [item.location.split(",")[0] for item in deck.evidence][-1] == "slide 4"
    assert {item.currency for item in deck.evidence} == {"modified 2023-11-14"}
    assert any(item.location.startswith("sheet Revenue, rows ") for item in sheet.evidence)


def test_a_superseded_passage_ranks_below_a_current_one_that_matches_about_as_well(
    tmp_path: Path,
) -> None:
    root = tmp_path / "w"
    for number in range(6):  # other documents, so that the query's words are rare ones
        write(root, f"notes/n{number}.md", f"# Note {number}\n\nThe harbour wall, part {number}.\n")
    write(root, "pricing.md", "# Pricing\n\nThe Falcon list price is 56,000 dollars.\n")
    write(
        root,
        "archive/pricing.md",
        "# Pricing\n\nThe Falcon list price was 52,000 dollars for the Falcon.\n",
    )
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        index.update()
        hits = index.search("Falcon list price", 2)
    assert [hit.path for hit in hits] == ["pricing.md", "archive/pricing.md"]
    assert hits[0].score > hits[1].score


def test_a_sheets_repeated_rows_are_counted_not_expanded(tmp_path: Path) -> None:
    """OpenDocument stores a sheet's empty tail (and copies of a row) as one row repeated: row
    numbers count them, and a million empty rows cost nothing."""
    from odf import table, text
    from odf.opendocument import OpenDocumentSpreadsheet

    def row(values: tuple[str, ...], repeated: int = 1) -> object:
        line = table.TableRow(numberrowsrepeated=repeated) if repeated > 1 else table.TableRow()
        for value in values:
            cell = table.TableCell()
            if value:
                cell.addElement(text.P(text=value))
            line.addElement(cell)
        return line

    document = OpenDocumentSpreadsheet()
    sheet = table.Table(name="Stock")
    for line in (
        row(("Item", "Count")),
        row(("", ""), 3),
        row(("Bolts", "40"), 2),
        row(("Nuts", "75")),
        row(("", ""), 1_000_000),
    ):
        sheet.addElement(line)
    document.spreadsheet.addElement(sheet)
    path = tmp_path / "stock.ods"
    document.save(str(path))
    read = extract("stock.ods", path.read_bytes())
    rows = [line for line in read.lines if line.startswith("Item: ")]
    assert rows == ["Item: Bolts; Count: 40", "Item: Bolts; Count: 40", "Item: Nuts; Count: 75"]
    nuts = read.lines.index("Item: Nuts; Count: 75") + 1
    assert read.place_of(nuts, nuts) == "sheet Stock, row 7"
