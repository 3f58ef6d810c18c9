"""After research stops on a budget: the final answer, or the labelled evidence fallback.

DESIGN §1: after ``no_progress``, ``time_budget``, ``token_budget`` or ``context_full`` the engine
makes one tools-free final request with its own output allowance (``chat.max_tokens``) and its own
deadline (120 s), outside the research budgets. If the final prompt does not fit the context window,
evidence is first condensed by requests charged to what is left of the research budgets. If it still
does not fit, or the final request fails, the answer is the labelled evidence fallback.

The stage reads the reply it ends, sends every request through the one door below it
(:class:`~.requests.Requests`: condensing in its budgeted mode, the final request in its final
mode, which keeps the final request's accounting) and returns the answer (:class:`FinalAnswer`);
it changes nothing else.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from imprint_desktop.core.errors import ProviderError
from imprint_desktop.core.providers.base import (
    Completion,
    CompletionRequest,
    Message,
)
from imprint_desktop.core.providers.estimate import chars_for_tokens
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts, runaway, seed
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.research.sources import EVIDENCE_GATHERED
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.research.wording import stop_words
from imprint_desktop.core.workspace.passages import focus, query_terms

log = logging.getLogger(__name__)

FALLBACK_LABEL = "No final answer could be written"
#: Each passage of the final request is cut to this many characters around what matches the
#: question (a small model answers from the sentence that holds the fact, not from pages).
FINAL_PASSAGE_CHARS = 1200
#: The output allowance of a second look: an answer from one sentence is one sentence.
SECOND_LOOK_TOKENS = 48
# The evidence texts in a fallback share this many characters; every item's source is listed.
FALLBACK_EVIDENCE_CHARS = 20_000

#: Tool-call markup a model may still write when no tool can be called: never shown as an answer.
#: Each opening mark, and what ends its markup (else the end of the text).
_CALL_MARKUP: dict[str, tuple[str, ...]] = {
    "<tool_call>": ("</tool_call>",),
    "<|tool_call|>": ("<|/tool_call|>",),
    "<function=": ("</function>",),  # after the ">" that closes the mark itself
    "[TOOL_CALLS]": ("\n\n",),
    "<|python_tag|>": ("<|eom_id|>", "<|eot_id|>"),
}
_CALL_OPENING = re.compile("|".join(map(re.escape, _CALL_MARKUP)))
_CALL_OPENING_NO_FUNCTION = re.compile(
    "|".join(re.escape(mark) for mark in _CALL_MARKUP if mark != "<function=")
)


def without_call_markup(text: str) -> str:
    """``text`` without tool-call markup (the final answer may call no tool), stripped.

    Markup runs from its opening mark to the first end mark after it, or to the end of the text.
    The text is read once from left to right, and each search for an end mark starts where the
    last one for that mark stopped: a reply of a million unclosed marks costs what one does (a
    regular expression rescanned the rest of the text from each of them).
    """
    kept: list[str] = []
    finder = _Finder(text)
    opening = _CALL_OPENING
    cursor = search_from = 0  # the text before cursor is decided; openings are looked for after
    while (found := opening.search(text, search_from)) is not None:
        mark, body = found.group(), found.end()
        if mark == "<function=":
            body = finder.find(">", body) + 1
            if body == 0:  # no ">" anywhere after: no later "<function=" opens markup either
                opening = _CALL_OPENING_NO_FUNCTION
                search_from = found.start() + 1
                continue
        kept.append(text[cursor : found.start()])
        closes = _CALL_MARKUP[mark]
        ends = [(end, len(close)) for close in closes if (end := finder.find(close, body)) != -1]
        if not ends:
            cursor = len(text)
            break
        end, length = min(ends)
        cursor = search_from = end + length
    kept.append(text[cursor:])
    return "".join(kept).strip()


class _Finder:
    """``text.find(mark, start)`` that remembers, per mark, where it found it (or that it is not
    there), so searches from positions that only move forward read the text once per mark."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._found: dict[str, tuple[int, int]] = {}  # mark -> (searched from, found at or -1)

    def find(self, mark: str, start: int) -> int:
        known = self._found.get(mark)
        if known is not None:
            searched_from, found_at = known
            if found_at == -1 and start >= searched_from:
                return -1
            if searched_from <= start <= found_at:
                return found_at
        found_at = self._text.find(mark, start)
        self._found[mark] = (start, found_at)
        return found_at


