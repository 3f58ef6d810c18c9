"""The trace file of `imprint ask --trace FILE` (DESIGN §5): written where asked (its folders
made), a path that cannot be written is bad usage said before anything is sent, and every kind of
event is recorded with exactly the fields the design names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.ask_command import (
    ANSWER,
    QUESTION,
    TRACE_FIELDS,
    ask,
    ask_user,
    assert_trace_matches_result,
    of_type,
    read_trace,
    search,
    the_json_result,
)
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def test_a_trace_in_a_folder_that_does_not_exist_yet_is_written(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    trace = tmp_path / "new" / "folder" / "trace.jsonl"
    result = ask(imprint, openai_server, workspace, "--trace", str(trace))
    assert result.returncode == 0, result.stderr[-2000:]  # the folders are made
    payload = the_json_result(result.stdout)
    assert payload["trace"] == str(trace)
    assert_trace_matches_result(read_trace(trace), payload)


@pytest.mark.parametrize("where", ["parent-is-a-file", "is-a-folder"])
def test_a_trace_path_that_cannot_be_written_is_a_clear_message_not_a_traceback(
    where: str, imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    trace = blocker / "trace.jsonl" if where == "parent-is-a-file" else tmp_path
    result = imprint(
        "ask",
        QUESTION,
        "--workspace",
        str(workspace),
        "--base-url",
        openai_server.base_url,
        "--json",
        "--trace",
        str(trace),
    )
    assert "Traceback" not in result.stderr, result.stderr[-1500:]
    assert str(trace) in result.stderr, result.stderr
    # A trace that cannot be written is bad usage, said before anything is sent (DESIGN §4).
    assert result.returncode == 2, result.returncode
    assert openai_server.requests == []


def test_the_trace_records_every_kind_of_event_with_the_fields_of_design_5(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(
            search("s1", "last keeper"),
            search("s2", "zebra quasar"),  # nothing found
            ToolCall("r1", "read_document", json.dumps({"path": "missing.md"})),
            ask_user("a1", "Which lighthouse?"),
        ),
        Reply.tool_calls(search("s3", "last keeper")),
        Reply.tool_calls(search("s4", "keeper Ada Quill")),
        Reply.text("Ada Quill [1]."),
    )
    trace = tmp_path / "trace.jsonl"
    result = ask(
        imprint,
        openai_server,
        workspace,
        "--set",
        "chat.research_no_progress_rounds=2",
        "--trace",
        str(trace),
        stdin="Greyness Point\n",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = the_json_result(result.stdout)
    assert (payload["stop_reason"], payload["final_mode"]) == ("no_progress", "model")
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    # Every type but consent (a fetch's, in test_ask_consent.py).
    assert {record["type"] for record in records} == set(TRACE_FIELDS) - {"consent"}
    assert records[0]["question"] == QUESTION
    statuses = {record["call_id"]: record["status"] for record in of_type(records, "tool")}
    assert statuses == {
        "s1": "ok",
        "s2": "empty",
        "r1": "error",
        "a1": "ok",
        "s3": "ok",
        "s4": "ok",
    }
    rounds = of_type(records, "round_end")
    assert [r["progress"] for r in rounds] == [True, False, False]
    assert [r["no_progress_rounds"] for r in rounds] == [0, 1, 2]
    phases = [r["phase"] for r in of_type(records, "request")]
    assert phases == ["research"] * 3 + ["final"]
    assert of_type(records, "final")[0]["mode"] == "model"
    assert records[-1]["type"] == "final"
