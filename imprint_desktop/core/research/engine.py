"""The research engine: tool rounds under budgets, then a final answer (DESIGN §1).

One :class:`ResearchEngine` runs one reply on the caller's asyncio loop. It stops for exactly the
reasons of DESIGN §1 — never on a round count — and reports everything it does as events
(:mod:`.events`) to one sink, from which the window, the trace and the history are all fed.

Protocol completeness is an invariant: every tool call the model made gets exactly one tool result
before the next request is sent, including the calls that were never started (``not executed: …``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Consent, Decision
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderDeadlineError,
    ProviderError,
)
from imprint_desktop.core.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    Phase,
    Provider,
    ToolCall,
)
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts, seed, sources
from imprint_desktop.core.research.budgets import (
    Patience,
    ResearchClock,
    Settlement,
    TokenBudget,
)
from imprint_desktop.core.research.final import FinalStage, stop_in_words
from imprint_desktop.core.research.ledger import EvidenceLedger, Judged
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.tools.arguments import loose_arguments, parse_arguments
from imprint_desktop.core.tools.base import (
    EvidenceItem,
    Output,
    ToolKind,
    ToolResult,
    carried_out,
    render,
    unknown_tool,
)
from imprint_desktop.core.tools.specs import SPECS

log = logging.getLogger(__name__)

EventSink = Callable[[ev.Event], None]
AskPerson = Callable[[str], Awaitable[str]]


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
    ) -> ToolResult: ...


@dataclass(frozen=True)
class ResearchSettings:
    """The settings one reply runs under (DESIGN §3), taken from a settings snapshot."""

    timeout_sec: float = 300
    token_budget: int = 65536
    no_progress_rounds: int = 4
    max_tokens: int = 2048
    research_max_output_tokens: int = 1024
    temperature: float = 0.2
    system_prompt: str = ""
    final_deadline_sec: float = 120.0
    research_first: bool = True  # the engine searches before the first request (seed.py)
    answer_without_evidence: bool = False  # ask the model even when nothing was found
    max_result_chars: int = 6000  # the tool result cap, which the seed's passages also keep to
    snapshot: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> ResearchSettings:
        return cls(
            timeout_sec=float(settings["chat.research_timeout_sec"]),
            token_budget=int(settings["chat.research_token_budget"]),
            no_progress_rounds=int(settings["chat.research_no_progress_rounds"]),
            max_tokens=int(settings["chat.max_tokens"]),
            research_max_output_tokens=int(settings["chat.research_max_output_tokens"]),
            temperature=float(settings["chat.temperature"]),
            system_prompt=str(settings["chat.system_prompt"]),
            research_first=bool(settings.get("chat.research_first", True)),
            answer_without_evidence=bool(settings.get("chat.answer_without_evidence", False)),
            max_result_chars=int(settings.get("tools.max_result_chars", 6000)),
            snapshot=dict(settings),
        )


@dataclass
class _Loop:
    """One research conversation: the coordinator's, or a section worker's."""

    messages: list[Message]
    phase: Phase
    worker: str | None
    patience: Patience
    tool_schemas: tuple[Mapping[str, Any], ...]
    allowed: frozenset[ToolKind]
    seed: str = ""  # what the engine searches for before the first request ("": no search)
    round: int = 0  # the reply-wide number of this loop's current round
    call_ids: set[str] = field(default_factory=set)  # every tool call id in the conversation


class ResearchEngine:
    """Runs one reply. Create a new engine per reply."""

    def __init__(
        self,
        provider: Provider,
        settings: ResearchSettings,
        *,
        cancel: CancelToken | None = None,
        ask: AskPerson | None = None,
        consent: Consent | None = None,
        sink: EventSink | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.cancel = cancel if cancel is not None else CancelToken()
        self._ask = ask
        self._consent = consent
        self._sink = sink
        self.clock_now = clock
        self._started = clock()
        self.clock = ResearchClock(settings.timeout_sec, clock)
        self.tokens = TokenBudget(settings.token_budget)
        self.ledger = EvidenceLedger()
        self.rounds = 0
        self._tools: ResearchTools | None = None
        self._offered: tuple[Mapping[str, Any], ...] = ()  # the toolbox's tools and the engine's
        self.question = ""
        self._coordinator_patience = Patience(settings.no_progress_rounds)
        # A reply-wide stop met inside a section worker, carried out to the coordinator's batch.
        self._worker_stop: ResearchStop | None = None
        self.final_charged = 0  # tokens of the final request, outside the research budget
        self.looked = sources.LookedAt()  # what research searched and read, for "not found"
        self._requests = 0  # research requests sent (a budget too small for one is said so)

    # --- the engine's own tools: asking the person, research in sections -----------------------

    def _own_tools(self) -> tuple[Mapping[str, Any], ...]:
        """The engine's own tools: ``ask_user`` when someone can be asked, ``research_sections``."""
        names = (
            ("ask_user", "research_sections") if self._ask is not None else ("research_sections",)
        )
        return tuple(SPECS[name].schema() for name in names)

    def _kind(self, name: str) -> ToolKind | None:
        assert self._tools is not None
        if name in ("ask_user", "research_sections"):
            return SPECS[name].kind
        return self._tools.kind(name)

    async def _ask_tool(
        self, call: ToolCall, timeout: float | None, first_citation: int
    ) -> ToolResult:
        """``ask_user``: the person's answer, as evidence from them."""
        values = parse_arguments(SPECS[call.name], call.arguments)
        if timeout is not None and timeout <= 0:
            return ToolResult.not_executed(call.name, "research time budget exhausted")
        answer = await self.ask_user(call.id, values["question"])
        if not answer.strip():
            output = Output("The person gave no answer.", status="empty")
        else:
            output = Output(
                "The person answered:",
                [EvidenceItem("user", "answer", answer.strip())],
                labels=["the person"],
            )
        return render(
            call.name,
            output,
            max_chars=self.settings.max_result_chars,
            first_citation=first_citation,
        )

    async def _coordinate(self, call: ToolCall) -> ToolResult:
        """``research_sections``: a section worker per section (see :meth:`research_sections`)."""
        values = parse_arguments(SPECS[call.name], call.arguments)
        return await self.research_sections(values["sections"])

    async def _use_toolbox(
        self, call: ToolCall, timeout: float | None, first_citation: int, max_chars: int | None
    ) -> ToolResult:
        """A workspace or web tool, once the person allowed what it needs them to allow."""
        assert self._tools is not None
        url = self._tools.needs_consent(call.name, call.arguments, timeout=timeout)
        decision = await self.consent(call.id, url) if url is not None else None
        return await self._tools.execute(
            call.name,
            call.arguments,
            timeout=timeout,
            first_citation=first_citation,
            max_chars=max_chars,
            consent=decision,
        )

    async def ask_user(self, call_id: str, question: str) -> str:
        """Ask the person; research time pauses until they answer (DESIGN §1)."""
        if self._ask is None:
            return ""
        self.clock.pause()
        self.emit(ev.QuestionAsked(self.now_t(), call_id, question))
        self._emit_budget()
        waited_from = self.clock_now()
        answer = ""
        try:
            answer = await self._ask(question)
        finally:
            # Also when Stop ends the wait: the trace keeps every wait (DESIGN §5).
            self.clock.resume()
            self.emit(ev.UserWait(self.now_t(), self.clock_now() - waited_from, answer))
            self._emit_budget()
        return answer

    async def consent(self, call_id: str, url: str) -> Decision:
        """May call ``call_id`` fetch ``url``? Research time pauses while the person decides,
        and the decision is traced; it is not progress (DESIGN §2)."""
        if self._consent is None:
            decision, seconds = Decision.DENY_UNATTENDED, 0.0
        else:
            self.clock.pause()
            self._emit_budget()
            waited_from = self.clock_now()
            try:
                decision = await self._consent(call_id, url)
            finally:
                self.clock.resume()
            seconds = self.clock_now() - waited_from
        self.emit(ev.ConsentDecided(self.now_t(), call_id, url, decision, seconds))
        self._emit_budget()
        return decision

    async def research_sections(self, sections: list[str]) -> ToolResult:
        """Run one read-only worker per section under the reply-wide budgets."""
        read_only = tuple(
            schema
            for schema in self._offered
            if self._kind(schema["function"]["name"]) is ToolKind.READ
        )
        summaries: list[str] = []
        for section in sections:
            loop = _Loop(
                messages=[
                    Message("system", prompts.WORKER),
                    Message("user", f"Question: {self.question}\nYour section: {section}"),
                ],
                phase="worker",
                worker=section,
                patience=Patience(self.settings.no_progress_rounds),
                tool_schemas=read_only,
                allowed=frozenset({ToolKind.READ}),
                seed=section,
            )
            found_before = len(self.ledger.items)
            share = self.settings.max_result_chars // max(1, len(sections))
            try:
                text = await self._research(loop)
                summaries.append(
                    f"Section “{section}”:\n{text or '(no summary)'}"
                    + _section_evidence(self.ledger, found_before, share)
                )
            except ResearchStop as stop:
                # Whatever ended the worker, what it found reaches the coordinator and, through
                # this result, the final request.
                summaries.append(
                    f"Section “{section}”: stopped ({stop_in_words(stop.reason)})."
                    + _section_evidence(self.ledger, found_before, share)
                )
                if stop.reason in ("no_progress", "context_full"):
                    continue  # this worker's own conversation ended: the next section may go on
                # A reply-wide budget ran out, the model failed or Stop was pressed: the reply
                # stops, once this call has its result (see _run_batch).
                self._worker_stop = stop
                break
        return ToolResult("research_sections", "ok", "\n\n".join(summaries))

    # --- the reply ------------------------------------------------------------------------------

    async def run(
        self,
        question: str,
        tools: ResearchTools,
        history: Sequence[Message] = (),
        *,
        compact_history: Sequence[Message] | None = None,
    ) -> ev.ReplyResult:
        """Research ``question`` and answer it. Never raises: the result says how it ended.

        ``history`` is the conversation so far: earlier questions and answers, or — to let a local
        model reuse all of it from its cache — the whole conversation an earlier reply returned
        (:attr:`~.events.ReplyResult.conversation`, system message first). When that would leave
        too little of the context window for research, ``compact_history`` is used instead.
        """
        self._tools = tools
        self.question = question
        self.emit(
            ev.ReplyStarted(self.now_t(), question, self.settings.snapshot, self.provider.name)
        )
        self.clock.start()
        schemas = (*tools.schemas(), *self._own_tools())
        self._offered = schemas
        messages = await self._opening(question, history, compact_history, schemas)
        coordinator = _Loop(
            messages,
            "research",
            None,
            self._coordinator_patience,
            schemas,
            frozenset(ToolKind),
            seed=question,
            # A continued conversation's calls keep their ids; new ones must not repeat them.
            call_ids={call.id for message in messages for call in message.tool_calls},
        )
        final = FinalStage(self)
        try:
            try:
                answer = await self._research(coordinator)
            except ResearchStop as stop:
                return await self._after_stop(stop, final, coordinator)
            except _AnswerCut as cut:
                return await self._complete_cut(cut, final, coordinator)
        except Exception as error:  # a defect must still end the reply with what it has
            log.exception("the research engine failed")
            self.clock.stop()
            detail = f"internal error ({type(error).__name__}: {error})"
            self.emit(ev.ResearchStopped(self.now_t(), "error", detail))
            return self._finish(final.fallback_for("error", detail), "error")
        self.clock.stop()
        self.emit(ev.ResearchStopped(self.now_t(), "answered"))
        # The research answer is the final answer: no final request, but the one final line.
        self.emit(ev.FinalFinished(self.now_t(), "model", 0.0))
        conversation = (*coordinator.messages, Message("assistant", answer))
        return self._finish((answer, "model", None), "answered", conversation)

    async def _opening(
        self,
        question: str,
        history: Sequence[Message],
        compact: Sequence[Message] | None,
        schemas: tuple[Mapping[str, Any], ...],
    ) -> list[Message]:
        """The conversation the first request continues: the whole earlier one when it leaves at
        least half the window for this reply, else the compact history."""
        system = Message("system", prompts.research_system(self.settings.system_prompt))
        if not history or history[0].role != "system":
            return [system, *history, Message("user", question)]
        whole = [system, *history[1:], Message("user", question)]
        if compact is None:
            return whole
        request = CompletionRequest(
            messages=tuple(whole),
            max_tokens=self.settings.research_max_output_tokens,
            deadline=self.clock.deadline(),
            tools=schemas,
        )
        try:
            tokens = await self.provider.count_prompt(request)
        except Exception:  # the first request will meet the same failure and report it
            log.warning("counting the earlier conversation failed", exc_info=True)
            tokens = self.provider.context_window
        if tokens <= self.provider.context_window // 2:
            return whole
        return [system, *compact, Message("user", question)]

    async def _after_stop(
        self, stop: ResearchStop, final: FinalStage, coordinator: _Loop
    ) -> ev.ReplyResult:
        """Research stopped before an answer: the final answer, a fallback, or "not found"."""
        self.clock.stop()
        self.emit(ev.ResearchStopped(self.now_t(), stop.reason, stop.detail))
        if stop.reason in ("cancelled", "error"):
            return self._finish(final.fallback_for(stop.reason, stop.detail), stop.reason)
        if not self.ledger.items and not self.settings.answer_without_evidence:
            # Nothing to answer from: say so, rather than let the model invent an answer.
            return self._finish(self._not_found(stop), stop.reason)
        outcome = await final.run(coordinator.messages, stop.reason, coordinator.tool_schemas)
        if self.cancel.cancelled:  # Cancellation wins, also during the final stage; the
            # trace's one stop line keeps why research itself ended.
            return self._finish(outcome, "cancelled")
        return self._finish(outcome, stop.reason, final.conversation)

    async def _complete_cut(
        self, cut: _AnswerCut, final: FinalStage, coordinator: _Loop
    ) -> ev.ReplyResult:
        """The model answered but ran out of its research allowance mid-answer: the final
        request, with the final allowance and deadline, writes the rest."""
        self.clock.stop()
        self.emit(ev.ResearchStopped(self.now_t(), "answered"))
        text, mode, error = await final.run(
            coordinator.messages,
            "answered",
            coordinator.tool_schemas,
            instruction=prompts.CONTINUE_ANSWER,
        )
        if mode == "model":
            joined = _joined(cut.text, text)
            return self._finish((joined, mode, error), "answered", final.conversation)
        # Completing it failed (the final stage said so in its one final line): the person gets
        # the answer as far as it went, labelled.
        why = error or "the final request did not complete it"
        labelled = f"{cut.text}\n\n(This answer was cut off at its length limit: {why}.)"
        reason: ev.StopReason = "cancelled" if self.cancel.cancelled else "answered"
        return self._finish((labelled, "fallback", error), reason)

    async def _research(self, loop: _Loop) -> str:
        """Rounds until the model answers (returned) or a budget stops it (ResearchStop)."""
        if loop.seed and self.settings.research_first and _offers(loop, "search_workspace"):
            await self._seed(loop)
        while True:
            completion = await self.request(
                loop.messages,
                loop.phase,
                tools=loop.tool_schemas,
                max_tokens=self.settings.research_max_output_tokens,
                check_context=True,
            )
            if not completion.tool_calls:
                text = completion.text.strip()
                if text and completion.stop == "length" and loop.worker is None:
                    # Cut at the research allowance: the final request completes it (below).
                    loop.messages.append(Message("assistant", text))
                    raise _AnswerCut(text)
                if text:
                    return text
                loop.messages += [
                    Message("assistant", ""),
                    Message("user", prompts.EMPTY_REPLY_NUDGE),
                ]
                self._end_round(loop, progress=False, excluded=False)
                continue
            self.rounds += 1
            loop.round = self.rounds
            self.emit(ev.RoundStarted(self.now_t(), loop.round, loop.worker))
            calls = _unique_ids(completion.tool_calls, loop.call_ids, loop.round)
            loop.messages.append(Message("assistant", completion.text, calls))
            batch = _Batch()
            try:
                await self._run_batch(loop, calls, batch)
            except ResearchStop:
                # The round was cut short: it still ends, with what its finished calls found.
                self._emit_round_end(loop, batch.progress, batch.counts_out)
                raise
            self._end_round(loop, progress=batch.progress, excluded=batch.counts_out)

    async def _seed(self, loop: _Loop) -> None:
        """Search before answering (DESIGN §1): the engine's own ``search_workspace`` call.

        The coordinator's is round 0; a section worker's is a round of its own. Its passages are
        judged like any read's, and reach the model as a completed call and its result, so the
        conversation is the one a model that searched first would have had.
        """
        assert self._tools is not None
        self._check_cancel_and_time()
        query = seed.seed_query(loop.seed)
        if loop.worker is not None:
            self.rounds += 1
            loop.round = self.rounds
        call_id = seed.SEED_CALL_ID if loop.worker is None else f"{seed.SEED_CALL_ID}_{loop.round}"
        while call_id in loop.call_ids:  # a conversation continued: an earlier reply's seed
            call_id += "_"
        call = ToolCall(call_id, "search_workspace", seed.seed_arguments(query))
        loop.call_ids.add(call.id)
        self.emit(ev.RoundStarted(self.now_t(), loop.round, loop.worker))
        max_chars = await self._seed_chars(loop)
        result, progress = await self._run_call(
            loop, call, ToolKind.READ, origin="engine", max_chars=max_chars
        )
        loop.messages += [
            Message("assistant", "", (call,)),
            Message("tool", result.content, tool_call_id=call.id, name=call.name),
        ]
        self._end_round(loop, progress=progress, excluded=False)

    async def _seed_chars(self, loop: _Loop) -> int:
        """The seed result's size: a share of what the window has to spare (see seed.py)."""
        request = CompletionRequest(
            messages=tuple(loop.messages),
            max_tokens=self.settings.research_max_output_tokens,
            deadline=self.clock.deadline(),
            tools=loop.tool_schemas,
            phase=loop.phase,
        )
        try:
            prompt_tokens = await self.provider.count_prompt(request)
        except Exception:  # the first request will meet the same failure and report it
            log.warning("counting the prompt before the first search failed", exc_info=True)
            return self.settings.max_result_chars
        return seed.seed_chars(
            context_window=self.provider.context_window,
            prompt_tokens=prompt_tokens,
            output_tokens=self.settings.research_max_output_tokens,
            cap=self.settings.max_result_chars,
            question=loop.seed,
        )

    def _end_round(self, loop: _Loop, *, progress: bool, excluded: bool) -> None:
        loop.patience.record(progress=progress, excluded=excluded)
        self._emit_round_end(loop, progress, excluded)
        if loop.patience.exhausted:
            raise ResearchStop("no_progress")

    def _emit_round_end(self, loop: _Loop, progress: bool, excluded: bool) -> None:
        self.emit(
            ev.RoundEnded(
                self.now_t(), loop.round, progress, excluded, loop.patience.rounds_without_progress
            )
        )
        self._emit_budget()

    async def request(
        self,
        messages: Sequence[Message],
        phase: Phase,
        *,
        tools: tuple[Mapping[str, Any], ...] = (),
        max_tokens: int,
        check_context: bool = False,
    ) -> Completion:
        """One budgeted model request: check, reserve, send, charge, refund (DESIGN §1)."""
        self._check_cancel_and_time()
        request = CompletionRequest(
            messages=tuple(messages),
            max_tokens=max_tokens,
            deadline=self.clock.deadline(),
            tools=tools,
            tool_choice="auto",
            temperature=self.settings.temperature,
            phase=phase,
        )
        prompt_tokens = await self._provider_call(self.provider.count_prompt(request))
        if check_context and prompt_tokens + max_tokens > self.provider.context_window:
            raise ResearchStop(
                "context_full",
                f"{prompt_tokens} + {max_tokens} tokens > {self.provider.context_window}",
            )
        reservation = self.tokens.reserve(prompt_tokens, max_tokens)
        if reservation is None:
            raise ResearchStop(
                "token_budget",
                f"{prompt_tokens + max_tokens} tokens needed, {self.tokens.left} left",
            )
        self._requests += 1
        # A research or worker request opens the next round; condensing belongs to the last one.
        round_number = self.rounds + 1 if phase in ("research", "worker") else self.rounds
        self.emit(
            ev.RequestStarted(self.now_t(), phase, round_number, prompt_tokens, reservation.tokens)
        )
        self._emit_budget()
        streamed = _Streamed(self.text_sink(phase))
        try:
            completion = await self._provider_call(
                self.provider.complete(request, self.cancel, streamed)
            )
        except ResearchStop as stop:
            # The request failed. Without output nothing is known to have been processed, so
            # nothing is charged; once output streamed, the prompt was processed and the output
            # was made: both are charged. The trace gets its line either way.
            output = streamed.tokens
            settlement = self.tokens.settle(reservation, prompt_tokens if output else 0, output)
            self.request_finished(
                phase,
                round_number,
                prompt_tokens,
                settlement,
                reused_prefix=0,
                estimated=not self.provider.exact_counts,
                usage=None,
                stop=stop.reason,
            )
            raise
        except BaseException:
            self.tokens.settle(reservation, 0, 0)
            raise
        settlement = self.tokens.settle(
            reservation, completion.prompt_evaluated, completion.output_tokens
        )
        self.request_finished(
            phase,
            round_number,
            prompt_tokens,
            settlement,
            reused_prefix=completion.reused_prefix,
            estimated=completion.estimated,
            usage=completion.provider_usage,
            stop=completion.stop,
            prefix_source=completion.prefix_source,
        )
        self._emit_budget()
        if completion.stop == "cancelled" or self.cancel.cancelled:
            raise ResearchStop("cancelled")
        if completion.stop == "deadline":
            raise ResearchStop("time_budget", "the research time ran out during a model request")
        return completion

    def request_finished(
        self,
        phase: Phase,
        round_number: int,
        prompt_tokens: int,
        settlement: Settlement,
        *,
        reused_prefix: int,
        estimated: bool,
        usage: Mapping[str, Any] | None,
        stop: str,
        prefix_source: str | None = None,
    ) -> None:
        """Report one finished request with its accounting (the trace's ``request`` line)."""
        self.emit(
            ev.RequestFinished(
                self.now_t(),
                phase,
                round_number,
                prompt_tokens,
                settlement.reserved,
                reused_prefix,
                settlement.charged_prompt,
                settlement.output_tokens,
                settlement.charged,
                settlement.refunded,
                settlement.budget_left,
                estimated,
                usage,
                stop,
                prefix_source,
            )
        )

    async def _run_batch(self, loop: _Loop, calls: Sequence[ToolCall], batch: _Batch) -> None:
        """Run the calls in order, each getting exactly one result, noting progress in ``batch``.

        Raises the stop that ended the batch early, after every call has its result.
        """
        assert self._tools is not None
        stop: ResearchStop | None = None
        for call in calls:
            kind = self._kind(call.name)
            if stop is None:
                stop = self._take_worker_stop() or self._pending_stop()
            if stop is not None:
                result = ToolResult.not_executed(call.name, _NOT_EXECUTED[stop.reason])
                self._report_unrun(loop, call, kind, result)
            elif kind is not None and kind not in loop.allowed:
                result = ToolResult.error(call.name, "this tool is not available here.")
                self._report_unrun(loop, call, kind, result)
            else:
                result, is_progress = await self._run_call(loop, call, kind)
                batch.progress |= is_progress
                # Only a write that was carried out takes the round out of the count (DESIGN §1).
                if kind is ToolKind.WRITE and result.status == "ok":
                    batch.excluded = True
            loop.messages.append(
                Message("tool", result.content, tool_call_id=call.id, name=call.name)
            )
        if stop is None:
            stop = self._take_worker_stop()
        if stop is not None:
            raise stop

    def _report_unrun(
        self, loop: _Loop, call: ToolCall, kind: ToolKind | None, result: ToolResult
    ) -> None:
        """Trace and show a call that was answered without running."""
        self._tool_finished(loop, call, kind, result, judged=Judged((), 0), seconds=0.0)

    def _tool_finished(
        self,
        loop: _Loop,
        call: ToolCall,
        kind: ToolKind | None,
        result: ToolResult,
        *,
        judged: Judged,
        seconds: float,
        origin: ev.ToolOrigin = "model",
    ) -> None:
        kind_name = kind.value if kind is not None else "unknown"
        self.emit(
            ev.ToolFinished(
                self.now_t(),
                loop.round,
                call.id,
                call.name,
                kind_name,
                result.status,
                len(judged.new),
                judged.repeated,
                seconds,
                judged.new,
                origin,
            )
        )

    def _take_worker_stop(self) -> ResearchStop | None:
        stop, self._worker_stop = self._worker_stop, None
        return stop

    async def _provider_call(self, call: Awaitable[_T]) -> _T:
        """Await a provider call; any failure of it is the ``error`` stop (DESIGN §1)."""
        try:
            return await call
        except ContextOverflowError as error:  # a server's own context limit is a full context
            raise ResearchStop("context_full", str(error)) from error
        except ProviderDeadlineError as error:  # waiting to retry would pass the deadline
            raise ResearchStop("time_budget", str(error)) from error
        except ProviderError as error:
            raise ResearchStop("error", str(error)) from error
        except Exception as error:  # a provider defect or hostile input it did not expect
            log.exception("the model provider failed")
            raise ResearchStop("error", f"the model provider failed: {error!r}") from error

    async def _run_call(
        self,
        loop: _Loop,
        call: ToolCall,
        kind: ToolKind | None,
        *,
        origin: ev.ToolOrigin = "model",
        max_chars: int | None = None,
    ) -> tuple[ToolResult, bool]:
        kind_name = kind.value if kind is not None else "unknown"
        values = loose_arguments(call.arguments)
        self.emit(
            ev.ToolStarted(
                self.now_t(),
                loop.round,
                call.id,
                call.name,
                kind_name,
                _describe_call(call.name, values),
                origin,
                call.arguments if isinstance(call.arguments, str) else "",
            )
        )
        self.looked.note(call.name, values)
        started = self.clock_now()
        evidence_before = len(self.ledger.items)
        execution = self._execution(call, max_chars)
        if kind is ToolKind.WRITE:
            result = await execution  # a write is never abandoned half-way
        else:
            result = await self._unless_stopped(call.name, execution)
        judged = self.ledger.record(result.evidence, judge=kind is not ToolKind.WRITE)
        if kind is ToolKind.ASK:
            progress = result.status == "ok"  # the person's answer is progress (DESIGN §1)
        elif kind is ToolKind.COORDINATOR:
            # The workers' rounds judged their evidence against the reply-wide store: the
            # coordinator's round is progress when any of them kept something new.
            progress = len(self.ledger.items) > evidence_before
        else:
            progress = kind is ToolKind.READ and bool(judged.new)
        seconds = self.clock_now() - started
        self._tool_finished(loop, call, kind, result, judged=judged, seconds=seconds, origin=origin)
        return result, progress

    def _execution(self, call: ToolCall, max_chars: int | None) -> Coroutine[Any, Any, ToolResult]:
        """The work of one call: the engine's own tools here, the workspace and web tools in the
        toolbox; whatever fails becomes a result the model reads (``carried_out``)."""
        offered = [schema["function"]["name"] for schema in self._offered]
        timeout = self.clock.remaining
        first_citation = self.ledger.next_citation
        if call.name not in offered:
            work = _refused(call.name, unknown_tool(call.name, offered))
        elif call.name == "research_sections":
            work = self._coordinate(call)
        elif call.name == "ask_user":
            work = self._ask_tool(call, timeout, first_citation)
        else:
            work = self._use_toolbox(call, timeout, first_citation, max_chars)
        return carried_out(call.name, work, timeout=timeout)

    async def _unless_stopped(
        self, name: str, execution: Coroutine[Any, Any, ToolResult]
    ) -> ToolResult:
        """Run a tool, but give up on it the moment Stop is pressed."""
        task = asyncio.ensure_future(execution)
        loop = asyncio.get_running_loop()

        def stop() -> None:
            loop.call_soon_threadsafe(task.cancel)

        remove = self.cancel.on_cancel(stop)
        try:
            return await task
        except asyncio.CancelledError:
            if not self.cancel.cancelled:
                raise  # the reply itself is being torn down
            return ToolResult.error(name, "stopped while running.")
        finally:
            remove()

    def _pending_stop(self) -> ResearchStop | None:
        if self.cancel.cancelled:
            return ResearchStop("cancelled")
        if self.clock.expired:
            return ResearchStop("time_budget", "the research time ran out between tool calls")
        return None

    def _check_cancel_and_time(self) -> None:
        stop = self._pending_stop()
        if stop is not None:
            raise stop

    # --- reporting --------------------------------------------------------------------------------

    def _not_found(self, stop: ResearchStop) -> tuple[str, ev.FinalMode, None]:
        """The engine's own reply when research ended on a budget with no evidence at all."""
        assert self._tools is not None
        why = stop_in_words(stop.reason)
        if stop.reason == "token_budget" and self._requests == 0:
            why = (
                f"the research token budget of {self.tokens.total:,} tokens is too small for even "
                f"one request ({stop.detail}); raise “Research token budget” in Preferences"
            )
        text = sources.not_found_message(self._tools.scope, self.looked, why)
        self.emit(ev.FinalFinished(self.now_t(), "no_evidence", 0.0))
        return text, "no_evidence", None

    def _finish(
        self,
        outcome: tuple[str, ev.FinalMode, str | None],
        reason: ev.StopReason,
        conversation: Sequence[Message] = (),
    ) -> ev.ReplyResult:
        answer, mode, error = outcome
        if mode == "model":
            answer = sources.without_repeats(answer)
        cited: tuple[ev.SourceView, ...] = ()
        if mode == "model" and self.ledger.items:
            citable = self.ledger.citable
            cited = sources.sources_for(answer, self.ledger.items, citable)
            texts = {s.id: self.ledger.text_of(s.id) or citable[s.id].excerpt for s in cited}
            excerpts = sources.snippets(cited, texts, self.question)
            answer = sources.with_sources(answer, cited, excerpts)
        elif mode == "model" and reason != "answered" and self._tools is not None:
            answer = f"{sources.without_evidence_label(self._tools.scope)}\n\n{answer}"
        result = ev.ReplyResult(
            answer=answer,
            final_mode=mode,
            stop_reason=reason,
            rounds=self.rounds,
            evidence=self.ledger.items,
            tokens=ev.TokenTotals(
                self.tokens.total, self.tokens.charged, self.tokens.refunded, self.final_charged
            ),
            research_seconds=self.clock.elapsed,
            user_wait_seconds=self.clock.user_wait,
            error=error,
            sources=cited,
            conversation=tuple(conversation),
        )
        self.emit(ev.ReplyFinished(self.now_t(), result))
        return result

    def text_sink(self, phase: str) -> Callable[[str], None]:
        return lambda text: self.emit(ev.TextDelta(self.now_t(), phase, text))

    def _emit_budget(self) -> None:
        self.emit(
            ev.BudgetUpdate(
                self.now_t(),
                self.clock.elapsed,
                self.clock.limit,
                self.clock.paused,
                self.tokens.charged,
                self.tokens.reserved,
                self.tokens.total,
                self._coordinator_patience.rounds_without_progress,
                self._coordinator_patience.limit,
                self.rounds,
                len(self.ledger.items),
            )
        )

    def emit(self, event: ev.Event) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:  # a broken listener must not break the reply
            log.exception("event sink failed on %s", type(event).__name__)

    def now_t(self) -> float:
        """Seconds since the reply started (the ``t`` of events and trace lines)."""
        return self.clock_now() - self._started


