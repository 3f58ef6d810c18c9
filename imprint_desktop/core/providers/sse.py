"""The wire format of a streamed chat completion: server-sent events carrying JSON chunks.

Network reads cut the stream anywhere: inside a UTF-8 character, between the ``\\r`` and ``\\n``
of a line break, in the middle of a field. :class:`SSEDecoder` takes the bytes as they come and
hands back only complete events, so the provider never parses half a JSON chunk.

It follows the event-stream rules servers actually rely on: lines end in ``\\r\\n``, ``\\n`` or
``\\r``; a blank line ends an event; ``data`` lines of one event are joined with ``\\n``; lines that
start with ``:`` are comments (keep-alives); one space after the colon is dropped; a byte order
mark at the very start is ignored; unknown fields are ignored. An event without ``data`` is not
dispatched (a keep-alive made of ``event:`` or ``id:`` lines alone carries nothing to read), nor
is one whose data is empty (a lone ``data:`` line).

:class:`ChunkAssembler` turns the JSON chunks into answer text, tool calls (assembled by index
from id, name and argument fragments), a finish reason and the reported ``usage``. Anything that
breaks the protocol raises :class:`StreamProtocolError`; the provider words it for people.

The server is not trusted: whatever it sends — JSON nested too deeply for the parser, values of
the wrong type anywhere, invalid UTF-8 or lone UTF-16 surrogates, lines that never end — is
either read leniently or becomes a :class:`StreamProtocolError`, never another exception.
Lines, events and whole JSON answers are bounded (:data:`EVENT_LIMIT`, :data:`ANSWER_LIMIT`).
"""

from __future__ import annotations

import codecs
import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from imprint_desktop.core.providers.base import Completion, PrefixSource, StopKind, ToolCall

