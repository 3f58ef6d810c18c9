"""The research engine: tool rounds under budgets, then a final answer (DESIGN §1).

One :class:`ResearchEngine` runs one reply on the caller's asyncio loop. It stops for exactly the
reasons of DESIGN §1 — never on a round count — and reports everything it does as events
(:mod:`.events`) to one sink, from which the window, the trace and the history are all fed.

Protocol completeness is an invariant: every tool call the model made gets exactly one tool result
before the next request is sent, including the calls that were never started (``not executed: …``).

The engine puts a reply together and runs it top-down; each part works on the reply's shared state
(:mod:`.reply`) and calls only the parts below it::

    engine ─┬─ rounds ─┬─ requests ──────── provider
            │          ├─ calls ─┬─ toolbox (workspace and web tools)
            │          │         └─ person (ask_user, consent to fetch)
            │          ├─ seed, sections, conversation
            └─ ending ─── final ─── requests
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Consent
from imprint_desktop.core.providers.base import CompletionRequest, Message, Provider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.calls import ResearchTools, ToolCalls
from imprint_desktop.core.research.conversation import Conversation
from imprint_desktop.core.research.ending import Ending
from imprint_desktop.core.research.person import AskPerson, Person
from imprint_desktop.core.research.reply import EventSink, Reply, ResearchSettings
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.research.rounds import AnswerCut, Rounds
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.tools.base import ToolKind

__all__ = ["AskPerson", "EventSink", "ResearchEngine", "ResearchSettings", "ResearchTools"]

log = logging.getLogger(__name__)


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
        self.reply = Reply(
            provider,
            settings,
            cancel=cancel if cancel is not None else CancelToken(),
            sink=sink,
            clock=clock,
        )
        self.person = Person(self.reply, ask, consent)

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
        reply = self.reply
        reply.question = question
        reply.emit(
            ev.ReplyStarted(reply.now_t(), question, self.settings.config, reply.provider.name)
        )
        reply.clock.start()
        calls = ToolCalls(reply, tools, self.person)
        requests = Requests(reply)
        messages = await self._opening(question, history, compact_history, calls.schemas)
        coordinator = Conversation(
            messages,
            "research",
            None,
            reply.patience,
            calls.schemas,
            frozenset(ToolKind),
            seed=question,
            # A continued conversation's calls keep their ids; new ones must not repeat them.
            call_ids={call.id for message in messages for call in message.tool_calls},
        )
        ending = Ending(reply, requests, tools.scope)
        try:
            try:
                answer = await Rounds(reply, requests, calls).research(coordinator)
            except ResearchStop as stop:
                return await ending.after_stop(stop, coordinator)
            except AnswerCut as cut:
                return await ending.complete_cut(cut.text, coordinator)
            return ending.answered(answer, coordinator)
        except Exception as error:  # a defect must still end the reply with what it has
            log.exception("the research engine failed")
            return ending.failed(error)

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
            deadline=self.reply.clock.deadline(),
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
