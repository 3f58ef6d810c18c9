"""The chunk assembler: deltas of text and tool calls, finish reasons, usage, broken chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.remote.chunks import ChunkAssembler
from imprint_desktop.core.providers.remote.wire import StreamProtocolError, StreamServerError


def delta(content: Any = None, *, calls: list[Any] | None = None, finish: str | None = None) -> str:
    body: dict[str, Any] = {}
    if content is not None:
        body["content"] = content
    if calls is not None:
        body["tool_calls"] = calls
    return json.dumps({"choices": [{"index": 0, "delta": body, "finish_reason": finish}]})


def test_text_deltas_reach_the_sink_in_order() -> None:
    seen: list[str] = []
    assembler = ChunkAssembler(seen.append)
    for piece in ("The ", "light", "house."):
        assert not assembler.event(delta(piece))
    assert assembler.event("[DONE]")
    assert seen == ["The ", "light", "house."]
    assert assembler.text == "The lighthouse."
    assert assembler.finish() == "stop"


def test_tool_calls_assembled_by_index_when_interleaved() -> None:
    assembler = ChunkAssembler()
    events = [
        delta(calls=[{"index": 0, "id": "a", "function": {"name": "search_", "arguments": ""}}]),
        delta(calls=[{"index": 1, "id": "b", "function": {"name": "read_document"}}]),
        delta(calls=[{"index": 0, "function": {"name": "workspace", "arguments": '{"qu'}}]),
        delta(calls=[{"index": 1, "function": {"arguments": '{"path": "a.md"}'}}]),
        delta(calls=[{"index": 0, "function": {"arguments": 'ery": "fog"}'}}]),
        delta(finish="tool_calls"),
    ]
    for event in events:
        assembler.event(event)
    assert assembler.tool_calls() == (
        ToolCall("a", "search_workspace", '{"query": "fog"}'),
        ToolCall("b", "read_document", '{"path": "a.md"}'),
    )
    assert assembler.finish() == "tool_calls"


def test_tool_calls_without_index_or_id_and_object_arguments() -> None:
    assembler = ChunkAssembler()
    assembler.event(delta(calls=[{"id": "x", "function": {"name": "list_documents"}}]))
    assembler.event(delta(calls=[{"function": {"arguments": "{}"}}]))
    assembler.event(delta(calls=[{"id": "y", "function": {"name": "t", "arguments": {"k": 1}}}]))
    assembler.event(delta(calls=[{"index": 5, "function": {"name": "nameless_id"}}]))
    assert assembler.tool_calls() == (
        ToolCall("x", "list_documents", "{}"),
        ToolCall("y", "t", '{"k": 1}'),
        ToolCall("call_5", "nameless_id", ""),
    )
    # A server that gives no finish reason still asked for tools.
    assert assembler.finish() == "tool_calls"


def test_a_name_sent_whole_on_every_delta_is_not_doubled() -> None:
    assembler = ChunkAssembler()
    for arguments in ('{"a"', ": 1}"):
        call = {
            "index": 0,
            "id": "c",
            "function": {"name": "search_workspace", "arguments": arguments},
        }
        assembler.event(delta(calls=[call]))
    assert assembler.tool_calls() == (ToolCall("c", "search_workspace", '{"a": 1}'),)


def test_usage_only_chunk_and_null_usage() -> None:
    assembler = ChunkAssembler()
    assembler.event(
        json.dumps({"choices": [{"index": 0, "delta": {"content": "x"}}], "usage": None})
    )
    assembler.event(json.dumps({"choices": [], "usage": {"prompt_tokens": 9}}))
    assert assembler.usage == {"prompt_tokens": 9}


def test_length_finish_reason() -> None:
    assembler = ChunkAssembler()
    assembler.event(delta("cut", finish="length"))
    assert assembler.finish() == "length"


@pytest.mark.parametrize(
    "event",
    [
        "{not json",
        "[1, 2]",
        json.dumps({"id": "x", "object": "chat.completion.chunk"}),
        json.dumps({"choices": "nope"}),
        json.dumps({"choices": [{"index": 0, "delta": "text"}]}),
        json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [{"function": "f"}]}}]}),
    ],
)
def test_malformed_chunks_are_protocol_errors(event: str) -> None:
    with pytest.raises(StreamProtocolError):
        ChunkAssembler().event(event)


def test_an_error_object_in_the_stream() -> None:
    error = json.dumps({"error": {"message": "CUDA out of memory", "type": "server_error"}})
    with pytest.raises(StreamServerError, match="CUDA out of memory"):
        ChunkAssembler().event(error)


def test_whole_completion_from_a_server_that_ignores_stream() -> None:
    seen: list[str] = []
    assembler = ChunkAssembler(seen.append)
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assembler.whole(
        {
            "choices": [
                {"message": {"content": "Hi", "tool_calls": [call]}, "finish_reason": "tool_calls"}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        }
    )
    assert seen == ["Hi"]
    assert assembler.tool_calls() == (ToolCall("c1", "f", "{}"),)
    completion = assembler.completion(assembler.finish(), 99, 99, sent=True)
    assert (completion.prompt_tokens, completion.output_tokens, completion.estimated) == (
        5,
        2,
        False,
    )


def test_completion_reconciles_usage_and_falls_back_to_estimates() -> None:
    reported = ChunkAssembler()
    reported.event(delta("abc"))
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 60},
    }
    reported.event(json.dumps({"choices": [], "usage": usage}))
    done = reported.completion("stop", prompt_estimate=120, output_estimate=1, sent=True)
    assert (done.prompt_tokens, done.reused_prefix, done.prompt_evaluated) == (100, 60, 40)
    assert (done.output_tokens, done.estimated, done.provider_usage) == (3, False, usage)

    silent = ChunkAssembler()
    silent.event(delta("abc"))
    guessed = silent.completion("stop", prompt_estimate=120, output_estimate=1, sent=True)
    assert (guessed.prompt_tokens, guessed.reused_prefix, guessed.prompt_evaluated) == (120, 0, 120)
    assert (guessed.output_tokens, guessed.estimated, guessed.provider_usage) == (1, True, None)

    unsent = ChunkAssembler().completion(
        "cancelled", prompt_estimate=120, output_estimate=0, sent=False
    )
    assert unsent.prompt_evaluated == 0


def test_usage_with_nonsense_counts_is_not_trusted() -> None:
    assembler = ChunkAssembler()
    bad = {"prompt_tokens": -1, "completion_tokens": "7", "prompt_tokens_details": None}
    assembler.event(json.dumps({"choices": [], "usage": bad}))
    completion = assembler.completion("stop", prompt_estimate=50, output_estimate=4, sent=True)
    assert (completion.prompt_tokens, completion.output_tokens, completion.estimated) == (
        50,
        4,
        True,
    )
    assert completion.provider_usage == bad
