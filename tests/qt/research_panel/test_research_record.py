"""The final stage, exports, saved traces, and the toolbar's model and workspace choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.research import events as ev
from imprint_desktop.settings.store import SettingsStore
from tests.qt.research_harness import open_window, search, type_question
from tests.support.research_run import research_then_final
from tests.support.scripted_provider import Step

WAIT_MS = 10_000


@pytest.fixture
def research_store(research_store: SettingsStore) -> SettingsStore:
    research_store.set("chat.research_no_progress_rounds", 2)
    return research_store


def test_patience_runs_out_and_the_final_stage_is_shown_apart(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    script = research_then_final(
        lambda n: Step(calls=[search("granite")]), "From what was found: granite [1]."
    )
    window = open_window(qtbot, research_store, script).window
    panel = window.panel
    during_final: list[tuple[bool, str, str]] = []
    warned: list[bool] = []

    def watch(payload: p.ReplyEvent) -> None:
        if isinstance(payload.event, ev.FinalStarted):
            during_final.append(
                (
                    panel.final_began,
                    panel.final_text.text(),
                    panel.now_label.text(),
                )
            )
        elif isinstance(payload.event, ev.BudgetUpdate):
            warned.append(panel.patience_bar.warn)

    window.bridge.sig_reply_event.connect(watch)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        type_question(qtbot, window, "What is the wall made of?")
    assert ended.args[0].result.stop_reason == "no_progress"
    ((visible, allowance, now),) = during_final
    assert visible and "2,048 tokens" in allowance and "120 s" in allowance
    assert now == "Writing the final answer…"
    assert any(warned)  # the patience bar warns before it runs out
    assert panel.stop_label.text() == "Research stopped: recent rounds found no new evidence."
    assert panel.final_text.text().startswith("Done in")
    assert "From what was found: granite" in window.transcript.toPlainText()


def test_export_and_trace_files(
    qtbot: QtBot, research_store: SettingsStore, tmp_path: Path
) -> None:
    script = [Step(calls=[search("quokka")]), Step("A quokka was seen [1].")]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        type_question(qtbot, window, "Which animal was seen?")
    conversation = window.session.conversation_id
    assert conversation is not None

    exported = tmp_path / "conversation.md"
    with qtbot.waitSignal(window.bridge.sig_file_saved, timeout=WAIT_MS):
        window.bridge.export_conversation(conversation, exported)
    text = exported.read_text(encoding="utf-8")
    assert "## Which animal was seen?" in text
    # The answer, then its one Sources block.
    assert "A quokka was seen [1].\n\nSources:\n- [1] deep/gamma.md, lines" in text
    assert text.count("Sources") == 1

    trace = tmp_path / "trace.jsonl"
    stored = ended.args[0].stored_id
    with qtbot.waitSignal(window.bridge.sig_file_saved, timeout=WAIT_MS):
        window.bridge.load_trace(stored, save_to=trace)
    kinds = [json.loads(line)["type"] for line in trace.read_text(encoding="utf-8").splitlines()]
    assert kinds[0] == "run_start"
    assert "tool" in kinds and "stop" in kinds


def test_choosing_a_workspace_indexes_it_with_visible_progress(
    qtbot: QtBot, research_store: SettingsStore, tmp_path: Path
) -> None:
    window = open_window(qtbot, research_store).window
    folder = tmp_path / "other"
    for number in range(30):
        (folder / f"n{number}").mkdir(parents=True)
        (folder / f"n{number}" / "doc.md").write_text(f"# Note {number}\n\nText {number}.\n")
    shown: list[bool] = []

    def progress(status: p.IndexStatus) -> None:
        if status.outcome is None:
            shown.append(window.toolbar_row.index_bar.isVisible())

    window.bridge.sig_index_progress.connect(progress)
    with qtbot.waitSignal(
        window.bridge.sig_index_progress,
        timeout=WAIT_MS,
        check_params_cb=lambda status: status.outcome is p.Outcome.FINISHED,
    ):
        research_store.set("workspace.path", str(folder))
    assert shown and all(shown)
    # The passages' vectors are filled in the background after the files: then the bar goes.
    qtbot.waitUntil(lambda: not window.toolbar_row.index_bar.isVisible(), timeout=WAIT_MS)
    assert window.toolbar_row.workspace.text() == "Workspace: other"


def test_choosing_a_model_in_the_toolbar_loads_it(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    window = open_window(qtbot, research_store).window
    picker = window.toolbar_row.model
    remote = next(i for i in range(picker.count()) if picker.itemText(i).startswith("Remote"))
    with qtbot.waitSignal(
        window.bridge.sig_model_status,
        timeout=WAIT_MS,
        check_params_cb=lambda status: status.state is p.ModelState.READY,
    ):
        picker.activated.emit(remote)
    assert research_store.get("model.provider") == "remote"
    assert window.toolbar_row.model_state.text() == "ready"


def test_evidence_opens_the_document_at_the_cited_lines(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    from PySide6.QtCore import Qt

    script = [Step(calls=[search("quokka")]), Step("A quokka [1].")]
    window = open_window(qtbot, research_store, script).window
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Which animal?")
    evidence = window.panel.evidence
    evidence.setFocus()
    evidence.setCurrentRow(0)
    qtbot.keyClick(evidence, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.viewer is not None and window.viewer.loaded, timeout=WAIT_MS)
    viewer = window.viewer
    assert viewer is not None and viewer.isVisible()
    assert viewer.windowTitle() == "deep/gamma.md"
    assert "quokka" in " ".join(viewer.highlighted_lines())
    viewer.close()


def test_the_remote_server_test_reports_in_words(
    qtbot: QtBot, research_store: SettingsStore, memory_keyring: object
) -> None:
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer(api_key="right") as server:
        research_store.update({"remote.base_url": server.base_url})
        window = open_window(qtbot, research_store).window
        with qtbot.waitSignal(window.bridge.sig_connection_tested, timeout=WAIT_MS) as wrong:
            window.bridge.test_connection()
        assert not wrong.args[0].ok
        assert "asks for an API key (401)" in window.banner.text.text()
        assert "Preferences → Remote server" in window.banner.text.text()

        from imprint_desktop.settings.secrets import SecretStore

        SecretStore().set("remote.api_key", "wrong")
        with qtbot.waitSignal(window.bridge.sig_connection_tested, timeout=WAIT_MS) as refused:
            window.bridge.test_connection()
        assert not refused.args[0].ok
        assert "said the API key is invalid (401)" in window.banner.text.text()

        SecretStore().set("remote.api_key", "right")
        with qtbot.waitSignal(window.bridge.sig_connection_tested, timeout=WAIT_MS) as right:
            window.bridge.test_connection()
        assert right.args[0].ok and server.base_url in right.args[0].message


def test_a_chosen_workspace_is_embedded_in_the_background_with_progress(
    qtbot: QtBot, research_store: SettingsStore, tmp_path: Path
) -> None:
    window = open_window(qtbot, research_store).window
    folder = tmp_path / "other"
    for number in range(5):
        write = folder / f"n{number}.md"
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(f"# Note {number}\n\nThe harbour lamp number {number}.\n")
    root = str(folder.resolve())
    shown: list[str] = []

    def progress(status: p.IndexStatus) -> None:
        if status.root == root and status.stage is p.IndexStage.MEANING and not status.outcome:
            shown.append(window.toolbar_row.index_bar.format())

    window.bridge.sig_index_progress.connect(progress)
    with qtbot.waitSignal(
        window.bridge.sig_index_progress,
        timeout=WAIT_MS,
        check_params_cb=lambda status: (
            status.root == root
            and status.stage is p.IndexStage.MEANING
            and status.outcome is not None
        ),
    ) as ended:
        research_store.set("workspace.path", str(folder))
    status = ended.args[0]
    assert (status.outcome, status.done, status.message) == (p.Outcome.FINISHED, 5, "")
    assert shown and shown[0] == "Indexing 2/2 · search by meaning: 0 of 5 passages"
    qtbot.waitUntil(lambda: not window.toolbar_row.index_bar.isVisible(), timeout=WAIT_MS)
