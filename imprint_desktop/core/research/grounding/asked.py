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

import itertools
import re
from collections.abc import Sequence

from imprint_desktop.core.research.grounding.anchors import (
    Anchor,
    anchors_in,
    part_of,
    same_value,
    year_like,
)
from imprint_desktop.core.research.grounding.checker import Checker, Verdict, wanted_by
from imprint_desktop.core.research.grounding.passages import PassageText, Unit, units_of
from imprint_desktop.core.research.grounding.question import Question
from imprint_desktop.core.research.grounding.words import (
    MEASURES,
    UNITS,
    WORD,
    content_stems,
    listed,
    stem_of,
    stems_of,
    word_set,
)
from imprint_desktop.core.workspace.query_words import is_function_word

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
    if unit := _other_measure(question, [anchor for anchor, _ in given]):
        return unit
    if year := _only_years(checker, [anchor for anchor, _ in given], answer):
        return year
    if question.wants and (why := _kind_given(checker, given, answer)):
        return why
    return _names_of_another_kind(question, answer) or _later_asks_given(checker, answer)


def _later_asks_given(checker: Checker, answer: str) -> str:
    """Why ``answer`` gives nothing of the kind a later ask of its question wants ("When did
    Gannet Point become automatic *and who was its last keeper*?" answered with a year and
    "the person who was its last keeper"); "" when it gives each, or the question asks once.
    Only values the question does not name itself count."""
    question = checker.question
    parts = _SECOND_ASK.split(question.text)
    if len(parts) < 2:
        return ""
    values = [
        a
        for a in anchors_in(answer, opening=True)
        if a.key not in question.anchors and not question.names_subject(stems_of(a.text))
    ]
    words = WORD.findall(answer.lower())
    for part in parts[1:]:
        asked = Question.read(part)
        if not asked.wants or any(wanted_by(asked, value) for value in values):
            continue
        if asked.wants == "number" and not _NUMBER_WORDS.isdisjoint(words):
            continue
        if asked.wants == "which" and _names_a_thing(asked, answer):
            continue
        return f"the answer gives no {_KIND_WORDS[asked.wants]} for “{part.strip(' ?')}”"
    return ""


#: The words before a unit a question asks its answer in ("how *many* megalitres", "*in*
#: millimetres"); a unit's word elsewhere is part of a name ("a water meter").
_ASKED_IN = word_set("many much in into")


#: Each measure of :data:`.words.MEASURES` in a note's words.
_MEASURE_WORDS = {
    "length": "a length",
    "mass": "a weight",
    "volume": "a volume",
    "money": "a sum of money",
    "time": "a time",
    "share": "a share",
}


def _other_measure(question: Question, values: Sequence[Anchor]) -> str:
    """Why the answer's values measure something else than the question asks ("the answer gives
    11.2 km, a length, where the question asks for megalitres"); "" when any value is in a unit
    of the measure asked, or the question asks for no unit, or the answer names none."""
    words = WORD.findall(question.text)
    named = [
        word
        for before, word in itertools.pairwise(words)
        if before.lower() in _ASKED_IN and UNITS.get(word.lower(), "") in MEASURES
    ]
    asked = {MEASURES[UNITS[word.lower()]] for word in named}
    given = [value for value in values if value.kind == "number" and value.unit in MEASURES]
    counted = [value for value in values if value.kind == "number" and not value.unit]
    if question.counts and given and not counted and not asked:
        # "How many journeys …?" answered "38,000 hours": a measure is no count of them.
        said = listed(list(dict.fromkeys(value.text for value in given)))
        measure = _MEASURE_WORDS.get(MEASURES[given[0].unit], "a measure")
        asks = f"how many {question.counts}"
        return f"the answer gives {said}, {measure}, where the question asks {asks}"
    if not asked or not given or any(MEASURES[value.unit] in asked for value in given):
        return ""
    said = listed(list(dict.fromkeys(value.text for value in given)))
    measure = _MEASURE_WORDS[MEASURES[given[0].unit]]
    return f"the answer gives {said}, {measure}, where the question asks for {listed(named)}"


