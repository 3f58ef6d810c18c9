"""OpenAI chat-completion chunks assembled into one answer: text, tool calls, finish, usage.

A streamed answer arrives as JSON chunks, one per event (:mod:`.sse` does the framing): deltas of
answer text, of hidden reasoning (``reasoning_content``, or ``reasoning``: a reasoning model's
thinking, which is output the model made but never the answer), fragments of tool calls (an id, a
name, pieces of the arguments, keyed by index), a finish reason and at the end, when asked for,
the server's ``usage``. :class:`ChunkAssembler`
puts them together as they come, passing the text on to whoever shows it, and gives the
:class:`~.base.Completion` with the server's counts reconciled with the provider's estimates.
How the chunks are read from a response is :mod:`.bodies`' business.

Anything that breaks the protocol raises :class:`~.wire.StreamProtocolError`; the provider words
it for people. The server is not trusted: values of the wrong type anywhere, lone surrogates and
counts no request could have are read leniently or refused, never another exception.

Output is bounded as it arrives, whether streamed or sent whole: once the output made so far —
reasoning, text and calls, estimated per script (:mod:`.estimate`) — runs past the request's
allowance, it is cut there as if the server had honoured ``max_tokens`` (``finish_reason:
length``), and nothing past the cut reaches the reader of the text. A byte bound backs the
estimate up (white space costs no tokens by it). At most
:data:`~.base.MAX_CALLS_PER_REPLY` calls are kept; the others are counted as dropped.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from imprint_desktop.core.providers.base import (
    MAX_CALLS_PER_REPLY,
    Completion,
    PrefixSource,
    StopKind,
    ToolCall,
)
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.providers.remote.wire import (
    StreamProtocolError,
    StreamServerError,
    data_excerpt,
    dumps,
    error_text,
    json_text,
    loads,
    valid_text,
)


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
        self,
        on_text: Callable[[str], None] | None = None,
        *,
        allowance: int | None = None,
        output_limit: int | None = None,
    ) -> None:
        self._on_text = on_text
        # Tokens (estimated) and bytes of output past which the answer is cut as if at
        # ``max_tokens`` (finish "length"): a server that ignores the allowance must not run up
        # the budget or the clock.
        self.allowance = allowance
        self.output_limit = output_limit
        self.reset()

    def reset(self) -> None:
        """Forget a failed attempt (only ever called before any content arrived)."""
        self._text: list[str] = []
        self._text_chars = 0  # characters of answer text so far
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._dropped: set[int] = set()  # indices of calls beyond the most one reply may hold
        self.cut = False  # output ran past the allowance and was cut there
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.received_content = False  # text or tool-call fragments: a retry would repeat them
        self._generated = 0  # UTF-8 bytes of output so far
        self._estimated_at = 0  # bytes of output when it was last estimated
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

    @property
    def reasoning(self) -> str:
        """Hidden reasoning the model streamed (never part of the answer)."""
        return "".join(self._reasoning)

    def output_bytes(self) -> int:
        """UTF-8 bytes the model generated: reasoning, answer text, tool names and arguments."""
        return self._generated

    def output_estimate(self) -> int:
        """Estimated tokens of everything the model generated, reasoning included."""
        calls = "".join(c.name + "".join(c.arguments) for c in self._calls.values())
        return estimate_tokens(self.reasoning) + estimate_tokens(self.text) + estimate_tokens(calls)

    @property
    def over_limit(self) -> bool:
        """Whether the output ran past the allowance (estimated) or the byte bound."""
        if self.output_limit is not None and self._generated > self.output_limit:
            return True
        if self.allowance is None or self._generated <= self.allowance:
            return False  # no text makes more tokens than it has bytes
        # Estimated again once the output grew by an eighth: a few passes over it in all.
        if self._generated - self._estimated_at < max(256, self._estimated_at // 8):
            return False
        self._estimated_at = self._generated
        return self.output_estimate() > self.allowance

    def cut_at_limit(self) -> None:
        """Keep only the allowance's worth of output (reasoning, then text, then the calls in
        order), and finish as ``length``: what a server honouring ``max_tokens`` would have
        sent. Calls left with no room at all are dropped."""
        tokens = self.allowance if self.allowance is not None else self.output_estimate()
        most_bytes = self.output_limit if self.output_limit is not None else self._generated
        room = _Room(tokens, most_bytes)
        self._reasoning = [room.take(self.reasoning)]
        self._text = [room.take(self.text)]
        self._text_chars = len(self._text[0])
        for index in sorted(self._calls):
            partial = self._calls[index]
            if not room.fits(partial.name):
                del self._calls[index]
                self._dropped.add(index)
                continue
            room.take(partial.name)
            partial.arguments = [room.take("".join(partial.arguments))]
        self._generated = room.used_bytes
        self.finish_reason = "length"
        self.cut = True

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
            dropped_calls=len(self._dropped),
        )

    def event(self, data: str) -> bool:
        """Take one event's data; True at ``[DONE]``, the end of the stream."""
        if data.strip() == "[DONE]":
            return True
        if not data.strip():  # blank data lines carry nothing (some servers send them as pings)
            return False
        self.chunk(loads(data, "a chunk"))
        return False

    def chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise StreamProtocolError(f"a chunk is not a JSON object: {data_excerpt(chunk, 80)}")
        if chunk.get("error"):
            raise StreamServerError(error_text(chunk) or json_text(chunk["error"], 300))
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
            "reasoning_content": message.get("reasoning_content") or message.get("reasoning"),
            "tool_calls": [
                {**call, "index": index} if isinstance(call, dict) else call
                for index, call in enumerate(calls)
            ],
        }
        choice = {"index": 0, "delta": delta, "finish_reason": choices[0].get("finish_reason")}
        self.chunk({"choices": [choice], "usage": completion.get("usage")})

    def _choice(self, choice: dict[str, Any]) -> None:
        if self.cut:  # past the allowance: the rest is not read
            return
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            reasoning = valid_text(reasoning)
            self._reasoning.append(reasoning)
            self._generated += len(reasoning.encode())
            self.received_content = True
            if self._cut_if_over():
                return
        content = delta.get("content")
        if isinstance(content, str) and content:
            content = valid_text(content)
            before = self._text_chars
            self._text.append(content)
            self._text_chars += len(content)
            self._generated += len(content.encode())
            self.received_content = True
            cut = self._cut_if_over()
            if cut:
                content = self.text[before:]  # only what is kept is shown
            if content and self._on_text is not None:
                try:
                    self._on_text(content)
                except Exception:
                    self.sink_failed = True
                    raise
            if cut:
                return
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise StreamProtocolError(f"tool calls are not a list: {data_excerpt(delta)}")
        for position, call in enumerate(calls):
            self._tool_delta(call)
            if self._cut_if_over():
                self._drop_rest(calls[position + 1 :])
                return
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def _drop_rest(self, calls: list[Any]) -> None:
        """Count the calls of a delta past the cut (a whole answer sends them all at once)."""
        for call in calls:
            index = call.get("index") if isinstance(call, dict) else None
            if isinstance(index, int) and index not in self._calls:
                self._dropped.add(index)

    def _cut_if_over(self) -> bool:
        if self.over_limit:
            self.cut_at_limit()
        return self.cut

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
        if index not in self._calls and (
            index in self._dropped or len(self._calls) >= MAX_CALLS_PER_REPLY
        ):
            self._dropped.add(index)  # beyond what one reply may hold: counted, not kept
            # At least what a fragment takes on the wire, so a stream of empty ones is cut too.
            self._generated += max(16, _fragment_bytes(function))
            self.received_content = True
            return
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
            arguments = dumps(arguments, "a tool call's arguments")
        if arguments:
            arguments = valid_text(arguments)
            partial.arguments.append(arguments)
            self._generated += len(arguments.encode())
        self.received_content = True


