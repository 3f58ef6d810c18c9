"""How many tokens a text makes, for a model whose tokenizer Imprint does not have (a server's).

The estimate is a sum over the text's UTF-8 bytes and ASCII words, with rates per script
(DESIGN §1: an estimate from UTF-8 bytes, valid for any script). It is meant to *hold*: never
below what the starter model's tokenizer (SmolLM2, a 49k-token English-centred vocabulary, the
most token-hungry of the tokenizers Imprint meets) makes of the same text by more than a few per
cent, for any script, while staying close on English. Larger vocabularies (Llama 3, Qwen, GPT-4o)
make fewer tokens of the same text, so the estimate errs on the side of a prompt that fits.

The rates, in tokens:

=====================================  ====================================================
ASCII word in English-like text        0.43 per word + 0.2 per letter (most are one token)
ASCII word in other Latin text         0.55 per word + 0.37 per letter (words split in pieces)
ASCII digit                            1 (digits are split one by one), + 1 after a space
run of ASCII punctuation, line         1 per run + 0.1 per character (``":"``, ``"},{"``
breaks, tabs                           and ``):`` are one token each)
2-byte character: Latin, Greek,        1.05
Cyrillic (U+0080–U+04FF)
2-byte character: Armenian, Hebrew,    1.35
Arabic, Syriac… (U+0500–U+07FF)
3-byte character: CJK, kana, Thai,     2
Devanagari, symbols…
3-byte character: U+1000–U+1FFF        3 (Georgian, Ethiopic, Khmer, Vietnamese letters…)
3-byte character: U+A000–U+DFFF        3 (Hangul syllables, Yi: one token per byte)
4-byte character (emoji, rare CJK)     3
=====================================  ====================================================

"English-like" is decided per window of :data:`WINDOW_WORDS` words by the share of very common
English words in it, so a German passage inside an English prompt is counted as German. No text
makes more tokens than it has bytes (byte-level tokenizers fall back to one token per byte), so
the estimate never exceeds the byte count.

Measured (``python bench/bench_token_estimate.py``) against the starter model's tokenizer on the
samples in ``tests/support/script_samples.py``: the estimate is 1.01–1.42 times the real count for
every script (English 1.14, German 1.16, Russian 1.17, Chinese 1.10, Korean 1.08, code 1.26), and
1.14–1.21 times the starter model's exact count of whole research requests; the former bytes/4
rule was 0.25–0.89 times.
"""

from __future__ import annotations

import functools
import math
import re

RATE_WINDOW = 2000
"""Characters of a sample judged together by :func:`chars_for_tokens`."""
_SAMPLE_LIMIT = 400_000  # enough of a sample to know its scripts; a longer one costs no more

WINDOW_WORDS = 48
"""Words judged together for English-likeness: a long sentence or two."""

# Common English words that are not words of other languages written in Latin letters ("a",
# "in", "is", "was", "to", "for", "at" are left out: Spanish, German, Dutch, Polish and the
# Scandinavian languages use them too).
_COMMON_ENGLISH = frozenset(
    (
        "the", "of", "and", "that", "with", "as", "by", "from", "his", "her", "their", "this",
        "are", "were", "not", "or", "but", "have", "has", "which", "they", "you", "he", "she",
        "its", "been", "will", "would", "there", "what", "when", "who", "more", "can", "if",
        "than", "them", "these", "into", "only", "some", "could", "other", "then", "also",
        "about", "after", "such", "our", "your", "my", "it",
    )
)  # fmt: skip
_WORD = re.compile(r"[A-Za-z]+")
# Shares of common English words between which a window goes from "other Latin" to "English".
_ENGLISH_FROM, _ENGLISH_AT = 0.04, 0.12

_ENGLISH_WORD, _ENGLISH_LETTER = 0.43, 0.2
_OTHER_WORD, _OTHER_LETTER = 0.55, 0.37
_PUNCTUATION = re.compile(rb"[\x00-\x1f!-/:-@\[-`{-\x7f]+")
_PUNCTUATION_RUN, _PUNCTUATION_CHARACTER = 1.0, 0.1


