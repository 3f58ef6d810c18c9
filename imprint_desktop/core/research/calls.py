"""Carrying out the model's tool calls: the toolbox's tools, and the engine's ``ask_user``.

A reply offers the toolbox's workspace and web tools (:class:`ResearchTools`) and the engine's own:
``ask_user`` when someone can be asked, and ``research_sections``, whose section workers the round
loop runs (:mod:`.rounds`). :class:`ToolCalls` carries out one call at a time — the person asked
first when a fetch needs their consent — and reports it as a ``tool`` line. A call never raises:
whatever fails is a result the model reads (:func:`~imprint_desktop.core.tools.tool.carried_out`),
and Stop abandons any call but a write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, Protocol

from imprint_desktop.core.consent import Decision, RedirectConsent
from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.ledger import Judged
from imprint_desktop.core.research.person import Person
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.tools.arguments import loose_arguments, parse_arguments
from imprint_desktop.core.tools.specs import SPECS, describe_call
from imprint_desktop.core.tools.tool import (
    OUT_OF_TIME,
    EvidenceItem,
    Output,
    ToolKind,
    ToolResult,
    carried_out,
    render,
    unknown_tool,
)


class ResearchTools(Protocol):
    """What the engine needs of the toolbox (:class:`~imprint_desktop.core.tools.Toolbox`): the
    workspace and web tools. ``ask_user`` and ``research_sections`` are the engine's own."""

    def schemas(self) -> list[dict[str, Any]]: ...

    def kind(self, name: str) -> ToolKind | None: ...

    @property
    def scope(self) -> str:
        """Where the tools look, in words for the person ("the workspace “notes” (/home/…)")."""
        ...

    def needs_consent(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
    ) -> str | None: ...

    async def execute(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
        first_citation: int = 1,
        max_chars: int | None = None,
        consent: Decision | None = None,
        redirect_consent: RedirectConsent | None = None,
    ) -> ToolResult: ...


