"""Tool conversations the way a native chat template will take them.

Chat templates trained for tools are strict about the history they are given, each in its own way;
:meth:`~.template.ChatTemplate.check` renders :data:`PROBE_HISTORY` (a batch of two calls with
Imprint's own ids, then their results) to find out which of these rewrites a template needs:

* :func:`short_call_ids` — Mistral's templates accept only call ids of nine letters and digits;
* :func:`one_call_per_turn` — Llama 3.x's templates accept one call per assistant message.

Both work on messages in the OpenAI shape and never change what was said, only how it is laid out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from imprint_desktop.core.providers.base import Message, ToolCall

#: What :meth:`~.template.ChatTemplate.check` writes natively to learn a template's tolerances:
#: two calls in one turn, ids in Imprint's own styles, and their results.
PROBE_TOOLS: tuple[Mapping[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "search_workspace",
            "description": "Search the documents.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
)
_PROBE_CALLS = (
    ToolCall("call_0f1e2d3c4b5a6978", "search_workspace", '{"query": "first"}'),
    ToolCall("imprint_seed_search", "search_workspace", '{"query": "second"}'),
)
PROBE_SYSTEM = "Answer from the documents."
PROBE_HISTORY = (
    Message("system", PROBE_SYSTEM),
    Message("user", "Hello?"),
    Message("assistant", "", _PROBE_CALLS),
    *(Message("tool", "[1] a passage", tool_call_id=c.id, name=c.name) for c in _PROBE_CALLS),
)
_SHORT_ID = re.compile(r"[A-Za-z0-9]{9}")


def _short_id(call_id: str) -> str:
    """``call_id`` as nine letters and digits: itself when it already is, else a stable digest."""
    if _SHORT_ID.fullmatch(call_id):
        return call_id
    return hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:9]


def short_call_ids(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call id and result id as nine letters and digits, the same for the same id."""
    shortened = []
    for entry in chat:
        copy = dict(entry)
        if copy.get("tool_calls"):
            copy["tool_calls"] = [
                {**call, "id": _short_id(str(call.get("id", "")))} for call in copy["tool_calls"]
            ]
        if copy.get("tool_call_id") is not None:
            copy["tool_call_id"] = _short_id(str(copy["tool_call_id"]))
        shortened.append(copy)
    return shortened


def one_call_per_turn(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn with several calls becomes one turn per call, each followed by its result."""
    written: list[dict[str, Any]] = []
    index = 0
    while index < len(chat):
        entry = chat[index]
        calls = entry.get("tool_calls") or []
        index += 1
        if entry["role"] != "assistant" or len(calls) <= 1:
            written.append(entry)
            continue
        results = []
        while index < len(chat) and chat[index]["role"] == "tool":
            results.append(chat[index])
            index += 1
        pending = list(results)
        for number, call in enumerate(calls):
            content = entry.get("content", "") if number == 0 else ""
            written.append({**entry, "content": content, "tool_calls": [call]})
            result = next((r for r in pending if r.get("tool_call_id") == call.get("id")), None)
            if result is not None:
                pending.remove(result)
                written.append(result)
        written.extend(pending)
    return written
