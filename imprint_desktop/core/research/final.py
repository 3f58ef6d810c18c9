"""After research stops on a budget: the final answer, or the labelled evidence fallback.

DESIGN §1: after ``no_progress``, ``time_budget``, ``token_budget`` or ``context_full`` the engine
makes one tools-free final request with its own output allowance (``chat.max_tokens``) and its own
deadline (120 s), outside the research budgets. If the final prompt does not fit the context window,
evidence is first condensed by requests charged to what is left of the research budgets. If it still
does not fit, or the final request fails, the answer is the labelled evidence fallback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from imprint_desktop.core.errors import ProviderError
from imprint_desktop.core.providers.base import CompletionRequest, Message
from imprint_desktop.core.providers.estimate import chars_for_tokens
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.budgets import Settlement
from imprint_desktop.core.research.stop import ResearchStop

if TYPE_CHECKING:
    from imprint_desktop.core.research.engine import ResearchEngine

log = logging.getLogger(__name__)

Outcome = tuple[str, ev.FinalMode, str | None]

FALLBACK_LABEL = "No final answer could be written"
# The evidence texts in a fallback share this many characters; every item's source is listed.
FALLBACK_EVIDENCE_CHARS = 20_000

_REASONS: dict[ev.StopReason, str] = {
    "no_progress": "research stopped finding new evidence",
    "time_budget": "the research time budget ran out",
    "token_budget": "the research token budget ran out",
    "context_full": "the conversation no longer fits the model's context window",
    "cancelled": "you stopped the reply",
    "error": "the model failed",
    "answered": "research is over",
}


#: Tool-call markup a model may still write when no tool can be called: never shown as an answer.
_CALL_MARKUP = re.compile(
    r"<tool_call>.*?(?:</tool_call>|$)|<\|tool_call\|>.*?(?:<\|/tool_call\|>|$)"
    r"|<function=[^>]*>.*?(?:</function>|$)|\[TOOL_CALLS\].*?(?:\n\n|$)"
    r"|<\|python_tag\|>.*?(?:<\|eom_id\|>|<\|eot_id\|>|$)",
    re.DOTALL,
)


def without_call_markup(text: str) -> str:
    """``text`` without tool-call markup (the final answer may call no tool), stripped."""
    return _CALL_MARKUP.sub("", text).strip()


def stop_in_words(reason: ev.StopReason) -> str:
    """Why research stopped, in words for the person."""
    return _REASONS[reason]


class FinalStage:
    def __init__(self, engine: ResearchEngine) -> None:
        self.engine = engine
        self._tools: tuple[Mapping[str, Any], ...] = ()
        # The final request's messages and the answer, when the final was written on the
        # research conversation itself (not on condensed notes): the next question extends it.
        self.conversation: tuple[Message, ...] = ()

    async def run(
        self,
        messages: Sequence[Message],
        reason: ev.StopReason,
        tools: tuple[Mapping[str, Any], ...] = (),
        *,
        instruction: str | None = None,
    ) -> Outcome:
        """The final answer. ``tools`` are the research tools, sent with ``tool_choice="none"``:
        a local model's prompt then stays the same and its research prefix is reused, while a
        remote provider leaves them out of the request."""
        self._tools = tools
        engine = self.engine
        settings = engine.settings
        allowance = settings.max_tokens
        if instruction is None:
            instruction = prompts.FINAL if engine.ledger.items else prompts.FINAL_WITHOUT_EVIDENCE
        final_messages = [*messages, Message("user", instruction)]
        request = self._request(final_messages, allowance)
        try:
            prompt_tokens = await engine.provider.count_prompt(request)
        except Exception as error:
            log.exception("counting the final prompt failed")
            return self._fallback(reason, f"the final request failed: {error}")
        if prompt_tokens + allowance > engine.provider.context_window:
            # Condensing is research work: its requests and its time come out of what is left.
            engine.clock.reopen()
            try:
                condensed = await self._condense()
            finally:
                engine.clock.stop()
            if isinstance(condensed, ResearchStop):
                if condensed.reason == "cancelled":
                    return self._fallback("cancelled", "")
                why = _REASONS[condensed.reason]
                return self._fallback(
                    reason,
                    "the evidence could not be condensed to fit the model's context window "
                    f"({why})",
                )
            self._tools = ()  # a new, short prompt: nothing to reuse, so no room spent on tools
            request = self._request(condensed, allowance)
            try:
                prompt_tokens = await engine.provider.count_prompt(request)
            except Exception as error:
                log.exception("counting the condensed final prompt failed")
                return self._fallback(reason, f"the final request failed: {error}")
            if prompt_tokens + allowance > engine.provider.context_window:
                return self._fallback(
                    reason, "even the condensed evidence does not fit the model's context window"
                )
        return await self._final_request(request, prompt_tokens, reason)

    async def _final_request(
        self, request: CompletionRequest, prompt_tokens: int, reason: ev.StopReason
    ) -> Outcome:
        engine = self.engine
        started = engine.clock_now()
        engine.emit(
            ev.FinalStarted(engine.now_t(), request.max_tokens, engine.settings.final_deadline_sec)
        )
        engine.emit(
            ev.RequestStarted(
                engine.now_t(),
                "final",
                engine.rounds,
                prompt_tokens,
                prompt_tokens + request.max_tokens,
            )
        )
        allowed = prompt_tokens + request.max_tokens  # outside the research budget: not reserved
        try:
            completion = await engine.provider.complete(
                request, engine.cancel, engine.text_sink("final")
            )
        except Exception as error:  # a provider defect must not lose the evidence either
            if not isinstance(error, ProviderError):
                log.exception("the final request failed")
            engine.request_finished(  # the failed request still has its trace line
                "final",
                engine.rounds,
                prompt_tokens,
                Settlement(allowed, 0, 0, 0, allowed, engine.tokens.left),
                reused_prefix=0,
                estimated=not engine.provider.exact_counts,
                usage=None,
                stop="error",
            )
            shown = str(error) if isinstance(error, ProviderError) else repr(error)
            return self._fallback(reason, f"the final request failed: {shown}", started)
        charged = completion.prompt_evaluated + completion.output_tokens
        engine.final_charged += charged
        engine.request_finished(
            "final",
            engine.rounds,
            prompt_tokens,  # one rule for every request line: the engine's count (usage keeps
            # the server's)
            Settlement(
                reserved=allowed,
                charged_prompt=completion.prompt_evaluated,
                output_tokens=completion.output_tokens,
                charged=charged,
                refunded=max(0, allowed - charged),
                budget_left=engine.tokens.left,
            ),
            reused_prefix=completion.reused_prefix,
            estimated=completion.estimated,
            usage=completion.provider_usage,
            stop=completion.stop,
            prefix_source=completion.prefix_source,
        )
        if completion.stop == "cancelled" or engine.cancel.cancelled:
            return self._fallback("cancelled", "", started)
        if completion.stop == "deadline":
            return self._fallback(
                reason,
                "the final answer did not finish within its "
                f"{engine.settings.final_deadline_sec:.0f} seconds",
                started,
            )
        text = without_call_markup(completion.text)
        if not text:
            return self._fallback(reason, "the model wrote an empty final answer", started)
        if self._tools:
            self.conversation = (*request.messages, Message("assistant", completion.text.strip()))
        engine.emit(ev.FinalFinished(engine.now_t(), "model", self.engine.clock_now() - started))
        return text, "model", None

    def _request(self, messages: Sequence[Message], allowance: int) -> CompletionRequest:
        engine = self.engine
        return CompletionRequest(
            messages=tuple(messages),
            max_tokens=allowance,
            deadline=self.engine.clock_now() + engine.settings.final_deadline_sec,
            # Declared but not callable: the prompt (and a local model's reused prefix) stays the
            # one research built, and a remote provider leaves the list out.
            tools=self._tools,
            tool_choice="none",
            temperature=engine.settings.temperature,
            phase="final",
        )

    async def _condense(self) -> list[Message] | ResearchStop:
        """Notes from the evidence, made by requests charged to the research budgets, or the stop
        that ended condensing (a budget ran out, the model failed, or Stop was pressed)."""
        engine = self.engine
        notes: list[str] = []
        items = list(engine.ledger.items)
        window = engine.provider.context_window
        step_output = engine.settings.research_max_output_tokens
        # Characters per chunk: generous room for the instructions and the output allowance.
        evidence = "\n\n".join(engine.ledger.text_of(item.id) for item in items)
        chunk_chars = max(1000, chars_for_tokens(window - step_output - 512, evidence))
        chunk: list[str] = []
        size = 0
        chunks: list[str] = []
        for item in items:
            text = f"[{item.id}] {item.source}, {item.location}:\n{engine.ledger.text_of(item.id)}"
            if chunk and size + len(text) > chunk_chars:
                chunks.append("\n\n".join(chunk))
                chunk, size = [], 0
            chunk.append(text[:chunk_chars])
            size += len(text)
        if chunk:
            chunks.append("\n\n".join(chunk))
        if not chunks:
            # Nothing was found: the question alone is the whole of what the final needs.
            return [
                Message("system", prompts.research_system(engine.settings.system_prompt)),
                Message("user", f"{engine.question}\n\n{prompts.FINAL_WITHOUT_EVIDENCE}"),
            ]
        for body in chunks:
            messages = [
                Message("system", prompts.CONDENSE),
                Message("user", f"Question: {engine.question}\n\nEvidence:\n{body}"),
            ]
            try:
                completion = await engine.request(
                    messages, "condense", max_tokens=step_output, check_context=True
                )
            except ResearchStop as stop:
                return stop
            notes.append(completion.text.strip())
        return [
            Message("system", prompts.research_system(engine.settings.system_prompt)),
            Message(
                "user",
                f"{engine.question}\n\nNotes from the research so far:\n\n"
                + "\n\n".join(notes)
                + f"\n\n{prompts.FINAL}",
            ),
        ]

    def fallback_for(self, reason: ev.StopReason, detail: str) -> Outcome:
        """The answer when no final request is made (Stop, or the model failed)."""
        return self._fallback(reason, detail)

    def _fallback(
        self, reason: ev.StopReason, detail: str, started: float | None = None
    ) -> Outcome:
        engine = self.engine
        why = _REASONS[reason] + (f"; {detail}" if detail and reason != "error" else "")
        if reason == "error" and detail:
            why = f"{_REASONS['error']}: {detail}"
        evidence = engine.ledger.as_text(limit_chars=FALLBACK_EVIDENCE_CHARS)
        body = evidence if engine.ledger.items else "No evidence was gathered."
        text = f"{FALLBACK_LABEL}: {why.rstrip('.')}.\n\nEvidence gathered:\n\n{body}"
        seconds = self.engine.clock_now() - started if started is not None else 0.0
        engine.emit(ev.FinalFinished(engine.now_t(), "fallback", seconds))
        return text, "fallback", detail or None
