"""A second look: a flagged answer asked again from the one sentence that answers its question.

A small model shown three passages often takes the number beside the answer, or one from the
wrong passage, though the sentence that answers is among them; shown that sentence alone, it
states the answer. So when the answer to a question for a number, date or time is flagged and
the grounding found a sentence that answers the question's terms (the one it offers the person,
"Your documents say: …"), the model is asked once more from that sentence alone
(:func:`worth_a_second_look`), and its new answer replaces the first only when it stands
(:func:`confirms`): supported by the passages, and every value of the kind asked it gives is one
that sentence holds, not a label ("section *10*", "Form *17*"). A new answer that states the
value and goes on to sums of its own is kept to the opening that stands (:func:`what_stands`).

Measured on the recorded answers of ``bench/bench_quality.py`` (seed 24301, starter model): the
second look turned 8 of 58 answers from wrong to right and none from right to wrong; without the
label and kind rules it also made two wrong answers look right ("10" of "section 10 inspection"
for a dam's height, a sentence about a train for "which company built it").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from imprint_desktop.core.research.grounding.anchors import (
    Anchor,
    anchors_in,
    same_value,
    year_like,
)
from imprint_desktop.core.research.grounding.answer import (
    answer_sentences,
    checker_for,
    ground,
    ground_by,
)
from imprint_desktop.core.research.grounding.checker import Checker
from imprint_desktop.core.research.grounding.passages import PassageText
from imprint_desktop.core.research.grounding.question import Question
from imprint_desktop.core.research.grounding.words import WORD, stems_of, word_set

#: The kinds of value a second look is asked for: one the sentence holds, which can be checked.
_CHECKABLE = frozenset(("number", "date", "time"))
#: The most "|" one table row of a few cells is written with.
_ROW_BARS = 8
#: Words after which a number is a label, not a value ("section 10", "Form 17", "Q2").
_LABELS = word_set(
    "section sections clause form page pages table item items no number figure part chapter "
    "schedule appendix annex class phase stage zone route line grade step rule article q "
    "paragraph version issue ref reference code"
)


@dataclass(frozen=True, slots=True)
class SecondLook:
    """The sentence to ask again from, and the passage it stands in."""

    passage: int
    sentence: str


def worth_a_second_look(
    question: str, answer: str, passages: Sequence[PassageText]
) -> SecondLook | None:
    """The sentence to ask ``question`` again from, when ``answer`` is flagged and the passages
    hold a sentence that answers it; None otherwise (the answer stands, or nothing would do
    better). A question that asks more than one thing is never asked again from one sentence."""
    checker = checker_for(question, passages)
    asked = checker.question
    if asked.wants not in _CHECKABLE or _asks_several(question):
        return None
    if checker.unnamed or checker.narrowed_to_nothing():
        return None  # what it asks about is in nothing found: no sentence answers it
    view = ground_by(checker, answer).grounding
    if view.verdict not in ("partly", "unsupported") or not _one_statement(view.offered):
        return None
    held = stems_of(view.offered)
    kind_words = asked.terms - set(asked.key) - set().union(*asked.subjects)
    named = asked.names_subject(held) and not held.isdisjoint(kind_words)
    if asked.key and held.isdisjoint(asked.key) and not named:
        # It holds none of what the question asks about in its own words, nor names its
        # subject with what it asks of it ("the list *price* of the *Kestrel*").
        return None
    return SecondLook(view.offered_from, view.offered)


def _one_statement(sentence: str) -> bool:
    """Whether ``sentence`` states one thing: a sentence or one table row, not a table a search
    cut onto one line ("| Scheme | £m | |---|---| | Wath End … | 3.9 | … in 2023."), whose
    values belong to many rows and the prose after them."""
    return bool(sentence) and "---" not in sentence and sentence.count("|") <= _ROW_BARS


def what_stands(
    question: str, again: str, passages: Sequence[PassageText], look: SecondLook
) -> str:
    """``again``, the answer asked from ``look``'s sentence, or the longest run of its opening
    sentences that stands (:func:`confirms`), its last one cut before a clause of its own if
    need be: a small model asked again often states the value and then goes on to sums or
    claims of its own ("27 days of annual leave. So, 27 × 2 = 54 days"; "in 1962, when his
    former pupil, who founded the company, …"). "" when no opening of it stands."""
    pieces = answer_sentences(again)
    for size in range(len(pieces), 0, -1):
        before = "".join(pieces[: size - 1])
        # The whole of its last sentence, then that sentence up to a clause of its own ("… in
        # 1962, when his former pupil, who founded the company, …": "… in 1962.").
        for last in (pieces[size - 1], *_clause_openings(pieces[size - 1])):
            opening = (before + last).strip()
            if confirms(question, opening, passages, look):
                return opening
    return ""


#: Where a sentence goes on to a clause of its own: a comma before a word that opens one.
_CLAUSE = re.compile(
    r",\s+(?=(?:when|which|who|whose|where|while|and|but|as|because|after|before|since|so|"
    r"although|though|making|meaning|bringing)\b)",
    re.IGNORECASE,
)


def _clause_openings(sentence: str) -> list[str]:
    """``sentence`` cut before each clause of its own, longest first, each ended with a stop."""
    cuts = [match.start() for match in _CLAUSE.finditer(sentence)]
    return [sentence[:cut].rstrip() + "." for cut in reversed(cuts)]


def confirms(question: str, again: str, passages: Sequence[PassageText], look: SecondLook) -> bool:
    """Whether ``again``, the answer asked from ``look``'s sentence, stands: the passages support
    it, and it gives a value of the kind asked, each one the sentence holds as a value."""
    if not again.strip() or ground(question, again, passages).grounding.verdict != "supported":
        return False
    asked = Question.read(question)
    checker = Checker(asked, ())
    given = [a for a in anchors_in(again) if checker.wanted(a)]
    if asked.wants == "date" and not all(a.kind == "date" or year_like(a) for a in given):
        return False  # "0.7" is no year, though a bare number may be one
    held = [a for a in anchors_in(look.sentence, opening=True) if not _labelled(look.sentence, a)]
    return bool(given) and all(any(same_value(value, h) for h in held) for value in given)


def _labelled(text: str, anchor: Anchor) -> bool:
    """Whether the value ``anchor`` of ``text`` is a label: a number right after a word such as
    "section" or "form"."""
    before = WORD.findall(text[: anchor.start])
    return bool(before) and before[-1].lower() in _LABELS


#: Where a question asks a second thing ("… and who built it?", "… and how much …").
_AND_ASKS = re.compile(
    r"\b(?:and|or|as well as|also)\s+(?:who|what|when|where|which|how|why|whether)\b",
    re.IGNORECASE,
)


def _asks_several(question: str) -> bool:
    return _AND_ASKS.search(question) is not None or question.count("?") > 1
