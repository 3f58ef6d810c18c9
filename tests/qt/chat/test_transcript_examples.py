"""Every CommonMark spec example, and GitHub's extensions, rendered in the real transcript.

Each example is shown the three ways the window writes a message — a conversation opened whole, a
message added, a reply streamed — and what the person then has in front of them is checked: nothing
was loaded, every link left is the app's own or a web address (anything else is text, its target
shown), no tooltip is markup, and the document lays out. The examples are in ``markdown_examples/``
(see its README for where they come from).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from pytestqt.qtbot import QtBot

from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.inert import is_web_link
from tests.qt.chat.recording_view import RecordingView
from tests.qt.transcript_links import anchors, tooltips

EXAMPLES = Path(__file__).parent / "markdown_examples"
WAIT_MS = 10_000


def examples(name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return loaded


def check(view: RecordingView, where: str) -> None:
    view.document().size()  # laid out
    view.grab()  # and painted
    assert view.requests == [], where
    for anchor in anchors(view.document()):
        url = QUrl(anchor.href)
        assert view.links.parse(url) is not None or is_web_link(url), (where, anchor)
    for tip in tooltips(view.document()):
        assert tip.startswith("<p>") and "<img" not in tip and "<a " not in tip, (where, tip)


@pytest.mark.parametrize("name", ["gfm-extensions.json"])
def test_every_example_renders_inert_in_every_way_the_window_writes(
    qtbot: QtBot, name: str
) -> None:
    view = RecordingView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    qtbot.waitExposed(view)
    for example in examples(name):
        markdown, where = example["markdown"], f"{name} example {example['example']}"
        view.show_messages([ChatMessage("you", "Show me."), ChatMessage("assistant", markdown, 1)])
        check(view, f"{where}, opened")
        view.add_message(ChatMessage("asked", markdown))
        check(view, f"{where}, added")
        view.begin_live("Thinking…")
        renders = view.renders
        half = len(markdown) // 2
        view.append_text(markdown[:half])
        view.append_text(markdown[half:])
        qtbot.waitUntil(lambda renders=renders: view.renders > renders, timeout=WAIT_MS)
        check(view, f"{where}, streamed")
        view.end_live(ChatMessage("assistant", markdown, 2))
        check(view, f"{where}, finished")


def test_links_that_are_not_web_addresses_are_text_with_their_target_shown(
    qtbot: QtBot,
) -> None:
    view = RecordingView()
    qtbot.addWidget(view)
    hostile = (
        "[run](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) "
        "[file](file:///etc/passwd) [mail](mailto:x@example.org) [rel](../secret) "
        "[**bold** and *it*](javascript:void(0)) <mailto:y@example.org> z@example.org "
        "[web](https://example.org/page)"
    )
    view.show_messages([ChatMessage("assistant", hostile, 1)])
    check(view, "hostile links")
    linked = {anchor.text: anchor.href for anchor in anchors(view.document())}
    assert linked.get("web") == "https://example.org/page"
    for text in ("run", "data", "file", "mail", "rel", "bold", "y@example.org", "z@example.org"):
        assert not any(text in shown for shown in linked), (text, linked)
    plain = view.toPlainText()
    assert "run (javascript:alert(1))" in plain
    assert "data (data:text/html;base64,PHNjcmlwdD4=)" in plain
    assert "file (file:///etc/passwd)" in plain
    assert "mail (mailto:x@example.org)" in plain
    assert "rel (../secret)" in plain
    assert "bold and it (javascript:void(0))" in plain  # once, after the whole link
    assert plain.count("javascript:void(0)") == 1
    assert "y@example.org" in plain and "(mailto:y@example.org)" not in plain  # it says itself
    # Not drawn as a link either: no underline where the text was a link.
    block = view.document().begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            if "run" in fragment.text() or "javascript" in fragment.text():
                assert not fragment.charFormat().fontUnderline(), fragment.text()
            fragments += 1
        block = block.next()
