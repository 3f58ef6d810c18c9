"""The three budgets on their own, with a hand-driven clock."""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.budgets import Patience, ResearchClock, TokenBudget


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_clock_counts_from_start_and_excludes_pauses() -> None:
    fake = FakeClock()
    clock = ResearchClock(60, fake)
    fake.now += 5  # setup before start does not count
    assert clock.elapsed == 0 and clock.remaining == 60
    clock.start()
    fake.now += 10
    clock.pause()
    fake.now += 1000  # the person takes their time
    assert clock.elapsed == 10 and clock.paused and clock.user_wait == 1000
    clock.resume()
    fake.now += 20
    assert clock.elapsed == 30 and clock.user_wait == 1000
    assert clock.deadline() == fake.now + 30
    fake.now += 31
    assert clock.expired and clock.remaining == 0
    clock.stop()
    fake.now += 500  # the final stage is not research time
    assert clock.elapsed == 61


def test_tokens_reserve_charge_net_of_prefix_and_refund() -> None:
    budget = TokenBudget(10_000)
    reservation = budget.reserve(prompt_tokens=3000, output_allowance=1000)
    assert reservation is not None and budget.reserved == 4000 and budget.left == 6000
    # 2500 of the 3000 prompt tokens were a reused prefix; 200 tokens generated.
    settlement = budget.settle(reservation, prompt_evaluated=500, output_tokens=200)
    assert (settlement.charged, settlement.refunded, settlement.budget_left) == (700, 3300, 9300)
    assert (budget.charged, budget.refunded, budget.reserved) == (700, 3300, 0)


def test_a_reservation_that_does_not_fit_is_refused() -> None:
    budget = TokenBudget(5000)
    assert budget.reserve(4000, 1001) is None
    assert budget.reserve(4000, 1000) is not None


def test_one_reservation_at_a_time() -> None:
    budget = TokenBudget(5000)
    budget.reserve(100, 100)
    with pytest.raises(RuntimeError):
        budget.reserve(100, 100)


def test_usage_beyond_the_estimate_is_charged_in_full_and_shows_as_overrun() -> None:
    budget = TokenBudget(1000)
    reservation = budget.reserve(100, 100)  # a remote estimate: the server processed more
    assert reservation is not None
    settlement = budget.settle(reservation, 750, 150)
    assert (settlement.charged, settlement.refunded, settlement.overrun) == (900, 0, 700)
    assert (budget.charged, budget.left) == (900, 100)
    assert budget.reserve(50, 60) is None, "the overrun is spent: the next reservation must fit"
    second = budget.reserve(50, 50)
    assert second is not None
    last = budget.settle(second, 300, 40)
    assert last.budget_left == 0, "left never goes below zero"
    # Never charged past the budget, whatever the server says: the prompt it processed first.
    assert (last.charged_prompt, last.output_tokens, last.charged) == (100, 0, 100)
    assert budget.charged == 1000


def test_the_clock_counts_again_when_reopened_for_condensing() -> None:
    now = [0.0]
    clock = ResearchClock(10, lambda: now[0])
    clock.start()
    now[0] = 4.0
    clock.stop()
    now[0] = 9.0  # the final stage's own time: not research
    assert clock.elapsed == 4.0
    clock.reopen()
    now[0] = 11.0
    assert clock.elapsed == 6.0 and clock.remaining == 4.0
    clock.stop()
    now[0] = 50.0
    assert clock.elapsed == 6.0 and clock.user_wait == 0.0


def test_patience_counts_stagnant_read_rounds_and_skips_writes() -> None:
    patience = Patience(3)
    patience.record(progress=False, excluded=False)
    patience.record(progress=False, excluded=True)  # a write round: neither counts nor resets
    patience.record(progress=False, excluded=False)
    assert patience.rounds_without_progress == 2 and not patience.exhausted
    patience.record(progress=True, excluded=False)
    assert patience.rounds_without_progress == 0
    for _ in range(3):
        patience.record(progress=False, excluded=False)
    assert patience.exhausted
