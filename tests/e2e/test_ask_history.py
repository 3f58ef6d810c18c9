"""`imprint ask` keeps its reply in the history the window shows, as it happens: a finished
reply with its answer and evidence, a killed run's reply to reopen as interrupted, and nothing
with ``--no-history``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from imprint_desktop.core.history import HistoryStore
from tests.e2e.conftest import Imprint
from tests.support.ask_command import ANSWER, QUESTION, ask, search, spawn
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def sqlite_dumps(root: Path) -> dict[Path, str]:
    """Every SQLite database under ``root``, as SQL text."""
    dumps = {}
    for path in sorted(root.rglob("*")):
        if (
            not path.is_file()
            or path.suffix in (".wal", ".shm")
            or path.name.endswith(("-wal", "-shm"))
        ):
            continue
        with path.open("rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                continue
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            dumps[path] = "\n".join(connection.iterdump())
        finally:
            connection.close()
    return dumps


def test_the_reply_is_kept_in_the_history_with_its_answer_and_evidence(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace)
    assert result.returncode == 0, result.stderr[-2000:]
    dumps = sqlite_dumps(isolated_dirs / "data")
    assert dumps, "no database at all in the data folder"
    with_reply = [text for text in dumps.values() if ANSWER in text]
    assert with_reply, f"the answer is in none of {sorted(map(str, dumps))}"
    (history,) = with_reply
    assert QUESTION in history and "answered" in history
    assert "keepers.md" in history and "Ada Quill, who left in 1971" in history


def test_a_killed_ask_leaves_its_reply_to_reopen_interrupted_with_its_evidence(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.stall())
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json") as (process, _out, _err):
        assert openai_server.wait_for_stall(timeout=60), "the second request never came"
        process.kill()  # SIGKILL: nothing of the process gets to run any more
        process.wait(timeout=30)
    openai_server.release()
    # What the window does when it starts: replies still "running" were cut short.
    store = HistoryStore(isolated_dirs / "data" / "history.sqlite3")
    try:
        assert store.mark_interrupted() == 1
        (conversation,) = store.conversations()
        (reply,) = store.replies(conversation.id)
        assert (reply.question, reply.status, reply.answer) == (QUESTION, "interrupted", None)
        assert [item.source for item in reply.evidence] == ["keepers.md"]
        assert "Ada Quill" in reply.evidence[0].excerpt
    finally:
        store.close()


def test_no_history_keeps_the_reply_out_of_the_history(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace, "--no-history")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (isolated_dirs / "data" / "history.sqlite3").exists()