EVENT_LIMIT = 16 * 1024 * 1024
"""Characters of one line or one event's data. Real chunks are a few hundred bytes; even a whole
tool call sent in one delta is far below this. A server that sends more without a line break (or
without ending the event) is broken or hostile, and its stream is refused rather than buffered."""


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
        self._pending: list[str] = []  # the unfinished last line, in pieces: no quadratic joins
        self._pending_size = 0
        self._data: list[str] = []
        self._data_size = 0
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
        if self._pending:
            self._line("".join(self._pending))
            self._pending, self._pending_size = [], 0
        self._data, self._data_size = [], 0
        return events

    def _take(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        if "\n" not in text and "\r" not in text:  # more of the same line
            if text:
                self._pending.append(text)
                self._pending_size += len(text)
                self._check_line()
            return []
        buffer = "".join(self._pending) + text
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
        rest = buffer[start:]
        self._pending, self._pending_size = ([rest] if rest else []), len(rest)
        self._check_line()
        return events

    def _check_line(self) -> None:
        if self._pending_size > EVENT_LIMIT:
            raise StreamProtocolError(f"a line of the stream is larger than {_size(EVENT_LIMIT)}")

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
            self._data_size += len(value) + 1
            if self._data_size > EVENT_LIMIT:
                raise StreamProtocolError(
                    f"an event of the stream is larger than {_size(EVENT_LIMIT)}"
                )
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data, self._data_size = self._data, [], 0
        event, self._event = self._event, ""
        text = "\n".join(data)
        if not text:  # a lone "data:" line: the spec's empty data buffer, nothing to dispatch
            return None
        return SSEEvent(text, event or "message", self._last_id)


# --- chat completion chunks ------------------------------------------------------------------


class StreamProtocolError(ValueError):
    """A response that breaks the chat-completion streaming protocol."""


class StreamServerError(StreamProtocolError):
    """The server put an error object into the stream instead of (the rest of) an answer."""


class EmptyStreamError(StreamProtocolError):
    """An event stream that ended before its first event: no answer and no reason given.

    llama-cpp-python's server answers so when a streamed prompt does not fit its context (the
    error comes after the 200): asked again without streaming, it says why."""


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

    Values of the wrong type are read leniently where the meaning is clear: a null ``delta`` or
    ``function`` is empty; content, names, ids and finish reasons that are not strings are
    ignored; arguments that are JSON but not text (an object, a list, a number) become their JSON
    text, which the toolbox then rejects in words the model can act on; a tool-call ``index``
    that is not an integer is inferred as if it were missing. Structure that cannot be read (a
    chunk, choice, delta or tool call that is not an object, lists that are not lists, a negative
    index) raises :class:`StreamProtocolError`. Calls are kept by index in a dictionary, so a
    huge index allocates nothing.
    """

    def __init__(
        self, on_text: Callable[[str], None] | None = None, *, output_limit: int | None = None
    ) -> None:
        self._on_text = on_text
        # Bytes of output past which the answer is cut as if at ``max_tokens`` (finish "length"):
        # a server that ignores the allowance must not run up the budget or the clock.
        self.output_limit = output_limit
        self.reset()

    def reset(self) -> None:
        """Forget a failed attempt (only ever called before any content arrived)."""
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.received_content = False  # text or tool-call fragments: a retry would repeat them
        self._generated = 0  # UTF-8 bytes of output so far
        self.sink_failed = False  # ``on_text`` raised: that exception is the caller's, not ours

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
        return self._generated

    @property
    def over_limit(self) -> bool:
        return self.output_limit is not None and self._generated > self.output_limit

    def cut_at_limit(self) -> None:
        """Keep only :attr:`output_limit` bytes of output (text first, then the calls in order),
        and finish as ``length``: what a server honouring ``max_tokens`` would have sent."""
        budget = self.output_limit if self.output_limit is not None else self._generated
        kept = self.text.encode()[:budget].decode(errors="ignore")
        self._text = [kept]
        self._generated = len(kept.encode())
        for index in sorted(self._calls):
            partial = self._calls[index]
            name = len(partial.name.encode())
            room = max(0, budget - self._generated - name)
            arguments = "".join(partial.arguments).encode()[:room].decode(errors="ignore")
            partial.arguments = [arguments]
            self._generated += name + len(arguments.encode())
        self.finish_reason = "length"

    def finish(self) -> StopKind:
        """The finish reason as a :data:`StopKind`; calls without a reason still mean calls."""
        if self.finish_reason == "length":
            return "length"
        if self._calls or self.finish_reason in ("tool_calls", "function_call"):
            return "tool_calls"
        return "stop"

    def completion(
        self,
        stop: StopKind,
        prompt_estimate: int,
        output_estimate: int,
        *,
        sent: bool,
        prompt_ceiling: int | None = None,
        prefix_estimate: int = 0,
    ) -> Completion:
        """What arrived, with the estimates reconciled with the server's ``usage`` where valid.

        Without usage (servers that ignore ``include_usage``, and every interrupted stream) the
        prompt is the estimate and output is the estimate of what streamed. A request that was
        ``sent`` is charged its whole prompt past the reused prefix even when it was stopped
        early: the server may well have read it all. A reported prompt larger than
        ``prompt_ceiling`` (the most tokens the request could make) is not believed either.

        The reused prefix is the server's ``cached_tokens`` when it reports them (even 0);
        otherwise ``prefix_estimate``, the provider's estimate of the prompt shared with the
        previous request, scaled to the server's count when the prompt is the server's.
        """
        usage = self.usage or {}
        prompt, output = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        if prompt is not None and prompt_ceiling is not None and prompt > prompt_ceiling:
            prompt = None
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
        prompt_tokens = prompt if prompt is not None else prompt_estimate
        source: PrefixSource
        if cached is not None:
            reused, source = min(cached, prompt_tokens), "server"
        else:
            shared = min(prefix_estimate, prompt_estimate)
            if prompt is not None and prompt_estimate > 0:  # the same share of the server's count
                shared = shared * prompt_tokens // prompt_estimate
            reused, source = min(shared, prompt_tokens), "estimate"
        return Completion(
            text=self.text,
            tool_calls=self.tool_calls(),
            stop=stop,
            prompt_tokens=prompt_tokens,
            reused_prefix=reused,
            prompt_evaluated=prompt_tokens - reused if sent else 0,
            output_tokens=output if output is not None else output_estimate,
            estimated=prompt is None or output is None,
            provider_usage=_usage_record(self.usage) if self.usage is not None else None,
            prefix_source=source,
        )

    def event(self, data: str) -> bool:
        """Take one event's data; True at ``[DONE]``, the end of the stream."""
        if data.strip() == "[DONE]":
            return True
        if not data.strip():  # blank data lines carry nothing (some servers send them as pings)
            return False
        self.chunk(_loads(data, "a chunk"))
        return False

    def chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise StreamProtocolError(f"a chunk is not a JSON object: {data_excerpt(chunk, 80)}")
        if chunk.get("error"):
            raise StreamServerError(error_text(chunk) or _json_text(chunk["error"], 300))
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices")
        if choices is None and usage is None:
            raise StreamProtocolError(f"a chunk has no choices: {data_excerpt(chunk)}")
        if not isinstance(choices, list | None):
            raise StreamProtocolError(f"a chunk's choices are not a list: {data_excerpt(chunk)}")
        for choice in choices or ():
            if not isinstance(choice, dict):
                raise StreamProtocolError(f"a choice is not an object: {data_excerpt(chunk)}")
            if not isinstance(choice.get("delta") or {}, dict):
                raise StreamProtocolError(f"a delta is not an object: {data_excerpt(chunk)}")
            if choice.get("index") in (0, None):  # the first choice: n=1 is what we ask for
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
            content = valid_text(content)
            self._text.append(content)
            self._generated += len(content.encode())
            self.received_content = True
            if self._on_text is not None:
                try:
                    self._on_text(content)
                except Exception:
                    self.sink_failed = True
                    raise
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise StreamProtocolError(f"tool calls are not a list: {data_excerpt(delta)}")
        for call in calls:
            self._tool_delta(call)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def _tool_delta(self, call: Any) -> None:
        function = call.get("function") if isinstance(call, dict) else None
        if function is None and isinstance(call, dict):
            function = {}
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise StreamProtocolError(f"a tool call is not an object: {data_excerpt(call)}")
        call_id = valid_text(call["id"]) if isinstance(call.get("id"), str) else ""
        index = call.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            if index < 0:
                raise StreamProtocolError(f"a tool call has a negative index: {data_excerpt(call)}")
        else:
            last = max(self._calls, default=-1)
            known = self._calls[last].id if last >= 0 else ""
            index = last + 1 if last < 0 or (call_id and known and call_id != known) else last
        partial = self._calls.setdefault(index, _PartialCall())
        if call_id and not partial.id:
            partial.id = call_id
        name = function.get("name")
        name = valid_text(name) if isinstance(name, str) else None
        if name is not None and name != partial.name:  # some servers repeat the whole name
            partial.name += name
            self._generated += len(name.encode())
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = _dumps(arguments, "a tool call's arguments")
        if arguments:
            arguments = valid_text(arguments)
            partial.arguments.append(arguments)
            self._generated += len(arguments.encode())
        self.received_content = True


# --- reading a response ------------------------------------------------------------------------

BODY_LIMIT = 64 * 1024  # bytes of an error body read, against hostile servers
ANSWER_LIMIT = 16 * 1024 * 1024  # bytes of a whole JSON answer or model list


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
            raise StreamProtocolError(f"the answer is larger than {_size(limit)}")
    return bytes(data)


def parse_json(raw: bytes) -> Any:
    """A JSON body, where an OpenAI-style error object counts as an error reported in-band.
    Invalid UTF-8 is replaced, as in a stream, and a byte order mark is ignored."""
    value = _loads(raw.decode("utf-8-sig", errors="replace"), "it", shown=raw[:80])
    if isinstance(value, dict) and value.get("error"):
        raise StreamServerError(error_text(value) or _json_text(value["error"], 300))
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
            if assembler.over_limit:  # far past max_tokens: stop, as the server should have
                assembler.cut_at_limit()
                return True
    if any(assembler.event(event.data) for event in decoder.close()):
        return True
    if not decoder.saw_field:
        if content_type.startswith("text/event-stream"):
            raise EmptyStreamError("the event stream ended before its first event")
        raise StreamProtocolError(f"it is not an event stream ({content_type or 'no type'})")
    return assembler.finish_reason is not None


def try_json(raw: bytes) -> Any:
    """``raw`` as JSON, or None when it is not (or is nested too deeply to read)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def error_text(value: Any) -> str:
    """The human part of an OpenAI-style error object (``{"error": {"message": ...}}`` and
    its variants), or "" when there is none; at most 1000 characters."""
    if not isinstance(value, dict):
        return ""
    error = value.get("error", value)
    if isinstance(error, dict):
        return _json_text(error.get("message") or error.get("detail") or "", 1000)
    return _json_text(error or value.get("detail") or "", 1000)


_MAX_COUNT = 2**31 - 1  # no request has more tokens: a larger "count" is nonsense, not usage


def _count(value: Any) -> int | None:
    """A reported token count, when it is one (a non-negative integer of a possible size)."""
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNT
    return value if valid else None


_UNFIT = object()


def _usage_record(usage: Mapping[str, Any]) -> dict[str, Any]:
    """The server's ``usage`` as reported, but only what any JSON writer can store: strings
    (shortened), finite numbers of a safe size, booleans and nulls, objects one level deep, 32
    fields each. Whether the counts are believable is :func:`_count`'s business."""

    def plain(value: Any) -> Any:
        if value is None or isinstance(value, bool | str):
            return valid_text(value[:200]) if isinstance(value, str) else value
        if isinstance(value, int):
            return value if abs(value) <= 2**53 else _UNFIT
        if isinstance(value, float):
            return value if math.isfinite(value) else _UNFIT
        return _UNFIT

    def record(mapping: Mapping[str, Any], nested: bool) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for key, value in itertools.islice(mapping.items(), 32):
            if nested and isinstance(value, dict):
                kept[valid_text(str(key)[:64])] = record(value, nested=False)
            elif (value := plain(value)) is not _UNFIT:
                kept[valid_text(str(key)[:64])] = value
        return kept

    return record(usage, nested=True)


def _loads(text: str, what: str, *, shown: bytes | str | None = None) -> Any:
    """``text`` as JSON. Anything that is not, or that the parser cannot take (nesting deeper
    than its recursion limit), is a :class:`StreamProtocolError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise StreamProtocolError(f"{what} is nested too deeply to read") from None
    except ValueError:
        shown = text[:80] if shown is None else shown
        raise StreamProtocolError(f"{what} is not JSON: {shown!r}") from None


def _dumps(value: Any, what: str) -> str:
    """A parsed value as JSON text again (arguments sent as an object, for instance)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError):
        raise StreamProtocolError(f"{what} are nested too deeply to read") from None


def _as_json(value: Any) -> str:
    """``value`` as JSON text for a message; never an exception, however deep it is."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} nested too deeply to show>"


def _json_text(value: Any, limit: int) -> str:
    """What to show of a value the server sent: a string as it is, anything else as JSON."""
    return valid_text(value[:limit] if isinstance(value, str) else _as_json(value)[:limit])


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` as valid Unicode. JSON can carry half of a surrogate pair (a server that cut an
    emoji apart, as ``\\ud83d``): it becomes U+FFFD, like invalid UTF-8 bytes, instead of text
    that fails the moment anything encodes it."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def data_excerpt(value: Any, limit: int = 120) -> str:
    return repr(_as_json(value)[:limit])


def _size(limit: int) -> str:
    mib = 1024 * 1024
    return f"{limit / mib:g} MiB" if limit >= mib else f"{limit:,} bytes"
