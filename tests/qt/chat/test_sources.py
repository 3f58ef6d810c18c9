"""Sources open where they are cited, in Imprint's own viewer; nothing the model wrote runs.

Every test drives the real window (real bridge, engine thread, workspace index) with a scripted
model. What leaves Imprint for the system is watched at its one door: ``QDesktopServices`` with a
URL handler installed for the schemes a test cares about.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication
from pytestqt.qtbot import QtBot

from imprint_desktop.core import resources
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.document_viewer import LINE_CHARS, SourceViewer, cited_lines
from imprint_desktop.ui.main_window import MainWindow
from tests.qt.research_harness import ask, open_window, search, type_question, write_corpus
from tests.qt.transcript_links import anchors, click_link
from tests.support.scripted_provider import Step

WAIT_MS = 10_000
GANNET = "\n".join(
    [
        "# Gannet Point",
        "",
        "The station stands on the north cliff.",
        "Its lamp was first lit in 1871.",
        "",
        "## Log",
        "",
        "In March the keeper logged a cormorant",
        "nesting under the gallery rail,",
        "and moved the oil store to the east shed.",
        "",
        "The relief boat came twice that spring.",
        "",
    ]
)


class Opened(QObject):
    """Stands in for the system at QDesktopServices' door: records what would have opened."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


@pytest.fixture
def system() -> Iterator[Opened]:
    opened = Opened()
    schemes = ("file", "http", "https")
    for scheme in schemes:
        QDesktopServices.setUrlHandler(scheme, opened, "open")
    yield opened
    for scheme in schemes:
        QDesktopServices.unsetUrlHandler(scheme)


def viewer_of(qtbot: QtBot, window: MainWindow) -> SourceViewer:
    qtbot.waitUntil(lambda: window.viewer is not None and window.viewer.loaded, timeout=WAIT_MS)
    viewer = window.viewer
    assert viewer is not None and viewer.isVisible()
    return viewer


def first_highlight_visible(viewer: SourceViewer) -> bool:
    text = viewer.view
    block = text.document().begin()
    while block.isValid() and block.blockFormat().background().style() == Qt.BrushStyle.NoBrush:
        block = block.next()
    assert block.isValid(), "nothing is highlighted"
    top_left = text.blockBoundingGeometry(block).translated(text.contentOffset()).topLeft()
    return text.viewport().rect().contains(top_left.toPoint())


