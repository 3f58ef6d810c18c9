"""`imprint ask` against models that do not move on: white space, the same call again and again,
tool calls in answer to the final request, notes written forever, questions asked of a stdin at its
end. Each stops on patience or on a budget (DESIGN §1) and exits 0 with an answer or the labelled
fallback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research.final import FALLBACK_LABEL
from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, search, tool_results
from tests.support.ask_hostile import ask, read_trace_strictly, tools_offered
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def test_whitespace_only_replies_stop_on_no_progress_with_a_labelled_fallback(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    blank = ["  ", "\n\n", "\t \r\n"]
    # Three research replies of white space, then a final answer of white space too.
    openai_server.script(*(Reply.text([piece]) for piece in blank), Reply.text(["\u00a0 \n"]))
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--set",  # nothing is found: the model is still asked to answer (the final path)
        "chat.answer_without_evidence=true",
        "--trace",
        str(trace),
        "--set",
        "chat.research_no_progress_rounds=3",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["final_mode"] == "fallback"
    assert payload["answer"].startswith(FALLBACK_LABEL)
    assert "No evidence was gathered" in payload["answer"]
    requests = openai_server.chat_requests()
    assert len(requests) == 4
    assert all(tools_offered(r) for r in requests[:3]) and not tools_offered(requests[3])
    records = read_trace_strictly(trace)
    assert [r["reason"] for r in of_type(records, "stop")] == ["no_progress"]
    assert [r["mode"] for r in of_type(records, "final")] == ["fallback"]


def test_the_same_tool_call_forever_stops_on_no_progress_with_a_final_answer(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    counter = iter(range(1000))

    def same_call_or_answer(request: RecordedRequest) -> Reply:
        if tools_offered(request):
            return Reply.tool_calls(search(f"loop_{next(counter)}", "last keeper Ada"))
        return Reply.text("From the evidence: Ada Quill [1].")

    openai_server.script(*[same_call_or_answer] * 30)
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--trace",
        str(trace),
        "--set",
        "chat.research_no_progress_rounds=2",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["final_mode"] == "model"
    assert payload["answer"] == "From the evidence: Ada Quill [1]."
    assert payload["rounds"] == 3  # one round of news, then two of repeats
    requests = openai_server.chat_requests()
    assert len(requests) == 4 and not tools_offered(requests[-1])
    # The last research request holds the first two rounds' results, the trace all three; the
    # final (a request of its own) shows the one passage they found.
    assert list(tool_results(requests[-2])) == ["loop_0", "loop_1"]
    assert not tool_results(requests[-1])
    assert "[1] keepers.md" in requests[-1].messages[-1]["content"]
    assert "[2]" not in requests[-1].messages[-1]["content"]
    records = read_trace_strictly(trace)
    tools = [
        (r["call_id"], r["new_evidence"], r["repeated_evidence"]) for r in of_type(records, "tool")
    ]
    assert tools == [("loop_0", 1, 0), ("loop_1", 0, 1), ("loop_2", 0, 1)]
    rounds = of_type(records, "round_end")
    assert [r["progress"] for r in rounds] == [True, False, False]


def test_a_final_request_answered_with_tool_calls_gives_the_labelled_fallback(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    same = [Reply.tool_calls(search(f"s{n}", "last keeper Ada")) for n in range(4)]
    openai_server.script(*same)  # the fourth, the final request, gets a tool call too
    result, payload = ask(
        imprint, openai_server, workspace, "--set", "chat.research_no_progress_rounds=2"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["final_mode"] == "fallback"
    assert payload["answer"].startswith(FALLBACK_LABEL) and "Ada Quill" in payload["answer"]
    assert len(openai_server.chat_requests()) == 4  # nothing is asked after the final request


def test_writing_notes_forever_stops_on_the_token_budget_and_keeps_every_note(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    counter = iter(range(1000))

    def write_or_answer(request: RecordedRequest) -> Reply:
        if tools_offered(request):
            n = next(counter)
            note = json.dumps({"title": "Same note", "content": "Ada Quill was the keeper."})
            return Reply.tool_calls(ToolCall(f"w{n}", "write_note", note))
        return Reply.text("Ada Quill, noted.")

    openai_server.script(*[write_or_answer] * 60)
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--set",  # nothing is found: the model is still asked to answer (the final path)
        "chat.answer_without_evidence=true",
        "--trace",
        str(trace),
        "--set",
        "chat.research_no_progress_rounds=2",
        "--set",
        "chat.research_token_budget=12000",
        "--set",
        "chat.research_max_output_tokens=64",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Write rounds neither progress nor stagnate: only a resource budget can stop them.
    assert payload["stop_reason"] == "token_budget" and payload["final_mode"] == "model"
    assert payload["answer"].endswith("Ada Quill, noted.")
    records = read_trace_strictly(trace)
    writes = [t for t in of_type(records, "tool") if t["name"] == "write_note"]
    assert len(writes) == payload["rounds"] >= 3
    assert all(t["status"] == "ok" for t in writes)
    assert all(r["excluded"] for r in of_type(records, "round_end"))
    notes = sorted((workspace / "notes").iterdir())
    assert len(notes) == len(writes)  # writes are never deduplicated or skipped
    assert payload["tokens"]["charged"] <= 12000


def test_ask_user_forever_with_stdin_at_end_of_file_stops(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    counter = iter(range(1000))

    def ask_or_answer(request: RecordedRequest) -> Reply:
        if tools_offered(request):
            question = json.dumps({"question": "Which lighthouse?"})
            return Reply.tool_calls(ToolCall(f"a{next(counter)}", "ask_user", question))
        return Reply.text("I could not get an answer from you.")

    openai_server.script(*[ask_or_answer] * 30)
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        "--set",
        "chat.answer_without_evidence=true",
        "--set",
        "chat.research_no_progress_rounds=2",
        stdin="",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress"
    assert payload["answer"].endswith("I could not get an answer from you.")
    assert payload["rounds"] == 2
    assert "Which lighthouse?" in result.stderr
