"""A document's date is its own (issue 41, item 12): the date near its title or in its properties
wins over a date it merely speaks of further down, a date later than the file itself is not taken
while another exists, and every view says how the date was found."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import ExtractionLimits, SearchHit, WorkspaceIndex, extract
from imprint_desktop.core.workspace.dating import (
    Dated,
    DocumentDate,
    How,
    chosen,
    stated_dates,
    superseded,
)
from tests.support import documents
from tests.unit.workspace.conftest import write

NO_OCR = ExtractionLimits(ocr=False)
#: 9 October 2026, noon UTC: when the minutes were saved in these tests.
SAVED = datetime(2026, 10, 9, 12, tzinfo=UTC).timestamp()


def saved(path: Path) -> Path:
    os.utime(path, (SAVED, SAVED))
    return path


def hits_by_path(index: WorkspaceIndex, query: str) -> dict[str, SearchHit]:
    index.update()
    return {hit.path: hit for hit in index.search(query, 8)}


def test_board_minutes_are_dated_by_their_meeting_not_by_a_delivery_they_mention(
    tmp_path: Path,
) -> None:
    """The issue's file: "Meeting of 2 October 2026" under the title, a delivery in February 2027
    further down (once mentioned beside "approved", once under a label of its own)."""
    root = tmp_path / "w"
    saved(
        documents.docx_file(
            root / "board-minutes-2026-10.docx",
            "Board minutes",
            [
                ("", "Meeting of 2 October 2026\n\nPresent: Okafor, Lindqvist, Marsh."),
                ("Harbour works", "The dredging of the east basin is on schedule."),
                (
                    "Pumping station",
                    "The new pumping station will be delivered in February 2027, as approved "
                    "by the board.\n\nDelivery date: 26 February 2027",
                ),
            ],
        )
    )
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        minutes = hits_by_path(index, "pumping station delivered")["board-minutes-2026-10.docx"]
    assert (minutes.date, minutes.dated) == ("2026-10-02", "title")
    assert minutes.currency == "dated 2026-10-02, stated near its title"


def test_a_date_in_a_word_files_page_header_is_stated_near_its_title(tmp_path: Path) -> None:
    """Word writes a page header after the body in the text, however long the body is."""
    import docx

    root = tmp_path / "w"
    root.mkdir()
    made = docx.Document()
    made.sections[0].header.paragraphs[0].text = "Harbour board · minutes of 2 October 2026"
    made.add_heading("Minutes", 0)
    for number in range(1, 16):
        made.add_paragraph(f"Item {number}: the harbour board heard report {number}.")
    made.add_paragraph("The dredging contract was approved on 14 September 2026.")
    made.save(str(root / "minutes.docx"))
    saved(root / "minutes.docx")
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        minutes = hits_by_path(index, "dredging contract approved")["minutes.docx"]
    assert (minutes.date, minutes.dated) == ("2026-10-02", "title")


def test_a_date_from_the_document_properties_when_its_text_states_none(tmp_path: Path) -> None:
    import docx

    root = tmp_path / "w"
    root.mkdir()
    made = docx.Document()
    made.add_heading("Harbour lighting survey", 0)
    made.add_paragraph("Every quay lamp was checked and twelve were replaced.")
    made.core_properties.modified = datetime(2026, 9, 14, 8, 30)
    made.save(str(root / "survey.docx"))
    saved(root / "survey.docx")
    # A file python-docx made and nobody changed: its properties hold the template's stamp.
    template = documents.docx_file(
        root / "lamps.docx", "Lamp stock", [("", "Forty spare quay lamps are kept.")]
    )
    saved(template)
    saved(_odt_saved_on(root / "paint.odt", "2026-07-21T10:15:00"))
    pdf = tmp_path / "pdf"
    _pdf_made_on(pdf / "tides.pdf", datetime(2026, 8, 3, 9, tzinfo=UTC))
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        hits = hits_by_path(index, "quay lamps")
    assert (hits["survey.docx"].date, hits["survey.docx"].dated) == ("2026-09-14", "properties")
    assert hits["survey.docx"].currency == "dated 2026-09-14, from the document's properties"
    assert (hits["lamps.docx"].date, hits["lamps.docx"].currency) == (
        "2026-10-09",
        "modified 2026-10-09",
    )
    assert (hits["paint.odt"].date, hits["paint.odt"].dated) == ("2026-07-21", "properties")
    with WorkspaceIndex(pdf, extraction=NO_OCR) as index:
        tides = hits_by_path(index, "tide tables")["tides.pdf"]
    assert (tides.date, tides.dated) == ("2026-08-03", "properties")


def _odt_saved_on(path: Path, stamp: str) -> Path:
    from odf import dc, meta, text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    document.meta.addElement(dc.Date(text=stamp))  # when it was last saved
    document.meta.addElement(meta.CreationDate(text="2026-01-05T08:00:00"))
    document.text.addElement(text.P(text="The quay lamps were painted green."))
    document.save(str(path))
    return path


def _pdf_made_on(path: Path, made: datetime) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(made)
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Tide tables for the harbour approaches.")
    path.parent.mkdir(parents=True)
    pdf.output(str(path))
    saved(path)


def test_a_date_later_than_the_file_is_taken_only_when_nothing_else_is_stated(
    tmp_path: Path,
) -> None:
    root = tmp_path / "w"
    saved(
        write(
            root,
            "plan.md",
            "# Ferry plan\n\nEffective: 1 March 2027\n\nWritten 5 October 2026 by the harbour "
            "office.\n\nThe ferry plan adds a noon crossing.\n",
        )
    )
    saved(write(root, "timetable.md", "# Timetable\n\nEffective: 1 March 2027\n\nFerry at noon.\n"))
    with WorkspaceIndex(root, extraction=NO_OCR) as index:
        hits = hits_by_path(index, "ferry noon")
    assert (hits["plan.md"].date, hits["plan.md"].dated) == ("2026-10-05", "title")
    assert (hits["timetable.md"].date, hits["timetable.md"].dated) == ("2027-03-01", "label")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "---\ntitle: Memo\ndate: 2026-03-14T10:00:00\n---\n# Memo\n\nUpdated 2026-05-01\n",
            [("2026-03-14", How.FRONT_MATTER), ("2026-05-01", How.LABEL)],
        ),
        (
            "# Annual report\n\nCovering 1 January 2025 to 31 December 2025\n\n"
            "Date: 3 March 2026\n",
            [("2026-03-03", How.LABEL), ("2025-01-01", How.TITLE)],
        ),
        (
            "# Notes\n\n" + "Nothing yet.\n\n" * 8 + "Version 3 was approved on 4 May 2026.\n",
            [("2026-05-04", How.LABEL)],
        ),
        (
            "# Notes\n\n" + "Nothing yet.\n\n" * 8 + "The board approved it on 4 May 2026.\n",
            [("2026-05-04", How.TEXT)],
        ),
        ("# Notes\n\n" + "Nothing yet.\n\n" * 14 + "We met on 4 May 2026.\n", []),
    ],
)
def test_the_dates_a_text_gives_itself_best_first(
    text: str, expected: list[tuple[str, How]]
) -> None:
    found = stated_dates(extract("memo.md", text.encode()).lines)
    assert [(date.date, date.how) for date in found] == expected


def test_the_chosen_date_is_no_later_than_the_files_own_timestamps() -> None:
    october = int(SAVED * 1e9)
    delivery = DocumentDate("2027-02", How.LABEL)
    meeting = DocumentDate("2026-10-02", How.TITLE)
    assert chosen((delivery, meeting), october) == meeting
    assert chosen((delivery,), october) == delivery  # nothing else is stated
    assert chosen((DocumentDate("2026-10-30", How.LABEL),), october).date == "2026-10-30"
    # Properties saved later than the file's own time vouch for a date up to theirs.
    stamped = DocumentDate("2027-03-01", How.PROPERTIES)
    assert chosen((delivery, stamped), october) == delivery
    assert chosen((), october) == DocumentDate("2026-10-09", How.MODIFIED)


def test_of_a_series_named_by_year_the_later_year_is_the_newer_whatever_the_dates() -> None:
    # The 2022 report states no date, so its date is its file's timestamp: today.
    found = superseded(
        [
            Dated("finance/annual-report-2022.md", "Annual Report 2022", "2026-12-06", 3),
            Dated("finance/annual-report-2023.md", "Annual Report 2023", "2024-03-01", 1),
            Dated("finance/annual-report-2024.md", "Annual Report 2024", "2025-03-01", 2),
        ]
    )
    assert set(found) == {"finance/annual-report-2022.md", "finance/annual-report-2023.md"}
    assert "annual-report-2024.md is a newer version" in found["finance/annual-report-2022.md"]