def test_a_citation_opens_the_cited_lines_from_the_conversations_own_workspace(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    first = write_corpus(tmp_path / "first")
    (first / "stations").mkdir()
    long_text = "A line of the preface.\n" * 120 + GANNET + "\n" * 40  # the passage is far down
    (first / "stations/gannet-point.md").write_text(long_text, encoding="utf-8")
    second = tmp_path / "second"
    (second / "stations").mkdir(parents=True)
    (second / "stations/gannet-point.md").write_text("A decoy.\n" * 60, encoding="utf-8")
    store.set("workspace.path", str(first))
    script = [Step(calls=[search("cormorant")]), Step("A cormorant nested there [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    index = window.session.last_answer_index()
    (cited,) = [item for item in window.transcript.messages[index].evidence if item.id == 1]
    assert cited.source == "stations/gannet-point.md"
    span = cited_lines(cited.location)
    assert span is not None
    expected = long_text.splitlines()[span[0] - 1 : span[1]]
    assert any("cormorant" in line for line in expected)

    store.set("workspace.path", str(second))  # the person moves on to another folder
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert viewer.windowTitle() == "stations/gannet-point.md"
    assert viewer.highlighted_lines() == expected
    assert "decoy" not in viewer.view.toPlainText()
    assert first_highlight_visible(viewer)
    assert viewer.view.hasFocus()
    current = window.panel.evidence.currentItem()
    assert current is not None and current.text().startswith("[1] stations/gannet-point.md")
    viewer.close()

    # After a restart the conversation still opens its sources from its own folder.
    window.close()
    again = open_window(qtbot, store).window
    qtbot.waitUntil(lambda: again.conversations.list.count() == 1, timeout=WAIT_MS)
    with qtbot.waitSignal(again.bridge.sig_conversation_loaded, timeout=WAIT_MS):
        again.conversations.list.setCurrentRow(0)
    click_link(qtbot, again.transcript, "[1]")
    viewer = viewer_of(qtbot, again)
    assert viewer.highlighted_lines() == expected
    viewer.close()

    # An evidence row of that reply opens from the same folder as well.
    again.panel.evidence.setFocus()
    again.panel.evidence.setCurrentRow(0)
    qtbot.keyClick(again.panel.evidence, Qt.Key.Key_Return)
    assert "decoy" not in viewer_of(qtbot, again).view.toPlainText()


def test_a_citation_in_the_reply_still_being_written_opens_its_source(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    store.set("workspace.path", str(write_corpus(tmp_path / "corpus")))
    script = [
        Step(calls=[search("quokka")]),
        Step("A quokka was seen [1].", calls=[ask("Which pier do you mean?")]),
        Step("The old pier [1]."),
    ]
    window = open_window(qtbot, store, script).window
    type_question(qtbot, window, "Anything unusual?")
    qtbot.waitUntil(window.card.isVisible, timeout=WAIT_MS)  # research waits for the person
    qtbot.waitUntil(lambda: "A quokka was seen" in window.transcript.toPlainText(), timeout=WAIT_MS)
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert viewer.windowTitle() == "deep/gamma.md"
    assert any("quokka" in line for line in viewer.highlighted_lines())
    viewer.close()
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        qtbot.keyClicks(window.card.answer, "The old one")
        qtbot.keyClick(window.card.answer, Qt.Key.Key_Return)


def test_an_evidence_row_for_a_script_opens_in_imprints_viewer_not_the_system(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, system: Opened
) -> None:
    root = write_corpus(tmp_path / "corpus")
    (root / "tools").mkdir()
    script_text = "@echo off\r\nREM the pelican ledger is kept here\r\nstart calc.exe\r\n"
    (root / "tools/run.cmd").write_bytes(script_text.encode())
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("pelican")]), Step("The ledger [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    evidence = window.panel.evidence
    evidence.setFocus()
    evidence.setCurrentRow(0)
    assert "tools/run.cmd" in evidence.currentItem().text()
    qtbot.keyClick(evidence, Qt.Key.Key_Return)

    viewer = viewer_of(qtbot, window)
    assert viewer.windowTitle() == "tools/run.cmd"
    assert "start calc.exe" in viewer.view.toPlainText()  # shown as text
    assert not viewer.web_button.isVisible()
    assert any("pelican" in line for line in viewer.highlighted_lines())
    assert not viewer.system_button.isVisible()  # a script never goes to the system
    assert system.urls == []


def test_a_pdf_shows_its_page_text_and_may_open_in_the_system_viewer(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, system: Opened
) -> None:
    root = tmp_path / "reports"
    root.mkdir()
    pdf = root / "report.pdf"
    shutil.copy(resources.resource("sample-workspace") / "reports/annual-report-1998.pdf", pdf)
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("generator fault batteries")]), Step("A fault [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert viewer.source is not None and len(viewer.source.page_starts) >= 2
    assert "generator" in " ".join(viewer.highlighted_lines()).lower()
    assert system.urls == []  # nothing goes to the system by itself
    assert viewer.system_button.isVisible()
    qtbot.mouseClick(viewer.system_button, Qt.MouseButton.LeftButton)
    assert system.urls == [QUrl.fromLocalFile(str(pdf.resolve()))]


def test_links_the_model_writes_act_on_nothing_and_web_links_ask_first(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path, system: Opened
) -> None:
    store.set("workspace.path", str(write_corpus(tmp_path / "corpus")))
    # The corpus holds nothing on the question: the model's answer is still the reply.
    store.set("chat.answer_without_evidence", True)
    answer = (
        "Try [Copy](copy:1), [Research record](record:1), [the file](file:///etc/passwd), "
        "[a share](file://host/share/x.png) and [the site](https://example.org/a?b=1)."
    )
    window = open_window(qtbot, store, [Step(answer)]).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    view = window.transcript
    clipboard = QGuiApplication.clipboard()
    clipboard.setText("what was there before")

    # A link that is not a web address is not a link at all: its text, then where it points.
    hrefs = {anchor.href for anchor in anchors(view.document())}
    assert not hrefs & {"copy:1", "record:1", "file:///etc/passwd", "file://host/share/x.png"}
    shown = view.toPlainText()
    for text in (
        "Copy (copy:1)",
        "Research record (record:1)",
        "the file (file:///etc/passwd)",
        "a share (file://host/share/x.png)",
    ):
        assert text in shown
    assert clipboard.text() == "what was there before"
    assert system.urls == []

    click_link(qtbot, view, "the site")
    box = window.opener.link_box
    assert box is not None and box.isVisible()
    assert "https://example.org/a?b=1" in box.text() and "example.org" in box.text()
    assert system.urls == []  # asking is not opening
    (open_button,) = [b for b in box.buttons() if b.text() == "&Open in Browser"]
    qtbot.mouseClick(open_button, Qt.MouseButton.LeftButton)
    assert system.urls == [QUrl("https://example.org/a?b=1")]

    # The app's own links, right beside them, still work.
    index = window.session.last_answer_index()
    click_link(qtbot, view, "Copy", occurrence=1)  # the answer's own (0 is the question's)
    assert clipboard.text() == window.transcript.messages[index].text
    with qtbot.waitSignal(window.bridge.sig_trace_loaded, timeout=WAIT_MS):
        click_link(qtbot, view, "Research record", occurrence=0)
    assert window.opener.record is not None
    window.opener.record.close()


def test_a_note_with_a_megabyte_line_opens_at_once_with_its_lines_numbered(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    root = write_corpus(tmp_path / "corpus")
    image = "iVBORw0K" * 131_072  # a megabyte of base64: an image embedded in a note
    note = f"# Chart note\n\nThe albatross count rose.\n\n![chart](data:image/png;base64,{image})\n"
    (root / "chart.md").write_text(note + "\nThe end of the albatross note.\n", encoding="utf-8")
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("albatross")]), Step("The count rose [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    document = viewer.view.document()
    lines = (note + "\nThe end of the albatross note.\n").splitlines()
    assert document.blockCount() == len(lines)  # numbered as the document is
    longest = max(len(document.findBlockByNumber(n).text()) for n in range(len(lines)))
    assert longest <= LINE_CHARS + 80  # the megabyte line is not laid out whole
    assert "more characters on this line" in viewer.view.toPlainText()
    assert document.findBlockByNumber(len(lines) - 1).text() == lines[-1]
    viewer.view.grab()


def test_a_cited_pdf_is_parsed_outside_the_windows_process(
    qtbot: QtBot,
    store: SettingsStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "reports"
    root.mkdir()
    shutil.copy(
        resources.resource("sample-workspace") / "reports/annual-report-1998.pdf",
        root / "report.pdf",
    )
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("generator fault batteries")]), Step("A fault [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")

    def in_this_process(data: bytes, stem: str) -> object:
        raise AssertionError("a PDF was parsed in the window's process")

    # The PDF reader is looked up when a PDF is read; the worker process has its own copy.
    pdf_module = importlib.import_module("imprint_desktop.core.workspace.formats.pdf")
    monkeypatch.setattr(pdf_module, "read_pdf", in_this_process)
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert viewer.source is not None and viewer.source.path is not None, viewer.note.text()
    assert "generator" in " ".join(viewer.highlighted_lines()).lower()


def test_a_cited_file_that_became_a_link_is_not_followed(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    root = write_corpus(tmp_path / "corpus")
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("quokka")]), Step("A quokka [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Anything unusual?")
    # After the answer, the cited folder is swapped for a link to another folder of the workspace.
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "gamma.md").write_text("# Swapped\n\nA quokka, said the swapped file.\n")
    shutil.rmtree(root / "deep")
    (root / "deep").symlink_to(elsewhere, target_is_directory=True)
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert "swapped file" not in viewer.view.toPlainText()
    assert "link" in viewer.note.text() and viewer.source is not None
    assert viewer.source.path is None  # the excerpt saved with the evidence is shown instead


def test_a_cited_file_whose_name_is_not_utf8_opens_whole(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    """The index keeps such a name in its text form ("caf:E9.md"); the viewer reads the file the
    form stands for, not a file of that literal name."""
    root = tmp_path / "share"
    root.mkdir()
    odd = root / os.fsdecode(b"caf\xe9.md")  # the name as the OS gives it (surrogateescape)
    odd.write_bytes(b"# Cafe\n\nThe wombat cafe opened in 1931.\n")
    store.set("workspace.path", str(root))
    script = [Step(calls=[search("wombat cafe")]), Step("It opened in 1931 [1].")]
    window = open_window(qtbot, store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "When did the cafe open?")
    click_link(qtbot, window.transcript, "[1]")
    viewer = viewer_of(qtbot, window)
    assert viewer.source is not None and viewer.source.path is not None, viewer.note.text()
    assert "wombat" in " ".join(viewer.highlighted_lines()).lower()
