"""The three research budgets of DESIGN §1: time, tokens and patience.

* :class:`ResearchClock` — wall-clock research time on the monotonic clock. It starts when the
  provider is ready (model loading does not count) and pauses while the person is answering an
  ``ask_user`` question. It hands the time left down as an absolute deadline.
* :class:`TokenBudget` — reserve the formatted prompt plus the full output allowance before a
  request is sent; after it, charge the prompt tokens actually processed (the reused prefix is
  free) plus the tokens generated, and refund the rest of the reservation. A request whose
  reservation does not fit is not sent. When a server reports more than the estimate reserved,
  the reported amount is charged (the overrun is kept), so the next reservation sees it — but
  never past the budget itself.
* :class:`Patience` — consecutive read rounds that added no new evidence. Rounds with a write are
  excluded: they neither count nor reset.

There is no round limit anywhere: research stops on these, on an answer, on Stop, or on a full
context window.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


class ResearchClock:
    """Research time with pauses; not thread-safe (it lives on the engine's loop)."""

    def __init__(self, limit_seconds: float, clock: Clock = time.monotonic) -> None:
        self.limit = float(limit_seconds)
        self._clock = clock
        self._started: float | None = None
        self._paused_at: float | None = None
        self._paused_total = 0.0
        self._stopped_at: float | None = None
        self._stopped_total = 0.0  # between stop() and reopen(): neither research nor waiting

    def start(self) -> None:
        if self._started is None:
            self._started = self._clock()

    def stop(self) -> None:
        """Research is over: elapsed time stays where it is (the final stage is not research)."""
        if self._stopped_at is None:
            self.resume()
            self._stopped_at = self._clock()

    def reopen(self) -> None:
        """Count again after :meth:`stop` (evidence condensing is charged to research time)."""
        if self._stopped_at is not None:
            self._stopped_total += self._clock() - self._stopped_at
            self._stopped_at = None

    @property
    def started(self) -> bool:
        return self._started is not None

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def pause(self) -> None:
        """Stop counting (a question is waiting for the person)."""
        if self._paused_at is None:
            self._paused_at = self._clock()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_total += self._clock() - self._paused_at
            self._paused_at = None

    @property
    def user_wait(self) -> float:
        """Seconds spent paused so far."""
        current = self._clock() - self._paused_at if self._paused_at is not None else 0.0
        return self._paused_total + current

    @property
    def elapsed(self) -> float:
        """Research seconds so far, pauses excluded."""
        if self._started is None:
            return 0.0
        now = self._stopped_at if self._stopped_at is not None else self._clock()
        return max(0.0, now - self._started - self.user_wait - self._stopped_total)

    @property
    def remaining(self) -> float:
        return max(0.0, self.limit - self.elapsed)

    @property
    def expired(self) -> bool:
        return self.remaining <= 0.0

    def deadline(self) -> float:
        """The time.monotonic() value at which research time runs out, if nothing pauses it."""
        return self._clock() + self.remaining


@dataclass(frozen=True)
class Reservation:
    """Tokens set aside for one request before it is sent."""

    prompt_tokens: int
    output_allowance: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_allowance


@dataclass(frozen=True)
class Settlement:
    """What one request finally cost against its reservation."""

    reserved: int
    charged_prompt: int
    output_tokens: int
    charged: int
    refunded: int
    budget_left: int
    overrun: int = 0  # charged beyond the reservation (a remote estimate that ran low)


class TokenBudget:
    """Reserve before, charge net of the reused prefix after, refund the rest."""

    def __init__(self, total: int) -> None:
        self.total = int(total)
        self.charged = 0
        self.refunded = 0
        self.reserved = 0  # held by the request in flight

    @property
    def left(self) -> int:
        """What is neither charged nor reserved (never below zero, even after an overrun)."""
        return max(0, self.total - self.charged - self.reserved)

    def fits(self, prompt_tokens: int, output_allowance: int) -> bool:
        return prompt_tokens + output_allowance <= self.left

    def reserve(self, prompt_tokens: int, output_allowance: int) -> Reservation | None:
        """Set tokens aside for a request, or None when the reservation does not fit."""
        if self.reserved:
            raise RuntimeError("one request at a time: settle the previous reservation first")
        if not self.fits(prompt_tokens, output_allowance):
            return None
        reservation = Reservation(prompt_tokens, output_allowance)
        self.reserved = reservation.tokens
        return reservation

    def settle(
        self, reservation: Reservation, prompt_evaluated: int, output_tokens: int
    ) -> Settlement:
        """Charge what the request really processed and generated; refund the rest.

        A remote reservation rests on an estimate; when the server reports more, the reported
        amount is charged all the same (and shows as ``overrun``): the budget counts real tokens.
        Nothing is charged past the budget (the output first, then the prompt, are cut to what
        it has left): a request is never sent without its reservation fitting, and a server's
        word cannot spend more than the person allowed.
        """
        room = max(0, self.total - self.charged)
        charged_prompt = min(max(0, prompt_evaluated), room)
        output = min(max(0, output_tokens), room - charged_prompt)
        charged = charged_prompt + output
        refunded = max(0, reservation.tokens - charged)
        self.reserved = 0
        self.charged += charged
        self.refunded += refunded
        return Settlement(
            reserved=reservation.tokens,
            charged_prompt=charged_prompt,
            output_tokens=output,
            charged=charged,
            refunded=refunded,
            budget_left=self.left,
            overrun=max(0, charged - reservation.tokens),
        )


class Patience:
    """Counts read rounds in a row that found nothing new."""

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self.rounds_without_progress = 0

    def record(self, *, progress: bool, excluded: bool) -> None:
        # A round with a write is left out of the count, unless it also made progress (an
        # answer from the person, or new evidence, in the same batch as the write).
        if excluded and not progress:
            return
        self.rounds_without_progress = 0 if progress else self.rounds_without_progress + 1

    @property
    def exhausted(self) -> bool:
        return self.rounds_without_progress >= self.limit