_T = TypeVar("_T")


@dataclass
class _Batch:
    """What the finished calls of one round found."""

    progress: bool = False
    excluded: bool = False  # a write was carried out

    @property
    def counts_out(self) -> bool:
        """Left out of the no-progress count: a write, and nothing new beside it (ADR 0159)."""
        return self.excluded and not self.progress


_NOT_EXECUTED: dict[ev.StopReason, str] = {
    "cancelled": "the reply was stopped",
    "time_budget": "research time budget exhausted",
    "token_budget": "research token budget exhausted",
    "no_progress": "research stopped making progress",
    "context_full": "the context window is full",
    "error": "the model failed",
    "answered": "research is over",
}


class _Streamed:
    """A request's text sink that also keeps what streamed (to charge a failed request)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self._sink = sink
        self._pieces: list[str] = []

    def __call__(self, text: str) -> None:
        self._pieces.append(text)
        self._sink(text)

    @property
    def tokens(self) -> int:
        """The streamed output in tokens, by the estimate that holds for any script."""
        return estimate_tokens("".join(self._pieces)) if self._pieces else 0


class _AnswerCut(Exception):  # noqa: N818 - control flow inside the engine, never escapes it
    """A research answer cut at the research output allowance (``finish_reason: length``)."""

    def __init__(self, text: str) -> None:
        super().__init__("answer cut")
        self.text = text


def _joined(start: str, rest: str) -> str:
    """A cut answer and its continuation, joined where the cut fell."""
    if rest.startswith(start):  # the model wrote the whole answer again
        return rest
    glue = "" if start.endswith((" ", "\n")) or rest.startswith((" ", "\n", ",", ".")) else " "
    return start + glue + rest


async def _refused(name: str, message: str) -> ToolResult:
    return ToolResult.error(name, message)


def _section_evidence(ledger: EvidenceLedger, since: int, limit_chars: int) -> str:
    """The evidence a section worker found (items ``since`` on), for its section's result."""
    text = ledger.as_text(limit_chars=max(limit_chars, 400), since=since)
    return f"\nEvidence this section found:\n{text}" if text else "\nIt found no new evidence."


