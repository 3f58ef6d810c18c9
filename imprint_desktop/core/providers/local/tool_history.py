"""Tool conversations the way a native chat template will take them.

Chat templates trained for tools are strict about the history they are given, each in its own way;
:meth:`~.template.ChatTemplate.check` renders :data:`PROBE_HISTORY` (a batch of two calls with
Imprint's own ids, then their results) to find out which of these rewrites a template needs:

* :func:`short_call_ids` — Mistral's templates accept only call ids of nine letters and digits;
* :func:`one_call_per_turn` — Llama 3.x's templates accept one call per assistant message.

Both work on messages in the OpenAI shape and never change what was said, only how it is laid out.

The probe also checks that the template *shows* a tool conversation: some print the call's name but
not its arguments, or drop the results (:func:`unseen_in_prompt`). A model that never sees what it
called, or what came back, calls it again; such a template gets the tools described in the prompt.
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
#: Words that appear nowhere else in a prompt: the probe looks for them in what it rendered.
_PROBE_ARGUMENTS = ("quarry1871", "lantern1903")
_PROBE_RESULTS = ("granite ledger 57", "brass compass 88")
_PROBE_CALLS = (
    ToolCall("call_0f1e2d3c4b5a6978", "search_workspace", f'{{"query": "{_PROBE_ARGUMENTS[0]}"}}'),
    ToolCall("imprint_seed_search", "search_workspace", f'{{"query": "{_PROBE_ARGUMENTS[1]}"}}'),
)
PROBE_SYSTEM = "Answer from the documents."
PROBE_QUESTION = (Message("system", PROBE_SYSTEM), Message("user", "Hello?"))
PROBE_HISTORY = (
    *PROBE_QUESTION,
    Message("assistant", "", _PROBE_CALLS),
    *(
        Message("tool", f"[1] {result}", tool_call_id=call.id, name=call.name)
        for call, result in zip(_PROBE_CALLS, _PROBE_RESULTS, strict=True)
    ),
)
_SHORT_ID = re.compile(r"[A-Za-z0-9]{9}")


def unseen_in_prompt(prompt: str, question_only: str) -> str | None:
    """What of :data:`PROBE_HISTORY`'s calls ``prompt`` (its rendering) leaves out, or None.

    ``question_only`` is the rendering of :data:`PROBE_QUESTION` with the same tools: the call's
    name must appear more often than there (the tool list names it already).
    """
    name = _PROBE_CALLS[0].name
    if prompt.count(name) <= question_only.count(name):
        return "the name of a tool call"
    if not all(argument in prompt for argument in _PROBE_ARGUMENTS):
        return "the arguments of a tool call"
    if not all(result in prompt for result in _PROBE_RESULTS):
        return "the result of a tool call"
    return None


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
