"""Exports land where people keep files (issue 41, item 6): named after the conversation, in the
Documents folder the first time and then in the folder last used for that kind of file."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui import export_paths
from imprint_desktop.ui.export_paths import (
    CONVERSATION,
    MAX_STEM_BYTES,
    MAX_STEM_CHARACTERS,
    REPORT,
    TRACE,
    file_name,
    suggested_path,
)
from tests.qt.research_harness import open_window, search, type_question
from tests.support.scripted_provider import Step

WAIT_MS = 10_000


@pytest.mark.parametrize(
    ("title", "kind", "name"),
    [
        ("Which animal was seen?", CONVERSATION, "Which animal was seen.md"),
        ("Costs in 2025/26: north \\ south", CONVERSATION, "Costs in 2025 26 north south.md"),
        ('A "quoted" <tag> | pipe * star', REPORT, "A quoted tag pipe star - research record.html"),
        ("Harbour wall", TRACE, "Harbour wall - trace.jsonl"),
        ("CON", CONVERSATION, "CON (conversation).md"),
        ("lpt1.txt", CONVERSATION, "lpt1.txt (conversation).md"),
        ("Console", CONVERSATION, "Console.md"),
        (".bashrc", CONVERSATION, "bashrc.md"),
        ("Ends with dots...", CONVERSATION, "Ends with dots.md"),
        ("line\nbreak\ttab", CONVERSATION, "line break tab.md"),
        ("???", CONVERSATION, "conversation.md"),
        ("", REPORT, "research-record.html"),
        ("  ", TRACE, "imprint-trace.jsonl"),
    ],
)
def test_a_file_name_is_made_safe_from_the_title(
    title: str, kind: export_paths.ExportKind, name: str
) -> None:
    assert file_name(title, kind) == name


@pytest.mark.parametrize("word", ["harbour", "港湾施設の整備計画", "🌊🌊🌊"])
def test_a_long_title_is_cut_at_a_word_within_the_limits(word: str) -> None:
    name = file_name(" ".join([word] * 60), CONVERSATION)
    stem = name.removesuffix(".md")
    assert len(stem) <= MAX_STEM_CHARACTERS and len(stem.encode()) <= MAX_STEM_BYTES
    assert stem.startswith(word) and not stem.endswith(" ")
    if word == "harbour":
        assert stem.split(" ") == ["harbour"] * len(stem.split(" "))  # whole words only


def test_the_folder_offered_is_the_last_one_used_while_it_exists(tmp_path: Path) -> None:
    documents, last = tmp_path / "Documents", tmp_path / "exports"
    documents.mkdir()
    assert suggested_path(CONVERSATION, "Tides", "", str(documents)) == documents / "Tides.md"
    last.mkdir()
    assert suggested_path(CONVERSATION, "Tides", str(last), str(documents)) == last / "Tides.md"
    last.rmdir()
    assert (
        suggested_path(CONVERSATION, "Tides", str(last), str(documents)) == documents / "Tides.md"
    )
    documents.rmdir()
    assert suggested_path(REPORT, "Tides", "", str(documents)) == (
        Path.home() / "Tides - research record.html"
    )


class SaveDialog:
    """Stands for the person in the save dialog: notes where it opened, answers with a path."""

    def __init__(self) -> None:
        self.offered: list[Path] = []
        self.answers: list[Path] = []

    def __call__(
        self, parent: QWidget, caption: str, directory: str, filter: str
    ) -> tuple[str, str]:
        del parent, caption
        self.offered.append(Path(directory))
        return str(self.answers.pop(0)), filter


def test_exports_open_in_documents_then_where_that_kind_was_last_saved(
    qtbot: QtBot,
    research_store: SettingsStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "person"
    documents = home / "Documents"
    documents.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    dialog = SaveDialog()
    monkeypatch.setattr(export_paths.QFileDialog, "getSaveFileName", dialog)
    script = [Step(calls=[search("quokka")]), Step("A quokka was seen [1].")]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Which animal was seen?")
    qtbot.waitUntil(lambda: window.conversations.list.count() == 1, timeout=WAIT_MS)

    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    dialog.answers = [elsewhere / "animals.md", elsewhere / "again.md"]
    for _ in range(2):
        with qtbot.waitSignal(window.bridge.sig_file_saved, timeout=WAIT_MS):
            window.export_action.trigger()
    assert dialog.offered == [
        documents / "Which animal was seen.md",  # not "conversation.md" in the working directory
        elsewhere / "Which animal was seen.md",  # the folder last used
    ]
    assert (elsewhere / "animals.md").is_file() and (elsewhere / "again.md").is_file()

    # The record's report and trace are kinds of their own: Documents, until they are saved.
    with qtbot.waitSignal(window.bridge.sig_trace_loaded, timeout=WAIT_MS):
        qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    record = window.opener.record
    assert record is not None
    traces = tmp_path / "traces"
    traces.mkdir()
    dialog.answers = [traces / "t.jsonl", tmp_path / "r.html", tmp_path / "t2.jsonl"]
    with qtbot.waitSignal(window.bridge.sig_file_saved, timeout=WAIT_MS):
        record.save_button.click()
    record.export_button.click()
    qtbot.waitUntil(lambda: bool(record.saved.text()), timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_file_saved, timeout=WAIT_MS):
        record.save_button.click()
    assert dialog.offered[2:] == [
        documents / "Which animal was seen - trace.jsonl",
        documents / "Which animal was seen - research record.html",
        traces / "Which animal was seen - trace.jsonl",
    ]
    assert (traces / "t.jsonl").is_file() and (tmp_path / "r.html").is_file()
