"""What a request to an OpenAI-compatible server looks like, and what its prompt costs.

The remote provider (:mod:`.client`) decides when to send and what to do with the answer; this
module decides what is sent — the ``chat/completions`` body and its headers — and how its prompt
is counted before the server says: estimated per script from its JSON text (:mod:`.estimate`),
with the part it shares with the previous prompt the server read (the serialized tools, then
each message, compared in order while they are equal: what a server's prompt cache can reuse of
a growing conversation) and the most tokens it could possibly make.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.providers.estimate import estimate_tokens

BYTES_PER_TOKEN = 4
"""UTF-8 bytes a token's text usually has (English, the common BPE tokenizers): only for the cut
of an answer that runs far past its allowance (:func:`output_limit`). Counting is
:func:`~.estimate.estimate_tokens`, which holds for every script."""

TEMPLATE_ALLOWANCE = 1024
"""Tokens a server may add to a prompt beyond its bytes: the chat template's special tokens and a
short system prompt of its own. A ``usage`` report of more prompt tokens than the request's
UTF-8 bytes plus this is not a count (10**30 for a few kilobytes), and the estimate stands."""


def output_limit(max_tokens: int) -> int:
    """Bytes of output after which an answer is cut: four times what ``max_tokens`` tokens
    usually make, and never less than 4 KiB, so a server that honours the allowance is never cut
    (a token's text is rarely more than a few bytes) and one that ignores it is stopped."""
    return max_tokens * BYTES_PER_TOKEN * 4 + 4096


def headers(accept: str, api_key: str | None) -> dict[str, str]:
    """The headers of one request; the key goes only here, never into a client's defaults."""
    sent = {"Accept": accept}
    if api_key:
        sent["Authorization"] = f"Bearer {api_key}"
    return sent


@dataclass(slots=True)
class RequestShape:
    """The body this connection sends: its model (empty lets the server choose), and the
    optional parts the server has not refused yet.

    Some servers refuse ``stream_options`` (400 or 422 naming it): then the provider asks without
    it from then on (``ask_for_usage``), and charges by its own estimate. Likewise ``tool_choice:
    "required"``: refused once, "auto" is sent instead from then on (``may_require``).
    """

    model: str
    ask_for_usage: bool = True
    may_require: bool = True

    def body(self, request: CompletionRequest, stream: bool = True) -> dict[str, Any]:
        """The chat completion request. A tools-free request sends no tools at all, rather than
        ``tool_choice: "none"``: some servers reject that value, none reject a missing list."""
        body: dict[str, Any] = {}
        if self.model:
            body["model"] = self.model
        body["messages"] = [message.to_openai() for message in request.messages]
        if request.offers_tools:
            body["tools"] = [dict(tool) for tool in request.tools]
            required = request.tool_choice == "required" and self.may_require
            body["tool_choice"] = "required" if required else "auto"
        body["max_tokens"] = request.max_tokens
        body["temperature"] = request.temperature
        body["stream"] = stream
        if self.ask_for_usage and stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def prompt_pieces(self, request: CompletionRequest) -> tuple[str, ...]:
        """The part of the request the server turns into prompt tokens, in the order chat
        templates write it: the tools, then each message, as JSON text."""
        sent = self.body(request)
        pieces = [_compact(sent["tools"])] if "tools" in sent else []
        return (*pieces, *map(_compact, sent["messages"]))


@dataclass(frozen=True, slots=True)
class PromptCounts:
    """A request's estimates: its prompt, the prefix it shares with the previous prompt, and the
    most prompt tokens it could make (its bytes and a template's own)."""

    prompt: int
    prefix: int
    ceiling: int

    @classmethod
    def of(cls, prompt: tuple[str, ...], previous: tuple[str, ...]) -> PromptCounts:
        """The counts of ``prompt`` (its :meth:`RequestShape.prompt_pieces`), sent after
        ``previous``, the prompt of the last request the server read."""
        return cls(
            prompt=sum(map(estimate_tokens, prompt)),
            prefix=shared_prefix(previous, prompt),
            ceiling=sum(len(piece.encode()) for piece in prompt) + TEMPLATE_ALLOWANCE,
        )


def shared_prefix(previous: tuple[str, ...], prompt: tuple[str, ...]) -> int:
    """Estimated tokens of the pieces ``prompt`` starts with that ``previous`` started with too.
    Only whole pieces count, and the first that differs ends the prefix: templates differ in
    where they write the tools and the system message, so nothing after a difference can be
    counted on to be reused."""
    shared = 0
    for before, now in zip(previous, prompt, strict=False):
        if before != now:
            break
        shared += estimate_tokens(now)
    return shared


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
