"""The round loop (DESIGN §1): request, run the calls, judge progress, until an answer or a stop.

A round is one model request that called tools and the calls it made, each answered with exactly
one result before the next request — also the calls never started (``not executed: …``). A round
is progress when a read found new evidence, the person answered, or a section worker found
something; a write, whatever it returned, with nothing new beside it, leaves the round out of the
count. A reply with neither calls nor text is a round of its own that found nothing. A
conversation's patience runs out after too many rounds without progress; the reply's time,
tokens, Stop and the context window stop it at any round. There is no round limit.

One reply carries out at most :data:`MAX_BATCH_CALLS` calls; the model is told of any it made
beyond them, which were not carried out (they are left out of the conversation it reads back).

The coordinator's conversation may call ``research_sections``: its section workers
(:mod:`.sections`) are conversations of their own, run here by the same loop, read-only.

A model that is not offered the tools first (a small one) does not research: between the
engine's first search and its answer, the engine researches on its behalf (:mod:`.driven`
decides what), in rounds of its own that count, stop and are traced like a model's, marked
``origin: engine``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from imprint_desktop.core.providers.base import (
    MAX_CALLS_PER_REPLY,
    CompletionRequest,
    Message,
    ToolCall,
)
from imprint_desktop.core.research import driven, prompts, runaway, sections, seed
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.calls import ToolCalls
from imprint_desktop.core.research.conversation import Batch, Conversation
from imprint_desktop.core.research.ledger import Judged
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.research.wording import stop_words
from imprint_desktop.core.tools.arguments import loose_arguments, parse_arguments
from imprint_desktop.core.tools.specs import SPECS
from imprint_desktop.core.tools.tool import EvidenceItem, ToolKind, ToolResult, carried_out

log = logging.getLogger(__name__)

MAX_BATCH_CALLS = MAX_CALLS_PER_REPLY


@dataclass(frozen=True, slots=True)
class ResearchAnswer:
    """What the model answered when it stopped calling tools."""

    text: str
    # Cut at the research output allowance (``finish_reason: length``), short of the answer
    # allowance: the final request completes it.
    cut: bool = False


class Rounds:
    """Runs research conversations round by round (see the module docstring)."""

    def __init__(self, reply: Reply, requests: Requests, calls: ToolCalls) -> None:
        self.reply = reply
        self.requests = requests
        self.calls = calls
        # A reply-wide stop met inside a section worker, carried out to the coordinator's batch.
        self._worker_stop: ResearchStop | None = None
        # The engine's first search: its first citation, its passages, the characters it took.
        self._seeded: tuple[int, tuple[EvidenceItem, ...], int] = (0, (), 0)

    async def research(self, conversation: Conversation) -> ResearchAnswer:
        """Rounds until the model answers (returned, and whether the coordinator's answer was cut
        at its length) or a budget stops it (:class:`ResearchStop`, raised)."""
        settings = self.reply.settings
        # The coordinator's answer is the reply's answer: it has the person's answer allowance.
        answer_tokens = settings.max_tokens if conversation.worker is None else None
        answer_first = False
        if (
            conversation.seed
            and settings.research_first
            and conversation.offers("search_workspace")
        ):
            ask = conversation.messages[-1].content
            found = await self._seed(conversation)
            answer_first = (
                found
                and conversation.worker is None
                and not seed.first_request_offers_tools(
                    settings.first_request_tools, self.reply.provider.parameters
                )
            )
            if answer_first:  # the model will not research: the engine does, in its place
                plan = await self._drive(conversation, ask)
                if plan is not None and driven.answers_part_by_part(plan):
                    by_parts = await self._answer_by_parts(conversation, plan)
                    if by_parts is not None:
                        return by_parts
        while True:
            # Answering first, the first request is an answer's: its instructions, no tools, the
            # answer allowance.
            tools = () if answer_first else conversation.tool_schemas
            allowance = settings.max_tokens if answer_first else settings.research_max_output_tokens
            messages = conversation.messages
            if answer_first:
                system = Message("system", prompts.answer_first_system(settings.system_prompt))
                messages = [system, *messages[1:]]
            completion = await self.requests.send(
                messages,
                conversation.phase,
                tools=tools,
                max_tokens=allowance,
                answer_max_tokens=answer_tokens,
                check_context=True,
            )
            answer_first = False
            if not completion.tool_calls:
                text = completion.text.strip()
                cut = completion.stop == "length" and conversation.worker is None
                if text and cut and completion.output_tokens < settings.max_tokens:
                    # Cut at the research allowance, short of the answer allowance: the final
                    # request completes it. (Cut at the answer allowance, it is the answer, as
                    # long as the person allows.)
                    conversation.messages.append(Message("assistant", text))
                    return ResearchAnswer(text, cut=True)
                if completion.stop == "length":  # cut at the answer allowance: whole sentences
                    text = runaway.whole_sentences(text)
                if text or self.requests.runaway is not None:
                    # An answer cut to nothing as it ran away ends the reply all the same.
                    return ResearchAnswer(text)
                # An empty reply is a round of its own, and a stagnant one: it found nothing.
                self._next_round(conversation)
                conversation.messages += [
                    Message("assistant", ""),
                    Message("user", prompts.EMPTY_REPLY_NUDGE),
                ]
                self._end_round(conversation, progress=False, excluded=False)
                continue
            self._next_round(conversation)
            made = completion.tool_calls
            calls = conversation.new_calls(made[:MAX_BATCH_CALLS], conversation.round)
            dropped = len(made) - len(calls) + completion.dropped_calls
            if dropped:
                log.warning(
                    "round %d: %d tool calls beyond %d dropped",
                    conversation.round,
                    dropped,
                    MAX_BATCH_CALLS,
                )
            conversation.messages.append(Message("assistant", completion.text, calls))
            batch = Batch()
            try:
                await self._run_batch(conversation, calls, batch, dropped=dropped)
            except ResearchStop:
                # The round was cut short: it still ends, with what its finished calls found.
                self._emit_round_end(conversation, batch.progress, batch.counts_out)
                raise
            self._end_round(conversation, progress=batch.progress, excluded=batch.counts_out)

    def _next_round(self, conversation: Conversation) -> None:
        self.reply.rounds += 1
        conversation.round = self.reply.rounds
        self.reply.emit(
            ev.RoundStarted(self.reply.now_t(), conversation.round, conversation.worker)
        )

    async def _seed(self, conversation: Conversation) -> bool:
        """Search before answering (DESIGN §1): the engine's own ``search_workspace`` call.

        The coordinator's is round 0; a section worker's is a round of its own. Its passages are
        judged like any read's, and reach the model laid out to be answered from in one request:
        numbered, with their sources, before the question, in the conversation's last user turn.
        Returns whether it found passages.
        """
        reply = self.reply
        reply.check_cancel_and_time()
        limit = seed.seed_limit(reply.provider.parameters)
        if conversation.worker is None:
            call = seed.seed_call(
                conversation.seed, conversation.call_ids, earlier=conversation.earlier, limit=limit
            )
            reply.emit(ev.RoundStarted(reply.now_t(), conversation.round, conversation.worker))
        else:
            self._next_round(conversation)
            call = seed.seed_call(
                conversation.seed, conversation.call_ids, conversation.round, limit=limit
            )
        first_request = CompletionRequest(
            messages=tuple(conversation.messages),
            max_tokens=reply.settings.research_max_output_tokens,
            deadline=reply.clock.deadline(),
            tools=conversation.tool_schemas,
            phase=conversation.phase,
        )
        max_chars = await self._seed_chars(first_request, conversation.seed, limit)
        first = reply.ledger.next_citation
        result, progress = await self._run_call(
            conversation, call, ToolKind.READ, origin="engine", max_chars=max_chars
        )
        passages = [
            prompts.Passage(first + offset, item.source, item.location, item.text, item.title)
            for offset, item in enumerate(result.evidence)
        ]
        # Named only when the search ran: a query the tool refused (a question longer than a
        # search allows) or a search not run was not searched for, and must not stop the reply.
        # The model is told the words searched for, not its question over again.
        ran = result.status in ("ok", "empty")
        earlier = conversation.earlier if conversation.worker is None else ()
        searched = seed.seed_words(conversation.seed, earlier) if ran else ""
        ask = conversation.messages[-1]
        conversation.messages[-1] = Message(
            "user", prompts.with_passages(ask.content, passages, searched)
        )
        self._seeded = (first, result.evidence, max_chars)
        self._end_round(conversation, progress=progress, excluded=False)
        return bool(passages)

    async def _drive(self, conversation: Conversation, ask: str) -> driven.DrivenResearch | None:
        """Rounds the engine researches on the model's behalf (:mod:`.driven`), after its first
        search and before the model answers; the model's turn then holds the evidence laid out
        part by part, with ``ask`` (the question) last. A question the first search answers
        goes straight to the answer. Each round is charged, counted and stopped like a model's:
        the research time and Stop before every call, patience after every round, and the
        tokens of the answer's request, as the evidence grows, before every round."""
        reply = self.reply
        first, items, chars = self._seeded
        plan = driven.DrivenResearch(
            conversation.seed, conversation.earlier, seed.seed_limit(reply.provider.parameters)
        )
        plan.seeded(first, items)
        if plan.answered_at_once():
            return None
        part_chars = plan.part_chars(chars)
        leads = plan.next_round()
        if not leads:  # nothing to look for: the first search's passages, as they were shown
            return None
        while leads:
            reply.check_cancel_and_time()
            await self._answer_fits(conversation, plan.answer_turn(ask, part_chars))
            self._next_round(conversation)
            batch = Batch()
            try:
                for lead in leads:
                    reply.check_cancel_and_time()
                    before, numbered = len(reply.ledger.items), reply.ledger.next_citation
                    result, progress = await self._run_call(
                        conversation, lead.call, ToolKind.READ, origin="engine"
                    )
                    new = {view.id for view in reply.ledger.items[before:]}
                    plan.found(lead, numbered, result.evidence, new)
                    batch.progress |= progress
            except ResearchStop:
                self._emit_round_end(conversation, batch.progress, False, origin="engine")
                raise
            self._end_round(conversation, progress=batch.progress, excluded=False, origin="engine")
            leads = plan.next_round()
        conversation.messages[-1] = Message("user", plan.answer_turn(ask, part_chars))
        return plan

    async def _answer_by_parts(
        self, conversation: Conversation, plan: driven.DrivenResearch
    ) -> ResearchAnswer | None:
        """The answer written part by part: one short request for each part, with its own
        passages and its own words last, the answers joined in the order of the parts. None
        when no part was answered (the model is then asked as it would be otherwise)."""
        settings = self.reply.settings
        system = Message("system", prompts.answer_first_system(settings.system_prompt))
        allowance = max(64, settings.max_tokens // len(plan.parts))
        answers: list[str] = []
        for index in range(len(plan.parts)):
            turn = plan.part_turn(index, plan.part_chars(self._seeded[2]))
            if turn is None:
                continue
            completion = await self.requests.send(
                [system, *conversation.messages[1:-1], Message("user", turn)],
                conversation.phase,
                max_tokens=allowance,
                answer_max_tokens=allowance,
                check_context=True,
            )
            text = completion.text.strip()
            if completion.stop == "length":
                text = runaway.whole_sentences(text)
            if text:
                answers.append(text)
        if not answers:
            return None
        return ResearchAnswer("\n\n".join(answers))

    async def _answer_fits(self, conversation: Conversation, turn: str) -> None:
        """Raise ``token_budget`` when the answer's request, with ``turn`` as the evidence found
        so far lays it out, no longer fits what is left of the research tokens."""
        settings = self.reply.settings
        system = Message("system", prompts.answer_first_system(settings.system_prompt))
        request = CompletionRequest(
            messages=(system, *conversation.messages[1:-1], Message("user", turn)),
            max_tokens=settings.max_tokens,
            deadline=self.reply.clock.deadline(),
            phase=conversation.phase,
        )
        try:
            prompt_tokens = await self.requests.count(request)
        except Exception:  # the answer's request will meet the same failure and report it
            log.warning("counting the answer's prompt failed", exc_info=True)
            return
        if not self.reply.tokens.fits(prompt_tokens, settings.max_tokens):
            needed = prompt_tokens + settings.max_tokens
            raise ResearchStop(
                "token_budget", f"{needed} tokens needed, {self.reply.tokens.left} left"
            )

    async def _seed_chars(self, first_request: CompletionRequest, question: str, limit: int) -> int:
        """:func:`~.seed.seed_chars` for the prompt of the first request, before the seed."""
        cap = self.reply.settings.max_result_chars
        try:
            prompt_tokens = await self.requests.count(first_request)
        except Exception:  # the first request will meet the same failure and report it
            log.warning("counting the prompt before the first search failed", exc_info=True)
            return cap
        return seed.seed_chars(
            context_window=self.requests.context_window,
            prompt_tokens=prompt_tokens,
            output_tokens=first_request.max_tokens,
            cap=cap,
            question=question,
            limit=limit,
        )

    def _end_round(
        self,
        conversation: Conversation,
        *,
        progress: bool,
        excluded: bool,
        origin: ev.ToolOrigin = "model",
    ) -> None:
        conversation.patience.record(progress=progress, excluded=excluded)
        self._emit_round_end(conversation, progress, excluded, origin=origin)
        if conversation.patience.exhausted:
            raise ResearchStop("no_progress")

    def _emit_round_end(
        self,
        conversation: Conversation,
        progress: bool,
        excluded: bool,
        *,
        origin: ev.ToolOrigin = "model",
    ) -> None:
        without = conversation.patience.rounds_without_progress
        self.reply.emit(
            ev.RoundEnded(
                self.reply.now_t(), conversation.round, progress, excluded, without, origin
            )
        )
        self.reply.emit_budget()

    async def _run_batch(
        self,
        conversation: Conversation,
        calls: Sequence[ToolCall],
        batch: Batch,
        *,
        dropped: int = 0,
    ) -> None:
        """Run the calls in order, each getting exactly one result, noting progress in ``batch``;
        ``dropped`` calls of the reply beyond these are named in the last result.

        Raises the stop that ended the batch early, after every call has its result.
        """
        stop: ResearchStop | None = None
        for call in calls:
            kind = self.calls.kind(call.name)
            if stop is None:
                try:
                    self._check_stop()
                except ResearchStop as met:  # the calls left get their results first
                    stop = met
            if stop is not None:
                result = ToolResult.not_executed(call.name, stop_words(stop.reason).to_model)
                self._report_unrun(conversation, call, kind, result)
            elif kind is not None and kind not in conversation.allowed:
                result = ToolResult.error(call.name, "this tool is not available here.")
                self._report_unrun(conversation, call, kind, result)
            else:
                result, is_progress = await self._run_call(conversation, call, kind)
                batch.progress |= is_progress
                # A batch with a write is left out of the count, whatever the write returned
                # (DESIGN §1, ADR 0159).
                if kind is ToolKind.WRITE:
                    batch.excluded = True
            content = result.content
            if dropped and call is calls[-1]:
                content += _dropped_note(dropped)
            conversation.messages.append(
                Message("tool", content, tool_call_id=call.id, name=call.name)
            )
        if stop is not None:
            raise stop
        self._check_stop(time=False)

    def _report_unrun(
        self, conversation: Conversation, call: ToolCall, kind: ToolKind | None, result: ToolResult
    ) -> None:
        """Trace and show a call that was answered without running."""
        self.calls.finished(
            conversation.round, call, kind, result, judged=Judged((), 0), seconds=0.0
        )

    async def _run_call(
        self,
        conversation: Conversation,
        call: ToolCall,
        kind: ToolKind | None,
        *,
        origin: ev.ToolOrigin = "model",
        max_chars: int | None = None,
    ) -> tuple[ToolResult, bool]:
        """Carry out one call and judge what it found: the result, and whether it is progress."""
        reply = self.reply
        self.calls.started(conversation.round, call, kind, origin)
        started = reply.clock_now()
        evidence_before = len(reply.ledger.items)
        if kind is ToolKind.COORDINATOR:
            # Not abandoned on Stop: each worker's request and call hears Stop itself, so every
            # request of a worker still ends with its own line and charge.
            timeout = reply.clock.remaining
            result = await carried_out(call.name, self._research_sections(call), timeout=timeout)
        else:
            result = await self.calls.execute(call, kind, max_chars=max_chars)
        judged = reply.ledger.record(result.evidence, judge=kind is not ToolKind.WRITE)
        found = len(judged.new)
        if kind is ToolKind.WRITE and result.status == "ok":
            # What the model wrote is known from now on: reading it back is no progress.
            values = loose_arguments(call.arguments)
            reply.ledger.learn([str(values.get("title", "")), str(values.get("content", ""))])
        if kind is ToolKind.ASK:
            progress = result.status == "ok"  # the person's answer is progress (DESIGN §1)
        elif kind is ToolKind.COORDINATOR:
            # The workers' rounds judged their evidence against the reply-wide store: the
            # coordinator's round is progress when any of them kept something new.
            found = len(reply.ledger.items) - evidence_before
            progress = found > 0
        else:
            progress = kind is ToolKind.READ and bool(judged.new)
        seconds = reply.clock_now() - started
        self.calls.finished(
            conversation.round,
            call,
            kind,
            result,
            judged=judged,
            seconds=seconds,
            origin=origin,
            found=found,
        )
        return result, progress

    async def _research_sections(self, call: ToolCall) -> ToolResult:
        """``research_sections``: one read-only worker per section, in turn, under the
        reply-wide budgets (see :mod:`.sections`)."""
        names = parse_arguments(SPECS[call.name], call.arguments)["sections"]
        reply = self.reply
        read_only = self.calls.read_only()
        summaries: list[str] = []
        for section in names:
            worker = sections.worker(
                reply.question, section, read_only, reply.settings.no_progress_rounds
            )
            found_before = len(reply.ledger.items)
            share = reply.settings.max_result_chars // max(1, len(names))
            try:
                text = (await self.research(worker)).text
                summaries.append(sections.summary(section, text, reply.ledger, found_before, share))
            except ResearchStop as stop:
                # Whatever ended the worker, what it found reaches the coordinator and, through
                # this result, the final request.
                summaries.append(sections.stopped(section, stop, reply.ledger, found_before, share))
                if sections.ends_only_the_worker(stop):
                    continue
                # The reply stops, once this call has its result (see _run_batch).
                self._worker_stop = stop
                break
        return ToolResult("research_sections", "ok", "\n\n".join(summaries))

    def _check_stop(self, *, time: bool = True) -> None:
        """Raise the stop a section worker carried out, else (with ``time``) the one that Stop or
        the research time calls for."""
        stop, self._worker_stop = self._worker_stop, None
        if stop is not None:
            raise stop
        if time:
            self.reply.check_cancel_and_time()


def _dropped_note(dropped: int) -> str:
    """What the model reads of the calls its reply made beyond :data:`MAX_BATCH_CALLS`."""
    calls = "call in your reply was" if dropped == 1 else "calls in your reply were"
    return (
        f"\n\n({dropped:,} more tool {calls} not carried out: at most {MAX_BATCH_CALLS} calls "
        "are carried out per reply. Make again the ones you still need.)"
    )
