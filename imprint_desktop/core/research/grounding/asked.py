"""Whether an answer gives what its question asks for, whatever each of its claims stands on.

Every claim of an answer can be true and the answer still not answer: "The last train leaves Crag
Quarry in winter [1]." to "What time …?" gives no time at all, and "The halt closed in 1947." to
"When did Crag Halt reopen?" gives a year its passage says of the closing. Checked claim by claim,
both are supported; read as an answer, both are wrong. So the answer as a whole is checked too:

- it says nothing the question does not say already ("The last train leaves in winter.");
- the question asks for a kind of value (a time, a date, a number, a name; "which form" one of
  several named things) and the answer gives none of that kind: it does not answer;
- every value of that kind it gives stands on a sentence holding fewer of the question's key
  terms (what it asks about: "reopen") than another sentence holding a value of that kind: the
  answer gives a true thing beside the answer, not the answer.

Before any answer, :func:`unmentioned` says whether what was found is about the question at all:
passages that hold none of its names and key terms ("What is the capital of Australia?" over a
railway's archive, or a made-up word a search by meaning matched to something) are no evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from imprint_desktop.core.research.grounding.anchors import Anchor, anchors_in
from imprint_desktop.core.research.grounding.checker import Checker, Verdict
from imprint_desktop.core.research.grounding.passages import PassageText, Unit, units_of
from imprint_desktop.core.research.grounding.question import Question
from imprint_desktop.core.research.grounding.words import (
    WORD,
    content_stems,
    stem_of,
    stems_of,
    word_set,
)

#: What each kind of value is called in a note.
_KIND_WORDS = {
    "time": "time",
    "date": "date or year",
    "number": "number",
    "name": "name",
    "which": "name, code or number",
}


def unanswered(checker: Checker, given: Sequence[tuple[Anchor, Verdict]], answer: str) -> str:
    """Why ``answer``, whose values ``given`` were checked as they stand, does not answer its
    question ("" when it does, or when the question does not say what kind of value it wants).
    An answer that says the documents do not answer is not asked this."""
    question = checker.question
    if _repeats(question, answer):
        return "the answer only repeats the question"
    return _kind_given(checker, given, answer) if question.wants else ""


def _kind_given(checker: Checker, given: Sequence[tuple[Anchor, Verdict]], answer: str) -> str:
    """Why ``answer`` does not give the kind of value its question asks for, or gives it only
    from a sentence about something else ("" when it does give it)."""
    question = checker.question
    kind = _KIND_WORDS[question.wants]
    wanted = [(anchor, verdict) for anchor, verdict in given if checker.wanted(anchor)]
    if not wanted and not any(checker.wanted(a) for a in anchors_in(answer, opening=True)):
        spelled = question.wants == "number" and not _NUMBER_WORDS.isdisjoint(
            WORD.findall(answer.lower())
        )
        return "" if spelled else f"the answer gives no {kind}, which the question asks for"
    key = set(question.key)
    if question.wants == "which" or not key or any(verdict.note for _, verdict in wanted):
        return ""  # nothing to compare with, or flagged already
    if not wanted:
        return ""
    # The sentences that hold a value of the kind asked, by how many of its key terms they hold:
    # the answer's values must come from one that holds as many as any.
    elsewhere = {
        unit.order: len(unit.about & key)
        for unit in checker.units
        if any(checker.wanted(a) for a in checker.anchors[unit.order])
    }
    most = max(elsewhere.values(), default=0)
    if most == 0 or any(
        verdict.unit is not None and len(verdict.unit.about & key) >= most for _, verdict in wanted
    ):
        return ""
    best = next(u for u in checker.units if elsewhere.get(u.order) == most)
    words = [word for stem, word in question.key.items() if stem in best.about]
    return f"the {kind} the answer gives is said of something else, not of {_quoted(words)}"


#: Numbers as words ("six permanent staff"): a number all the same.
_NUMBER_WORDS = word_set(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion dozen half once twice none"
)
#: Words an answer frames itself with, which say nothing of the documents.
_FRAMING = frozenset(stem_of(word) for word in ("answer", "question", "document", "passage"))


def _repeats(question: Question, answer: str) -> bool:
    """Whether ``answer`` says nothing but what ``question`` says: no word of its own that
    tells something, no number, date or name beyond the question's ("The last train leaves Crag
    Quarry in winter." to "What time does the last train leave Crag Quarry in winter?")."""
    own = content_stems(answer) - question.terms - _FRAMING
    values = [
        a
        for a in anchors_in(answer, opening=True)
        if a.key not in question.anchors and not question.names_subject(stems_of(a.text))
    ]
    return not own and not values and bool(content_stems(answer))


def _quoted(words: Sequence[str]) -> str:
    shown = [f"“{word}”" for word in dict.fromkeys(words)][:3]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def unmentioned(question: str, passages: Sequence[PassageText]) -> tuple[str, ...]:
    """The words of ``question`` that say what it is about (its names and key terms), when
    none of ``passages`` holds any of them; () when one does, or when it has no such words."""
    asked = Question.read(question)
    words = set(asked.key).union(*asked.subjects)
    if not words or not passages:
        return ()
    units: list[Unit] = []
    for passage in passages:
        units += units_of(passage, len(units))
    held = set().union(*(unit.about for unit in units)) if units else set()
    if held & set(words):
        return ()
    names = [n.text for n in _names(asked)]
    return tuple(dict.fromkeys([*asked.key.values(), *names]))


def _names(asked: Question) -> list[Anchor]:
    """The names ``asked`` gives, as it wrote them."""
    return [a for a in anchors_in(asked.text, opening=True) if a.kind == "name"]
