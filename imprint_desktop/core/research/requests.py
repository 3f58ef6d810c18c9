"""The one door to the model (DESIGN §1): every prompt count and every request of a reply.

Two modes. A research request — the coordinator's, a section worker's, a condensing one — goes
through :meth:`Requests.send`: check, reserve from the research token budget, send, charge,
refund; a failed provider call is a stop of research with the reason of DESIGN §1. The final
request goes through :meth:`Requests.final`: outside the research budgets, with its own allowance,
reserved and settled by the same rules on a budget of its own; its failure is the provider's, for
the final stage to fall back on. Every request has its one trace line (:meth:`Requests.finished`)
with what it reserved, charged and refunded.

Every answer streams through a :class:`~.runaway.Watch`: an answer that starts looping or pasting
its request back is stopped there — the request's own cancel token, set beside Stop's, ends it the
way Stop does (llama.cpp's abort check between tokens, the remote stream closed) — and the request
returns the sound part as its text, ended ``stop``; :attr:`Requests.runaway` says why.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderDeadlineError,
    ProviderError,
)
from imprint_desktop.core.providers.base import Completion, CompletionRequest, Message, Phase
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import runaway
from imprint_desktop.core.research.budgets import Reservation, Settlement, TokenBudget
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.vocabulary import PrefixSource, RequestEnd

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class Requests:
    """The reply's model requests and their accounting (see the module docstring)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.sent = 0  # research requests sent (a budget too small for one is said so)
        self.final_charged = 0  # what the final request was charged, outside the research budget
        #: Why the last request's answer was cut short (it looped or pasted its request), if it was.
        self.runaway: runaway.Verdict | None = None

    @property
    def context_window(self) -> int:
        return self.reply.provider.context_window

    async def count(self, request: CompletionRequest) -> int:
        """The prompt tokens of ``request``, by the provider's own count; its failure is raised."""
        return await self.reply.provider.count_prompt(request)

    async def send(
        self,
        messages: Sequence[Message],
        phase: Phase,
        *,
        tools: tuple[Mapping[str, Any], ...] = (),
        max_tokens: int,
        answer_max_tokens: int | None = None,
        check_context: bool = False,
    ) -> Completion:
        """One budgeted model request: check, reserve, send, charge, refund (DESIGN §1)."""
        reply = self.reply
        provider = reply.provider
        reply.check_cancel_and_time()
        request = CompletionRequest(
            messages=tuple(messages),
            max_tokens=max_tokens,
            deadline=reply.clock.deadline(),
            tools=tools,
            tool_choice="auto",
            temperature=reply.settings.temperature,
            seed=reply.settings.seed,
            phase=phase,
            answer_max_tokens=answer_max_tokens,
        )
        prompt_tokens = await _provider_call(self.count(request))
        if check_context and prompt_tokens + max_tokens > provider.context_window:
            raise ResearchStop(
                "context_full",
                f"{prompt_tokens} + {max_tokens} tokens > {provider.context_window}",
            )
        reservation = reply.tokens.reserve(prompt_tokens, max_tokens)
        if reservation is None:
            raise ResearchStop(
                "token_budget",
                f"{prompt_tokens + max_tokens} tokens needed, {reply.tokens.left} left",
            )
        self.sent += 1
        # A research or worker request opens the next round; condensing belongs to the last one.
        round_number = reply.rounds + 1 if phase in ("research", "worker") else reply.rounds
        reply.emit(
            ev.RequestStarted(reply.now_t(), phase, round_number, prompt_tokens, reservation.tokens)
        )
        reply.emit_budget()
        streamed = _Streamed(reply.text_sink(phase), self._watch(request))
        try:
            completion = await _provider_call(self._complete(request, streamed))
        except ResearchStop as stop:
            self._failed(
                phase, round_number, prompt_tokens, reservation, streamed=streamed, stop=stop
            )
            raise
        except BaseException:  # the reply itself is torn down: the request still has its line
            self._failed(
                phase, round_number, prompt_tokens, reservation, streamed=streamed, stop=None
            )
            raise
        settlement = reply.tokens.settle(
            reservation, completion.prompt_evaluated, completion.output_tokens
        )
        self.finished(
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
        reply.emit_budget()
        if completion.stop == "cancelled" or reply.cancel.cancelled:
            raise ResearchStop("cancelled")
        if completion.stop == "deadline":
            raise ResearchStop("time_budget", "the research time ran out during a model request")
        return completion

    async def final(self, request: CompletionRequest, prompt_tokens: int) -> Completion:
        """The final request (DESIGN §1), of ``prompt_tokens`` counted before: nothing of the
        research budget is reserved or charged. A failure of the provider is raised as it came,
        after the request's line charged what arrived before it."""
        reply = self.reply
        outside = TokenBudget(sys.maxsize)  # the final request's own allowance, never refused
        reservation = outside.reserve(prompt_tokens, request.max_tokens)
        assert reservation is not None
        reply.emit(
            ev.RequestStarted(
                reply.now_t(), "final", reply.rounds, prompt_tokens, reservation.tokens
            )
        )
        try:
            completion = await self._complete(
                request, _Streamed(reply.text_sink("final"), self._watch(request))
            )
        except Exception as error:  # what arrived before the failure is charged, if known
            self._settle_final(outside, reservation, prompt_tokens, failed_partial(error), "error")
            raise
        self._settle_final(outside, reservation, prompt_tokens, completion, completion.stop)
        return completion

    def _watch(self, request: CompletionRequest) -> runaway.Watch:
        """A watch over the answer to ``request``; condensing writes numbered notes, which may
        name their passages as the request did."""
        if request.phase == "condense":
            return runaway.Watch()
        return runaway.Watch(runaway.Scaffolding.of(request.messages, self.reply.question))

    async def _complete(self, request: CompletionRequest, streamed: _Streamed) -> Completion:
        """Send ``request``, its answer streamed through ``streamed``: stopped, and cut to its
        sound part, when it runs away (see the module docstring)."""
        reply = self.reply
        own = CancelToken()  # this request's: set by Stop, or by the watch
        streamed.on_runaway = own.cancel
        remove = reply.cancel.on_cancel(own.cancel)
        self.runaway = None
        try:
            completion = await reply.provider.complete(request, own, streamed)
        finally:
            remove()
        verdict = streamed.watch.verdict  # met while it streamed: the request was stopped
        if verdict is None and not (completion.interrupted or completion.tool_calls):
            verdict = streamed.watch.finish()  # its last line, or a loop it ended on
        if verdict is None or reply.cancel.cancelled or completion.stop == "deadline":
            return completion
        self.runaway = verdict
        log.info("%s request cut: %s (%s)", request.phase, verdict.why, verdict.detail)
        return replace(completion, text=streamed.watch.kept, tool_calls=(), stop="stop")

    def _settle_final(
        self,
        outside: TokenBudget,
        reservation: Reservation,
        prompt_tokens: int,
        completion: Completion | None,
        stop: RequestEnd,
    ) -> None:
        """Charge the final request what ``completion`` (None: nothing known) used."""
        evaluated = completion.prompt_evaluated if completion else 0
        settlement = outside.settle(
            reservation, evaluated, completion.output_tokens if completion else 0
        )
        self.final_charged += settlement.charged
        self.finished(
            "final",
            self.reply.rounds,
            prompt_tokens,  # one rule for every request line: the engine's count (usage keeps
            # the server's)
            replace(settlement, budget_left=self.reply.tokens.left),
            reused_prefix=completion.reused_prefix if completion else 0,
            estimated=completion.estimated if completion else not self.reply.provider.exact_counts,
            usage=completion.provider_usage if completion else None,
            stop=stop,
            prefix_source=completion.prefix_source if completion else None,
        )

    def _failed(
        self,
        phase: Phase,
        round_number: int,
        prompt_tokens: int,
        reservation: Reservation,
        *,
        streamed: _Streamed,
        stop: ResearchStop | None,
    ) -> None:
        """Charge a request that failed or was abandoned, and give it its trace line.

        What the provider received before the failure is charged like any request: the prompt
        past the reused prefix and the output so far (tool calls and reasoning too). Without a
        word from the provider, streamed text means the prompt was processed; without output
        nothing is known to have been processed, so nothing is charged.
        """
        reply = self.reply
        partial = failed_partial(stop)
        if partial is not None:
            settlement = reply.tokens.settle(
                reservation, partial.prompt_evaluated, partial.output_tokens
            )
            reused, estimated = partial.reused_prefix, partial.estimated
            usage, source = partial.provider_usage, partial.prefix_source
        else:
            output = streamed.tokens
            settlement = reply.tokens.settle(reservation, prompt_tokens if output else 0, output)
            reused, estimated = 0, not reply.provider.exact_counts
            usage, source = None, None
        self.finished(
            phase,
            round_number,
            prompt_tokens,
            settlement,
            reused_prefix=reused,
            estimated=estimated,
            usage=usage,
            stop=stop.reason if stop is not None else "cancelled",
            prefix_source=source,
        )
        reply.emit_budget()

    def finished(
        self,
        phase: Phase,
        round_number: int,
        prompt_tokens: int,
        settlement: Settlement,
        *,
        reused_prefix: int,
        estimated: bool,
        usage: Mapping[str, Any] | None,
        stop: RequestEnd,
        prefix_source: PrefixSource | None = None,
    ) -> None:
        """Report one finished request with its accounting (the trace's ``request`` line)."""
        self.reply.emit(
            ev.RequestFinished(
                self.reply.now_t(),
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


def failed_partial(failure: BaseException | None) -> Completion | None:
    """What a failed request had received before it failed, when its provider said
    (:attr:`~imprint_desktop.core.errors.ProviderError.partial`), from the failure or the stop
    it became."""
    while failure is not None:
        partial = getattr(failure, "partial", None)
        if isinstance(partial, Completion):
            return partial
        failure = failure.__cause__
    return None


async def _provider_call(call: Awaitable[_T]) -> _T:
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


class _Streamed:
    """A request's text sink that also keeps what streamed (to charge a failed request) and reads
    it for a runaway answer (:mod:`.runaway`): once it runs away, ``on_runaway`` is called and
    nothing more reaches the sink."""

    def __init__(self, sink: Callable[[str], None], watch: runaway.Watch) -> None:
        self._sink = sink
        self._pieces: list[str] = []
        self.watch = watch
        self.on_runaway: Callable[[], None] = lambda: None

    def __call__(self, text: str) -> None:
        self._pieces.append(text)
        if self.watch.verdict is not None:
            return
        if self.watch.feed(text) is not None:
            self.on_runaway()
            return
        self._sink(text)

    @property
    def tokens(self) -> int:
        """The streamed output in tokens, by the estimate that holds for any script."""
        return estimate_tokens("".join(self._pieces)) if self._pieces else 0