class ToolCalls:
    """The tools one reply offers, and the carrying out of their calls."""

    def __init__(self, reply: Reply, tools: ResearchTools, person: Person) -> None:
        self.reply = reply
        self.tools = tools
        self.person = person
        own = ("ask_user", "research_sections") if person.can_be_asked else ("research_sections",)
        #: Every tool the reply offers, in the order the model sees them: the toolbox's, then
        #: the engine's own.
        self.schemas: tuple[Mapping[str, Any], ...] = (
            *tools.schemas(),
            *(SPECS[name].schema() for name in own),
        )
        self.names = [schema["function"]["name"] for schema in self.schemas]

    def kind(self, name: str) -> ToolKind | None:
        """The kind of tool ``name`` (for budgets and progress), or None for an unknown name."""
        if name in ("ask_user", "research_sections"):
            return SPECS[name].kind
        return self.tools.kind(name)

    def read_only(self) -> tuple[Mapping[str, Any], ...]:
        """The tools that only read: a section worker's."""
        return tuple(
            schema
            for schema in self.schemas
            if self.kind(schema["function"]["name"]) is ToolKind.READ
        )

    # --- reporting a call ----------------------------------------------------------------------

    def started(
        self, round_number: int, call: ToolCall, kind: ToolKind | None, origin: ev.ToolOrigin
    ) -> None:
        """Show the call as running."""
        values = loose_arguments(call.arguments)
        self.reply.emit(
            ev.ToolStarted(
                self.reply.now_t(),
                round_number,
                call.id,
                call.name,
                kind.value if kind is not None else "unknown",
                describe_call(call.name, values).doing,
                origin,
                call.arguments if isinstance(call.arguments, str) else "",
            )
        )

    def finished(
        self,
        round_number: int,
        call: ToolCall,
        kind: ToolKind | None,
        result: ToolResult,
        *,
        judged: Judged,
        seconds: float,
        origin: ev.ToolOrigin = "model",
        found: int | None = None,
    ) -> None:
        """The call's ``tool`` line: how it ended and what it found (``found``: the new evidence
        counted for it, when its own result is not where it was found — ``research_sections``,
        whose workers found it). What a call that ran looked for is noted for "not found": a call
        refused or not run looked for nothing. The line says how far past the research deadline
        the call returned (a blocking tool may, DESIGN §1; ADR 0102's third condition)."""
        if result.status in ("ok", "empty"):
            self.reply.looked.note(call.name, loose_arguments(call.arguments))
        clock = self.reply.clock
        self.reply.emit(
            ev.ToolFinished(
                self.reply.now_t(),
                round_number,
                call.id,
                call.name,
                kind.value if kind is not None else "unknown",
                result.status,
                len(judged.new) if found is None else found,
                judged.repeated,
                seconds,
                judged.new,
                origin,
                past_deadline=max(0.0, clock.elapsed - clock.limit),
            )
        )

    # --- carrying a call out -------------------------------------------------------------------

    async def execute(
        self, call: ToolCall, kind: ToolKind | None, *, max_chars: int | None = None
    ) -> ToolResult:
        """The result of a call of the toolbox's tools or of ``ask_user``; ``max_chars`` caps it
        below the tool result size limit (the engine's own first search)."""
        timeout = self.reply.clock.remaining
        first_citation = self.reply.ledger.next_citation
        work: Coroutine[Any, Any, ToolResult]
        if call.name not in self.names:
            work = _refused(call.name, unknown_tool(call.name, self.names))
        elif call.name == "ask_user":
            work = self._ask(call, timeout, first_citation)
        else:
            work = self._use_toolbox(call, timeout, first_citation, max_chars)
        execution = carried_out(call.name, work, timeout=timeout)
        if kind is ToolKind.WRITE:
            return await execution  # a write is never abandoned half-way
        return await self.unless_stopped(call.name, execution)

    async def unless_stopped(
        self, name: str, execution: Coroutine[Any, Any, ToolResult]
    ) -> ToolResult:
        """Run a tool, but give up on it the moment Stop is pressed."""
        task = asyncio.ensure_future(execution)
        loop = asyncio.get_running_loop()

        def stop() -> None:
            loop.call_soon_threadsafe(task.cancel)

        remove = self.reply.cancel.on_cancel(stop)
        try:
            return await task
        except asyncio.CancelledError:
            if not self.reply.cancel.cancelled:
                raise  # the reply itself is being torn down
            return ToolResult.error(name, "stopped while running.")
        finally:
            remove()

    async def _ask(self, call: ToolCall, timeout: float | None, first_citation: int) -> ToolResult:
        """``ask_user``: the person's answer, as evidence from them."""
        values = parse_arguments(SPECS[call.name], call.arguments)
        if timeout is not None and timeout <= 0:
            return ToolResult.not_executed(call.name, OUT_OF_TIME)
        answer = await self.person.ask(call.id, values["question"])
        if not answer.strip():
            output = Output("The person gave no answer.", status="empty")
        else:
            output = Output(
                "The person answered:",
                [EvidenceItem("user", "answer", answer.strip())],
                labels=["the person"],
            )
        cap = self.reply.settings.max_result_chars
        return render(call.name, output, max_chars=cap, first_citation=first_citation)

    async def _use_toolbox(
        self, call: ToolCall, timeout: float | None, first_citation: int, max_chars: int | None
    ) -> ToolResult:
        """A workspace or web tool, once the person allowed what it needs them to allow."""
        url = self.tools.needs_consent(call.name, call.arguments, timeout=timeout)
        decision = await self.person.consent(call.id, url) if url is not None else None

        async def redirect(from_url: str, to_url: str) -> Decision:
            return await self.person.consent(call.id, to_url, from_url)

        return await self.tools.execute(
            call.name,
            call.arguments,
            timeout=timeout,
            first_citation=first_citation,
            max_chars=max_chars,
            consent=decision,
            redirect_consent=redirect,
        )


async def _refused(name: str, message: str) -> ToolResult:
    return ToolResult.error(name, message)