def _byte_rates() -> dict[float, bytes]:
    """Tokens per byte, grouped by rate. A character's rate sits on its lead byte; continuation
    bytes (0x80–0xBF), spaces, ASCII letters and punctuation cost nothing here (words and runs of
    punctuation are counted apart)."""
    rates: dict[int, float] = {}
    for byte in range(256):
        if byte < 0x80:
            rates[byte] = 1.0 if chr(byte).isdigit() else 0.0
        elif byte < 0xC2:
            rates[byte] = 0.0  # continuation bytes (and 0xC0/0xC1, which valid UTF-8 never has)
        elif byte < 0xD4:
            rates[byte] = 1.05
        elif byte < 0xE0:
            rates[byte] = 1.35
        elif byte == 0xE1 or 0xEA <= byte <= 0xED:
            rates[byte] = 3.0
        elif byte < 0xF0:
            rates[byte] = 2.0
        else:
            rates[byte] = 3.0
    grouped: dict[float, bytearray] = {}
    for byte, rate in rates.items():
        if rate:
            grouped.setdefault(rate, bytearray()).append(byte)
    return {rate: bytes(members) for rate, members in grouped.items()}


_RATES = _byte_rates()
_SPACE_DIGITS = tuple(b" " + bytes([digit]) for digit in b"0123456789")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` makes for any tokenizer Imprint may meet, rounded up (see the module
    docstring). Repeated texts (the messages of a growing conversation) are counted once."""
    if not text:
        return 0
    if len(text) < 64:
        return _estimate(text)
    return _cached(text)


@functools.lru_cache(maxsize=4096)
def _cached(text: str) -> int:
    return _estimate(text)


def _estimate(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    total = 0.0
    for rate, members in _RATES.items():
        # translate() deletes the members: what it removes is how many there were, counted in C.
        total += rate * (len(data) - len(data.translate(None, members)))
    total += sum(data.count(pair) for pair in _SPACE_DIGITS)  # " 7": a space token, then "7"
    runs = _PUNCTUATION.findall(data)
    total += _PUNCTUATION_RUN * len(runs) + _PUNCTUATION_CHARACTER * sum(map(len, runs))
    words = _WORD.findall(text)
    windows = [words[start : start + WINDOW_WORDS] for start in range(0, len(words), WINDOW_WORDS)]
    if len(windows) > 1 and len(windows[-1]) < WINDOW_WORDS // 2:  # too few to judge alone
        windows[-2:] = [windows[-2] + windows[-1]]
    for window in windows:
        letters = sum(map(len, window))
        common = sum(1 for word in window if word.lower() in _COMMON_ENGLISH) / len(window)
        english = min(1.0, max(0.0, (common - _ENGLISH_FROM) / (_ENGLISH_AT - _ENGLISH_FROM)))
        per_word = english * _ENGLISH_WORD + (1 - english) * _OTHER_WORD
        per_letter = english * _ENGLISH_LETTER + (1 - english) * _OTHER_LETTER
        total += per_word * len(window) + per_letter * letters
    return min(len(data), math.ceil(total))


def chars_for_tokens(tokens: int, sample_text: str) -> int:
    """Characters of text like ``sample_text`` that make at most ``tokens`` tokens.

    For cutting text to fit a token allowance (evidence chunks to condense, for instance): the rate
    is the sample's costliest stretch of :data:`RATE_WINDOW` characters, so a chunk of Chinese or
    Russian evidence is cut shorter than one of English, and evidence that mixes them is cut as if
    it were all of the costlier kind. Without a sample, the costliest rate of any script (3 tokens a
    character) is assumed.
    """
    if tokens <= 0:
        return 0
    sample = sample_text[:_SAMPLE_LIMIT]
    windows = [sample[start : start + RATE_WINDOW] for start in range(0, len(sample), RATE_WINDOW)]
    if len(windows) > 1 and len(windows[-1]) < RATE_WINDOW // 2:  # too short to judge alone
        windows[-2:] = [windows[-2] + windows[-1]]
    rate = max((estimate_tokens(window) / len(window) for window in windows), default=3.0)
    return max(1, math.floor(tokens / rate))
