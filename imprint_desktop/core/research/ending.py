"""How a reply ends once research is over: its answer and its sources, as one ReplyResult.

Research ends in one of four ways (DESIGN §1): the model answered; it answered but was cut at its
research allowance (the final request completes the answer); a budget, Stop or a failure stopped
it (the final answer, the labelled evidence fallback, or — with nothing found — the engine's own
"not found" reply); or the engine itself failed (the fallback). Each way ends in exactly one
``stop`` line, one ``final`` line and one ``reply_finished`` event, and the answer gets its
sources (a field beside the answer's text, never written into it).

The reply has one stop reason, the same in the ``stop`` line and the result. When a final stage
follows, the ``stop`` line is written with its ``final`` line, just before it
(:meth:`~.reply.Reply.stop_with_final`): Stop pressed during the final stage makes the reply
``cancelled`` (cancellation wins at any point), and the line says so.
"""

from __future__ import annotations

from dataclasses import replace

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts, runaway, seed, sources
from imprint_desktop.core.research.conversation import Conversation
from imprint_desktop.core.research.final import FinalAnswer, FinalStage, unsound_answer
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.research.wording import stop_words

#: Why a reply the model answered is "not found": no search found a passage on the question.
NOTHING_MATCHED = "no passage in it matched the question"


