"""The research engine: tool rounds under budgets, then a final answer (DESIGN §1).

One :class:`ResearchEngine` runs one reply on the caller's asyncio loop. It stops for exactly the
reasons of DESIGN §1 — never on a round count — and reports everything it does as events
(:mod:`.events`) to one sink, from which the window, the trace and the history are all fed.

Protocol completeness is an invariant: every tool call the model made gets exactly one tool result
before the next request is sent, including the calls that were never started (``not executed: …``).

The engine puts a reply together and runs it top-down; each part works on the reply's shared state
(:mod:`.reply`) and calls only the parts below it::

    engine ─┬─ rounds ─┬─ calls ─┬─ toolbox (workspace and web tools)
            │          │         └─ person (ask_user, consent to fetch)
            │          └─ seed, driven (parts), sections, conversation
            └─ ending ─── final, sources
    rounds and final ─── requests (the one door to the provider) ─── provider
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Consent
from imprint_desktop.core.providers.base import CompletionRequest, Message, Provider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts, seed
from imprint_desktop.core.research.calls import ResearchTools, ToolCalls
from imprint_desktop.core.research.conversation import Conversation
from imprint_desktop.core.research.ending import Ending
from imprint_desktop.core.research.person import AskPerson, Person
from imprint_desktop.core.research.reply import EventSink, Reply, ResearchSettings
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.research.rounds import Rounds
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.tools.tool import ToolKind

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

    def opening(self, tools: ResearchTools) -> CompletionRequest:
        """What every reply's first request starts with — the instructions and the tools — as a
        request of its own, for a local model to evaluate before the first question comes."""
        schemas = ToolCalls(self.reply, tools, self.person).schemas
        system = Message("system", prompts.research_system(self.settings.system_prompt))
        if not seed.first_request_offers_tools(
            self.settings.first_request_tools, self.provider.parameters
        ):
            # The first request answers from the passages (see seed), with its own instructions.
            schemas = ()
            system = Message("system", prompts.answer_first_system(self.settings.system_prompt))
        return CompletionRequest(
            messages=(system,),
            max_tokens=self.settings.research_max_output_tokens,
            deadline=self.reply.clock.deadline(),
            tools=schemas,
        )

    async def run(
        self, question: str, tools: ResearchTools, history: Sequence[Message] = ()
    ) -> ev.ReplyResult:
        """Research ``question`` and answer it. Never raises: the result says how it ended.

        ``history`` is the conversation so far, as its questions and answers. A small model copies
        an earlier answer it is shown (measured in ``bench/bench_quality.py``), so the request
        does not replay them: a follow-up names the question before it beside its own, and the
        engine's search looks for that question's subject too.
        """
        reply = self.reply
        reply.question = question
        if seed.refers_back(question):
            asked = [message.content for message in history if message.role == "user"]
            reply.earlier = seed.earlier_questions(asked)
        reply.emit(
            ev.ReplyStarted(reply.now_t(), question, self.settings.config, reply.provider.name)
        )
        reply.clock.start()
        calls = ToolCalls(reply, tools, self.person)
        requests = Requests(reply)
        system = Message("system", prompts.research_system(self.settings.system_prompt))
        ask = Message("user", prompts.question_block(question, reply.earlier))
        coordinator = Conversation(
            [system, ask],
            "research",
            None,
            reply.patience,
            calls.schemas,
            frozenset(ToolKind),
            seed=question,
            earlier=reply.earlier,
        )
        ending = Ending(reply, requests, tools.scope)
        try:
            try:
                answer = await Rounds(reply, requests, calls).research(coordinator)
            except ResearchStop as stop:
                return await ending.after_stop(stop, coordinator)
            if answer.cut:
                return await ending.complete_cut(answer.text, coordinator)
            return await ending.answered(answer.text, coordinator)
        except Exception as error:  # a defect must still end the reply with what it has
            log.exception("the research engine failed")
            return ending.failed(error)
