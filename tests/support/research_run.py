"""The research engine run on a scripted model and scripted tools: exact control of every request
and every result, and every event it reports kept."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from tests.support.fake_tools import FakeTools
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def search(query: str) -> tuple[str, dict[str, Any]]:
    return ("search_workspace", {"query": query})


class Recorder:
    def __init__(self, also: Callable[[ev.Event], None] | None = None) -> None:
        self.events: list[ev.Event] = []
        self._also = also  # another listener, such as a trace writer

    def __call__(self, event: ev.Event) -> None:
        self.events.append(event)
        if self._also is not None:
            self._also(event)

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


def make(
    script: list[Step] | Callable[[CompletionRequest], Step],
    respond: Callable[[str, dict[str, Any]], Any],
    *,
    ask: Callable[[str, str], Any] | None = None,
    cancel: CancelToken | None = None,
    context_window: int = 32_768,
    also: Callable[[ev.Event], None] | None = None,
    settings: Mapping[str, object] | None = None,
    timeout_sec: float | None = None,
) -> tuple[ResearchEngine, FakeTools, ScriptedProvider, Recorder]:
    """The engine under ``settings`` (by key), its scripted tools and model, and what it reports
    (also to ``also``)."""
    # The stopping scenarios script every request themselves: the engine's own first search
    # (chat.research_first) is tested on its own in test_seed.py.
    given = {"chat.research_timeout_sec": 60, "chat.research_first": False, **(settings or {})}
    chosen = research_settings(given, timeout_sec=timeout_sec)
    provider = ScriptedProvider(script, context_window=context_window)
    recorder = Recorder(also)
    engine = ResearchEngine(provider, chosen, cancel=cancel, ask=ask, sink=recorder)
    tools = FakeTools(respond)
    return engine, tools, provider, recorder


def assert_protocol_complete(request: CompletionRequest) -> None:
    """Every tool call in the request's history has exactly one result after it."""
    pending: list[str] = []
    for message in request.messages:
        if message.role == "assistant" and message.tool_calls:
            assert not pending, f"calls without results: {pending}"
            pending = [call.id for call in message.tool_calls]
        elif message.role == "tool":
            assert message.tool_call_id in pending, message.tool_call_id
            pending.remove(message.tool_call_id)
    assert not pending, f"calls without results: {pending}"


def research_then_final(
    research: Callable[[int], Step], final: str
) -> Callable[[CompletionRequest], Step]:
    """A script by phase: research requests call ``research(n)``, the final request answers."""
    count = iter(range(10_000))

    def script(request: CompletionRequest) -> Step:
        return Step(final) if request.phase == "final" else research(next(count))

    return script
