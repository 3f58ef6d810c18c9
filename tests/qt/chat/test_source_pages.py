"""A cited PDF opens as its page, the quoted sentence marked there, the text one click away.

The window is real (bridge, engine thread, workspace index, scripted model) and so is the reader's
worker process that draws the pages; the PDFs are written by fpdf2 in the test.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton
from pytestqt.qtbot import QtBot

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.pdf_page import MAX_PIXELS, MIN_SCALE
from imprint_desktop.core.workspace.isolation import ExtractionLimits
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.document_viewer import SourceViewer, citing_sentences, quoted_sentence
from imprint_desktop.ui.chat.page_view import ACTUAL_SIZE, ZOOM_STEP, PageFailure, PageView
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import open_window, search, type_question
from tests.qt.transcript_links import click_link
from tests.support.documents import docx_file, scanned_image
from tests.support.pdf_pages import SENTENCE, hanging_renderer, huge_page_pdf, two_page_pdf
from tests.support.scripted_provider import Step

WAIT_MS = 15_000
needs_tesseract = pytest.mark.skipif(
    not ocr.tesseract_installed(), reason="the tesseract program is not installed"
)


def page_view_of(qtbot: QtBot, window: MainWindow) -> tuple[SourceViewer, PageView]:
    qtbot.waitUntil(lambda: window.viewer is not None and window.viewer.loaded, timeout=WAIT_MS)
    viewer = window.viewer
    assert viewer is not None and viewer.isVisible()
    page_view = viewer.page_view
    assert page_view is not None, viewer.note.text()
    qtbot.waitUntil(lambda: page_view.shown is not None, timeout=WAIT_MS)
    return viewer, page_view


def shown_page(qtbot: QtBot, page_view: PageView, page: int) -> None:
    """Wait until ``page`` is shown at the zoom last asked for."""

    def drawn() -> None:
        shown = page_view.shown
        assert shown is not None, page_view.status.text()
        assert page_view.settled, page_view.status.text()
        assert shown.page == page_view.page == page

    qtbot.waitUntil(drawn, timeout=WAIT_MS)


def cited_in_the_window(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> tuple[SourceViewer, PageView]:
    """Ask the real window, click the citation of the passage on page 2: its viewer, drawn."""
    root = tmp_path / "logs"
    root.mkdir()
    two_page_pdf(root / "gannet-log.pdf")
    store.set("workspace.path", str(root))
    answer = "A cormorant nested under the gallery rail [1][2]. The light was lit [1]."
    script = [Step(calls=[search("cormorant nesting gallery rail")]), Step(answer)]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "What nested at the light?")
    evidence = window.transcript.messages[window.session.last_answer_index()].evidence
    (cited,) = [item for item in evidence if item.location.startswith("page 2,")]
    assert SENTENCE in cited.excerpt and cited.excerpt.index(SENTENCE) > 0  # within a passage
    click_link(qtbot, window.transcript, f"[{cited.id}]")
    viewer, page_view = page_view_of(qtbot, window)
    assert viewer.quoted == SENTENCE  # the passage's sentence the answer drew on
    return viewer, page_view


def test_a_cited_pdf_opens_at_its_page_with_the_sentence_marked_and_the_text_a_click_away(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    viewer, page_view = cited_in_the_window(qtbot, store, tmp_path)

    # The Page tab is in front, at page 2 of 3, fitted to the width, the sentence marked in view.
    assert viewer.tabs.currentWidget() is page_view and viewer.tabs.tabBar().isVisible()
    assert [viewer.tabs.tabText(i) for i in range(viewer.tabs.count())] == ["&Page", "&Text"]
    shown_page(qtbot, page_view, 2)
    assert page_view.page_count == 3 and page_view.page_total.text() == "of 3"
    assert page_view.page_box.value() == 2
    assert page_view.marks and page_view.mark_visible()
    assert not page_view.image.pixmap().isNull()
    page_width = page_view.image.boundingRect().width()
    room = page_view.canvas.viewport().width()
    assert room - 40 <= page_width <= room, (page_width, room)  # fitted to the width
    assert page_view.fit_button.isChecked()
    # The marks lie where the sentence is: near the top of page 2, one line or two tall.
    first = page_view.marks[0].rect()
    assert first.top() < page_view.image.boundingRect().height() / 4
    assert sum(mark.rect().height() for mark in page_view.marks) < 60
    assert page_view.shown is not None and page_view.shown.found == 0  # the quoted sentence

    # Every control has a key of its own (Alt and the underlined letter).
    keys = [viewer.tabs.tabText(i) for i in range(viewer.tabs.count())]
    keys += [button.text() for button in viewer.findChildren(QAbstractButton) if button.text()]
    letters = [text[text.index("&") + 1].lower() for text in keys if "&" in text]
    assert len(letters) >= 6 and len(set(letters)) == len(letters), keys

    # The text, one click away, with the cited lines highlighted as before.
    tab_bar = viewer.tabs.tabBar()
    qtbot.mouseClick(tab_bar, Qt.MouseButton.LeftButton, pos=tab_bar.tabRect(1).center())
    assert viewer.tabs.currentWidget() is viewer.view and viewer.view.isVisible()
    assert "cormorant" in " ".join(viewer.highlighted_lines())
    qtbot.mouseClick(tab_bar, Qt.MouseButton.LeftButton, pos=tab_bar.tabRect(0).center())
    assert viewer.tabs.currentWidget() is page_view and page_view.mark_visible()


def test_a_cited_pdfs_pages_turn_and_zoom(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    _, page_view = cited_in_the_window(qtbot, store, tmp_path)
    page_width = page_view.image.boundingRect().width()
    # Next, previous, a page number typed: the page turns and the mark is only on page 2.
    qtbot.mouseClick(page_view.next_button, Qt.MouseButton.LeftButton)
    shown_page(qtbot, page_view, 3)
    assert page_view.marks == [] and not page_view.next_button.isEnabled()
    qtbot.mouseClick(page_view.previous_button, Qt.MouseButton.LeftButton)
    shown_page(qtbot, page_view, 2)
    assert page_view.marks
    page_view.page_box.setValue(1)
    shown_page(qtbot, page_view, 1)
    assert not page_view.previous_button.isEnabled() and page_view.marks == []
    page_view.page_box.setValue(2)
    shown_page(qtbot, page_view, 2)

    # Zoom: + draws the page larger, the mark scaled with it; − smaller; Fit Width back.
    fitted, mark_width = page_view.scale, page_view.marks[0].rect().width()
    qtbot.mouseClick(page_view.zoom_in_button, Qt.MouseButton.LeftButton)
    shown_page(qtbot, page_view, 2)
    assert page_view.scale > fitted and not page_view.fit_button.isChecked()
    assert page_view.image.boundingRect().width() > page_width * 1.2
    assert page_view.marks[0].rect().width() > mark_width * 1.2
    assert page_view.zoom_label.text().endswith("%")
    qtbot.mouseClick(page_view.zoom_out_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(page_view.zoom_out_button, Qt.MouseButton.LeftButton)
    shown_page(qtbot, page_view, 2)
    assert page_view.scale < fitted
    qtbot.mouseClick(page_view.fit_button, Qt.MouseButton.LeftButton)
    shown_page(qtbot, page_view, 2)
    assert abs(page_view.scale - fitted) < 0.02 * fitted and page_view.mark_visible()


def first_page_of(qtbot: QtBot, viewer: SourceViewer) -> PageView:
    """Show ``viewer`` and wait for its first page drawn."""
    qtbot.addWidget(viewer)
    viewer.show()
    qtbot.waitUntil(lambda: viewer.page_view is not None, timeout=WAIT_MS)
    page_view = viewer.page_view
    assert page_view is not None
    shown_page(qtbot, page_view, 1)
    return page_view


def cited_item(reader: DocumentReader, pdf: Path) -> ev.EvidenceItemView:
    """Evidence citing the line of ``pdf`` that holds the start of SENTENCE, as search cites."""
    lines = reader.read(pdf.name, pdf.read_bytes()).lines
    number = next(n for n, line in enumerate(lines, start=1) if "cormorant" in line)
    return ev.EvidenceItemView(1, pdf.name, f"lines {number}-{number}", lines[number - 1])


def test_a_page_that_hangs_while_drawn_is_refused_with_its_reason_and_the_text_still_shows(
    qtbot: QtBot, tmp_path: Path
) -> None:
    pdf = two_page_pdf(tmp_path / "log.pdf")
    limits = ExtractionLimits(base_seconds=1.0, seconds_per_mb=0.0, renderer=hanging_renderer)
    with DocumentReader(limits) as reader:
        item = cited_item(reader, pdf)
        viewer = SourceViewer(item, tmp_path, max_bytes=2**24, reader=reader)
        qtbot.addWidget(viewer)
        viewer.show()
        with qtbot.waitSignal(viewer.sig_loaded, timeout=WAIT_MS):
            pass
        page_view = viewer.page_view
        assert page_view is not None
        with qtbot.waitSignal(page_view.sig_page_refused, timeout=WAIT_MS):
            pass
        assert page_view.status.isVisible()
        assert re.search(
            r"Page 2 cannot be shown: drawing its page 2 took longer than 1 s.*Text tab",
            page_view.status.text(),
        )
        assert page_view.shown is None and page_view.marks == []
        viewer.tabs.setCurrentIndex(1)
        assert "cormorant" in " ".join(viewer.highlighted_lines())
        viewer.close()


def test_a_huge_page_is_drawn_small_and_zooms_in_only_as_far_as_a_page_may_be_drawn(
    qtbot: QtBot, tmp_path: Path
) -> None:
    pdf = huge_page_pdf(tmp_path / "poster.pdf")
    with DocumentReader() as reader:
        item = cited_item(reader, pdf)
        viewer = SourceViewer(item, tmp_path, max_bytes=2**24, reader=reader)
        page_view = first_page_of(qtbot, viewer)
        assert page_view.scale == MIN_SCALE and page_view.marks  # at the least zoom, marked
        refused: list[PageFailure] = []
        page_view.sig_page_refused.connect(refused.append)
        presses = 0
        while page_view.zoom_in_button.isEnabled():
            qtbot.mouseClick(page_view.zoom_in_button, Qt.MouseButton.LeftButton)
            shown_page(qtbot, page_view, 1)
            presses += 1
        shown = page_view.shown
        assert shown is not None and refused == []
        assert presses >= 3 and shown.width * shown.height <= MAX_PIXELS
        assert shown.width * shown.height * ZOOM_STEP**2 > MAX_PIXELS  # one more: too large
        # Asked past that all the same, the worker refuses it; the page shown and its zoom stay.
        drawn_at = page_view.scale
        page_view.zoom_to(drawn_at * ZOOM_STEP * ZOOM_STEP)
        qtbot.waitUntil(lambda: bool(refused), timeout=WAIT_MS)
        assert "too large to draw at this size" in page_view.status.text()
        assert page_view.scale == drawn_at and page_view.settled
        assert page_view.zoom_label.text() == f"{drawn_at / ACTUAL_SIZE:.0%}"
        viewer.tabs.setCurrentIndex(1)
        assert SENTENCE[:20] in " ".join(viewer.highlighted_lines())
        viewer.close()


def test_a_stop_while_a_page_is_drawn_leaves_no_thread_waiting(
    qtbot: QtBot, tmp_path: Path
) -> None:
    pdf = two_page_pdf(tmp_path / "log.pdf")
    limits = ExtractionLimits(base_seconds=3600, renderer=hanging_renderer)
    stop = threading.Event()
    with DocumentReader(limits) as reader:
        item = cited_item(reader, pdf)
        viewer = SourceViewer(item, tmp_path, max_bytes=2**24, reader=reader, stop=stop)
        qtbot.addWidget(viewer)
        with qtbot.waitSignal(viewer.sig_loaded, timeout=WAIT_MS):
            viewer.show()
        qtbot.waitUntil(
            lambda: any(t.name == "source-page" for t in threading.enumerate()), timeout=WAIT_MS
        )
        stop.set()  # the window closes while the worker is stuck on the page
        qtbot.waitUntil(
            lambda: not any(t.name == "source-page" for t in threading.enumerate()),
            timeout=WAIT_MS,
        )
        viewer.close()


def test_the_sentence_marked_is_the_one_of_the_passage_the_answer_drew_on() -> None:
    answer = (
        "A cormorant nested under the rail [2]. The lamp dates from 1871 [1, 2]. "
        "Boats came twice [1].\n\nNothing else [12]."
    )
    assert citing_sentences(answer, 2) == [
        "A cormorant nested under the rail [2].",
        "The lamp dates from 1871 [1, 2].",
    ]
    assert citing_sentences(answer, 1) == [
        "The lamp dates from 1871 [1, 2].",
        "Boats came twice [1].",
    ]
    excerpt = "The second page begins with the log. " + SENTENCE + " The relief boat came twice."
    assert quoted_sentence(excerpt, citing_sentences(answer, 2)[:1]) == SENTENCE
    assert quoted_sentence(excerpt, ["Boats came twice [1]."]) == "The relief boat came twice."
    # Short words and numbers alone say nothing of which sentence is meant.
    assert quoted_sentence(excerpt, ["It was in 1871, a [2]."]) == ""
    assert quoted_sentence(excerpt, []) == ""


@needs_tesseract
def test_a_scanned_image_opens_as_its_picture_with_the_sentence_marked(
    qtbot: QtBot, tmp_path: Path
) -> None:
    scanned_image(tmp_path / "scan.png", ["The keeper's log.", SENTENCE, "Boats came."])
    item = ev.EvidenceItemView(1, "scan.png", "lines 2-2", SENTENCE)
    with DocumentReader() as reader:
        viewer = SourceViewer(item, tmp_path, max_bytes=2**24, reader=reader)
        page_view = first_page_of(qtbot, viewer)
        assert page_view.page_count == 1 and not page_view.next_button.isEnabled()
        assert len(page_view.marks) == 1 and page_view.mark_visible()
        viewer.close()


def test_a_document_without_pages_keeps_its_text_view_alone(qtbot: QtBot, tmp_path: Path) -> None:
    docx_file(tmp_path / "log.docx", "Log", [("", SENTENCE)])
    item = ev.EvidenceItemView(1, "log.docx", "lines 1-3", SENTENCE)
    with DocumentReader() as reader:
        viewer = SourceViewer(item, tmp_path, max_bytes=2**24, reader=reader)
        qtbot.addWidget(viewer)
        with qtbot.waitSignal(viewer.sig_loaded, timeout=WAIT_MS):
            viewer.show()
        assert viewer.page_view is None and viewer.tabs.count() == 1
        assert not viewer.tabs.tabBar().isVisible() and viewer.view.isVisible()
        assert any("cormorant" in line for line in viewer.highlighted_lines())
        viewer.close()
