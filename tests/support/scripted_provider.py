"""A scripted in-process provider for engine tests: exact, instant, and able to hang on request.

Token counts are deterministic (about one token per four characters, like a real tokenizer on
English), and prefix reuse behaves like llama.cpp's KV cache: when a request's messages extend the
previous request's messages, the previous prompt is reused and only the rest is "evaluated".
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import ProviderUnavailableError
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message, ToolCall


@dataclass
class Step:
    """What the model does for one request."""

    text: str = ""
    calls: Sequence[tuple[str, dict[str, Any] | str]] = ()
    hang: bool = False  # wait until the deadline or Stop, then return what was "generated"
    fail: bool = False  # raise a provider error (after any retries a real provider would make)
    error: Exception | None = None  # raised after ``text`` streamed (a connection lost mid-way)
    finish: str | None = None  # how the request ends instead of "stop": e.g. "length"
    started: threading.Event = field(default_factory=threading.Event)


def message_tokens(message: Message) -> int:
    calls = sum(len(call.arguments) + len(call.name) for call in message.tool_calls)
    return 4 + (len(message.content) + calls) // 4


class ScriptedProvider:
    name = "scripted"
    exact_counts = True
    parameters: int | None = None

    def __init__(
        self,
        script: Sequence[Step] | Callable[[CompletionRequest], Step],
        *,
        context_window: int = 32_768,
    ) -> None:
        self._script = script if callable(script) else list(script)
        self.context_window = context_window
        self.requests: list[CompletionRequest] = []
        self._previous: tuple[Message, ...] = ()
        self.closed = False

    async def count_prompt(self, request: CompletionRequest) -> int:
        tools = len(json.dumps(list(request.tools))) // 4 if request.offers_tools else 0
        return sum(message_tokens(message) for message in request.messages) + tools

    def _next_step(self, request: CompletionRequest) -> Step:
        if callable(self._script):
            return self._script(request)
        if not self._script:
            return Step(text="Scripted answer.")
        return self._script.pop(0)

    async def complete(
        self,
        request: CompletionRequest,
        cancel: CancelToken,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        self.requests.append(request)
        step = self._next_step(request)
        step.started.set()
        prompt = await self.count_prompt(request)
        reused = self._reused(request)
        self._previous = request.messages
        if step.fail:
            raise ProviderUnavailableError("The scripted server is down.")
        stop = "tool_calls" if step.calls else "stop"
        if step.hang:
            stop = await _wait_for_stop(request.deadline, cancel)
        elif cancel.cancelled:
            stop = "cancelled"
        calls = (
            tuple(
                ToolCall(
                    f"call_{len(self.requests)}_{index}",
                    name,
                    arguments if isinstance(arguments, str) else json.dumps(arguments),
                )
                for index, (name, arguments) in enumerate(step.calls)
            )
            if stop == "tool_calls"
            else ()
        )
        if step.text and on_text is not None:
            on_text(step.text)
        if step.error is not None:
            raise step.error
        if step.finish is not None and stop == "stop":
            stop = step.finish
        output = len(step.text) // 4 + sum(8 + len(call.arguments) // 4 for call in calls)
        return Completion(
            text=step.text,
            tool_calls=calls,
            stop=stop,  # type: ignore[arg-type]
            prompt_tokens=prompt,
            reused_prefix=reused,
            prompt_evaluated=prompt - reused,
            output_tokens=output,
        )

    def _reused(self, request: CompletionRequest) -> int:
        previous = self._previous
        if previous and request.messages[: len(previous)] == previous:
            return sum(message_tokens(message) for message in previous)
        return 0

    async def aclose(self) -> None:
        self.closed = True


async def _wait_for_stop(deadline: float, cancel: CancelToken) -> str:
    """Block until the deadline passes or Stop is pressed, as a long prefill would."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    remove = cancel.on_cancel(lambda: loop.call_soon_threadsafe(stopped.set))
    try:
        await asyncio.wait_for(stopped.wait(), max(0.0, deadline - loop.time()))
    except TimeoutError:
        return "deadline"
    finally:
        remove()
    return "cancelled"
