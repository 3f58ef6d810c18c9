"""The provider interface: what the research engine needs from a model, local or remote.

A provider formats and counts a prompt, and streams one completion with tools, a deadline and a
cancel token. It reports what the request really cost, so the engine can charge the token budget
net of the reused prompt prefix (DESIGN §1):

* ``prompt_tokens`` — the formatted prompt's length (exact for a local model; for a remote server
  the provider's ``usage`` when reported, else the documented UTF-8 estimate).
* ``reused_prefix`` — prompt tokens that were *not* processed again: the longest common prefix with
  the tokens in llama.cpp's KV cache, or the server's ``cached_tokens``; for a server that does not
  report it, the common prefix with the previous request's prompt, estimated.
  ``prefix_source`` says which (:data:`PrefixSource`).
* ``prompt_evaluated`` — prompt tokens actually processed by this request. Normally
  ``prompt_tokens - reused_prefix``; less when the request was interrupted during prefill.
* ``output_tokens`` — tokens generated.

A deadline or a cancel is not an error: :meth:`Provider.complete` returns what it has with
``stop`` set to ``"deadline"`` or ``"cancelled"``, so the work done is still charged. Failures raise
:class:`~imprint_desktop.core.errors.ProviderError` subclasses.

Both the local and the remote provider are asyncio-native; the local one runs llama.cpp on its own
single-thread executor and delivers text deltas back on the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.vocabulary import Phase as Phase  # noqa: PLC0414 - re-exported
from imprint_desktop.core.vocabulary import PrefixSource as PrefixSource  # noqa: PLC0414
from imprint_desktop.core.vocabulary import StopKind as StopKind  # noqa: PLC0414

Role = Literal["system", "user", "assistant", "tool"]

MAX_CALLS_PER_REPLY = 32
"""Most tool calls one model reply may have carried out. A provider keeps no more than these
(counting the rest in :attr:`Completion.dropped_calls`), and the research engine runs no more: the
model is told of the ones dropped."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw JSON text the model produced:
    validating it is the toolbox's job, so malformed output becomes a tool error the model reads."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """A chat message in the OpenAI shape, immutable so it can be shared across threads."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # for role="tool": which call this answers
    name: str | None = None  # for role="tool": the tool's name

    def to_openai(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            message["name"] = self.name
        return message


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One model request. ``tools`` empty (or ``tool_choice="none"``) makes it tools-free."""

    messages: tuple[Message, ...]
    max_tokens: int
    deadline: float  # a time.monotonic() value; the provider stops there
    tools: tuple[Mapping[str, Any], ...] = ()  # OpenAI function declarations
    # "required": the reply must be tool calls (the first research step, chat.research_first).
    tool_choice: Literal["auto", "none", "required"] = "auto"
    temperature: float = 0.2
    # The sampling seed (``chat.seed``); None: the provider's own. Remote servers are not sent it.
    seed: int | None = None
    phase: Phase = "research"
    # An answer (text, no calls) ends after this many tokens, with ``stop="length"``; calls may
    # take all of ``max_tokens`` (None: both may). A research request gives calls the room their
    # arguments need, while an answer keeps the person's answer allowance (``chat.max_tokens``).
    # A provider that cannot tell the two apart while generating may ignore it.
    answer_max_tokens: int | None = None

    @property
    def offers_tools(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"


@dataclass(frozen=True, slots=True)
class Completion:
    """What one request produced and what it cost (see the module docstring)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop: StopKind
    prompt_tokens: int
    reused_prefix: int
    prompt_evaluated: int
    output_tokens: int
    estimated: bool = False  # True when the counts are estimates, not the model's own
    provider_usage: Mapping[str, Any] | None = field(default=None)  # as the server reported it
    prefix_source: PrefixSource = "kv_cache"  # the remote provider always says which it used
    dropped_calls: int = 0  # calls the reply made beyond the most one reply may hold (not kept)

    @property
    def interrupted(self) -> bool:
        return self.stop in ("deadline", "cancelled")


TextSink = Callable[[str], None]


class Provider(Protocol):
    """A model the engine can research with."""

    @property
    def name(self) -> str:
        """What to call it in the window, traces and errors (never containing a secret)."""
        ...

    @property
    def context_window(self) -> int:
        """Tokens of prompt plus output the model can hold."""
        ...

    @property
    def exact_counts(self) -> bool:
        """True when :meth:`count_prompt` uses the model's own tokenizer and template."""
        ...

    @property
    def parameters(self) -> int | None:
        """The model's parameter count when it is known (a local GGUF), else None."""
        ...

    async def count_prompt(self, request: CompletionRequest) -> int:
        """Tokens of the prompt ``request`` formats to, as sent (tools and template included)."""
        ...

    async def complete(
        self, request: CompletionRequest, cancel: CancelToken, on_text: TextSink | None = None
    ) -> Completion:
        """Run ``request``; ``on_text`` gets answer text as it streams, on the caller's loop."""
        ...

    async def aclose(self) -> None:
        """Release the model or the connection pool."""
        ...
