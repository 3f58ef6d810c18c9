"""Each reply keeps the folder it researched, so its citations open from there later."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from imprint_desktop.core.history import SCHEMA, HistoryStore
from imprint_desktop.core.research import events as ev
from tests.support.settings import make_config


def started(workspace: Path) -> ev.ReplyStarted:
    return ev.ReplyStarted(0.0, "q", make_config({"workspace.path": str(workspace)}), "scripted")


def test_a_reply_keeps_the_workspace_it_started_with(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    store = HistoryStore(tmp_path / "history.sqlite3")
    conversation = store.create_conversation("c")
    store.start_reply(conversation, "q")(started(first))
    given = store.start_reply(conversation, "q", workspace=second)
    given(started(first))  # what start_reply was told wins
    store.start_reply(conversation, "q")(started(tmp_path / "gone"))
    assert [reply.workspace for reply in store.replies(conversation)] == [
        str(first),
        str(second),
        None,  # a folder that does not exist is not a workspace: nothing is claimed
    ]
    store.close()
    reopened = HistoryStore(tmp_path / "history.sqlite3")
    assert reopened.reply(1).workspace == str(first)
    reopened.close()


def test_a_history_from_before_gains_the_column_and_reads_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    old_schema = SCHEMA.replace(",\n    workspace TEXT", "\n    -- TEXT")
    assert "workspace" not in old_schema
    with sqlite3.connect(path) as db:
        db.executescript(old_schema)
        db.execute("INSERT INTO conversations (title, created, updated) VALUES ('old', 0, 0)")
        db.execute(
            "INSERT INTO replies (conversation_id, question, status, started) "
            "VALUES (1, 'q', 'finished', 0)"
        )
    db.close()
    store = HistoryStore(path)
    (reply,) = store.replies(1)
    assert reply.workspace is None
    store.close()
