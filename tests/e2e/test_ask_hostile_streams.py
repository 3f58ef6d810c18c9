"""`imprint ask` against servers that stream in their own way: the answer and the tool calls are
reassembled whatever the framing, and a stream that cannot be read is an error (exit 1), not a
crash.

Tool-call fragments split at odd places, interleaved, with index gaps or object arguments; a body
cut inside lines and characters; extra choices and odd field types; a server that ignores
``stream: true``; keep-alive comments, blank data lines, missing ``[DONE]``, CR and CRLF line ends;
``finish_reason: length``; malformed and deeply nested chunks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, tool_results
from tests.support.ask_hostile import (
    answered,
    ask,
    call_delta,
    failed,
    last_assistant_calls,
    opening,
    read_trace_strictly,
)
from tests.support.openai_server import DONE, OpenAIServer, Reply, Usage, chunk, sse

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


# --- tool-call deltas split at odd places ---------------------------------------------------------


def test_tool_call_fragments_split_at_odd_places_are_reassembled(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    arguments = json.dumps({"query": "last keeper Ada", "limit": 3})
    events: list[Any] = [opening()]
    # Call 0: arguments begin before the name and the id; the name arrives in pieces.
    events.append(call_delta(0, arguments=arguments[:5]))
    events.append(call_delta(0, name="sea"))
    events.append(call_delta(0, call_id="odd_0", name="rch_work"))
    events.append(call_delta(0, name="space"))
    events += [call_delta(0, arguments=char) for char in arguments[5:]]
    # Call 1 repeats its whole name in every fragment, as some servers do.
    for piece in ("{", '"folder"', ": ", '""', "}"):
        events.append(call_delta(1, call_id="odd_1", name="list_documents", arguments=piece))
    openai_server.script(
        Reply.events(*events, chunk(finish_reason="tool_calls")), Reply.text("Ada Quill [1].")
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    calls = {c["id"]: c["function"] for c in last_assistant_calls(second)}
    assert calls["odd_0"]["name"] == "search_workspace"
    assert json.loads(calls["odd_0"]["arguments"]) == {"query": "last keeper Ada", "limit": 3}
    assert calls["odd_1"]["name"] == "list_documents"
    assert json.loads(calls["odd_1"]["arguments"]) == {"folder": ""}
    results = tool_results(second)
    assert "Ada Quill" in results["odd_0"] and "keepers.md" in results["odd_1"]


def test_interleaved_calls_with_index_gaps_and_object_arguments_are_all_answered(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    first = json.dumps({"query": "last keeper"})
    second_args = json.dumps({"query": "diaphone"})
    as_object = {  # arguments as a JSON object instead of a string, as some servers send them
        "index": 30,
        "id": "obj_30",
        "type": "function",
        "function": {"name": "read_document", "arguments": {"path": "signals.md"}},
    }
    openai_server.script(
        Reply.events(
            opening(),
            call_delta(7, call_id="gap_7", name="search_workspace", arguments=""),
            call_delta(2, call_id="gap_2", name="search_workspace", arguments=first[:7]),
            call_delta(7, arguments=second_args[:3]),
            chunk({"tool_calls": [as_object]}),
            call_delta(2, arguments=first[7:]),
            call_delta(7, arguments=second_args[3:]),
            chunk(finish_reason="tool_calls"),
        ),
        Reply.text("Ada Quill [1]."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    results = tool_results(second)
    assert set(results) == {"gap_2", "gap_7", "obj_30"}
    assert "Ada Quill" in results["gap_2"] and "diaphone" in results["gap_7"].lower()
    assert "two blasts" in results["obj_30"]
    echoed = {c["id"]: c["function"]["arguments"] for c in last_assistant_calls(second)}
    assert isinstance(echoed["obj_30"], str)  # echoed as the API expects: text
    assert json.loads(echoed["obj_30"]) == {"path": "signals.md"}


def test_an_event_stream_cut_inside_lines_and_characters_is_reassembled(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    body = (
        sse(chunk({"role": "assistant", "content": ""}))
        + sse(chunk({"content": "Ada Quill — gardienne, née à Brest [1]."}))
        + sse(chunk(finish_reason="stop"))
        + DONE
    ).replace(b"\n", b"\r\n")
    # Cut every 3 bytes: inside "data:", inside JSON, inside multi-byte characters, inside "\r\n".
    parts = [body[i : i + 3] for i in range(0, len(body), 3)]
    openai_server.script(Reply.raw(*parts))
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"] == "Ada Quill — gardienne, née à Brest [1]."


def test_only_the_first_choice_is_used_and_odd_field_types_do_not_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    other_choice = {
        "index": 1,
        "delta": {
            "content": "OTHER CHOICE",
            "tool_calls": [
                {"index": 0, "id": "other", "function": {"name": "write_note", "arguments": "{}"}}
            ],
        },
        "finish_reason": None,
    }
    odd_call = {  # a numeric id and a string index: tolerated, the call still gets an answer
        "index": "0",
        "id": 7,
        "type": "function",
        "function": {"name": "search_workspace", "arguments": '{"query": "last keeper"}'},
    }
    openai_server.script(
        Reply.events(
            opening(),
            {**chunk(), "choices": [other_choice]},
            chunk({"content": 5}),
            chunk({"tool_calls": [odd_call]}),
            chunk(finish_reason="tool_calls"),
        ),
        Reply.text("Ada Quill [1]."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    second = openai_server.chat_requests()[1]
    (call,) = last_assistant_calls(second)
    assert isinstance(call["id"], str) and call["id"]
    assert call["function"]["name"] == "search_workspace"
    assert "Ada Quill" in tool_results(second)[call["id"]]
    assert "OTHER CHOICE" not in json.dumps(second.messages)


# --- servers that do not stream ------------------------------------------------------------------


def completion(message: Mapping[str, Any], finish_reason: str, usage: Usage) -> dict[str, Any]:
    return {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "imprint-test",
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish_reason}],
        "usage": usage.to_json(),
    }


def test_a_server_that_ignores_stream_true_with_tool_calls_then_text(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    calls = [
        {
            "id": "whole_1",
            "type": "function",
            "function": {"name": "search_workspace", "arguments": '{"query": "last keeper"}'},
        },
        {
            "id": "whole_2",
            "type": "function",
            "function": {"name": "read_document", "arguments": '{"path": "signals.md"}'},
        },
    ]
    tool_message = {"role": "assistant", "content": None, "tool_calls": calls}
    answer = {"role": "assistant", "content": "Ada Quill [1]; two blasts a minute [2]."}
    openai_server.script(
        Reply.json(completion(tool_message, "tool_calls", Usage(800, 30))),
        Reply.json(completion(answer, "stop", Usage(1200, 12))),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    assert payload["answer"] == "Ada Quill [1]; two blasts a minute [2]."
    requests = openai_server.chat_requests()
    assert all(r.json["stream"] is True for r in requests)
    results = tool_results(requests[1])
    assert list(results) == ["whole_1", "whole_2"]
    assert "Ada Quill" in results["whole_1"] and "two blasts" in results["whole_2"]
    assert {item["source"] for item in payload["evidence"]} == {"keepers.md", "signals.md"}
    # The whole body's usage is the count: 800 + 30, then 1200 + 12 — past the prompt the second
    # shares with the first, since nothing is reported cached (DESIGN §1).
    traced = of_type(read_trace_strictly(trace), "request")
    assert [r["estimated"] for r in traced] == [False, False]
    assert [r["provider_usage"]["prompt_tokens"] for r in traced] == [800, 1200]
    assert [r["prefix_source"] for r in traced] == ["estimate", "estimate"]
    reused = traced[1]["reused_prefix"]
    assert 0 < reused < 1200
    assert payload["tokens"]["charged"] == 830 + 1200 - reused + 12


# --- event-stream oddities ------------------------------------------------------------------------


def test_keepalive_comments_empty_choices_and_unknown_fields_are_ignored(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    azure_first = {**chunk(), "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    reasoning = chunk({"reasoning_content": "SECRET THOUGHTS", "content": None})
    extras = {
        **chunk({"content": "Ada Quill", "refusal": None, "audio": None}),
        "system_fingerprint": "fp_x",
        "x_groq": {"id": "q"},
        "service_tier": "default",
    }
    parts = [
        b"\xef\xbb\xbf: keep-alive\n\n",  # a byte order mark and a comment
        b": OPENROUTER PROCESSING\n\n",
        b"event: message\nid: 1\nretry: 1000\n",
        sse(azure_first),
        sse(reasoning),
        b": keep-alive\n\n",
        sse(extras),
        b"data:" + json.dumps(chunk({"content": " kept the light."})).encode() + b"\n\n",
        sse(chunk(finish_reason="stop", usage=Usage(500, 6))),
        b"data: [DONE]\n\n",
        b"data: this comes after the end and is never read\n\n",
    ]
    openai_server.script(Reply.raw(*parts))
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    answered(result, payload)
    assert payload["answer"] == "Ada Quill kept the light."
    assert "SECRET THOUGHTS" not in result.stdout
    (request,) = of_type(read_trace_strictly(trace), "request")
    assert request["estimated"] is False and request["output_tokens"] == 6


def test_blank_data_lines_are_not_chunks(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.raw(
            sse(chunk({"role": "assistant", "content": ""})),
            b"data:\n\n",
            b"data: \n\n",
            sse(chunk({"content": "Ada Quill."})),
            sse(chunk(finish_reason="stop")),
            DONE,
        )
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"] == "Ada Quill."


def test_a_stream_without_done_or_with_crlf_and_cr_line_ends_is_complete(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    crlf = b"".join(
        sse(c).replace(b"\n", b"\r\n")
        for c in (
            opening(),
            call_delta(0, call_id="cr_1", name="search_workspace", arguments='{"query": '),
            call_delta(0, arguments='"last keeper"}'),
            chunk(finish_reason="tool_calls"),
        )
    )
    cr_only = b"".join(
        sse(c).replace(b"\n", b"\r")
        for c in (chunk({"content": "Ada "}), chunk({"content": "Quill [1]."}))
    )
    openai_server.script(
        Reply.raw(crlf),  # no [DONE]: the finish reason and the end of the body say enough
        Reply.raw(cr_only, sse(chunk(finish_reason="stop"))),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"] == "Ada Quill [1]."
    assert "Ada Quill" in tool_results(openai_server.chat_requests()[1])["cr_1"]


def test_finish_reason_length_keeps_the_text_and_cut_arguments_become_an_error(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.events(
            opening(),
            call_delta(0, call_id="cut", name="search_workspace", arguments='{"query": "last ke'),
            chunk(finish_reason="length"),
        ),
        Reply.text("Ada Quill was the last keeper", finish_reason="length"),
        Reply.text("of Greyness Point [1]."),  # the final request completes the cut answer
    )
    result, payload = ask(imprint, openai_server, workspace)
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["answer"] == "Ada Quill was the last keeper of Greyness Point [1]."
    assert payload["stop_reason"] == "answered" and payload["final_mode"] == "model"
    _research, cut, final = openai_server.chat_requests()
    results = tool_results(cut)
    assert list(results) == ["cut"] and results["cut"].startswith("Error:")
    assert final.messages[-2] == {"role": "assistant", "content": "Ada Quill was the last keeper"}
    assert final.json["max_tokens"] == 2048  # the final allowance, not the research one


DEEPLY_NESTED = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "data",
    [
        "{not json",
        "null",
        '{"choices": [17]}',
        DEEPLY_NESTED,
    ],
    ids=["not-json", "null", "choice-number", "deeply-nested"],
)
def test_a_malformed_chunk_is_an_error_not_a_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, data: str
) -> None:
    openai_server.script(Reply.events(chunk({"content": "Ada"}), data))
    result, payload = ask(imprint, openai_server, workspace)
    failed(result, payload)
    assert len(openai_server.chat_requests()) == 1  # text had arrived: not asked again


def test_a_deeply_nested_non_streamed_body_is_an_error_not_a_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply(200, (("Content-Type", "application/json"),), (DEEPLY_NESTED.encode(),))
    )
    result, payload = ask(imprint, openai_server, workspace)
    failed(result, payload)
