"""How many tokens a text makes, for a model whose tokenizer Imprint does not have (a server's).

The estimate is a sum over the text's UTF-8 bytes and ASCII words, with rates per script
(DESIGN §1: an estimate from UTF-8 bytes, valid for any script). It is meant to *hold* for any
server: never below what any tokenizer family llama.cpp ships a vocabulary of makes of the same
text by more than 3 % — GPT-2's and Falcon's byte-level BPE, which split Greek, Cyrillic and
Hebrew into bytes, Llama 2's and Phi-3's SentencePiece, which spell emoji out byte by byte,
DeepSeek's, Qwen's, Gemma's, Command R's… (ADR 0102's second condition) — while staying close on
English. Larger vocabularies make fewer tokens of the same text, so the estimate errs on the side
of a prompt that fits; the provider's reported ``usage`` settles what was charged.

The rates, in tokens:

=====================================  ====================================================
ASCII word in English-like text        0.43 per word + 0.2 per letter (most are one token)
ASCII word in other Latin text         0.55 per word + 0.37 per letter (words split in pieces)
ASCII digit                            1 (digits are split one by one), + 1 after a space
run of ASCII punctuation, line         1 per run + 0.1 per character (``":"``, ``"},{"``
breaks, tabs                           and ``):`` are one token each)
run of two or more spaces              0.35 per space (indentation, aligned columns)
space before a non-ASCII character     0.2
2-byte character: Latin letters with   1.35
accents, IPA (U+0080–U+02FF)
2-byte character: combining marks,     1.3
Greek (U+0300–U+03FF)
2-byte character: Cyrillic             1.2
2-byte character: Armenian, Hebrew,    1.85
Arabic, Syriac… (U+0500–U+07FF)
3-byte character: Indic, Thai, Lao,    2.2
Tibetan (U+0800–U+0FFF)
3-byte character: U+1000–U+1FFF        3 (Georgian, Ethiopic, Khmer, Vietnamese letters…)
3-byte character: punctuation,         2
symbols, arrows (U+2000–U+2FFF)
3-byte character: kana, CJK            2.1
3-byte character: U+A000–U+DFFF        3 (Hangul syllables, Yi: one token per byte)
3-byte character: U+E000–U+FFFF        2 (private use, variation selectors, half-width forms)
4-byte character (emoji, rare CJK)     4 (one token per byte)
=====================================  ====================================================

"English-like" is decided per window of :data:`WINDOW_WORDS` words by the share of very common
English words in it, so a German passage inside an English prompt is counted as German. No text
makes more tokens than it has bytes (byte-level tokenizers fall back to one token per byte), so
the estimate never exceeds the byte count.

Measured (``python bench/bench_tokenizers.py``, 19 vocabularies from llama-cpp-python 0.3.36's
sdist) on the samples in ``tests/support/script_samples.py`` and research requests as the engine
builds them (``tests/support/engine_prompts.py``): the estimate is at least 0.97 times the real
count of every family for every sample and request (before these rates: 0.73 for DeepSeek Coder
on Hebrew, 0.82 for GPT-2 on Greek and Phi-3 on emoji), and its median over the samples is 1.09
(DeepSeek Coder) to 1.92 (Gemma 4) times the real count; for the starter model's tokenizer it is
1.01–1.59 (English 1.14, code 1.38) and 1.24 times whole research requests. The BERT vocabularies
of embedding models are held to it on text only: WordPiece makes a token of every punctuation mark
of a JSON request, which no server of theirs receives.
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


#: Tokens per character by the lead byte of its UTF-8 form: (first lead byte, last, rate).
_LEAD_RATES = (
    (0xC2, 0xCB, 1.35),  # Latin-1 and Latin Extended letters, IPA, modifiers
    (0xCC, 0xCF, 1.3),  # combining marks, Greek, Coptic
    (0xD0, 0xD3, 1.2),  # Cyrillic
    (0xD4, 0xDF, 1.85),  # Armenian, Hebrew, Arabic, Syriac, Thaana, N'Ko
    (0xE0, 0xE0, 2.2),  # Samaritan to Tibetan: Devanagari, Bengali, Tamil, Thai, Lao…
    (0xE1, 0xE1, 3.0),  # Georgian, Ethiopic, Khmer, Mongolian, Vietnamese letters…
    (0xE2, 0xE2, 2.0),  # general punctuation, symbols, arrows, dingbats
    (0xE3, 0xE9, 2.1),  # kana, CJK
    (0xEA, 0xED, 3.0),  # Yi, Hangul syllables
    (0xEE, 0xEF, 2.0),  # private use, CJK compatibility, variation selectors, half-width forms
    (0xF0, 0xF4, 4.0),  # emoji, rare CJK: a token a byte
)


def _byte_rates() -> dict[float, bytes]:
    """Tokens per byte, grouped by rate. A character's rate sits on its lead byte; continuation
    bytes (0x80–0xBF), spaces, ASCII letters and punctuation cost nothing here (words and runs of
    punctuation are counted apart)."""
    rates: dict[int, float] = dict.fromkeys(b"0123456789", 1.0)
    for first, last, rate in _LEAD_RATES:
        rates.update(dict.fromkeys(range(first, last + 1), rate))
    grouped: dict[float, bytearray] = {}
    for byte, rate in rates.items():
        if rate:
            grouped.setdefault(rate, bytearray()).append(byte)
    return {rate: bytes(members) for rate, members in grouped.items()}


_RATES = _byte_rates()
#: A space before a character outside ASCII: byte-level vocabularies with few merges for a script
#: keep it a token of its own.
_SPACE_BEFORE_OTHER = re.compile(rb" (?=[\xc2-\xf4])")
_SPACE_OTHER = 0.2
#: Runs of two or more spaces (indentation, aligned tables): SentencePiece vocabularies make
#: several tokens of them.
_SPACE_RUN = re.compile(rb"  +")
_SPACE_RUN_CHARACTER = 0.35
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
    total += _SPACE_OTHER * len(_SPACE_BEFORE_OTHER.findall(data))
    spaces = _SPACE_RUN.findall(data)
    total += _SPACE_RUN_CHARACTER * sum(map(len, spaces))
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
