"""The wire format of a streamed chat completion: server-sent events carrying JSON chunks.

Network reads cut the stream anywhere: inside a UTF-8 character, between the ``\\r`` and ``\\n``
of a line break, in the middle of a field. :class:`SSEDecoder` takes the bytes as they come and
hands back only complete events, so the provider never parses half a JSON chunk.

It follows the event-stream rules servers actually rely on: lines end in ``\\r\\n``, ``\\n`` or
``\\r``; a blank line ends an event; ``data`` lines of one event are joined with ``\\n``; lines that
start with ``:`` are comments (keep-alives); one space after the colon is dropped; a byte order
mark at the very start is ignored; unknown fields are ignored. An event without ``data`` is not
dispatched (a keep-alive made of ``event:`` or ``id:`` lines alone carries nothing to read).

:class:`ChunkAssembler` turns the JSON chunks into answer text, tool calls (assembled by index
from id, name and argument fragments), a finish reason and the reported ``usage``. Anything that
breaks the protocol raises :class:`StreamProtocolError`; the provider words it for people.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from imprint_desktop.core.providers.base import Completion, StopKind, ToolCall


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its ``data`` lines joined with newlines, and its type."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Feed bytes in, get complete events out. One decoder per response stream."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._started = False
        self._skip_lf = (
            False  # the previous chunk ended in "\r": a "\n" first in this one is its pair
        )
        self.saw_field = False  # any field line at all: tells an event stream from a stray body

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed (often none, sometimes several)."""
        return self._take(self._text.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """The stream ended: a last line without its line break still counts, an unfinished
        event (no blank line after it) does not — the spec drops it, and so do we."""
        events = self._take(self._text.decode(b"", final=True))
        if self._buffer:
            self._line(self._buffer)
            self._buffer = ""
        self._data = []
        return events

    def _take(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        buffer = self._buffer + text
        events: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        while start < length:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, after = lf, lf + 1
            elif cr + 1 < length:
                end, after = cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            else:  # a "\r" at the very end: its "\n" may be in the next chunk
                end, after = cr, cr + 1
                self._skip_lf = True
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon:
            value = value.removeprefix(" ")
        self.saw_field = self.saw_field or name in ("data", "event", "id", "retry")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data = self._data, []
        event, self._event = self._event, ""
        if not data:
            return None
        return SSEEvent("\n".join(data), event or "message", self._last_id)


# --- chat completion chunks ------------------------------------------------------------------


class StreamProtocolError(ValueError):
    """A response that breaks the chat-completion streaming protocol."""


class StreamServerError(StreamProtocolError):
    """The server put an error object into the stream instead of (the rest of) an answer."""


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChunkAssembler:
    """Collects one response's chunks; ``on_text`` gets each piece of answer text as it comes.

    Servers differ in small ways, and these are accepted: a missing tool-call ``index`` (a new
    ``id`` opens a new call, otherwise the fragment continues the last one), arguments sent as a
    JSON object instead of text, ``usage: null`` on every chunk, no ``[DONE]`` after the finish
    reason, and a whole non-streamed completion (:meth:`whole`) from servers that ignore
    ``stream``. A call the server gave no id gets ``call_<index>``, so every call can be answered.
    """

    def __init__(self, on_text: Callable[[str], None] | None = None) -> None:
        self._on_text = on_text
        self.reset()

    def reset(self) -> None:
        """Forget a failed attempt (only ever called before any content arrived)."""
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.received_content = False  # text or tool-call fragments: a retry would repeat them

    @property
    def text(self) -> str:
        return "".join(self._text)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        seen: set[str] = set()
        for index in sorted(self._calls):
            partial = self._calls[index]
            call_id = partial.id or f"call_{index}"
            while call_id in seen:
                call_id += "_"
            seen.add(call_id)
            calls.append(ToolCall(call_id, partial.name, "".join(partial.arguments)))
        return tuple(calls)

    def output_bytes(self) -> int:
        """UTF-8 bytes the model generated: answer text, tool names and arguments."""
        size = len(self.text.encode())
        for partial in self._calls.values():
            size += len(partial.name.encode()) + len("".join(partial.arguments).encode())
        return size

    def finish(self) -> StopKind:
        """The finish reason as a :data:`StopKind`; calls without a reason still mean calls."""
        if self.finish_reason == "length":
            return "length"
        if self._calls or self.finish_reason in ("tool_calls", "function_call"):
            return "tool_calls"
        return "stop"

    def completion(
        self, stop: StopKind, prompt_estimate: int, output_estimate: int, *, sent: bool
    ) -> Completion:
        """What arrived, with the estimates reconciled with the server's ``usage`` where valid.

        Without usage (servers that ignore ``include_usage``, and every interrupted stream) the
        prompt is the estimate, nothing counts as reused, and output is the estimate of what
        streamed. A request that was ``sent`` is charged its whole prompt even when it was
        stopped early: the server may well have read it all.
        """
        usage = self.usage or {}
        prompt, output = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
        prompt_tokens = prompt if prompt is not None else prompt_estimate
        reused = min(cached or 0, prompt_tokens)
        return Completion(
            text=self.text,
            tool_calls=self.tool_calls(),
            stop=stop,
            prompt_tokens=prompt_tokens,
            reused_prefix=reused,
            prompt_evaluated=prompt_tokens - reused if sent else 0,
            output_tokens=output if output is not None else output_estimate,
            estimated=prompt is None or output is None,
            provider_usage=dict(self.usage) if self.usage is not None else None,
        )

    def event(self, data: str) -> bool:
        """Take one event's data; True at ``[DONE]``, the end of the stream."""
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except ValueError:
            raise StreamProtocolError(f"a chunk is not JSON: {data[:80]!r}") from None
        self.chunk(chunk)
        return False

    def chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise StreamProtocolError(f"a chunk is not a JSON object: {str(chunk)[:80]!r}")
        if chunk.get("error"):
            raise StreamServerError(error_text(chunk) or str(chunk["error"])[:300])
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices")
        if choices is None and usage is None:
            raise StreamProtocolError(f"a chunk has no choices: {data_excerpt(chunk)}")
        if not isinstance(choices, list | None):
            raise StreamProtocolError(f"a chunk's choices are not a list: {data_excerpt(chunk)}")
        for choice in choices or ():
            if not isinstance(choice, dict) or not isinstance(choice.get("delta", {}), dict):
                raise StreamProtocolError(f"a choice is not an object: {data_excerpt(chunk)}")
            if choice.get("index", 0) == 0:
                self._choice(choice)

    def whole(self, completion: Any) -> None:
        """Take a whole, non-streamed ``chat.completion`` object as if it had streamed."""
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise StreamProtocolError(f"the answer has no choices: {data_excerpt(completion)}")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise StreamProtocolError(f"the answer has no message: {data_excerpt(completion)}")
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise StreamProtocolError(f"the tool calls are not a list: {data_excerpt(completion)}")
        delta = {
            "content": message.get("content"),
            "tool_calls": [
                {**call, "index": index} if isinstance(call, dict) else call
                for index, call in enumerate(calls)
            ],
        }
        choice = {"index": 0, "delta": delta, "finish_reason": choices[0].get("finish_reason")}
        self.chunk({"choices": [choice], "usage": completion.get("usage")})

    def _choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            self.received_content = True
            if self._on_text is not None:
                self._on_text(content)
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise StreamProtocolError(f"tool calls are not a list: {data_excerpt(delta)}")
        for call in calls:
            self._tool_delta(call)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = str(reason)

    def _tool_delta(self, call: Any) -> None:
        function = call.get("function", {}) if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise StreamProtocolError(f"a tool call is not an object: {data_excerpt(call)}")
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            last = max(self._calls, default=-1)
            known = self._calls[last].id if last >= 0 else ""
            index = last + 1 if last < 0 or (call_id and known and call_id != known) else last
        partial = self._calls.setdefault(index, _PartialCall())
        if call_id and not partial.id:
            partial.id = call_id
        name = function.get("name")
        if isinstance(name, str) and name != partial.name:  # some servers repeat the whole name
            partial.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str):
            partial.arguments.append(arguments)
        self.received_content = True


# --- reading a response ------------------------------------------------------------------------

BODY_LIMIT = 64 * 1024  # bytes of a JSON answer or an error body read, against hostile servers


async def read_limited(response: httpx.Response) -> bytes:
    """The start of a body: enough for an error message, bounded against a hostile server."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= BODY_LIMIT:
            break
    return bytes(data[:BODY_LIMIT])


def parse_json(raw: bytes) -> Any:
    """A JSON body, where an OpenAI-style error object counts as an error reported in-band."""
    try:
        value = json.loads(raw)
    except ValueError:
        raise StreamProtocolError(f"it is not JSON: {raw[:80]!r}") from None
    if isinstance(value, dict) and value.get("error"):
        raise StreamServerError(error_text(value) or str(value["error"])[:300])
    return value


async def read_answer(response: httpx.Response, assembler: ChunkAssembler) -> bool:
    """Read a 200 answer into ``assembler``; False when the stream ended before the answer did.

    Servers that ignore ``stream`` answer with one JSON completion, which is taken as a whole.
    """
    content_type = response.headers.get("content-type", "").lower()
    if content_type.startswith("application/json"):
        assembler.whole(parse_json(await read_limited(response)))
        return True
    decoder = SSEDecoder()
    async for chunk in response.aiter_bytes():
        if any(assembler.event(event.data) for event in decoder.feed(chunk)):
            return True
    if any(assembler.event(event.data) for event in decoder.close()):
        return True
    if not decoder.saw_field:
        raise StreamProtocolError(f"it is not an event stream ({content_type or 'no type'})")
    return assembler.finish_reason is not None


def try_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def error_text(value: Any) -> str:
    """The human part of an OpenAI-style error object (``{"error": {"message": ...}}`` and
    its variants), or "" when there is none."""
    if not isinstance(value, dict):
        return ""
    error = value.get("error", value)
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or "")
    return str(error or value.get("detail") or "")


def _count(value: Any) -> int | None:
    """A reported token count, when it is one (a non-negative integer)."""
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if valid else None


def data_excerpt(value: Any) -> str:
    return repr(json.dumps(value, ensure_ascii=False, default=str)[:120])
