"""`imprint ask` when the model's tool calls are malformed: every call is answered exactly once,
in the order it was made, and a bad one with an error of its own instead of a crash.

Arguments that are not JSON, not an object, of the wrong types, nested too deep, too long to run or
too big for the context; tool names that do not exist or never arrive; ids that are missing,
repeated in a batch or reused in later rounds; thirty calls in one batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, search, tool_results
from tests.support.ask_hostile import (
    answered,
    ask,
    call_delta,
    files_in,
    last_assistant_calls,
    opening,
    read_trace_strictly,
)
from tests.support.openai_server import OpenAIServer, Reply, chunk

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


# --- tool call arguments --------------------------------------------------------------------------


def test_malformed_arguments_each_get_their_own_error_and_the_valid_call_runs(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    calls = {
        "bad_json": '{"query": "fog"',
        "array": '["last keeper"]',
        "string": '"last keeper"',
        "number": "42",
        "null": "null",
        "missing": "{}",
        "wrong_type": '{"query": 42}',
        "wrong_limit": '{"query": "fog", "limit": "ten"}',
        "bool_limit": '{"query": "fog", "limit": true}',
        "range_limit": '{"query": "fog", "limit": 100000}',
        "extra": '{"query": "fog", "rm": "-rf /"}',
        "empty_query": '{"query": "   "}',
        "good": '{"query": "last keeper Ada"}',
    }
    openai_server.script(
        Reply.tool_calls(*(ToolCall(key, "search_workspace", args) for key, args in calls.items())),
        Reply.text("The last keeper was Ada Quill [1]."),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    assert payload["answer"] == "The last keeper was Ada Quill [1]."

    second = openai_server.chat_requests()[1]
    assert [c["id"] for c in last_assistant_calls(second)] == list(calls)
    results = tool_results(second)
    assert list(results) == list(calls)  # in the order the model made them
    for key in calls:
        if key == "good":
            assert not results[key].startswith("Error:") and "Ada Quill" in results[key]
        else:
            assert results[key].startswith("Error:"), (key, results[key])
    assert "not valid JSON" in results["bad_json"]
    for key in ("array", "string", "number", "null"):
        assert "JSON object" in results[key], (key, results[key])
    assert "query" in results["missing"] and "missing" in results["missing"]
    assert "query must be a string" in results["wrong_type"]
    assert "limit" in results["wrong_limit"] and "limit" in results["range_limit"]
    assert "limit" in results["bool_limit"]
    assert "rm" in results["extra"] and "unknown" in results["extra"]
    assert payload["evidence"] and payload["evidence"][0]["source"] == "keepers.md"

    tools = of_type(read_trace_strictly(trace), "tool")
    assert [t["call_id"] for t in tools] == list(calls)
    assert {t["call_id"]: t["status"] for t in tools} == {
        key: ("ok" if key == "good" else "error") for key in calls
    }


def test_deeply_nested_arguments_are_a_tool_error_not_a_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    deep = "[" * 5_000 + "]" * 5_000  # deep enough to exhaust a recursive parser, and still fits
    openai_server.script(
        Reply.tool_calls(ToolCall("deep", "search_workspace", deep), fragments=1),
        Reply.text("I could not search."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert tool_results(openai_server.chat_requests()[1])["deep"].startswith("Error:")


def test_huge_arguments_are_refused_and_nothing_is_written(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    before = files_in(workspace)
    # Past every argument's limit (a query of 500 characters, a note of 100 000), yet within the
    # output allowance as estimated (a run of dots is cheap in tokens), so all arrive whole.
    huge_query = "fog " * 2_000  # 8 000 characters
    huge_note = "." * 150_000
    openai_server.script(
        Reply.tool_calls(
            ToolCall("q", "search_workspace", json.dumps({"query": huge_query})),
            ToolCall("n", "write_note", json.dumps({"title": "big", "content": huge_note})),
            ToolCall("t", "write_note", json.dumps({"title": "t" * 5000, "content": "short"})),
            fragments=50,
        ),
        Reply.text("Those were too long."),
    )
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--set",
        "remote.context_window=2000000",
        "--set",
        "chat.research_token_budget=2000000",
        "--set",  # an allowance the 160 KB of arguments fit in, so the toolbox sees them whole
        "chat.research_max_output_tokens=32768",
    )
    answered(result, payload)
    results = tool_results(openai_server.chat_requests()[1])
    assert set(results) == {"q", "n", "t"}
    assert all(text.startswith("Error:") and "too long" in text for text in results.values())
    assert all(len(text) <= 6000 for text in results.values())  # tools.max_result_chars
    assert files_in(workspace) == before


def test_arguments_past_the_output_allowance_are_cut_and_answered(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    # A server that ignores max_tokens: the client stops reading (finish "length"), the cut-off
    # call is answered with an error, and the reply goes on instead of paying for a megabyte.
    huge = "fog " * 250_000
    openai_server.script(
        Reply.tool_calls(ToolCall("q", "search_workspace", json.dumps({"query": huge}))),
        Reply.text("That search was too long."),
    )
    result, payload = ask(imprint, openai_server, workspace, "--set", "remote.context_window=65536")
    answered(result, payload)
    assert tool_results(openai_server.chat_requests()[1])["q"].startswith("Error:")
    assert payload["tokens"]["charged"] < 20_000, payload["tokens"]


def test_arguments_too_big_for_the_context_end_in_a_question_only_final(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    huge = "fog " * 250_000  # a megabyte, cut at the 16k allowance: still more than fits after
    openai_server.script(
        Reply.tool_calls(ToolCall("q", "search_workspace", json.dumps({"query": huge}))),
        Reply.text("I could not find that in your documents."),
    )
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--set",  # nothing is found: the model is still asked to answer (the final path)
        "chat.answer_without_evidence=true",
        "--set",  # room for the first request and its 16k allowance, none for the 16k of
        "remote.context_window=20000",  # arguments it made and another allowance after them
        "--set",
        "chat.research_max_output_tokens=16384",
        "--set",
        "chat.max_tokens=4096",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "context_full" and payload["final_mode"] == "model"
    assert payload["answer"].endswith("I could not find that in your documents.")
    # The overflowing conversation was never sent: the final asked the question alone.
    _research, final = openai_server.chat_requests()
    assert not final.json.get("tools") or final.json.get("tool_choice") == "none"
    assert huge[:1000].encode() not in final.body
    assert final.messages[-1]["content"] == "Question: Who was the last keeper?"


# --- tool names and ids ---------------------------------------------------------------------------


def test_unknown_and_empty_tool_names_are_answered_with_errors(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    names = {
        "u1": "rm_rf",
        "u2": "",
        "u3": "SEARCH_WORKSPACE",
        "u4": "search_workspace ",
        "u5": "functions.search_workspace",
        "u6": "__import__('os').system",
    }
    deltas = [
        call_delta(n, call_id=i, name=name, arguments='{"query": "fog"}')
        for n, (i, name) in enumerate(names.items())
    ]
    # ... and one whose name never arrives at all.
    deltas.append(call_delta(len(names), call_id="u7", arguments='{"query": "fog"}'))
    names["u7"] = ""
    openai_server.script(
        Reply.events(opening(), *deltas, chunk(finish_reason="tool_calls")),
        Reply.text("No such tools."),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    results = tool_results(second)
    assert list(results) == list(names)
    for text in results.values():
        assert text.startswith("Error:") and "search_workspace" in text  # names the real tools
    echoed = {c["id"]: c["function"]["name"] for c in last_assistant_calls(second)}
    assert echoed == names
    statuses = {t["call_id"]: t["status"] for t in of_type(read_trace_strictly(trace), "tool")}
    assert statuses == dict.fromkeys(names, "error")
    assert payload["evidence"] == []


def test_calls_without_ids_get_distinct_ids_that_are_answered(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.events(
            opening(),
            call_delta(0, name="search_workspace", arguments='{"query": "last keeper"}'),
            call_delta(1, name="list_documents", arguments="{}"),
            chunk(finish_reason="tool_calls"),
        ),
        Reply.text("Ada Quill [1]."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    ids = [call["id"] for call in last_assistant_calls(second)]
    assert len(ids) == 2 and all(isinstance(i, str) and i for i in ids) and ids[0] != ids[1]
    results = tool_results(second)
    assert list(results) == ids
    assert "Ada Quill" in results[ids[0]] and "keepers.md" in results[ids[1]]


def test_duplicate_ids_in_one_batch_are_each_answered_once(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(
            search("dup", "last keeper"), search("dup", "fog signals"), search("dup", "diaphone")
        ),
        Reply.text("Ada Quill [1]."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    ids = [call["id"] for call in last_assistant_calls(second)]
    assert len(ids) == 3 and len(set(ids)) == 3  # made unique, so each can be answered
    results = tool_results(second)
    assert list(results) == ids
    assert "Ada Quill" in results[ids[0]] and "diaphone" in results[ids[2]].lower()


@pytest.mark.parametrize("with_ids", [True, False], ids=["same-id", "no-id"])
def test_an_id_reused_in_later_rounds_is_answered_in_every_round(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, with_ids: bool
) -> None:
    def round_with(query: str) -> Reply:
        return Reply.events(
            opening(),
            call_delta(
                0,
                call_id="call_0" if with_ids else None,
                name="search_workspace",
                arguments=json.dumps({"query": query}),
            ),
            chunk(finish_reason="tool_calls"),
        )

    openai_server.script(
        round_with("last keeper"), round_with("fog signals"), Reply.text("Ada Quill [1].")
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["rounds"] == 2
    third = openai_server.chat_requests()[2]
    tool_messages = [m for m in third.messages if m["role"] == "tool"]
    assert len(tool_messages) == 2
    assert "Ada Quill" in tool_messages[0]["content"]
    assert "diaphone" in tool_messages[1]["content"].lower()
    # Checked here rather than after the test, so that the expected failure is this test's own.
    openai_server.check_protocol = False
    openai_server.assert_protocol_complete()  # no id used twice in one request


def test_thirty_calls_in_one_batch_are_all_answered_in_order(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    queries = ["keeper", "fog", "diaphone", "logbook", "Greyness", "1971"] * 5
    calls = [search(f"c{n:02d}", f"{query} {n}") for n, query in enumerate(queries)]
    openai_server.script(Reply.tool_calls(*calls, fragments=2), Reply.text("Ada Quill [1]."))
    trace = tmp_path / "trace.jsonl"
    # Thirty results make about 7,000 tokens: room for them and the answer, whatever the estimate.
    room = ("--set", "remote.context_window=32768")
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace), *room)
    answered(result, payload)
    assert payload["rounds"] == 1
    results = tool_results(openai_server.chat_requests()[1])
    assert list(results) == [call.id for call in calls]
    assert not any(text.startswith("not executed") for text in results.values())
    tools = of_type(read_trace_strictly(trace), "tool")
    assert [t["call_id"] for t in tools] == [call.id for call in calls]
    assert all(t["round"] == 1 for t in tools)
