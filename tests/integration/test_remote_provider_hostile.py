"""The remote provider against hostile and broken servers: whatever a server sends, ``complete()``
returns a completion or raises a :class:`ProviderError` — never a parser's or httpx's exception.

Every scenario runs against the scripted server on loopback; none sleeps.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from types import FrameType
from typing import Any

import httpx
import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderNotFoundError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import Completion, ToolCall
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.providers.remote import bodies
from imprint_desktop.core.providers.remote import sse as framing
from imprint_desktop.core.providers.remote.bodies import parse_json
from imprint_desktop.core.providers.remote.chunks import ChunkAssembler
from imprint_desktop.core.providers.remote.client import RemoteProvider
from imprint_desktop.core.providers.remote.failures import RetryPolicy
from imprint_desktop.core.providers.remote.request import output_limit
from imprint_desktop.core.providers.remote.wire import StreamProtocolError, error_text, try_json
from tests.integration.test_remote_provider import FAST, KEY, ask, check, run
from tests.support.openai_server import SSE, OpenAIServer, Reply, chunk, sse
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

ONCE = RetryPolicy(attempts=1, first_delay=0.01, max_delay=0.01, connect_timeout=2.0)
NESTED = b"[" * 100_000 + b"]" * 100_000
NOT_GZIP = b"this body was never gzip-compressed"


def reply(body: bytes, *headers: tuple[str, str], status: int = 200) -> Reply:
    """A one-part reply with exactly these headers."""
    return Reply(status, tuple(headers), (body,), label="hostile")


def failure(base_url: str, **options: Any) -> ProviderError:
    """The ProviderError complete() raises; anything else fails the test with its own traceback."""
    with pytest.raises(ProviderError) as raised:
        run(base_url, **options)
    return raised.value


def answer(*events: str | dict[str, Any], done: bool = True) -> Reply:
    """An event stream: an opening chunk, the events given, and [DONE]."""
    return Reply.events(chunk({"role": "assistant", "content": ""}), *events, done=done)


def tool_delta(**call: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [call]})


# --- deep nesting (RecursionError) -------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    [
        Reply.raw(b"data: " + NESTED + b"\n\n"),
        reply(NESTED, ("Content-Type", "application/json")),
        Reply.raw(sse(chunk({"content": "Half "})), b"data: " + NESTED + b"\n\n"),
    ],
    ids=["stream-chunk", "json-body", "after-text"],
)
def test_a_deeply_nested_chunk_is_a_response_error(
    openai_server: OpenAIServer, hostile: Reply
) -> None:
    openai_server.script(hostile, Reply.text("never asked for"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "The server at http://127.0.0.1" in str(error)
    assert "nested too deeply" in str(error)
    assert len(openai_server.chat_requests()) == 1


def test_a_deeply_nested_error_body_still_reads_as_the_status(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.error(500, body=NESTED), Reply.text("Recovered."))
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Recovered."
    openai_server.script(Reply.error(400, body=NESTED))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "HTTP 400" in str(error)


def read_event(data: str) -> None:
    assembler = ChunkAssembler()
    assembler.event(data)
    assembler.completion(assembler.finish(), 1, 1, sent=True)


def read_json_answer(data: str) -> None:
    ChunkAssembler().whole(parse_json(data.encode()))


def read_error_body(data: str) -> None:
    parsed = try_json(data.encode())
    if parsed is None:  # what try_json says for "not JSON", and so for "nested too deeply"
        raise StreamProtocolError("the error body is nested too deeply to read")
    error_text(parsed)


def at_depth(frames: int, call: Callable[[], None]) -> None:
    """``call()`` with ``frames`` more frames on the stack."""
    if frames:
        at_depth(frames - 1, call)
    else:
        call()


def stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


@pytest.mark.parametrize("read", [read_event, read_json_answer, read_error_body])
@pytest.mark.parametrize(
    "shape",
    [
        '{"error": {"message": DEEP}}',
        '{"error": DEEP}',
        "DEEP",
        '{"choices": [DEEP]}',
        '{"choices": DEEP}',
        json.dumps(chunk({"content": "x"}, finish_reason="DEEP")),
        json.dumps(tool_delta(index=0, id="c", function={"name": "f", "arguments": "DEEP"})),
        json.dumps(tool_delta(index="DEEP", id="c", function={"name": "f", "arguments": "{}"})),
        '{"choices": [], "usage": {"prompt_tokens": DEEP, "details": {"x": DEEP}}}',
    ],
)
def test_values_just_shallow_enough_to_parse_are_no_crash(
    shape: str, read: Callable[[str], None]
) -> None:
    """Values the parser accepts, but deep enough to break ``str()`` or ``json.dumps`` a few
    frames further down (an error message, a chunk shown in an error, arguments re-encoded as
    text). The stack depth sweeps across the parser's limit, one frame at a time, so some calls
    parse and some do not; either way nothing but a :class:`StreamProtocolError` comes out."""
    nesting = 200
    data = shape.replace('"DEEP"', "DEEP").replace("DEEP", "[" * nesting + "0" + "]" * nesting)
    edge = sys.getrecursionlimit() - stack_depth() - nesting
    outcomes = set()
    for frames in range(edge - 40, edge + 10):
        try:
            at_depth(frames, functools.partial(read, data))
            outcomes.add("read")
        except StreamProtocolError as error:
            outcomes.add("too deep" if "nested too deeply" in str(error) else "refused")
    assert "too deep" in outcomes  # the sweep reached the parser's limit
    assert outcomes - {"too deep"}  # and depths below it, where the value was parsed


# --- httpx errors that are not transport errors --------------------------------------------------


@pytest.mark.parametrize("content_type", [SSE, "application/json"])
def test_a_body_that_is_not_what_its_content_encoding_says(
    openai_server: OpenAIServer, content_type: str
) -> None:
    openai_server.script(
        reply(NOT_GZIP, ("Content-Type", content_type), ("Content-Encoding", "gzip")),
        Reply.text("never asked for"),
    )
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "could not be decoded" in str(error)
    assert len(openai_server.chat_requests()) == 1  # the same body would come again


def test_an_error_status_with_a_broken_encoding_is_still_the_status(
    openai_server: OpenAIServer,
) -> None:
    broken = reply(
        NOT_GZIP, ("Content-Type", "application/json"), ("Content-Encoding", "gzip"), status=503
    )
    openai_server.script(*[broken] * FAST.attempts)
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderUnavailableError)
    assert "HTTP 503" in str(error)
    assert len(openai_server.chat_requests()) == FAST.attempts


@pytest.mark.parametrize(
    ("base_url", "words"),
    [
        ("http://127.0.0.1:99999/v1", "Port out of range"),
        ("http://[::1/v1", "Invalid IPv6 URL"),
        ("ftp://127.0.0.1/v1", "it must start with http:// or https://"),
        ("127.0.0.1:8080/v1", "it must start with http:// or https://"),
        ("http:///v1", "it names no server"),
    ],
    ids=["port", "bracket", "scheme", "no-scheme", "no-host"],
)
def test_an_unusable_server_address_is_named(base_url: str, words: str) -> None:
    error = failure(base_url, retry=RetryPolicy(attempts=3, first_delay=5.0))  # no retries wait
    assert isinstance(error, ProviderUnavailableError)
    assert words in str(error)
    assert "Server address in Preferences → Remote server" in str(error)
    with pytest.raises(ProviderUnavailableError, match="Server address"):
        check(base_url)


@pytest.mark.parametrize("key", ["sk-imprint-ü", "sk-imprint\u200b-key", "sk-imprint\nkey"])
def test_an_api_key_that_cannot_be_sent_is_an_auth_error(
    openai_server: OpenAIServer, key: str
) -> None:
    error = failure(openai_server.base_url, api_key=key)
    assert isinstance(error, ProviderAuthError)
    assert "cannot be sent" in str(error)
    assert key not in str(error)
    assert openai_server.chat_requests() == []
    with pytest.raises(ProviderAuthError, match="cannot be sent"):
        asyncio.run(check_with_key(openai_server.base_url, key))


async def check_with_key(base_url: str, key: str) -> str:
    async with make_async_client(make_config().network) as client:
        return await RemoteProvider(client, base_url, "", key, 8192).check_connection()


def test_a_pasted_key_with_surrounding_white_space_works(openai_server: OpenAIServer) -> None:
    openai_server.api_key = KEY
    openai_server.script(Reply.text("Authorised."))
    completion, _ = run(openai_server.base_url, api_key=f"  {KEY}\n")
    assert completion.text == "Authorised."


class _Unmapped(httpx.AsyncBaseTransport):
    """The real transport, whose response stream then fails with an exception httpx does not
    map (httpcore re-raises those as they are, as it does with anyio's exception groups)."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        inner = response.stream
        assert isinstance(inner, httpx.AsyncByteStream)

        async def fail_after_the_first_part() -> AsyncIterator[bytes]:
            async for part in inner:
                yield part
                raise ExceptionGroup("unhandled errors in a TaskGroup", [OSError("reset")])

        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Stream(fail_after_the_first_part(), inner),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Stream(httpx.AsyncByteStream):
    def __init__(self, parts: AsyncIterator[bytes], inner: httpx.AsyncByteStream) -> None:
        self._parts, self._inner = parts, inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._parts:
            yield part

    async def aclose(self) -> None:
        await self._inner.aclose()


def run_with(client: httpx.AsyncClient, base_url: str, sink: Any = None) -> Completion:
    async def main() -> Completion:
        async with client:
            provider = RemoteProvider(client, base_url, "", None, 8192, retry=FAST)
            return await provider.complete(ask(), CancelToken(), sink)

    return asyncio.run(main())


def test_an_exception_httpx_does_not_map_is_a_provider_error(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.text("Partial answer, then trouble"))
    client = httpx.AsyncClient(transport=_Unmapped())
    with pytest.raises(ProviderError, match="ExceptionGroup") as raised:
        run_with(client, openai_server.base_url)
    assert "The server at http://127.0.0.1" in str(raised.value)


def test_an_exception_from_the_text_sink_is_not_disguised(openai_server: OpenAIServer) -> None:
    class SinkBrokeError(Exception):
        pass

    def sink(text: str) -> None:
        raise SinkBrokeError(text)

    openai_server.script(Reply.text("Hello there"))
    with pytest.raises(SinkBrokeError):
        run_with(make_async_client(make_config().network), openai_server.base_url, sink)


# --- chunks of the wrong shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ("[1, 2, 3]", "not a JSON object"),
        ("42", "not a JSON object"),
        ('"just a string"', "not a JSON object"),
        ("null", "not a JSON object"),
        (json.dumps({"choices": {"0": {"delta": {"content": "x"}}}}), "choices are not a list"),
        (json.dumps({"choices": "everything"}), "choices are not a list"),
        (json.dumps({"choices": [{"index": 0, "delta": "text"}]}), "not an object"),
        (json.dumps({"choices": [{"index": 0, "delta": [1]}]}), "not an object"),
        (json.dumps({"choices": ["a choice"]}), "not an object"),
        (json.dumps(chunk({"tool_calls": {"index": 0}})), "tool calls are not a list"),
        (json.dumps(chunk({"tool_calls": "search"})), "tool calls are not a list"),
        (json.dumps(chunk({"tool_calls": [7]})), "tool call is not an object"),
        (json.dumps(tool_delta(index=-1, id="c", function={"name": "f"})), "negative index"),
    ],
)
def test_chunks_of_the_wrong_shape_are_response_errors(
    openai_server: OpenAIServer, event: str, words: str
) -> None:
    openai_server.script(Reply.events(event), Reply.text("never asked for"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert words in str(error)
    assert len(openai_server.chat_requests()) == 1


def test_a_null_delta_and_null_function_are_nothing(openai_server: OpenAIServer) -> None:
    openai_server.script(
        answer(
            {"choices": [{"index": 0, "delta": None, "finish_reason": None}]},
            chunk({"content": "Text."}),
            tool_delta(index=0, id="call_1", type="function", function=None),
            tool_delta(index=0, function={"name": "search_workspace", "arguments": "{}"}),
            chunk(finish_reason="tool_calls"),
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Text."
    assert completion.tool_calls == (ToolCall("call_1", "search_workspace", "{}"),)


def test_a_huge_tool_call_index_allocates_nothing(openai_server: OpenAIServer) -> None:
    openai_server.script(
        answer(
            tool_delta(index=10**12, id="call_far", function={"name": "f", "arguments": '{"a":'}),
            tool_delta(index=10**12, function={"arguments": " 1}"}),
            tool_delta(index=10**40, id="call_farther", function={"name": "g", "arguments": ""}),
            chunk(finish_reason="tool_calls"),
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.tool_calls == (
        ToolCall("call_far", "f", '{"a": 1}'),
        ToolCall("call_farther", "g", ""),
    )


@pytest.mark.parametrize("index", ["0", 0.0, True, None, [0], {"i": 0}])
def test_a_tool_call_index_that_is_not_an_integer_is_inferred(
    openai_server: OpenAIServer, index: Any
) -> None:
    openai_server.script(
        answer(
            tool_delta(index=index, id="call_1", function={"name": "f", "arguments": '{"x"'}),
            tool_delta(index=index, function={"arguments": ": 1}"}),
            tool_delta(index=index, id="call_2", function={"name": "g", "arguments": "{}"}),
            chunk(finish_reason="tool_calls"),
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.tool_calls == (
        ToolCall("call_1", "f", '{"x": 1}'),
        ToolCall("call_2", "g", "{}"),
    )


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"query": "fog"}, '{"query": "fog"}'),
        (["fog"], '["fog"]'),
        (42, "42"),
        (1e400, "Infinity"),
        (True, "true"),
        (None, ""),
    ],
)
def test_tool_arguments_that_are_not_text_become_json_text(
    openai_server: OpenAIServer, arguments: Any, text: str
) -> None:
    """The toolbox then tells the model its arguments are not an object, which it can fix."""
    openai_server.script(
        answer(
            tool_delta(index=0, id="call_1", function={"name": "search_workspace"}),
            tool_delta(index=0, function={"arguments": arguments}),
            chunk(finish_reason="tool_calls"),
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.tool_calls == (ToolCall("call_1", "search_workspace", text),)


def test_names_ids_and_reasons_of_the_wrong_type_are_ignored(openai_server: OpenAIServer) -> None:
    openai_server.script(
        answer(
            chunk({"content": ["not", "text"]}),
            chunk({"content": "Kept."}),
            tool_delta(index=0, id=5, function={"name": {"n": 1}, "arguments": "{}"}),
            chunk(finish_reason={"why": "stop"}),
            chunk(finish_reason="tool_calls"),
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Kept."
    assert completion.tool_calls == (ToolCall("call_0", "", "{}"),)
    assert completion.stop == "tool_calls"


# --- usage ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "120", "completion_tokens": "7"},
        {"prompt_tokens": -120, "completion_tokens": -7},
        {"prompt_tokens": None, "completion_tokens": None},
        {"prompt_tokens": 1e400, "completion_tokens": -1e400},
        {"prompt_tokens": 1.5e300, "completion_tokens": 7.5},
        {"prompt_tokens": 10**40, "completion_tokens": 2**63},
        {"prompt_tokens": True, "completion_tokens": [7]},
        {"prompt_tokens": {"n": 1}, "prompt_tokens_details": {"cached_tokens": 10**40}},
        {"prompt_tokens_details": [1, 2], "completion_tokens_details": "x" * 100_000},
    ],
)
def test_nonsense_usage_falls_back_to_the_estimates(
    openai_server: OpenAIServer, usage: dict[str, Any]
) -> None:
    openai_server.script(
        answer(chunk({"content": "Answer."}, finish_reason="stop"), {"choices": [], "usage": usage})
    )
    completion, _ = run(openai_server.base_url)
    estimate, _ = run_estimate(openai_server)
    assert completion.text == "Answer."
    assert completion.estimated is True
    assert completion.prompt_tokens == estimate.prompt_tokens
    assert completion.output_tokens == estimate.output_tokens
    assert 0 <= completion.reused_prefix <= completion.prompt_tokens
    assert completion.prompt_evaluated == completion.prompt_tokens - completion.reused_prefix
    json.dumps(completion.provider_usage, allow_nan=False)  # the trace can always write it
    assert len(json.dumps(completion.provider_usage)) < 2_000


def run_estimate(openai_server: OpenAIServer) -> tuple[Completion, list[str]]:
    openai_server.script(Reply.text("Answer."))
    return run(openai_server.base_url)


@pytest.mark.parametrize(
    ("reported", "believed"),
    [(5, True), (1200, True), (10**6, False), (10**30, False)],
)
def test_more_prompt_tokens_than_the_request_could_make_are_not_believed(
    openai_server: OpenAIServer, reported: int, believed: bool
) -> None:
    """ask() is a few hundred bytes: with a template's allowance, well under 2,000 tokens."""
    usage = {"prompt_tokens": reported, "completion_tokens": 2}
    openai_server.script(
        answer(chunk({"content": "Answer."}, finish_reason="stop"), {"choices": [], "usage": usage})
    )
    completion, _ = run(openai_server.base_url)
    estimate, _ = run_estimate(openai_server)
    assert completion.prompt_tokens == (reported if believed else estimate.prompt_tokens)
    assert completion.estimated is not believed
    assert completion.output_tokens == 2
    kept = usage if reported <= 2**53 else {"completion_tokens": 2}  # what JSON can store
    assert completion.provider_usage == kept  # the trace keeps what the server said


def test_usage_that_is_not_an_object_is_ignored(openai_server: OpenAIServer) -> None:
    openai_server.script(
        answer(
            chunk({"content": "Answer."}, finish_reason="stop"),
            {"choices": [], "usage": [1, 2, 3]},
            {"choices": [], "usage": "lots"},
        )
    )
    completion, _ = run(openai_server.base_url)
    assert (completion.text, completion.estimated, completion.provider_usage) == (
        "Answer.",
        True,
        None,
    )


# --- bytes --------------------------------------------------------------------------------------


def test_invalid_utf8_in_the_stream_is_replaced(openai_server: OpenAIServer) -> None:
    bad = b'data: {"choices": [{"index": 0, "delta": {"content": "caf\xc3 \xff\xfe ok"}}]}\n\n'
    openai_server.script(Reply.raw(bad, sse(chunk(finish_reason="stop")), b"data: [DONE]\n\n"))
    completion, texts = run(openai_server.base_url)
    assert completion.text == "caf\ufffd \ufffd\ufffd ok"
    assert texts == [completion.text]


def test_invalid_utf8_in_a_json_answer_is_replaced(openai_server: OpenAIServer) -> None:
    body = b'{"choices": [{"message": {"content": "na\xefve \xff"}, "finish_reason": "stop"}]}'
    openai_server.script(reply(body, ("Content-Type", "application/json")))
    completion, _ = run(openai_server.base_url)
    assert completion.text == "na\ufffdve \ufffd"


def test_an_oversized_line_is_a_response_error(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(framing, "EVENT_LIMIT", 4096)
    endless = b"data: " + b"x" * 2048
    openai_server.script(Reply.raw(*[endless] * 8), Reply.text("never asked for"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "larger than" in str(error)


def test_an_oversized_event_is_a_response_error(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(framing, "EVENT_LIMIT", 4096)
    line = b"data: " + b"x" * 1000 + b"\n"
    openai_server.script(Reply.raw(*[line] * 8), Reply.text("never asked for"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "larger than" in str(error)


# --- servers that ignore stream: true ------------------------------------------------------------


def whole(message: dict[str, Any], finish_reason: str = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        **extra,
    }


def test_a_whole_json_completion_with_tool_calls_works(openai_server: OpenAIServer) -> None:
    calls = [
        ToolCall("call_a", "search_workspace", '{"query": "fog"}').to_openai(),
        {"type": "function", "function": {"name": "list_documents", "arguments": {}}},
    ]
    usage = {"prompt_tokens": 90, "completion_tokens": 12}
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    openai_server.script(Reply.json(whole(message, "tool_calls", usage=usage)))
    completion, texts = run(openai_server.base_url)
    assert completion.tool_calls == (
        ToolCall("call_a", "search_workspace", '{"query": "fog"}'),
        ToolCall("call_1", "list_documents", "{}"),
    )
    assert (completion.stop, completion.text, texts) == ("tool_calls", "", [])
    assert (completion.prompt_tokens, completion.output_tokens, completion.estimated) == (
        90,
        12,
        False,
    )


def test_a_whole_json_text_completion_works(openai_server: OpenAIServer) -> None:
    text = "A long answer. " * 10_000  # well past the size of an error body
    message = {"role": "assistant", "content": text}
    openai_server.script(
        reply(
            json.dumps(whole(message, "length")).encode(),
            ("Content-Type", "application/json; charset=utf-8"),
        )
    )
    # An allowance the whole answer fits in (a non-streamed answer is cut at it too, below).
    completion, texts = run(openai_server.base_url, replace(ask(), max_tokens=100_000))
    assert (completion.text, texts, completion.stop) == (text, [text], "length")


def test_a_whole_json_completion_is_cut_at_the_allowance(openai_server: OpenAIServer) -> None:
    text = "A long answer. " * 10_000
    message = {"role": "assistant", "content": text, "reasoning_content": "Hmm. " * 50}
    openai_server.script(Reply.json(whole(message, "stop")))
    completion, texts = run(openai_server.base_url, replace(ask(), max_tokens=256))
    assert completion.stop == "length" and text.startswith(completion.text)
    assert texts == [completion.text], "only what is kept reaches the reader of the text"
    reasoning = estimate_tokens("Hmm. " * 50)
    assert 240 <= completion.output_tokens <= 256
    assert completion.output_tokens == reasoning + estimate_tokens(completion.text)


def test_a_json_answer_larger_than_the_limit_is_a_response_error(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bodies, "ANSWER_LIMIT", 10_000)
    openai_server.script(Reply.json(whole({"content": "x" * 20_000})), Reply.text("never"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "larger than" in str(error)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"error": {"message": "model 'gpt-x' is not loaded", "code": 400}}, "is not loaded"),
        ({"error": "quota exhausted"}, "quota exhausted"),
        ({"error": {"code": 17, "type": "overloaded"}}, "overloaded"),
        ({"error": {"message": ["deep", {"er": "ror"}]}}, "deep"),
    ],
)
def test_a_json_error_with_status_200_names_the_servers_message(
    openai_server: OpenAIServer, body: dict[str, Any], words: str
) -> None:
    openai_server.script(Reply.json(body), Reply.text("never asked for"))
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "reported an error while answering" in str(error)
    assert words in str(error)
    assert len(openai_server.chat_requests()) == 1


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"choices": []}, "has no choices"),
        ([1, 2], "has no choices"),
        ({"choices": [{"message": "hi"}]}, "has no message"),
        ({"choices": [{"message": {"content": "x", "tool_calls": "f"}}]}, "not a list"),
        ({"choices": [{"message": {}}]}, None),  # an empty message is an empty answer
    ],
)
def test_a_json_answer_of_the_wrong_shape(
    openai_server: OpenAIServer, body: Any, words: str | None
) -> None:
    openai_server.script(Reply.json(body))
    if words is None:
        completion, _ = run(openai_server.base_url)
        assert (completion.text, completion.tool_calls, completion.stop) == ("", (), "stop")
        return
    error = failure(openai_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert words in str(error)


# --- the connection test -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hostile", "kind", "words"),
    [
        (reply(NESTED, ("Content-Type", "application/json")), ProviderResponseError, "too deeply"),
        (
            reply(NOT_GZIP, ("Content-Type", "application/json"), ("Content-Encoding", "gzip")),
            ProviderResponseError,
            "could not be decoded",
        ),
        (Reply.json({"data": {"id": "m"}}), ProviderResponseError, "not in the OpenAI format"),
        (Reply.json({"data": [{"id": [[["m"]]]}]}), ProviderNotFoundError, "it offers: [[["),
        (Reply.json({"object": "list"}), ProviderResponseError, "not in the OpenAI format"),
        (Reply.json({"error": {"message": "no models here"}}), ProviderResponseError, "no models"),
    ],
    ids=["nested", "not-gzip", "data-object", "nested-id", "no-data", "error"],
)
def test_check_connection_with_a_hostile_model_list(
    openai_server: OpenAIServer, hostile: Reply, kind: type[ProviderError], words: str
) -> None:
    openai_server.script(hostile, path="/v1/models")
    with pytest.raises(kind) as raised:
        check(openai_server.base_url, model="imprint-test")
    assert words in str(raised.value)


@pytest.mark.parametrize(
    "header",
    [
        "Mon, 01 Jan 99999999999999999 00:00:00 GMT",
        "Mon, 01 Jan 0001 00:00:00 -0000",
        "nan",
        "-5",
        "soon",
        "\u00e9",
    ],
)
def test_a_nonsense_retry_after_is_a_plain_retry(openai_server: OpenAIServer, header: str) -> None:
    openai_server.script(
        Reply(503, (("Content-Type", "application/json"), ("Retry-After", header)), (b"{}",)),
        Reply.text("Second try."),
    )
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Second try."
    assert len(openai_server.chat_requests()) == 2


def test_blank_data_lines_are_not_chunks(openai_server: OpenAIServer) -> None:
    openai_server.script(
        Reply.raw(
            sse(chunk({"role": "assistant", "content": ""})),
            b"data:\n\n",
            b"data: \n\n",
            b"data:\ndata:\n\n",
            b"data:   \n\n",
            sse(chunk({"content": "Ada Quill."})),
            sse(chunk(finish_reason="stop")),
            b"data: [DONE]\n\n",
        )
    )
    completion, _ = run(openai_server.base_url)
    assert completion.text == "Ada Quill."


# --- lone surrogates: valid JSON, invalid Unicode ------------------------------------------------

LONE = b"\\ud83d"  # half of an emoji's surrogate pair, as a JSON escape


def test_a_lone_surrogate_in_the_answer_becomes_a_replacement_character(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(
        Reply.raw(
            b'data: {"choices": [{"index": 0, "delta": {"content": "Ada '
            + LONE
            + b' [1]."}}]}\n\n',
            sse(chunk(finish_reason="stop")),
            sse({"choices": [], "usage": {"prompt_tokens": 9, "note": "x\ud83d"}}),  # escaped
            b"data: [DONE]\n\n",
        )
    )
    completion, texts = run(openai_server.base_url)
    assert completion.text == "Ada \ufffd [1]."
    assert texts == [completion.text]
    assert completion.provider_usage == {"prompt_tokens": 9, "note": "x\ufffd"}


def test_lone_surrogates_in_a_tool_call_become_replacement_characters(
    openai_server: OpenAIServer,
) -> None:
    call = (
        b'{"index": 0, "id": "call_' + LONE + b'", "type": "function", "function": '
        b'{"name": "search_'
        + LONE
        + b'", "arguments": "{\\"query\\": \\"keeper '
        + LONE
        + b'\\"}"}}'
    )
    openai_server.script(
        Reply.raw(
            b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [' + call + b"]}}]}\n\n",
            sse(chunk(finish_reason="tool_calls")),
            b"data: [DONE]\n\n",
        )
    )
    completion, _ = run(openai_server.base_url)
    (made,) = completion.tool_calls
    assert made == ToolCall("call_\ufffd", "search_\ufffd", '{"query": "keeper \ufffd"}')


def test_a_lone_surrogate_in_an_error_message_is_shown_replaced(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(
        Reply.raw(b'data: {"error": {"message": "GPU ' + LONE + b' melted"}}\n\n'),
        Reply.text("never asked for"),
    )
    error = failure(openai_server.base_url)
    assert "GPU \ufffd melted" in str(error)
    str(error).encode()  # printable


def test_a_lone_surrogate_in_a_model_name_is_shown_replaced(openai_server: OpenAIServer) -> None:
    openai_server.script(
        reply(b'{"data": [{"id": "m' + LONE + b'"}]}', ("Content-Type", "application/json")),
        path="/v1/models",
    )
    summary = check(openai_server.base_url)
    assert "m\ufffd" in summary
    summary.encode()


# --- a server that ignores max_tokens ------------------------------------------------------------


@pytest.mark.parametrize("shape", ["text", "arguments", "one-huge-chunk"])
def test_output_far_past_max_tokens_is_cut_as_length(
    openai_server: OpenAIServer, shape: str
) -> None:
    piece = "lorem ipsum dolor sit amet " * 4  # 108 bytes a chunk
    if shape == "text":
        chunks: list[dict[str, Any]] = [chunk({"content": piece}) for _ in range(5000)]
    elif shape == "arguments":
        opening = tool_delta(index=0, id="c1", function={"name": "write_note", "arguments": ""})
        chunks = [opening] + [
            tool_delta(index=0, function={"arguments": piece}) for _ in range(5000)
        ]
    else:
        chunks = [chunk({"content": piece * 10_000})]  # a megabyte in a single event
    openai_server.script(Reply.events(*chunks, chunk(finish_reason="stop")))
    request = replace(ask(), max_tokens=16)
    completion, _ = run(openai_server.base_url, request)
    assert completion.stop == "length"
    produced = completion.text + "".join(c.name + c.arguments for c in completion.tool_calls)
    assert len(produced.encode()) <= output_limit(16)
    # Cut at the allowance as estimated (the budget's own units), not at the end, nor far before.
    assert 12 <= completion.output_tokens <= 16
    assert completion.output_tokens == estimate_tokens(produced)


# --- a server that refuses stream_options ---------------------------------------------------


def test_a_server_refusing_stream_options_is_asked_without_them(
    openai_server: OpenAIServer,
) -> None:
    refusal = json.dumps(
        {"error": {"message": "Unrecognized request argument supplied: stream_options"}}
    ).encode()

    async def main() -> list[Completion]:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, openai_server.base_url, "", None, 8192, retry=ONCE)
            first = await provider.complete(ask(), CancelToken())
            second = await provider.complete(ask(), CancelToken())
            return [first, second]

    openai_server.script(
        Reply.error(400, body=refusal), Reply.text("Ada Quill."), Reply.text("Again.")
    )
    first, second = asyncio.run(main())
    assert (first.text, second.text) == ("Ada Quill.", "Again.")
    assert first.estimated and second.estimated  # no usage: the provider's own estimate
    sent = [request.json for request in openai_server.chat_requests()]
    assert "stream_options" in sent[0]
    assert "stream_options" not in sent[1] and "stream_options" not in sent[2], "remembered"


def test_a_required_tool_call_is_asked_for_and_dropped_if_the_server_refuses_it(
    openai_server: OpenAIServer,
) -> None:
    refusal = json.dumps(
        {"error": {"message": "tool_choice 'required' is not supported by this server"}}
    ).encode()

    async def main() -> list[Completion]:
        async with make_async_client(make_config().network) as client:
            provider = RemoteProvider(client, openai_server.base_url, "", None, 8192, retry=ONCE)
            required = replace(ask(), tool_choice="required")
            return [
                await provider.complete(required, CancelToken()),
                await provider.complete(required, CancelToken()),
            ]

    openai_server.script(
        Reply.text("First."), Reply.error(422, body=refusal), Reply.text("Second.")
    )
    first, second = asyncio.run(main())
    assert (first.text, second.text) == ("First.", "Second.")
    sent = [request.json["tool_choice"] for request in openai_server.chat_requests()]
    assert sent == ["required", "required", "auto"]


# --- a request stopped while waiting to retry ------------------------------------------------


def test_a_request_stopped_while_waiting_to_retry_charges_no_prompt(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Between attempts nothing is in flight: a stop in the backoff charges nothing."""
    openai_server.script(Reply.error(503, "busy", retry_after=60), Reply.text("never asked for"))

    async def main() -> Completion:
        cancel = CancelToken()
        waiting = asyncio.Event()
        loop = asyncio.get_running_loop()

        class Backoff(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.getMessage().startswith("retrying"):
                    loop.call_soon_threadsafe(waiting.set)

        handler = Backoff(logging.INFO)
        logging.getLogger("imprint_desktop.core.providers.remote.client").addHandler(handler)
        try:
            async with make_async_client(make_config().network) as client:
                provider = RemoteProvider(client, openai_server.base_url, "", None, 8192)
                task = asyncio.ensure_future(provider.complete(ask(seconds=120), cancel))
                await asyncio.wait_for(waiting.wait(), 30)
                cancel.cancel()
                return await asyncio.wait_for(task, 30)
        finally:
            logging.getLogger("imprint_desktop.core.providers.remote.client").removeHandler(handler)

    with caplog.at_level(logging.INFO, logger="imprint_desktop.core.providers.remote.client"):
        completion = asyncio.run(main())
    assert completion.stop == "cancelled"
    assert completion.prompt_evaluated == 0 and completion.output_tokens == 0
    assert len(openai_server.chat_requests()) == 1
