"""Chat history: conversations, replies written as they happen, interrupted replies, and the folder
each reply researched (its citations open from there later)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from imprint_desktop.core.chosen import sample_workspace
from imprint_desktop.core.history import SCHEMA, HistoryStore
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.final import FALLBACK_LABEL
from tests.support.fake_tools import FakeTools, passage
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config, research_settings

ROOT = Path(__file__).resolve().parents[2]


def record_reply(store: HistoryStore, conversation: int, script: list[Step], question: str) -> None:
    recorder = store.start_reply(conversation, question)
    engine = ResearchEngine(
        ScriptedProvider(script), research_settings({"chat.research_first": False}), sink=recorder
    )
    tools = FakeTools(lambda name, values: passage(f"Evidence for {values['query']}."))
    asyncio.run(engine.run(question, tools, store.chat_messages(conversation)))


def test_conversations_and_replies_round_trip(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.sqlite3")
    first = store.create_conversation("Lighthouses")
    record_reply(
        store,
        first,
        [Step(calls=[("search_workspace", {"query": "keepers"})]), Step("Keepers rowed out [1].")],
        "Who kept the light?",
    )
    second = store.create_conversation("Fog signals")
    assert [c.title for c in store.conversations()] == ["Fog signals", "Lighthouses"]
    assert [c.id for c in store.conversations("KEPT the")] == [first]  # matches the question

    [reply] = store.replies(first)
    assert (reply.status, reply.stop_reason, reply.final_mode) == ("finished", "answered", "model")
    # The history keeps the answer and its sources apart, as the reply gave them.
    assert reply.answer == "Keepers rowed out [1]."
    assert reply.sources == (
        ev.SourceView(1, "doc.md", "lines 1-3", "", cited=True, excerpt="Evidence for keepers."),
    )
    # And what of the answer to check: "Keepers" is what the question asks about, no name.
    assert reply.grounding == ev.GroundingView(
        "unsupported",
        (
            ev.ClaimView(
                "Keepers rowed out.", (), "the answer gives no name, which the question asks for"
            ),
        ),
    )
    assert [item.id for item in reply.evidence] == [1]
    assert store.trace(reply.id)[0]["type"] == "run_start"
    assert [m.role for m in store.chat_messages(first)] == ["user", "assistant"]

    store.rename(second, "Sirens")
    store.delete(first)
    assert [c.title for c in store.conversations()] == ["Sirens"]
    store.close()
    again = HistoryStore(tmp_path / "history.sqlite3")
    assert [c.title for c in again.conversations()] == ["Sirens"]
    again.close()


def test_an_older_history_keeps_its_answers_without_the_sources_written_in(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.sqlite3"
    store = HistoryStore(path)
    conversation = store.create_conversation("Lighthouses")
    script = [Step(calls=[("search_workspace", {"query": "keepers"})]), Step("Keepers rowed out.")]
    record_reply(store, conversation, script, "Who kept the light?")
    store.close()
    # As an older Imprint kept it: the Sources block written into the answer.
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE replies SET answer = ?",
            ("Keepers rowed out.\n\nPassages found (not cited):\n- [1] doc.md, lines 1-3: “K”",),
        )
        db.execute("PRAGMA user_version = 1")
    db.close()
    again = HistoryStore(path)
    [reply] = again.replies(conversation)
    assert reply.answer == "Keepers rowed out."
    # Its sources are the result's: the passage found, uncited, with what of it is quoted.
    [source] = reply.sources
    assert (source.cited, source.excerpt) == (False, "Evidence for keepers.")
    assert again.chat_messages(conversation)[1].content == "Keepers rowed out."
    again.close()


def test_the_fallback_is_persisted_like_an_answer(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite3")
    conversation = store.create_conversation("x")
    recorder = store.start_reply(conversation, "q")
    same = passage("Only fact.")
    script = [Step(calls=[("search_workspace", {"query": "a"})])] * 2 + [Step(fail=True)]
    engine = ResearchEngine(
        ScriptedProvider(list(script)),
        research_settings({"chat.research_no_progress_rounds": 1}),
        sink=recorder,
    )
    asyncio.run(engine.run("q", FakeTools(lambda name, values: same)))
    [reply] = store.replies(conversation)
    assert reply.final_mode == "fallback" and reply.answer is not None
    assert reply.answer.startswith(FALLBACK_LABEL)
    store.close()


KILLED_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from imprint_desktop.core.history import HistoryStore
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.research.engine import ResearchEngine
    from tests.support.fake_tools import FakeTools, passage
    from tests.support.scripted_provider import ScriptedProvider, Step
    from tests.support.settings import research_settings

    store = HistoryStore(Path(sys.argv[1]))
    conversation = store.create_conversation("Killed")
    recorder = store.start_reply(conversation, "Will this survive?")

    def sink(event):
        recorder(event)
        if isinstance(event, ev.ToolFinished):
            print("evidence recorded", flush=True)

    script = [Step(calls=[("search_workspace", {"query": "a"})]), Step(hang=True)]
    settings = research_settings({"chat.research_timeout_sec": 600})
    engine = ResearchEngine(ScriptedProvider(script), settings, sink=sink)
    tools = FakeTools(lambda name, values: passage("The keeper's cat was called Lamp."))
    asyncio.run(engine.run("Will this survive?", tools))
    """
)


