"""Untrusted text is inert: the transcript and the labels load nothing and run nothing.

Answers, the model's questions, tool arguments and document text can carry Markdown images, raw
HTML and link titles. Qt would load what they name — ``file:///dev/zero`` never finishes loading and
freezes the window, ``file://host/share/x.png`` opens an SMB connection on Windows — so these tests
render hostile text the ways the window does and watch every resource request.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import Qt as QtGuiNamespace
from PySide6.QtGui import QTextDocument
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.conversations import ConversationsPane
from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.chat.question_card import QuestionCard
from imprint_desktop.ui.chat.toolbar import ResearchToolbar
from imprint_desktop.ui.chat.view import ChatView
from tests.qt.chat.recording_view import RecordingDocument, RecordingView
from tests.qt.transcript_links import anchors, tooltips

WAIT_MS = 10_000
ZERO = "file:///dev/zero"
SHARE = "file://host/share/x.png"
HOSTILE = "\n\n".join(
    [
        f"An image ![zero]({ZERO}) and a share ![share]({SHARE}).",
        '<img src="file:///dev/zero"> inline, and a block:',
        f'<div><img src="{SHARE}"><b>bold?</b></div>',
        "A reference image ![ref][target] and a web image ![web](http://127.0.0.1:9/w.png).",
        f"[target]: {ZERO}",
        f"A [titled link](https://example.org/page \"<img src='{ZERO}'>\") ends here [1].",
    ]
)


def requests_when_shown(
    text: str, text_format: Qt.TextFormat = Qt.TextFormat.AutoText
) -> list[str]:
    """What a label (or a tooltip, always AutoText) showing ``text`` would ask to load."""
    document = RecordingDocument()
    rich = text_format == Qt.TextFormat.RichText or (
        text_format == Qt.TextFormat.AutoText and QtGuiNamespace.mightBeRichText(text)
    )
    if rich:
        document.setHtml(text)
    else:
        document.setPlainText(text)
    document.setTextWidth(400)
    document.size()  # lays it out, as painting would
    return document.requests


def lay_out(qtbot: QtBot, view: ChatView) -> None:
    view.resize(700, 500)
    view.show()
    qtbot.waitExposed(view)
    view.document().size()
    view.grab()  # paints every visible line, images included


def test_hostile_markdown_loads_nothing_in_any_rendering_path(qtbot: QtBot) -> None:
    view = RecordingView()
    qtbot.addWidget(view)
    # A reopened conversation (one document, built whole) ...
    view.show_messages([ChatMessage("you", HOSTILE), ChatMessage("assistant", HOSTILE, 1)])
    # ... a message added to it, and a reply streamed paragraph by paragraph.
    view.add_message(ChatMessage("asked", HOSTILE))
    view.begin_live("Thinking…")
    for piece in HOSTILE.split(" "):
        view.append_text(piece + " ")
    view.append_text("\n\nStill writing")
    qtbot.waitUntil(lambda: "Still writing" in view.toPlainText(), timeout=WAIT_MS)
    lay_out(qtbot, view)
    assert view.requests == []
    view.end_live(ChatMessage("assistant", HOSTILE + "\n\nDone.", 2))
    lay_out(qtbot, view)

    assert view.requests == []
    text = view.toPlainText()
    assert "[image: zero]" in text and "[image: share]" in text and "[image: ref]" in text
    assert '<img src="file:///dev/zero">' in text  # raw HTML is shown as the text it is
    assert "<img" not in view.toHtml()
    for tip in tooltips(view.document()):
        assert requests_when_shown(tip) == []
    web = [a for a in anchors(view.document()) if a.text == "[image: web]"]
    assert web and web[0].href == "http://127.0.0.1:9/w.png"  # offered as a link, not loaded


def test_the_status_line_shows_tool_arguments_literally(qtbot: QtBot) -> None:
    view = RecordingView()
    qtbot.addWidget(view)
    view.begin_live("Starting…")
    view.set_live_status(f"Searching '![x]({ZERO}) <img src=\"{SHARE}\"> [a](copy:0)'…")
    qtbot.waitUntil(lambda: "Searching" in view.toPlainText(), timeout=WAIT_MS)
    lay_out(qtbot, view)
    assert view.requests == []
    assert f"![x]({ZERO})" in view.toPlainText()
    assert anchors(view.document()) == []


def test_the_transcript_hands_out_no_file(qtbot: QtBot, tmp_path: Path) -> None:
    picture = tmp_path / "pixel.png"
    picture.write_bytes(
        base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        )
    )
    view = ChatView()
    qtbot.addWidget(view)
    loaded = view.loadResource(
        QTextDocument.ResourceType.ImageResource.value, QUrl.fromLocalFile(str(picture))
    )
    assert not loaded and loaded is not None  # empty, and not None (Qt would read the file itself)


def test_labels_and_tooltips_show_untrusted_text_as_text(
    qtbot: QtBot, store: SettingsStore
) -> None:
    from imprint_desktop.core.history import ConversationSummary

    hostile = f'<img src="{ZERO}"> <b>x</b> &amp;'
    card = QuestionCard()
    qtbot.addWidget(card)
    card.ask(hostile)
    assert requests_when_shown(card.question.text(), card.question.textFormat()) == []
    assert hostile in card.question.text() or "&lt;img" in card.question.text()

    pane = ConversationsPane()
    qtbot.addWidget(pane)
    pane.show_list(p.ConversationList("", (ConversationSummary(7, hostile, 0.0, 1),)))
    item = pane.list.item(0)
    assert requests_when_shown(item.toolTip()) == []
    pane.list.setCurrentRow(0)
    pane.ask_delete()
    assert pane.delete_box is not None
    assert requests_when_shown(pane.delete_box.text(), pane.delete_box.textFormat()) == []
    assert hostile in pane.delete_box.text()
    pane.delete_box.reject()

    toolbar = ResearchToolbar(store, lambda: "model")
    qtbot.addWidget(toolbar)
    toolbar.show_model(p.ModelStatus(p.ModelState.FAILED, "model", hostile))
    toolbar.show_index(p.IndexStatus("/w", 1, 2, path=f"x{hostile}"))
    store.set("workspace.path", f"/tmp/{hostile}")
    toolbar.workspace.refresh()
    for tip in (
        toolbar.model_state.toolTip(),
        toolbar.index_bar.toolTip(),
        toolbar.workspace.toolTip(),
    ):
        assert requests_when_shown(tip) == [], tip


@pytest.mark.parametrize("title", ["a & b", "<i>not italic</i>", "line\nbreak"])
def test_escaped_tooltips_still_read_as_the_text(title: str) -> None:
    from imprint_desktop.ui.inert import tooltip

    document = QTextDocument()
    document.setHtml(tooltip(title))
    assert document.toPlainText() == title


def test_the_research_panels_now_line_shows_tool_arguments_as_text(qtbot: QtBot) -> None:
    from imprint_desktop.ui.research_panel.panel import ResearchPanel

    panel = ResearchPanel()
    qtbot.addWidget(panel)
    panel.set_now(f"Searching '<img src=\"{ZERO}\">'…")
    assert requests_when_shown(panel.now_label.text(), panel.now_label.textFormat()) == []
