"""Tool calls written as text, in a model's own words: reading them and writing them.

Provider-neutral and pure Python: the local provider reads its model's replies with it, and the
remote provider the replies of a server that passes a model's call markup on as text — so a
remote-only install, or one whose llama.cpp build is broken, reads calls without loading
llama.cpp (the grammar that constrains a local model's calls is
:mod:`imprint_desktop.core.providers.local.grammar`).

Models trained for tools announce calls in a few native shapes, all parsed here:

* Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one block per call,
  or a JSON list inside one block — the shape the local grammar produces);
* Llama 3.x: the whole reply is JSON, ``{"name": ..., "parameters": {...}}`` (optionally after
  ``<|python_tag|>``, several separated by ``;``);
* Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]`` or ``[TOOL_CALLS]name[ARGS]{...}``.

A reasoning block a model may open its reply with (Qwen3's ``<think>…</think>``, whose opening
tag some templates put in the prompt) is not part of the reply: it is dropped before calls are
looked for, so a call the model only mused about is not taken for one.

A call that is announced but malformed is **not dropped and not turned into answer text**: it
becomes a :class:`ToolCall` whose ``arguments`` are the raw text the model wrote (and whose name is
whatever could be read, possibly empty). The toolbox then answers it with a readable tool error
("the arguments are not valid JSON", "there is no tool named ''"), which the model sees next round
and can correct — the same path a remote server's bad arguments take.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from imprint_desktop.core.providers.base import ToolCall

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
MISTRAL_MARK = "[TOOL_CALLS]"
PYTHON_TAG = "<|python_tag|>"
#: Text that starts a call in one of the native shapes; streaming holds back from here on.
CALL_MARKERS = (CALL_OPEN, MISTRAL_MARK, PYTHON_TAG)

_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_NAME_GUESS = re.compile(r'"name"\s*:\s*"([^"\\]{1,128})"')
#: A leading reasoning block; its opening tag may sit in the prompt instead of the reply, and then
#: only a call right after its end tells it from an answer that mentions the tag.
_REASONING = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)
_UNOPENED_REASONING = re.compile(
    r"\A(?:(?!<think>).)*?</think>\s*(?=" + "|".join(map(re.escape, CALL_MARKERS)) + ")",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply split into its answer text (what came before any call) and its calls."""

    content: str
    calls: tuple[ToolCall, ...]


def new_call_id() -> str:
    """An id in the OpenAI style; tool results name it, so it only has to be unique per reply."""
    return f"call_{uuid.uuid4().hex[:16]}"


def tool_function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``function`` part of an OpenAI tool declaration (bare function declarations pass)."""
    function = tool.get("function")
    return function if isinstance(function, Mapping) else tool


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(tool_function(tool).get("name", "")) for tool in tools]


def parse_tool_calls(text: str, offered: Collection[str]) -> ParsedReply:
    """Find the calls in ``text`` in any native shape; the rest is answer text.

    ``offered`` names the tools of the request: a bare JSON reply (the Llama 3.x shape, which has
    no marker) counts as a call only when it names one of them, so an answer that happens to be
    JSON stays an answer.
    """
    text = _UNOPENED_REASONING.sub("", _REASONING.sub("", text, count=1), count=1)
    open_at = text.find(CALL_OPEN)
    mistral_at = text.find(MISTRAL_MARK)
    if open_at >= 0 and (mistral_at < 0 or open_at < mistral_at):
        calls = [call for body in _HERMES_BLOCK.findall(text, open_at) for call in _calls_in(body)]
        return ParsedReply(text[:open_at].strip(), tuple(calls))
    if mistral_at >= 0:
        return ParsedReply(
            text[:mistral_at].strip(), tuple(_mistral_calls(text[mistral_at + len(MISTRAL_MARK) :]))
        )
    stripped = text.strip()
    tagged = stripped.startswith(PYTHON_TAG)
    if tagged:
        stripped = stripped[len(PYTHON_TAG) :].strip()
    if stripped.startswith("{"):
        bare = _bare_json_calls(stripped, offered)
        if bare is not None:
            return ParsedReply("", tuple(bare))
    if tagged:
        return ParsedReply("", (_malformed(stripped),))
    return ParsedReply(text, ())


def format_tool_calls(calls: Sequence[ToolCall]) -> str:
    """Calls written the way the grammar makes a model write them, for the conversation history.

    Arguments are the model's raw text, so a call re-rendered next round matches the tokens the
    model generated, and the KV cache prefix extends over it.
    """
    items = ", ".join(
        f'{{"name": {json.dumps(call.name, ensure_ascii=False)}, "arguments": '
        f"{call.arguments.strip() or '{}'}}}"
        for call in calls
    )
    return f"{CALL_OPEN}[{items}]{CALL_CLOSE}"


def _calls_in(body: str) -> Iterator[ToolCall]:
    """The calls inside one ``<tool_call>`` block: one object, or a list of them."""
    text = body.strip()
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        yield _malformed(text)
        return
    items = value if isinstance(value, list) else [value]
    for item in items:
        yield _call_from(item, text)


def _mistral_calls(rest: str) -> Iterator[ToolCall]:
    text = rest.strip()
    if text.startswith("["):
        yield from _calls_in(text)
        return
    for segment in text.split(MISTRAL_MARK):
        name, marker, arguments = segment.partition("[ARGS]")
        if not marker:
            yield _malformed(segment.strip())
            continue
        name = name.split("[CALL_ID]", 1)[0].strip()
        yield ToolCall(new_call_id(), name, arguments.strip())


def _bare_json_calls(text: str, offered: Collection[str]) -> list[ToolCall] | None:
    """Llama 3.x calls: JSON objects separated by ``;`` or white space; None if not calls."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    position = 0
    while position < len(text):
        try:
            value, end = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not (isinstance(value, dict) and value.get("name") in offered):
            return None
        if "parameters" not in value and "arguments" not in value:
            return None
        calls.append(_call_from(value, text[position:end]))
        position = end
        while position < len(text) and text[position] in " \t\r\n;":
            position += 1
    return calls or None


def _call_from(item: object, raw: str) -> ToolCall:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return _malformed(raw)
    arguments = item.get("arguments", item.get("parameters", {}))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call_id = item.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else new_call_id(), item["name"], text
    )


def _malformed(raw: str) -> ToolCall:
    """A call that could not be read: its name if visible, and the raw text as its arguments."""
    match = _NAME_GUESS.search(raw)
    return ToolCall(new_call_id(), match.group(1) if match else "", raw)