#: "How long …?", "How high …?": a question for a measure, which a year is not.
_HOW_MEASURE = re.compile(
    r"^\s*how\s+(long|tall|high|deep|wide|far|heavy|big|large|much)\b", re.IGNORECASE
)


def _only_years(checker: Checker, values: Sequence[Anchor], answer: str) -> str:
    """Why the answer gives only years where the question asks for a measure or a count ("The
    halt closed in 1947." to "How long is the platform?"; "… in 2025-26 …" to "What was the
    water bill?"; "… a pilot project in 2025" to "How many smart meters …?"); "" otherwise. To
    "how many", only a year written as one counts ("in 2025", not "1500 members")."""
    question = checker.question
    asked = _HOW_MEASURE.match(question.text)
    # A question for a number that names its measure ("What was the water *bill*?").
    number = question.wants == "number"
    measures = checker.measures if number else frozenset()
    count = question.how_many
    wanted = [value for value in values if checker.wanted(value)]
    if (asked is None and not measures and not count) or not wanted:
        return ""
    if not all(year_like(value) for value in wanted):
        return ""
    if asked is None and not measures and not all(_as_a_year(answer, v) for v in wanted):
        return ""
    said = listed(list(dict.fromkeys(value.text for value in wanted)))
    if asked is not None:
        return f"the answer gives only {said}, a year, where the question asks how {asked.group(1)}"
    if not measures:
        return f"the answer gives only {said}, a year, where the question asks how many"
    kinds = listed([_MEASURE_WORDS.get(kind, "a measure") for kind in sorted(measures)])
    return f"the answer gives only {said}, a year, where the question asks for {kinds}"


def _as_a_year(answer: str, value: Anchor) -> bool:
    """Whether ``answer`` writes ``value`` as a year: after "in", "since" and the like."""
    pattern = rf"\b(?:in|since|until|by|from|during|of)\s+{re.escape(value.text)}\b"
    return re.search(pattern, answer, re.IGNORECASE) is not None


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
        named = question.wants == "which" and _names_a_thing(question, answer)
        if spelled or named:
            return ""
        return f"the answer gives no {kind}, which the question asks for"
    key = set(_asking_part(question).key)
    if question.wants == "which" or not key or any(verdict.note for _, verdict in wanted):
        return ""  # nothing to compare with, or flagged already
    if not wanted:
        return ""
    # The sentences that hold a value of the kind asked, by how many of its key terms they hold:
    # the answer's values must come from one that holds as many as any.
    # A sentence that holds no value but the answer's (or its parts: "| 1857 | … 1 November |")
    # stands with the answer, however many key terms it holds.
    given_values = [anchor for anchor, _ in wanted]

    def another_value(held: Anchor) -> bool:
        if checker.units_asked and held.unit not in checker.units_asked:
            return False  # not in the unit asked ("60 metres" to "… in kilometres?")
        return checker.wanted(held) and not any(
            same_value(value, held) or part_of(value, held) for value in given_values
        )

    elsewhere = {
        unit.order: len(unit.about & key)
        for unit in checker.units
        if any(
            another_value(a) and not checker.counts_else(unit.text, a)
            for a in checker.anchors[unit.order]
        )
    }
    most = max(elsewhere.values(), default=0)
    if most == 0 or any(
        verdict.unit is not None and len(verdict.unit.about & key) >= most for _, verdict in wanted
    ):
        return ""
    best = next(u for u in checker.units if elsewhere.get(u.order) == most)
    words = [word for stem, word in question.key.items() if stem in best.about]
    return f"the {kind} the answer gives is said of something else, not of {_quoted(words)}"


def _names_of_another_kind(question: Question, answer: str) -> str:
    """Why the names ``answer`` gives to a "Which <kind> …?" ask of ``question`` are no
    <kind>'s ("" when one may be): the answer itself writes each of them before a plural noun
    of another kind ("the one with the *Bramley trees*" to "Which orchard has apple scab?")."""
    asked = Question.read(_SECOND_ASK.split(question.text)[0])
    kind = asked.kind
    values = anchors_in(answer, opening=True)
    names = [
        a
        for a in values
        if a.kind == "name" and wanted_by(asked, a) and not stems_of(a.text) <= asked.terms
    ]
    if not kind or not names:
        return ""
    nouns: list[str] = []
    for name in names:
        for found in re.finditer(rf"\b{re.escape(name.text)}\b", answer):
            after = WORD.findall(answer[found.end() :])[:1]
            noun = after[0] if after else ""
            if (
                not noun.islower()
                or not noun.endswith("s")
                or is_function_word(noun)
                or stem_of(noun) == stem_of(kind)
            ):
                return ""
            nouns.append(f"{name.text} {noun}")
    named = list(dict.fromkeys(nouns))
    return f"the answer names {listed(named)}, not which {kind}" if named else ""


