"""The remote token estimate: its rules, without a model (the calibration against the starter
model's tokenizer is tests/integration/test_token_estimate.py)."""

from __future__ import annotations

import pytest

from imprint_desktop.core.providers.estimate import (
    RATE_WINDOW,
    chars_for_tokens,
    estimate_tokens,
)
from tests.support.script_samples import SAMPLES


def test_nothing_makes_no_tokens() -> None:
    assert estimate_tokens("") == 0
    assert chars_for_tokens(0, SAMPLES["english"]) == 0


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_no_text_makes_more_tokens_than_it_has_bytes(name: str) -> None:
    text = SAMPLES[name]
    assert 0 < estimate_tokens(text) <= len(text.encode())
    assert estimate_tokens("한") == 3  # Hangul: one token per byte at worst, and no more


def test_english_counts_about_a_token_a_word() -> None:
    words = len(SAMPLES["english"].split())
    assert words <= estimate_tokens(SAMPLES["english"]) <= 2 * words


@pytest.mark.parametrize(
    ("heavier", "lighter"),
    [
        ("german", "english"),  # the same text: a vocabulary made for English splits German more
        ("russian", "english"),
        ("chinese", "english"),
        ("korean", "chinese"),
    ],
)
def test_scripts_that_make_more_tokens_a_character_are_counted_so(
    heavier: str, lighter: str
) -> None:
    def rate(name: str) -> float:
        return estimate_tokens(SAMPLES[name]) / len(SAMPLES[name])

    assert rate(heavier) > rate(lighter)


def test_the_former_rule_undercounted_every_script_but_this_one_does_not() -> None:
    """bytes / 4 is what the remote provider used before: for Chinese it is well under the
    character count, while any tokenizer makes at least about one token per CJK character."""
    chinese = SAMPLES["chinese"]
    assert len(chinese.encode()) / 4 < 0.9 * len(chinese)
    assert estimate_tokens(chinese) >= len(chinese)


def test_a_german_passage_in_an_english_prompt_is_counted_as_german() -> None:
    """English-likeness is judged a few dozen words at a time, not for the whole prompt; only
    the window where one language gives way to the other counts somewhere in between."""
    english, german = SAMPLES["english"] * 3, SAMPLES["german"] * 3
    alone = estimate_tokens(english) + estimate_tokens(german)
    assert estimate_tokens(english + "\n\n" + german) >= 0.98 * alone


def test_repeated_texts_count_the_same() -> None:
    text = SAMPLES["japanese"] * 5
    assert estimate_tokens(text) == estimate_tokens(str(text)) == estimate_tokens("".join(text))


def test_chunks_of_heavier_scripts_are_cut_shorter() -> None:
    tokens = 1000
    english = chars_for_tokens(tokens, SAMPLES["english"] * 10)
    russian = chars_for_tokens(tokens, SAMPLES["russian"] * 10)
    chinese = chars_for_tokens(tokens, SAMPLES["chinese"] * 20)
    assert english > russian > chinese
    for sample in ("english", "russian", "chinese", "korean", "code"):
        text = SAMPLES[sample] * 30
        assert estimate_tokens(text[: chars_for_tokens(tokens, text)]) <= tokens * 1.01


def test_a_mixed_sample_is_cut_as_its_costliest_part() -> None:
    """Evidence that is mostly English with a stretch of Chinese: a chunk may be all Chinese."""
    chinese = (SAMPLES["chinese"] * 30)[: RATE_WINDOW * 2]
    mixed = SAMPLES["english"] * 40 + chinese
    assert chars_for_tokens(1000, mixed) == pytest.approx(chars_for_tokens(1000, chinese), 0.1)
    assert estimate_tokens(chinese[: chars_for_tokens(1000, mixed)]) <= 1010


def test_without_a_sample_the_costliest_rate_is_assumed() -> None:
    assert chars_for_tokens(900, "") == 300


def test_lone_surrogates_are_counted_not_refused() -> None:
    assert estimate_tokens("broken \ud83d half") > 0
