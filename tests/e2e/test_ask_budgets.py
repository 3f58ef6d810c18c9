"""`imprint ask` against models and servers that would slip past the research budgets (DESIGN §1,
§5; ADR 0102/0157/0159), black-box: the `--json` result, the trace and what the server received.

Notes the model wrote and reads back, servers that ignore ``max_tokens`` (streamed or in one
JSON completion), hidden reasoning, thousands of calls in one reply, failed writes, Stop inside a
section worker and inside the final answer, requests that break part-way, call markup written as
text, cut answers, empty replies, pages that differ only by an id, consent waits, the retired
``chat.max_tool_iters``.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.estimate import estimate_tokens
from tests.e2e.conftest import Imprint
from tests.support.ask_command import (
    FALLBACK_PREFIX,
    QUESTION,
    assert_trace_matches_result,
    of_type,
    read_trace,
    search,
    spawn,
    the_json_result,
    tool_results,
)
from tests.support.ask_hostile import (
    ask,
    call_delta,
    opening,
    read_trace_strictly,
    tools_offered,
)
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, chunk, sse

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def traced(tmp_path: Path) -> tuple[Path, list[str]]:
    trace = tmp_path / "trace.jsonl"
    return trace, ["--trace", str(trace)]


def checked(trace: Path, payload: dict[str, Any], *, seeded: bool = False) -> list[dict[str, Any]]:
    """The trace, checked against DESIGN §5 (field by field, unless the engine's own search
    adds its ``origin``) and against the JSON result."""
    if seeded:  # its round 0 is not one of the reply's rounds
        return read_trace_strictly(trace)
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    return [dict(record) for record in records]


def requests_of(records: list[dict[str, Any]], phase: str | None = None) -> list[dict[str, Any]]:
    lines = of_type(records, "request")
    return [dict(r) for r in lines if phase is None or r["phase"] == phase]


def read(call_id: str, path: str) -> ToolCall:
    return ToolCall(call_id, "read_document", json.dumps({"path": path}))


def write(call_id: str, title: str, content: str) -> ToolCall:
    return ToolCall(call_id, "write_note", json.dumps({"title": title, "content": content}))


# --- 1. the model's own notes are known evidence ------------------------------------------------


def test_reading_back_what_the_model_wrote_is_not_new_evidence(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    counter = iter(range(1000))

    def write_then_read_back(request: RecordedRequest) -> Reply:
        if not tools_offered(request):
            return Reply.text("Ada Quill kept the light.")
        n = next(counter)
        if n % 2 == 0:  # a note of new words every time ...
            words = f"Entry {n}: keeper Ada Quill trimmed lamp {n} and logged fog bank {n} today."
            return Reply.tool_calls(write(f"w{n}", "Keeper log", words))
        # ... then read back the note just written
        saved = re.search(r"Note saved as (\S+)\.", request.messages[-1]["content"])
        assert saved is not None, request.messages[-1]
        return Reply.tool_calls(read(f"r{n}", saved.group(1)))

    openai_server.script(*[write_then_read_back] * 40)
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        *args,
        "--set",
        "chat.research_no_progress_rounds=2",
        "--set",
        "chat.answer_without_evidence=true",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Not even the first read-back meets anything new: the note's front matter and footer are
    # the engine's words, no evidence (issue 42, item 6).
    assert payload["stop_reason"] == "no_progress", payload["stop_reason"]
    records = checked(trace, payload)
    reads = [t for t in of_type(records, "tool") if t["name"] == "read_document"]
    assert len(reads) == 2 and [t["status"] for t in reads] == ["ok"] * 2
    assert [t["new_evidence"] for t in reads] == [0, 0]


# --- 2. and issue 24 item 3: output bounded at the allowance, streamed or not --------------------


def test_a_server_ignoring_max_tokens_is_cut_at_the_allowance_and_charged_within_the_budget(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    endless = "The keeper of the light wrote in her log every night of the year. " * 400
    openai_server.script(Reply.text(endless), Reply.text(" and that is all [1]."))
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        *args,
        "--set",
        "chat.research_max_output_tokens=256",
        "--set",
        "chat.research_token_budget=2500",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    records = checked(trace, payload)
    (first, *_rest) = requests_of(records, "research")
    assert first["output_tokens"] <= 256, first
    assert first["charged"] <= first["reserved"], first
    assert payload["tokens"]["charged"] <= 2500
    # Cut there, as a server honouring the allowance would have stopped: the final completes it.
    assert openai_server.chat_requests()[0].json["max_tokens"] == 256
    assert estimate_tokens(payload["answer"]) < 400


def completion_json(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "model": "imprint-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def test_an_eight_megabyte_json_completion_is_cut_at_the_allowance(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    huge = "Ada Quill kept the light. " * 320_000  # 8 MB in one non-streamed answer
    openai_server.script(
        Reply.json(completion_json({"role": "assistant", "content": huge})),
        Reply.text(" That is the answer."),
    )
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0, result.stderr[-2000:]
    records = checked(trace, payload)
    first = requests_of(records, "research")[0]
    assert first["output_tokens"] <= 1024, first  # chat.research_max_output_tokens
    assert len(payload["answer"]) < 20_000, len(payload["answer"])
    assert len(result.stdout) < 50_000


def test_twenty_thousand_calls_in_one_reply_are_bounded_and_the_model_is_told(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    calls = [
        {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "search_workspace", "arguments": '{"query": "keeper"}'},
        }
        for n in range(20_000)
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    openai_server.script(
        Reply.json(completion_json(message, "tool_calls")), Reply.text("Ada Quill [1].")
    )
    trace, args = traced(tmp_path)
    room = ("--set", "remote.context_window=32768")  # for the results of the calls carried out
    result, payload = ask(imprint, openai_server, workspace, *args, *room)
    assert result.returncode == 0, result.stderr[-2000:]
    second = openai_server.chat_requests()[1]
    results = tool_results(second)
    assert 0 < len(results) <= 32, len(results)
    last = second.messages[-1]["content"]
    assert (
        f"{20_000 - len(results):,} more tool calls in your reply were not carried out" in last
    ), last[-300:]
    records = checked(trace, payload)
    assert len(of_type(records, "tool")) == len(results)
    assert requests_of(records, "research")[0]["output_tokens"] <= 1024


# --- 3. hidden reasoning is output ---------------------------------------------------------------

THINKING = (
    "Let me think about who kept the light at Greyness Point and when she left the station. "
) * 24  # about 400 words


def reasoning_reply(thinking: str, answer: str) -> Reply:
    words = re.findall(r"\S+\s*", thinking)
    return Reply.events(
        opening(),
        *(chunk({"reasoning_content": word}) for word in words),
        chunk({"content": answer}),
        chunk(finish_reason="stop"),
    )


def test_hidden_reasoning_is_charged_and_never_the_answer(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(reasoning_reply(THINKING, "Ada Quill [1]."))
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0 and payload["stop_reason"] == "answered"
    assert payload["answer"] == "Ada Quill [1]."
    assert "think" not in payload["answer"]
    (request,) = requests_of(checked(trace, payload))
    assert request["output_tokens"] >= estimate_tokens(THINKING), request


def test_hidden_reasoning_is_bounded_by_the_allowance(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(reasoning_reply(THINKING * 10, "Ada Quill [1]."), Reply.text("Ada [1]."))
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint, openai_server, workspace, *args, "--set", "chat.research_max_output_tokens=256"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    first = requests_of(checked(trace, payload), "research")[0]
    assert 200 <= first["output_tokens"] <= 256, first  # counted, and cut at the allowance
    assert "think" not in payload["answer"]


# --- 4. a failed write leaves its round out of the count ----------------------------------------


def test_a_failed_write_leaves_its_round_out_of_the_no_progress_count(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    broken = [
        Reply.tool_calls(ToolCall(f"w{n}", "write_note", '{"title": "no content"}'))
        for n in range(4)
    ]
    openai_server.script(*broken, Reply.text("Nothing was written."))
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        *args,
        "--set",
        "chat.research_no_progress_rounds=2",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered", payload["stop_reason"]
    records = checked(trace, payload)
    assert [t["status"] for t in of_type(records, "tool")] == ["error"] * 4
    assert [r["excluded"] for r in of_type(records, "round_end")] == [True] * 4


# --- 5. Stop during a section worker's request ---------------------------------------------------


def is_worker(request: RecordedRequest) -> bool:
    names = {tool["function"]["name"] for tool in request.tools or ()}
    return tools_offered(request) and "research_sections" not in names


def test_stop_during_a_section_workers_request_still_charges_it(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    sections = ToolCall("rs", "research_sections", json.dumps({"sections": ["the keepers"]}))

    def coordinator_or_worker(request: RecordedRequest) -> Reply:
        if is_worker(request):
            return Reply.stall("Looking at the keepers")
        return Reply.tool_calls(sections)

    openai_server.script(*[coordinator_or_worker] * 4)
    trace = tmp_path / "trace.jsonl"
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url"]
    args += [openai_server.base_url, "--trace", str(trace), "--json"]
    with spawn(imprint_env, *args) as (process, out, err):
        assert openai_server.wait_for_stall(timeout=60), err.text()[-2000:]
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=30)
        stdout, stderr = out.text(), err.text()
    assert returncode == 130, (returncode, stderr[-2000:])
    payload = the_json_result(stdout)
    assert payload["stop_reason"] == "cancelled"
    records = checked(trace, payload)
    workers = requests_of(records, "worker")
    assert len(workers) == 1, requests_of(records)
    assert workers[0]["charged"] > 0 and workers[0]["output_tokens"] > 0, workers[0]
    assert sum(r["refunded"] for r in requests_of(records)) == payload["tokens"]["refunded"]


# --- 6. failed requests are charged what they did ------------------------------------------------


def broken_after(*events: dict[str, Any]) -> Reply:
    """A stream that sends ``events`` and then closes the connection mid-body."""
    return Reply(parts=(*(sse(event) for event in events), *Reply.drop("").parts))


def test_a_stream_broken_after_a_whole_tool_call_is_charged(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    arguments = json.dumps({"query": "last keeper of Greyness Point"})
    whole_call = call_delta(0, call_id="s1", name="search_workspace", arguments=arguments)
    openai_server.script(broken_after(opening(), whole_call))
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 1 and payload["stop_reason"] == "error", payload
    (request,) = requests_of(checked(trace, payload))
    assert request["output_tokens"] >= estimate_tokens("search_workspace" + arguments), request
    assert request["charged_prompt"] == request["prompt_tokens"] > 0, request
    assert payload["tokens"]["charged"] == request["charged"]


def test_a_stream_broken_after_some_text_is_charged_past_the_reused_prefix(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper")),
        Reply.drop("The last keeper was"),
    )
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 1 and payload["stop_reason"] == "error", payload
    _, second = requests_of(checked(trace, payload))
    assert second["reused_prefix"] > 0, second
    assert second["charged_prompt"] == second["prompt_tokens"] - second["reused_prefix"], second
    assert second["output_tokens"] > 0


def test_a_failed_final_request_is_charged_to_the_final(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    same = [Reply.tool_calls(search(f"s{n}", "last keeper Ada")) for n in range(3)]
    openai_server.script(*same, Reply.drop("From the evidence, the last keeper was"))
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint, openai_server, workspace, *args, "--set", "chat.research_no_progress_rounds=2"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (payload["stop_reason"], payload["final_mode"]) == ("no_progress", "fallback")
    (final,) = requests_of(checked(trace, payload), "final")
    assert final["output_tokens"] > 0 and final["charged"] > final["output_tokens"], final
    assert payload["tokens"]["final_charged"] == final["charged"]


# --- 7. tool-call markup written as text ----------------------------------------------------------


def test_tool_call_markup_written_as_text_is_the_call_it_is(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    markup = '<tool_call>{"name": "search_workspace", "arguments": {"query": "last keeper"}}'
    openai_server.script(Reply.text([markup, "</tool_call>"]), Reply.text("Ada Quill [1]."))
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0 and payload["stop_reason"] == "answered", payload
    assert payload["answer"] == "Ada Quill [1]."
    (searched,) = tool_results(openai_server.chat_requests()[1]).values()
    assert "Ada Quill" in searched
    assert [t["name"] for t in of_type(checked(trace, payload), "tool")] == ["search_workspace"]


# --- 8. completing a cut answer -------------------------------------------------------------------


def test_a_cut_answer_completed_from_condensed_notes_is_not_glued_to_a_whole_new_one(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    cut = "The last keeper was Ada Quill, who"

    def by_request(request: RecordedRequest) -> Reply:
        if tools_offered(request):
            return Reply.text(cut, finish_reason="length")
        if request.json["max_tokens"] == 256:  # condensing, with the research allowance
            return Reply.text("Notes: Ada Quill was the last keeper; she left in 1971 [1].")
        return Reply.text("Ada Quill was the last keeper; she left in 1971 [1].")

    openai_server.script(*[by_request] * 6)
    trace, args = traced(tmp_path)
    result, payload = ask(
        imprint,
        openai_server,
        workspace,
        *args,
        "--set",
        "chat.research_first=true",
        "--set",
        "remote.context_window=2400",
        "--set",
        "chat.research_max_output_tokens=256",
        "--set",  # the continuation does not fit beside it; the condensed notes do
        "chat.max_tokens=2200",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["final_mode"] == "model"
    assert requests_of(checked(trace, payload, seeded=True), "condense"), "the final condensed"
    assert payload["answer"] == "Ada Quill was the last keeper; she left in 1971 [1]."


def test_a_cut_answer_whose_completion_fails_is_the_labelled_fallback(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    cut = "The last keeper was Ada Quill, who"
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper")),
        Reply.text(cut, finish_reason="length"),
        Reply.error(400, "the final answer was refused"),
    )
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["final_mode"] == "fallback"
    assert payload["answer"].startswith(FALLBACK_PREFIX), payload["answer"][:300]
    assert cut in payload["answer"]
    assert payload["evidence"] and all(
        item["source"] in payload["answer"] for item in payload["evidence"]
    )
    checked(trace, payload)


# --- 9. empty replies are rounds of their own ----------------------------------------------------


def test_empty_replies_are_rounds_of_their_own_and_stagnant(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper")),
        *(Reply.text([""]) for _ in range(4)),
        Reply.text("Ada Quill [1]."),
    )
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["rounds"] == 5
    rounds = of_type(checked(trace, payload), "round_end")
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
    assert [r["no_progress_rounds"] for r in rounds] == [0, 1, 2, 3, 4]


# --- 10. Stop during the final: one stop reason ---------------------------------------------------


def test_stop_during_the_final_is_one_stop_reason_everywhere(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    def research_or_final(request: RecordedRequest) -> Reply:
        if tools_offered(request):
            return Reply.tool_calls(search("s", "last keeper Ada"))
        return Reply.stall("The last keeper")

    openai_server.script(*[research_or_final] * 6)
    trace = tmp_path / "trace.jsonl"
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url"]
    args += [openai_server.base_url, "--trace", str(trace), "--json"]
    args += ["--set", "chat.research_no_progress_rounds=2"]
    with spawn(imprint_env, *args) as (process, out, err):
        assert openai_server.wait_for_stall(timeout=60), err.text()[-2000:]
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=30)
        stdout, stderr = out.text(), err.text()
    assert returncode == 130, (returncode, stderr[-2000:])
    payload = the_json_result(stdout)
    records = checked(trace, payload)
    assert [r["reason"] for r in of_type(records, "stop")] == ["cancelled"]
    assert payload["stop_reason"] == "cancelled" and payload["final_mode"] == "fallback"


# --- 11. a page that differs only by an id -------------------------------------------------------


def test_a_page_that_differs_only_by_an_id_is_not_new_on_every_fetch(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    ids = iter(range(1000))

    def page(_request: RecordedRequest) -> Reply:
        nonce = f"{next(ids):08x}-4b1e-9c2d-a7f3-0e5d8c{next(ids):06x}"
        body = (
            "<html><head><title>Harbour notices</title></head><body>"
            f"<p>Request {nonce}. The harbour light is lit at dusk.</p></body></html>"
        )
        return Reply.garbage(body.encode(), content_type="text/html; charset=utf-8")

    with OpenAIServer() as web:
        web.script(*[page] * 20, path="/notices")
        url = f"{web.url}/notices"
        fetches = iter(range(11))

        def fetch_again(request: RecordedRequest) -> Reply:
            n = next(fetches, None)
            if not tools_offered(request) or n is None:
                return Reply.text("The light is lit at dusk [1].")
            return Reply.tool_calls(ToolCall(f"f{n}", "fetch_url", json.dumps({"url": url})))

        openai_server.script(*[fetch_again] * 12)
        trace, args = traced(tmp_path)
        result, payload = ask(
            imprint,
            openai_server,
            workspace,
            *args,
            "--allow-fetch",
            "--set",
            "chat.research_no_progress_rounds=3",
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["rounds"] == 4, payload
    fetches = of_type(checked(trace, payload), "tool")
    assert [t["new_evidence"] > 0 for t in fetches] == [True, False, False, False]


# --- 12. smaller ----------------------------------------------------------------------------------


def test_a_consent_wait_has_its_user_wait_line(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    with OpenAIServer() as web:
        page = b"<html><body><p>High water comes at noon.</p></body></html>"
        web.script(Reply.garbage(page, content_type="text/html"), path="/tides")
        fetch = ToolCall("f1", "fetch_url", json.dumps({"url": f"{web.url}/tides"}))
        openai_server.script(Reply.tool_calls(fetch), Reply.text("At noon [1]."))
        trace, args = traced(tmp_path)
        result, payload = ask(imprint, openai_server, workspace, *args, "--allow-fetch")
    assert result.returncode == 0, result.stderr[-2000:]
    records = checked(trace, payload)
    assert len(of_type(records, "consent")) == 1
    assert len(of_type(records, "user_wait")) == 1  # the consent decision is a wait too


def test_research_sections_reports_what_its_workers_found(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    sections = ToolCall("rs", "research_sections", json.dumps({"sections": ["the keepers"]}))
    openai_server.script(
        Reply.tool_calls(sections),
        Reply.tool_calls(search("w1", "last keeper Ada Quill")),  # the worker
        Reply.text("Ada Quill was the last keeper."),  # the worker's summary
        Reply.text("Ada Quill [1]."),
    )
    trace, args = traced(tmp_path)
    result, payload = ask(imprint, openai_server, workspace, *args)
    assert result.returncode == 0 and payload["stop_reason"] == "answered", payload
    tools = {t["call_id"]: t for t in of_type(checked(trace, payload), "tool")}
    assert tools["w1"]["new_evidence"] > 0
    assert tools["rs"]["new_evidence"] == tools["w1"]["new_evidence"]


def test_the_retired_max_tool_iters_is_said_to_be_ignored(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.text("Ada Quill."))
    result, payload = ask(imprint, openai_server, workspace, "--set", "chat.max_tool_iters=3")
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered"
    assert "chat.max_tool_iters is retired and ignored" in result.stderr
