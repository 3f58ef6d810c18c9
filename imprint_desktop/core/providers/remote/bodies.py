"""Reading a response's body from a server that is not trusted: every read is bounded.

A server may answer with a body that never ends, or one far larger than any answer. An error
body is read only as far as its first :data:`BODY_LIMIT` bytes (enough for the message); a JSON
answer or a model list whole, but refused past :data:`ANSWER_LIMIT`, never cut short. The answer
to a chat completion (:func:`read_answer`) is an event stream fed through the framing
(:mod:`.sse`) into the chunk assembly (:mod:`.chunks`), stopped once it runs past its allowance
— or a whole JSON completion, from servers that ignore ``stream``, cut to the allowance the same
way.

Time is not bounded here: the caller races these reads against its deadline.
"""

from __future__ import annotations

from typing import Any

import httpx

from imprint_desktop.core.providers.remote.chunks import ChunkAssembler
from imprint_desktop.core.providers.remote.sse import SSEDecoder
from imprint_desktop.core.providers.remote.wire import (
    StreamProtocolError,
    StreamServerError,
    error_text,
    json_text,
    loads,
    size_text,
)

BODY_LIMIT = 64 * 1024  # bytes of an error body read, against hostile servers
ANSWER_LIMIT = 16 * 1024 * 1024  # bytes of a whole JSON answer or model list


class EmptyStreamError(StreamProtocolError):
    """An event stream that ended before its first event: no answer and no reason given.

    llama-cpp-python's server answers so when a streamed prompt does not fit its context (the
    error comes after the 200): asked again without streaming, it says why."""


async def read_limited(response: httpx.Response) -> bytes:
    """The start of a body: enough for an error message, bounded against a hostile server."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= BODY_LIMIT:
            break
    return bytes(data[:BODY_LIMIT])


async def read_bounded(response: httpx.Response, limit: int) -> bytes:
    """A whole body, refused when it is larger than ``limit`` bytes (never cut short: half a
    JSON answer would only fail later, with a worse message)."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > limit:
            raise StreamProtocolError(f"the answer is larger than {size_text(limit)}")
    return bytes(data)


def parse_json(raw: bytes) -> Any:
    """A JSON body, where an OpenAI-style error object counts as an error reported in-band.
    Invalid UTF-8 is replaced, as in a stream, and a byte order mark is ignored."""
    value = loads(raw.decode("utf-8-sig", errors="replace"), "it", shown=raw[:80])
    if isinstance(value, dict) and value.get("error"):
        raise StreamServerError(error_text(value) or json_text(value["error"], 300))
    return value


async def read_answer(response: httpx.Response, assembler: ChunkAssembler) -> bool:
    """Read a 200 answer into ``assembler``; False when the stream ended before the answer did.

    Servers that ignore ``stream`` answer with one JSON completion, which is taken as a whole.
    """
    content_type = response.headers.get("content-type", "").lower()
    if content_type.startswith("application/json"):
        assembler.whole(parse_json(await read_bounded(response, ANSWER_LIMIT)))
        return True
    decoder = SSEDecoder()
    async for chunk in response.aiter_bytes():
        for event in decoder.feed(chunk):
            if assembler.event(event.data):
                return True
            if assembler.cut:  # past max_tokens: stop reading, as the server should have stopped
                return True
    if any(assembler.event(event.data) for event in decoder.close()):
        return True
    if not decoder.saw_field:
        if content_type.startswith("text/event-stream"):
            raise EmptyStreamError("the event stream ended before its first event")
        raise StreamProtocolError(f"it is not an event stream ({content_type or 'no type'})")
    return assembler.finish_reason is not None