class Ending:
    """Ends one reply (see the module docstring); ``scope`` says where research looked."""

    def __init__(self, reply: Reply, requests: Requests, scope: str) -> None:
        self.reply = reply
        self.requests = requests
        self.scope = scope
        self.final = FinalStage(reply, requests)

    async def answered(self, answer: str, coordinator: Conversation) -> ev.ReplyResult:
        """The model answered: its research answer is the final answer — unless a question was
        searched for and nothing found to answer it from (the engine's "not found", as after a
        budget: a greeting, or a request that brings its own material, is still answered), or
        nothing of the answer is its own (it ran away, or only copied its request back: the
        labelled evidence fallback). A flagged answer gets a second look
        (:meth:`_second_look`)."""
        reply = self.reply
        reply.clock.stop()
        reply.emit(ev.ResearchStopped(reply.now_t(), "answered"))
        why = self._nothing_relevant()
        if (
            why
            and reply.looked.queries
            and asks_for_facts(reply.question)
            and not reply.settings.answer_without_evidence
        ):
            # Searched for, and nothing found on the question: the model's answer would be
            # made up.
            return self._finish(self._not_found(why), "answered")
        scaffolding = runaway.Scaffolding.of(coordinator.messages, reply.question)
        sound = runaway.sound_answer(answer, scaffolding)
        if not sound:
            why = unsound_answer(answer, self.requests.runaway)
            return self._finish(self.final.fallback_for("answered", why), "answered")
        return self._finish(await self._second_look(sound), "answered")

    async def _second_look(self, answer: str) -> FinalAnswer:
        """``answer``, or when it is flagged and a passage sentence answers the question, the
        answer asked again from that sentence alone, if it stands
        (:mod:`.grounding.second_look`). Either way, the one final line."""
        reply = self.reply
        started = reply.clock_now()
        ledger = reply.ledger
        texts = {item.id: ledger.text_of(item.id) for item in ledger.items}
        question = self._asked()
        # Measured on a small model that answers from the first passages (seed): a model that
        # drives its own research answers from what it chose to read.
        small = not seed.first_request_offers_tools(
            reply.settings.first_request_tools, reply.provider.parameters
        )
        look = sources.second_look(question, answer, ledger.items, texts) if small else None
        item = next((i for i in ledger.items if look and i.id == look.passage), None)
        if look is not None and item is not None and not reply.cancel.cancelled:
            passage = prompts.Passage(
                item.id, item.source, item.location, look.sentence, item.title
            )
            again = await self.final.from_sentence(passage)
            if stands := sources.second_look_stands(question, again, ledger.items, texts, look):
                reply.emit(ev.FinalFinished(reply.now_t(), "model", reply.clock_now() - started))
                return FinalAnswer(stands, "model")
        # No final request (or one whose answer did not stand), but the one final line.
        reply.emit(ev.FinalFinished(reply.now_t(), "model", reply.clock_now() - started))
        return FinalAnswer(answer, "model")

    async def after_stop(self, stop: ResearchStop, coordinator: Conversation) -> ev.ReplyResult:
        """Research stopped before an answer: the final answer, a fallback, or "not found"."""
        reply = self.reply
        reply.clock.stop()
        if stop.reason in ("cancelled", "error"):
            reply.emit(ev.ResearchStopped(reply.now_t(), stop.reason, stop.detail))
            return self._finish(self.final.fallback_for(stop.reason, stop.detail), stop.reason)
        unrelated = self._nothing_relevant() if asks_for_facts(reply.question) else ""
        if (not self._found_anything() or unrelated) and not reply.settings.answer_without_evidence:
            # Nothing to answer from: say so, rather than let the model invent an answer.
            reply.emit(ev.ResearchStopped(reply.now_t(), stop.reason, stop.detail))
            why = self._stopped_why(stop) if not self._found_anything() else unrelated
            return self._finish(self._not_found(why), stop.reason)
        reply.stop_with_final(stop.reason, stop.detail)
        answer = await self.final.run(stop.reason)
        reason = reply.stopped_as or stop.reason
        if reason == "cancelled":  # Cancellation wins, also during the final stage.
            return self._finish(answer, "cancelled")
        return self._finish(answer, reason)

    async def complete_cut(self, cut_text: str, coordinator: Conversation) -> ev.ReplyResult:
        """The model answered but ran out of its research allowance mid-answer: the final
        request, with the final allowance and deadline, writes the rest."""
        reply = self.reply
        reply.clock.stop()
        self.final.cut_answer = cut_text  # a fallback shows it, labelled, with the evidence
        reply.stop_with_final("answered")
        rest = await self.final.complete(coordinator.messages, coordinator.tool_schemas)
        reason = reply.stopped_as or "answered"
        if rest.mode == "model" and rest.condensed:
            # Written from condensed notes, it is a whole answer of its own, not the rest.
            return self._finish(rest, reason)
        if rest.mode == "model":
            return self._finish(replace(rest, text=_joined(cut_text, rest.text)), reason)
        # Completing it failed: the labelled fallback, with the answer as far as it went and
        # the evidence (the final stage said so in its one final line).
        return self._finish(rest, reason)

    def failed(self, error: Exception) -> ev.ReplyResult:
        """The engine itself failed (a defect): the reply still ends, with what it has."""
        reply = self.reply
        reply.clock.stop()
        detail = f"internal error ({type(error).__name__}: {error})"
        # The stop line and the final line may have been written before the failure: the reply
        # keeps the first of each (see Reply.emit), and its reason is the one already written.
        reason = reply.stopped_as or "error"
        reply.emit(ev.ResearchStopped(reply.now_t(), "error", detail))
        return self._finish(self.final.fallback_for("error", detail), reason)

    def _found_anything(self) -> bool:
        """Whether research found anything to answer from.

        What the searches return is relevant by their own measure — a passage shares a content
        word of the question, or its meaning came above the meaning search's floor — and so is
        what the model chose to read, a page it fetched and the person's answer. A list of the
        workspace's documents is not: it says what exists, not what is in it.
        """
        return any(item.location != "listing" for item in self.reply.ledger.items)

    def _nothing_relevant(self) -> str:
        """Why what research found cannot answer the question ("" when it can): nothing was
        found, or nothing found holds any of the question's names and key terms (a search by
        meaning matched something else)."""
        if not self._found_anything():
            return NOTHING_MATCHED
        ledger = self.reply.ledger
        texts = {item.id: ledger.text_of(item.id) for item in ledger.items}
        words = sources.unmentioned(self._asked(), ledger.items, texts)
        return sources.unmentioned_why(words) if words else ""

    def _asked(self) -> str:
        """The question as it would be written out alone (a follow-up's "it" named)."""
        return seed.resolved_question(self.reply.question, self.reply.earlier)

    def _stopped_why(self, stop: ResearchStop) -> str:
        """Why research ended without evidence, within a sentence."""
        why = stop_words(stop.reason).why
        if stop.reason == "token_budget" and self.requests.sent == 0:
            why = (
                f"the research token budget of {self.reply.tokens.total:,} tokens is too small "
                f"for even one request ({stop.detail}); raise “Research token budget” in "
                "Preferences"
            )
        return why

    def _not_found(self, why: str) -> FinalAnswer:
        """The engine's own reply when research ended with nothing found to answer from."""
        reply = self.reply
        text = sources.not_found_message(self.scope, reply.looked, why)
        reply.emit(ev.FinalFinished(reply.now_t(), "no_evidence", 0.0))
        return FinalAnswer(text, "no_evidence")

    def _runaway(self) -> ev.RunawayView | None:
        """Why the answer was cut as it streamed, if it was."""
        cut = self.requests.runaway
        return None if cut is None else ev.RunawayView(cut.kind, cut.why)

    def _finish(self, final: FinalAnswer, reason: ev.StopReason) -> ev.ReplyResult:
        reply = self.reply
        ledger = reply.ledger
        answer = final.text
        if final.mode == "model":
            heads = {item.source for item in ledger.items}
            answer = sources.without_repeats(sources.without_prompt_echo(answer, heads))
        cited: tuple[ev.SourceView, ...] = ()
        grounding: ev.GroundingView | None = None
        if final.mode == "model":  # checked against the evidence: cited, quoted, flagged
            texts = {item.id: ledger.text_of(item.id) for item in ledger.items}
            answer, cited, grounding = sources.grounded(
                self._asked(), answer, ledger.items, ledger.citable, texts
            )
        if final.mode == "model" and not ledger.items and reason != "answered":
            answer = f"{sources.without_evidence_label(self.scope)}\n\n{answer}"
        elif final.mode == "no_evidence":
            grounding = ev.GroundingView("not_found")
        result = ev.ReplyResult(
            answer=answer,
            final_mode=final.mode,
            stop_reason=reason,
            rounds=reply.rounds,
            evidence=ledger.items,
            tokens=ev.TokenTotals(
                reply.tokens.total,
                reply.tokens.charged,
                reply.tokens.refunded,
                self.requests.final_charged,
            ),
            research_seconds=reply.clock.elapsed,
            user_wait_seconds=reply.clock.user_wait,
            error=final.error,
            sources=cited,
            grounding=grounding,
            runaway=self._runaway(),
        )
        reply.emit(ev.ReplyFinished(reply.now_t(), result))
        return result


#: Words a question for facts opens with, where it has no question mark.
# fmt: off
_ASKING = frozenset((
    "who", "whom", "whose", "what", "which", "when", "where", "why", "how", "is", "are", "was",
    "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have", "had",
    "list", "name", "tell",
))
# fmt: on


def asks_for_facts(question: str) -> bool:
    """Whether ``question`` asks for something the documents would say (a question mark, or an
    opening such as "who", "when", "list"), rather than greet or bring its own material."""
    words = question.strip().lower().split()
    return "?" in question or "？" in question or bool(words and words[0] in _ASKING)


def _joined(start: str, rest: str) -> str:
    """A cut answer and its continuation, joined where the cut fell."""
    if rest.startswith(start):  # the model wrote the whole answer again
        return rest
    glue = "" if start.endswith((" ", "\n")) or rest.startswith((" ", "\n", ",", ".")) else " "
    return start + glue + rest
