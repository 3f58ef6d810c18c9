"""The loop guard ends an output whose tail repeats itself, and leaves text that only looks
repetitive alone."""

from __future__ import annotations

from collections.abc import Sequence

from imprint_desktop.core.providers.local.sampling import MIN_LOOP_TOKENS, LoopGuard, cut_loop


def first_cut(tokens: Sequence[int]) -> tuple[int, int] | None:
    """Where the guard first fires: (tokens seen, tokens kept)."""
    guard = LoopGuard()
    for seen, token in enumerate(tokens, start=1):
        loop = guard.add(token)
        if loop is not None:
            return seen, loop.end
    return None


def test_a_repeated_phrase_is_cut_to_one_copy_after_what_came_before() -> None:
    intro = list(range(100, 120))
    unit = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    cut = first_cut(intro + unit * 10)
    assert cut is not None
    seen, keep = cut
    assert keep == len(intro) + len(unit)  # the introduction and one copy
    assert seen == len(intro) + 3 * len(unit)  # found as soon as the unit came a third time


def test_one_token_over_and_over_is_a_loop_once_it_is_long() -> None:
    cut = first_cut([7, 8, 9] + [5] * 100)
    assert cut == (3 + MIN_LOOP_TOKENS, 4)


def test_short_repeats_are_text() -> None:
    table_rule = [40, 41, 42] * 8  # "| --- | --- |": 24 tokens, under the loop's length
    counting = [1, 50, 2, 50, 3, 50, 4, 50, 5, 50, 6, 50, 7, 50]
    assert first_cut(table_rule) is None
    assert first_cut(counting) is None


def test_a_unit_said_twice_is_not_a_loop() -> None:
    unit = list(range(200, 240))
    assert first_cut(unit + unit + [1, 2, 3]) is None


def test_a_unit_longer_than_the_longest_period_is_not_looked_for() -> None:
    unit = list(range(1000, 1100))  # 100 tokens, beyond MAX_LOOP_PERIOD
    assert first_cut(unit * 3) is None


def test_the_kept_copy_ends_where_a_sentence_inside_it_ends() -> None:
    text = "It rained. The flood of 1912 closed the line. The"
    unit_start = text.index(" flood")
    assert cut_loop(text, unit_start) == "It rained. The flood of 1912 closed the line."
    assert cut_loop("Words and words and", 5) == "Words and words and"  # no sentence ends