#: Words that stand for a thing without naming it ("the *one* that is handed in").
_STAND_INS = word_set("one ones thing things kind sort type")


def _names_a_thing(question: Question, answer: str) -> bool:
    """Whether ``answer`` to a "which …?" question opens by naming the thing with a common noun
    of its own ("A quokka was seen." or "It is a quokka." to "Which animal was seen?"): its
    first content word is not the question's, nor a stand-in ("The one that is handed in …"),
    nor an adverb ("Probably …")."""
    for word in (word.lower() for word in WORD.findall(answer)):
        if is_function_word(word) or len(word) < 3:
            continue
        stem = stem_of(word)
        return not (
            stem in question.terms
            or stem in _FRAMING
            or word in _STAND_INS
            or word.endswith("ly")
            or word.isdigit()
        )
    return False


#: Where a question asks a second thing ("When was it first lit, *and who* built it?").
_SECOND_ASK = re.compile(
    r"(?:,\s*|;\s*|\s+)and\s+(?=(?:who|what|when|where|which|how|why)\b)", re.IGNORECASE
)


def _asking_part(question: Question) -> Question:
    """The part of ``question`` that asks for the kind of value it wants: its first ask, when
    it asks two things ("When was it first lit" of "When was it first lit, and who built it?"),
    so the terms of the other ask ("built") are not counted against a date."""
    parts = _SECOND_ASK.split(question.text)
    if len(parts) < 2:
        return question
    first = Question.read(parts[0])
    return first if first.wants == question.wants and first.key else question


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


#: A question for a value ("How many …?", "Who …?") is about something when it has this many key
#: terms at least; with fewer it is as open as "Anything unusual?".
_SPECIFIC_TERMS = 2


def unmentioned(question: str, passages: Sequence[PassageText]) -> tuple[str, ...]:
    """The words of ``question`` that say what it is about (its names and key terms), when
    none of ``passages`` holds any of them; () when one does, or when it has no such words.

    Only a question about something in particular can be answered "not found" so: one that
    names something past its first word ("the capital of *Australia*"), or asks for a value
    with key terms enough to say of what ("How many *unicorns* *live* here?"). An open question
    ("Anything unusual?", "Tell me two things", "Summarize this.") is the model's to answer from
    whatever was found, however few of its words the documents use."""
    asked = Question.read(question)
    words = set(asked.key).union(*asked.subjects)
    if not words or not passages:
        return ()
    named = any(name.start > 0 for name in _names(asked))
    if not (named or _only_terms(question) or (asked.wants and len(asked.key) >= _SPECIFIC_TERMS)):
        return ()
    units: list[Unit] = []
    for passage in passages:
        units += units_of(passage, len(units))
    held = set().union(*(unit.about for unit in units)) if units else set()
    if held & set(words):
        return ()
    names = [n.text for n in _names(asked)]
    return tuple(dict.fromkeys([*asked.key.values(), *names]))


#: Words that leave open what a question is about ("Anything unusual?").
_OPEN = word_set("anything something everything nothing anyone someone everyone whatever")


def _only_terms(question: str) -> bool:
    """Whether ``question`` is nothing but terms, as typed into a search box ("zqxjkv", "apple
    scab"): no function word, nothing that leaves it open."""
    words = [word.lower() for word in WORD.findall(question)]
    return bool(words) and not any(is_function_word(word) or word in _OPEN for word in words)


def _names(asked: Question) -> list[Anchor]:
    """The names ``asked`` gives, as it wrote them."""
    return [a for a in anchors_in(asked.text, opening=True) if a.kind == "name"]