def without_echo(text: str, messages: Sequence[Message]) -> str:
    """``text`` without the sentences of the engine's own instruction in the request's last user
    turn (a small model continuing a cut answer wrote "Continue it exactly where it stopped"
    into it), stripped."""
    last = messages[-1] if messages else None
    if last is None or last.role != "user" or last.content != prompts.CONTINUE_ANSWER:
        return text
    for sentence in re.split(r"(?<=[.!?])\s+", prompts.CONTINUE_ANSWER):
        if len(sentence) > 12:
            text = text.replace(sentence, "")
    return text.strip()


def unsound_answer(written: str, cut: runaway.Verdict | None) -> str:
    """Why an answer with nothing sound in it (:func:`~.runaway.sound_answer`) is none: it ran
    away (``cut``), only copied its request back, or was empty."""
    if cut is not None:
        return f"{cut.why}, with nothing of its own before that"
    if written.strip():
        return "the model's answer only copied the question and passages back"
    return "the model wrote an empty final answer"


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The answer the final stage wrote, or the fallback it fell back to."""

    text: str
    mode: ev.FinalMode
    error: str | None = None  # why there is no model answer, when it failed
    # Written from condensed notes: a whole answer of its own, never the rest of a cut one.
    condensed: bool = False


class FinalStage:
    def __init__(self, reply: Reply, requests: Requests) -> None:
        self.reply = reply
        self.requests = requests
        self._tools: tuple[Mapping[str, Any], ...] = ()
        #: A research answer cut at its length, which the final request completes: a fallback
        #: shows it, labelled, before the evidence.
        self.cut_answer = ""

    async def run(self, reason: ev.StopReason) -> FinalAnswer:
        """The final answer, written from the evidence in a request of its own: the numbered
        passages found, then the question (DESIGN §1). No tools are sent; the instructions are
        the system message's, so the request holds nothing a model could echo as its answer."""
        return await self._send(self._answer_messages(), reason, ())

    async def complete(
        self, messages: Sequence[Message], tools: tuple[Mapping[str, Any], ...]
    ) -> FinalAnswer:
        """The rest of an answer cut at its research allowance: the research conversation goes on
        (its tools declared but not callable, so a local model reuses its whole prefix)."""
        continued = [*messages, Message("user", prompts.CONTINUE_ANSWER)]
        return await self._send(continued, "answered", tools)

    async def from_sentence(self, passage: prompts.Passage) -> str:
        """An answer written again from one passage sentence alone (a second look, see
        :mod:`.grounding.second_look`): the answer's own text, or "" when the request failed,
        was stopped or wrote nothing of its own. The caller writes the one final line."""
        reply = self.reply
        extra = reply.settings.system_prompt
        ask = prompts.question_block(reply.question, reply.earlier)
        messages = [
            Message("system", prompts.with_own_instructions(prompts.FINAL_SYSTEM, extra)),
            Message("user", prompts.with_passages(ask, [passage])),
        ]
        request = self._request(messages, min(SECOND_LOOK_TOKENS, reply.settings.max_tokens))
        try:
            prompt_tokens = await self.requests.count(request)
            reply.emit(
                ev.FinalStarted(
                    reply.now_t(), request.max_tokens, reply.settings.final_deadline_sec
                )
            )
            completion = await self.requests.final(request, prompt_tokens)
        except Exception:  # the first answer still stands
            log.warning("the second look's request failed", exc_info=True)
            return ""
        if completion.stop in ("cancelled", "deadline") or reply.cancel.cancelled:
            return ""
        written = without_echo(without_call_markup(completion.text), request.messages)
        if completion.stop == "length":
            written = runaway.whole_sentences(written)
        scaffolding = runaway.Scaffolding.of(request.messages, reply.question)
        return runaway.sound_answer(written, scaffolding)

    def _answer_messages(self) -> list[Message]:
        reply = self.reply
        extra = reply.settings.system_prompt
        ask = prompts.question_block(reply.question, reply.earlier)
        if not reply.ledger.items:
            return [
                Message(
                    "system", prompts.with_own_instructions(prompts.FINAL_WITHOUT_EVIDENCE, extra)
                ),
                Message("user", ask),
            ]
        terms = query_terms(seed.seed_words(reply.question, reply.earlier))
        passages = [
            prompts.Passage(
                item.id,
                item.source,
                item.location,
                focus(reply.ledger.text_of(item.id), terms, FINAL_PASSAGE_CHARS),
                item.title,
            )
            for item in reply.ledger.items
        ]
        return [
            Message("system", prompts.with_own_instructions(prompts.FINAL_SYSTEM, extra)),
            Message("user", prompts.with_passages(ask, passages)),
        ]

    async def _send(
        self,
        messages: Sequence[Message],
        reason: ev.StopReason,
        tools: tuple[Mapping[str, Any], ...],
    ) -> FinalAnswer:
        """The final request for ``messages`` — condensing the evidence first when it does not
        fit the window — or the fallback."""
        self._tools = tools
        reply = self.reply
        allowance = reply.settings.max_tokens
        request = self._request(messages, allowance)
        from_notes = False
        try:
            prompt_tokens = await self.requests.count(request)
        except Exception as error:
            log.exception("counting the final prompt failed")
            return self._fallback(reason, f"the final request failed: {error}")
        if prompt_tokens + allowance > self.requests.context_window:
            # Condensing is research work: its requests and its time come out of what is left.
            try:
                reply.clock.reopen()
                try:
                    condensed = await self._condense()
                finally:
                    reply.clock.stop()
            except ResearchStop as stop:  # a budget ran out, the model failed, or Stop
                if stop.reason == "cancelled":
                    return self._fallback("cancelled", "")
                why = stop_words(stop.reason).why
                return self._fallback(
                    reason,
                    "the evidence could not be condensed to fit the model's context window "
                    f"({why})",
                )
            self._tools = ()  # a new, short prompt: nothing to reuse, so no room spent on tools
            request = self._request(condensed, allowance)
            try:
                prompt_tokens = await self.requests.count(request)
            except Exception as error:
                log.exception("counting the condensed final prompt failed")
                return self._fallback(reason, f"the final request failed: {error}")
            if prompt_tokens + allowance > self.requests.context_window:
                return self._fallback(
                    reason, "even the condensed evidence does not fit the model's context window"
                )
            from_notes = True
        answer = await self._final_request(request, prompt_tokens, reason)
        return replace(answer, condensed=from_notes)

    async def _final_request(
        self, request: CompletionRequest, prompt_tokens: int, reason: ev.StopReason
    ) -> FinalAnswer:
        reply = self.reply
        started = reply.clock_now()
        reply.emit(
            ev.FinalStarted(reply.now_t(), request.max_tokens, reply.settings.final_deadline_sec)
        )
        try:
            completion = await self.requests.final(request, prompt_tokens)
        except Exception as error:  # a provider defect must not lose the evidence either
            if not isinstance(error, ProviderError):
                log.exception("the final request failed")
            shown = str(error) if isinstance(error, ProviderError) else repr(error)
            return self._fallback(reason, f"the final request failed: {shown}", started)
        return self._answer(request, completion, reason, started)

    def _answer(
        self,
        request: CompletionRequest,
        completion: Completion,
        reason: ev.StopReason,
        started: float,
    ) -> FinalAnswer:
        """The answer of a final request that completed, or the fallback when it is none."""
        reply = self.reply
        if completion.stop == "cancelled" or reply.cancel.cancelled:
            return self._fallback("cancelled", "", started)
        if completion.stop == "deadline":
            return self._fallback(
                reason,
                "the final answer did not finish within its "
                f"{reply.settings.final_deadline_sec:.0f} seconds",
                started,
            )
        written = without_echo(without_call_markup(completion.text), request.messages)
        if completion.stop == "length":  # cut at its allowance: it ends with a whole sentence
            written = runaway.whole_sentences(written)
        scaffolding = runaway.Scaffolding.of(request.messages, reply.question)
        text = runaway.sound_answer(written, scaffolding)
        if not text:
            return self._fallback(reason, unsound_answer(written, self.requests.runaway), started)
        reply.emit(ev.FinalFinished(reply.now_t(), "model", reply.clock_now() - started))
        return FinalAnswer(text, "model")

    def _request(self, messages: Sequence[Message], allowance: int) -> CompletionRequest:
        reply = self.reply
        return CompletionRequest(
            messages=tuple(messages),
            max_tokens=allowance,
            deadline=reply.clock_now() + reply.settings.final_deadline_sec,
            # Declared but not callable: the prompt (and a local model's reused prefix) stays the
            # one research built, and a remote provider leaves the list out.
            tools=self._tools,
            tool_choice="none",
            temperature=reply.settings.temperature,
            seed=reply.settings.seed,
            phase="final",
        )

    async def _condense(self) -> list[Message]:
        """Notes from the evidence, made by requests charged to the research budgets; raises the
        stop that ended condensing (a budget ran out, the model failed, or Stop was pressed)."""
        reply = self.reply
        notes: list[str] = []
        items = list(reply.ledger.items)
        window = self.requests.context_window
        step_output = reply.settings.research_max_output_tokens
        # Characters per chunk: generous room for the instructions and the output allowance.
        evidence = "\n\n".join(reply.ledger.text_of(item.id) for item in items)
        chunk_chars = max(1000, chars_for_tokens(window - step_output - 512, evidence))
        chunk: list[str] = []
        size = 0
        chunks: list[str] = []
        for item in items:
            text = f"[{item.id}] {item.source}, {item.location}:\n{reply.ledger.text_of(item.id)}"
            if chunk and size + len(text) > chunk_chars:
                chunks.append("\n\n".join(chunk))
                chunk, size = [], 0
            chunk.append(text[:chunk_chars])
            size += len(text)
        if chunk:
            chunks.append("\n\n".join(chunk))
        if not chunks:
            # Nothing was found: the question alone is the whole of what the final needs.
            return self._answer_messages()
        for body in chunks:
            messages = [
                Message("system", prompts.CONDENSE),
                Message("user", f"Passages:\n\n{body}\n\nQuestion: {reply.question}"),
            ]
            completion = await self.requests.send(
                messages, "condense", max_tokens=step_output, check_context=True
            )
            notes.append(completion.text.strip())
        ask = prompts.question_block(reply.question, reply.earlier)
        return [
            Message(
                "system",
                prompts.with_own_instructions(prompts.FINAL_SYSTEM, reply.settings.system_prompt),
            ),
            Message("user", "Notes from the research:\n\n" + "\n\n".join(notes) + f"\n\n{ask}"),
        ]

    def fallback_for(self, reason: ev.StopReason, detail: str) -> FinalAnswer:
        """The answer when no final request is made (Stop, or the model failed)."""
        return self._fallback(reason, detail)

    def _fallback(
        self, reason: ev.StopReason, detail: str, started: float | None = None
    ) -> FinalAnswer:
        reply = self.reply
        why = stop_words(reason).why + (f"; {detail}" if detail and reason != "error" else "")
        if reason == "error" and detail:
            why = f"{stop_words('error').why}: {detail}"
        evidence = reply.ledger.as_text(limit_chars=FALLBACK_EVIDENCE_CHARS)
        body = evidence if reply.ledger.items else "No evidence was gathered."
        cut = (
            f"The answer as far as it was written, cut off at its length limit:\n\n"
            f"{self.cut_answer.strip()}\n\n"
            if self.cut_answer.strip()
            else ""
        )
        text = f"{FALLBACK_LABEL}: {why.rstrip('.')}.\n\n{cut}{EVIDENCE_GATHERED}\n\n{body}"
        seconds = reply.clock_now() - started if started is not None else 0.0
        reply.emit(ev.FinalFinished(reply.now_t(), "fallback", seconds))
        return FinalAnswer(text, "fallback", detail or None)