def _fragment_bytes(function: Mapping[str, Any]) -> int:
    """Bytes of output a dropped call's fragment carries (its name and arguments, as text)."""
    size = 0
    for key in ("name", "arguments"):
        value = function.get(key)
        if isinstance(value, str):
            size += len(value.encode(errors="replace"))
        elif value is not None:
            size += len(dumps(value, "a tool call's arguments").encode(errors="replace"))
    return size


class _Room:
    """The output an allowance leaves, taken piece by piece in order."""

    def __init__(self, tokens: int, max_bytes: int) -> None:
        self.tokens = tokens
        self.bytes = max_bytes
        self.used_bytes = 0

    def fits(self, text: str) -> bool:
        return estimate_tokens(text) <= self.tokens and len(text.encode()) <= self.bytes

    def take(self, text: str) -> str:
        """The longest start of ``text`` that fits what is left, which it then uses."""
        data = text.encode(errors="replace")
        if len(data) > self.bytes:
            text = data[: self.bytes].decode(errors="ignore")
        if estimate_tokens(text) > self.tokens:
            low, high = 0, len(text)
            while low < high:  # the estimate grows with the text: search for where it fits
                middle = (low + high + 1) // 2
                if estimate_tokens(text[:middle]) <= self.tokens:
                    low = middle
                else:
                    high = middle - 1
            text = text[:low]
        used = len(text.encode())
        self.tokens -= estimate_tokens(text)
        self.bytes -= used
        self.used_bytes += used
        return text


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