def test_a_killed_reply_reopens_interrupted_with_its_evidence(tmp_path: Path) -> None:
    database = tmp_path / "h.sqlite3"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, str(database)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "evidence recorded"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()

    store = HistoryStore(database)
    assert store.mark_interrupted() == 1
    [conversation] = store.conversations()
    [reply] = store.replies(conversation.id)
    assert reply.interrupted and reply.answer is None
    assert [item.excerpt for item in reply.evidence] == ["The keeper's cat was called Lamp."]
    assert json.dumps(store.trace(reply.id))  # the trace up to the kill is readable
    assert store.mark_interrupted() == 0
    store.close()


# The folder each reply researched.


def started(workspace: Path) -> ev.ReplyStarted:
    return ev.ReplyStarted(0.0, "q", make_config({"workspace.path": str(workspace)}), "scripted")


def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    return first, second


def test_a_reply_keeps_the_workspace_it_started_with(tmp_path: Path) -> None:
    first, second = two_folders(tmp_path)
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


def test_a_conversation_keeps_the_folder_its_latest_reply_researched(tmp_path: Path) -> None:
    first, second = two_folders(tmp_path)
    store = HistoryStore(tmp_path / "history.sqlite3")
    conversation = store.create_conversation("c")
    assert store.conversations()[0].workspace is None  # no reply yet: not known
    store.start_reply(conversation, "q")(started(first))
    assert store.conversations()[0].workspace == str(first)
    store.start_reply(conversation, "q", workspace=second)
    assert store.conversations()[0].workspace == str(second)
    store.start_reply(conversation, "q", workspace=sample_workspace())
    (summary,) = store.conversations()
    assert (summary.workspace, summary.sample_workspace) == ("", True)  # not a path to a venv
    store.close()


def test_a_history_written_before_conversations_kept_their_folder_gains_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.sqlite3"
    shutil.copyfile(ROOT / "tests/unit/history_files/history-v2.sqlite3", path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
    db.close()
    store = HistoryStore(path)
    folders = {c.title: c.workspace for c in store.conversations()}
    assert folders == {
        "What is the harbour wall made of?": "/home/ada/Documents/harbour",  # the latest reply's
        "Who kept the light?": None,  # its reply kept no folder: as before
        "Empty": None,
    }
    # Everything else is as it was.
    harbour = next(c for c in store.conversations() if c.workspace)
    assert [r.answer for r in store.replies(harbour.id)] == ["Granite.", "Granite."]
    assert [r.workspace for r in store.replies(harbour.id)] == [
        "/srv/harbour-docs",
        "/home/ada/Documents/harbour",
    ]
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
    db.close()
    again = HistoryStore(path)  # opened again: nothing to do, nothing lost
    assert {c.title: c.workspace for c in again.conversations()} == folders
    again.close()