def _offers(loop: _Loop, name: str) -> bool:
    """Whether ``loop``'s requests declare the tool ``name``."""
    return any(schema.get("function", {}).get("name") == name for schema in loop.tool_schemas)


def _unique_ids(
    calls: Sequence[ToolCall], used: set[str], round_number: int
) -> tuple[ToolCall, ...]:
    """``calls`` with ids no earlier call of the conversation had (and none twice).

    A model may reuse ``call_0`` in every round, and a server may send no id at all; the
    conversation sent back must still pair every result with exactly one call.
    """
    unique: list[ToolCall] = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{round_number}_{index}"
        if call_id in used:
            call_id = f"{call_id}_r{round_number}_{index}"
            while call_id in used:
                call_id += "_"
        used.add(call_id)
        unique.append(call if call_id == call.id else replace(call, id=call_id))
    return tuple(unique)


def _describe_call(name: str, arguments: Mapping[str, object]) -> str:
    """What a call does, in words for the status line ("Searching 'quarry'")."""
    value = next((str(v) for v in arguments.values() if isinstance(v, str)), "")
    short = value if len(value) <= 60 else value[:59] + "…"
    verbs = {
        "search_workspace": f"Searching '{short}'",
        "read_document": f"Reading {short}",
        "list_documents": "Listing documents",
        "fetch_url": f"Fetching {short}",
        "write_note": f"Writing note '{short}'",
        "ask_user": "Asking you a question",
        "research_sections": "Researching sections",
    }
    return verbs.get(name, f"Running {name}")
