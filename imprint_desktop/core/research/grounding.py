"""Which passage sentence each claim of an answer stands on, and what nothing supports.

A small model often states a number, date or name that is not the one its passages give — the
number in the next table row, another lighthouse's year, a construction cost offered as a ticket
price — in the same confident voice as a right answer. This module checks an answer against the
passages of its reply deterministically (no model request) and says, per sentence of the answer:

- which passage sentences hold what it claims (its numbers with their units, dates, times and
  names), so the answer can cite them inline and its Sources quote them; and
- which of its numbers, dates and names no passage holds ("not in your documents"), or only a
  passage sentence about something else holds ("the passage says this of Gannet Point").

The call tree::

    ground(question, answer, passages)        -> GroundingView (and the answer with its cites)
      _units(passage)                          a passage's sentences, list items and table rows,
                                               each with its heading, title and file name
      _anchors(text)                           numbers (value + unit), dates, times, names
      _Question                                the question's subject names and key terms,
                                               weighed by how rare they are in the passages
      _Checker.check(anchor)                   the sentences holding it; is one about the question?

A sentence *about the question* holds the anchor and nothing says it is about something else:

- **another subject**: a sentence holding the question's terms and more of them (a superset) holds
  a different value of the same kind ("Marrow Head was automated in 1991" beside "Gannet Point
  … 1986"); within one sentence, the anchor's clause names another name and a clause naming the
  question's subject holds a rival value; within one table row, the anchor's cell is labelled
  otherwise than a cell the question names ("Q2: 61%" when it asks about Q1);
- **another matter**: the question's key terms (what it asks about, not its subject's name nor
  the kind of answer it wants — "ticket", not "Skerry Rock" or "cost") are not all in the
  documents, and the sentence holds none of them.

The rules are lenient on purpose: a right answer flagged teaches a person to ignore the flags, so a
sentence is only said to be about something else when the passages show what it is about instead.
Paraphrase costs nothing (words are compared by their first letters, units by what they measure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from imprint_desktop.core.research.events import ClaimView, GroundingVerdict, GroundingView
from imprint_desktop.core.research.seed import STOPWORDS
from imprint_desktop.core.workspace.dating import MONTHS

#: Words compared by their first letters: "restored" finds "restoration".
_STEM = 5
#: A quote longer than this is cut around what it is quoted for; a table row gets twice as much.
QUOTE_CHARS = 240

NOT_IN_DOCUMENTS = "not in your documents"


@dataclass(frozen=True, slots=True)
class PassageText:
    """One numbered passage of a reply, as grounding reads it."""

    id: int
    text: str
    source: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class Grounded:
    """An answer checked against its passages: the answer with the citations the engine adds,
    what each claim stands on, and for each cited passage the sentences quoted for it."""

    answer: str
    grounding: GroundingView
    quotes: dict[int, str] = field(default_factory=dict)


# --- words -----------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that say what kind of answer a question wants, not what it is about.
_ANSWER_KIND = _words(
    "cost costs costed price priced prices much many long old year years date dates day time "
    "times number numbers amount total value figure level size big large high deep wide far "
    "often name named called happen happened take took taken make made get got use used "
    "first last main exactly approximately roughly per across within among along around "
    "behind beyond near toward towards upon via without onto inside outside throughout "
    "average overall currently current now today"
)
_STOP = STOPWORDS["en"] | _ANSWER_KIND
#: What a name is often followed by in a question, as part of it ("Skerry Rock lighthouse",
#: "Lakeside station"): the subject's kind, not what the question asks about.
_KINDS_OF_PLACE = _words(
    "lighthouse lighthouses light station halt railway line reservoir dam viaduct bridge works "
    "depot society company committee council board school church hall house street road river "
    "lake bay point head rock island harbour port wharf quarry locomotive engine ship village "
    "town city county district region site plant centre center building tower farm estate park "
    "mill mine canal tunnel treatment"
)


def _stems(text: str) -> set[str]:
    return {_stem(word) for word in _WORD.findall(text.lower())}


def _stem(word: str) -> str:
    """``word`` as words are compared: without its ending ("opened", "opening", "keepers" are
    "open", "open", "keep"), by its first letters."""
    for ending in ("ing", "ed", "es", "er", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3 and not word.endswith("ss"):
            word = word[: -len(ending)]
            break
    return word[:_STEM]


def _content(text: str) -> set[str]:
    """The stems of the words of ``text`` that say what it is about (no function words,
    numbers or units)."""
    return {
        _stem(word)
        for word in _WORD.findall(text.lower())
        if len(word) > 2 and word not in _STOP and word not in _UNITS and not word.isdigit()
    }


# --- anchors: what an answer claims that can be checked ------------------------------------------

_MONTH = r"(?P<{0}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{0}>[0-3]?\d)(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b"),
    re.compile(
        r"\b"
        + _DAY.format("d")
        + r"\s+(?:of\s+)?"
        + _MONTH.format("mn")
        + r"(?:,?\s+(?P<y>\d{4}))?\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b" + _MONTH.format("mn") + r"\s+" + _DAY.format("d") + r"(?:,?\s+(?P<y>\d{4}))?\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b" + _MONTH.format("mn") + r",?\s+(?P<y>\d{4})\b", re.IGNORECASE),
)
_TIME = re.compile(
    r"(?<![\d:.])(?P<h>[0-2]?\d)[:.](?P<mi>[0-5]\d)\s*(?P<ap>[ap]\.?m\.?)?(?![\d:])", re.IGNORECASE
)
_NUMBER = re.compile(
    r"(?<![\w.])(?<!\d,)(?P<cur>[£$€]\s?)?"
    r"(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<mult>million|thousand|billion|bn|m\b|k\b))?"
    r"(?:\s?(?P<unit>%|per ?cent|[^\W\d_]+))?",
    re.IGNORECASE,
)
#: Units by what they measure: "84 metres" is "84 m".
_UNITS = {
    unit: canonical
    for canonical, names in {
        "%": "% percent per cent pct",
        "m": "m metre metres meter meters",
        "km": "km kilometre kilometres kilometer kilometers",
        "mm": "mm millimetre millimetres millimeter millimeters",
        "cm": "cm centimetre centimetres",
        "ft": "ft foot feet",
        "mi": "mile miles",
        "t": "t tonne tonnes ton tons",
        "kg": "kg kilogram kilograms kilo kilos",
        "l": "l litre litres liter liters",
        "ml": "ml megalitre megalitres",
        "gbp": "£ pound pounds gbp",
        "usd": "$ dollar dollars usd",
        "eur": "€ euro euros eur",
        "min": "min mins minute minutes",
        "h": "h hr hrs hour hours",
        "s": "s sec secs second seconds",
        "day": "day days",
        "week": "week weeks",
        "month": "month months",
        "yr": "year years",
        "nmi": "nautical",
    }.items()
    for unit in names.split(" ")
    if unit
} | {"per cent": "%", "percent": "%"}
_MULTIPLIERS = {"thousand": 10**3, "k": 10**3, "million": 10**6, "billion": 10**9, "bn": 10**9}


@dataclass(frozen=True, slots=True)
class Anchor:
    """One checkable thing in a text: ``key`` is compared, ``unit`` must agree where both say."""

    kind: str  # "number", "date", "time" or "name"
    key: tuple[object, ...]
    text: str  # as written
    start: int
    unit: str = ""


def _anchors(text: str, *, names: bool = True, opening: bool = False) -> list[Anchor]:
    """The numbers, dates, times and (with ``names``) names in ``text``, each once by key, in
    order. A full date also counts as its year and its day and month, so "3 March 1986" is found
    by "1986"; what a date or time is written with is not counted again as a number."""
    found: list[Anchor] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if not free(*match.span()):
                continue
            parts = match.groupdict()
            month = MONTHS.get((parts.get("mn") or "").lower().rstrip("."), 0) or int(
                parts.get("m") or 0
            )
            day, year = int(parts.get("d") or 0), int(parts.get("y") or 0)
            if not 1 <= month <= 12 or day > 31:
                continue
            taken.append(match.span())
            key = ("date", year, month, day)
            found.append(Anchor("date", key, match.group(), match.start()))
    for match in _TIME.finditer(text):
        hour, minute = int(match.group("h")), int(match.group("mi"))
        if not free(*match.span()) or hour > 24:
            continue
        ap = (match.group("ap") or "").lower()
        if ":" not in match.group() and not ap:
            continue  # "0.00" is a number; "9.40 am" is a time
        if ap.startswith("p") and hour < 12:
            hour += 12
        taken.append(match.span())
        found.append(Anchor("time", ("time", hour, minute), match.group(), match.start()))
    for match in _NUMBER.finditer(text):
        number = _number(match) if free(*match.span("n")) else None
        if number is not None:
            found.append(number)
    if names:
        found += _names(text, opening=opening)
    found.sort(key=lambda anchor: anchor.start)
    kept: dict[tuple[object, ...], Anchor] = {}
    for anchor in found:
        kept.setdefault((*anchor.key, anchor.unit), anchor)
    return list(kept.values())


def _number(match: re.Match[str]) -> Anchor | None:
    """The number ``match`` of :data:`_NUMBER` found, with its unit (None for a small bare
    number, which tells nothing)."""
    raw = match.group("n")
    value = Decimal(raw.replace(",", ""))
    mult = (match.group("mult") or "").lower()
    unit_word = (match.group("unit") or "").lower()
    currency = (match.group("cur") or "").strip()
    n_end = match.end("n")
    m_end = match.end("mult") if match.group("mult") else n_end
    if mult == "m" and currency:  # "£15.4m": a million
        value *= _MULTIPLIERS["million"]
        unit_word = ""
    elif mult == "m":  # "5 m long": metres, not a million
        unit_word, mult = "m", ""
    else:
        value *= _MULTIPLIERS.get(mult, 1)
    unit = _UNITS.get(unit_word, "")
    end = match.end("unit") if unit and match.group("unit") and unit_word != "m" else m_end
    if currency:
        unit = _UNITS.get(currency, unit)
    if not unit and not currency and not mult and "." not in raw and value < 10:
        return None  # "one of 3 lights": too common to tell anything
    written = match.string[match.start() : end].rstrip()
    # Compared exactly: "18.50" is "18.5", but "1.0000000000000011" is not "1".
    exact: tuple[object, ...] = (
        "number",
        float(value) if value == value.to_integral_value() else str(value.normalize()),
    )
    return Anchor("number", exact, written, match.start(), unit)


#: Capitalised words that begin sentences or phrases rather than name anything.
_NOT_NAMES = _words(
    "the a an in on at it its this that these those there their they he she his her we i you "
    "yes no however according based also and but or so then when where what which who how why "
    "after before during since until from to for of by with as if while although because "
    "sources source passage passages document documents imprint answer question note "
    "monday tuesday wednesday thursday friday saturday sunday"
) | frozenset(MONTHS)


def _names(text: str, *, opening: bool = False) -> list[Anchor]:
    """Runs of capitalised words ("Brindley", "Gannet Point", "Ruth Calloway"); the first word of
    a sentence alone only with ``opening`` (in a passage: there a word too many costs nothing)."""
    out: list[Anchor] = []
    for match in re.finditer(r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*", text):
        words = match.group().split()
        start = match.start()
        while words and words[0].lower().strip("'’") in _NOT_NAMES:
            start += len(words[0]) + 1
            words = words[1:]
        words = [w.removesuffix("'s").removesuffix("’s") for w in words]
        words = [w for w in words if w.lower() not in _NOT_NAMES]
        if not words or all(len(w) < 2 for w in words):
            continue
        before = text[: match.start()].rstrip()
        opens = not before or before.endswith((".", "!", "?", ":", "\n", "-", "*", "•"))
        if opens and len(words) == 1 and start == match.start() and not opening:
            continue  # a sentence's first word, alone: a word, not a name, as often as not
        key = ("name", *sorted(w.lower() for w in words))
        out.append(Anchor("name", key, " ".join(words), start))
    return out


# --- units: what a passage says, sentence by sentence ---------------------------------------------

_CELL = re.compile(r"(?:^|;\s+)(?P<label>[^:;]{1,60}):\s+(?P<value>[^;]*)")
_SENTENCE_END = re.compile(r"(?<![ (][A-Z]\.)(?<=[.!?])\s+(?=[\"“(\[A-Z0-9£$€])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_CITE = re.compile(r"\s*\[\d{1,6}(?:\s*(?:,|;|-|–|and)\s*\d{1,6})*\]")


@dataclass(frozen=True, slots=True)
class _Unit:
    """A sentence, list item or table row of a passage, with what it stands under."""

    passage: int
    text: str
    context: str  # heading, title and file name: what the passage is about
    row: bool
    order: int

    @property
    def words(self) -> set[str]:
        return _stems(self.text)

    @property
    def about(self) -> set[str]:
        return _stems(self.text) | _stems(self.context)


def _is_row(line: str) -> bool:
    stripped = line.strip()
    if stripped.startswith("|") and stripped.count("|") >= 3:
        return True
    return len(_CELL.findall(stripped)) >= 2 or stripped.count(" | ") >= 2


def _units(passage: PassageText, first: int) -> list[_Unit]:
    """The sentences, list items and table rows of ``passage``: rows and list items are units
    whole; a paragraph's wrapped lines are joined before it is cut into sentences."""
    source_words = " ".join(re.split(r"[/\\_.-]+", passage.source))
    heading = ""
    out: list[_Unit] = []
    paragraph: list[str] = []

    def add(text: str, *, row: bool) -> None:
        text = " ".join(text.split())
        if text:
            context = f"{heading} {passage.title} {source_words}"
            out.append(_Unit(passage.id, text, context, row, first + len(out)))

    def flush() -> None:
        if paragraph:
            for sentence in _SENTENCE_END.split(" ".join(paragraph)):
                add(sentence, row=False)
            paragraph.clear()

    for line in passage.text.splitlines():
        stripped = line.strip()
        head = _HEADING.match(line)
        if not stripped or re.fullmatch(r"[|:\-\s=~^*#+`]+", stripped):
            flush()
        elif head or (
            stripped.upper() == stripped
            and sum(c.isalpha() for c in stripped) > 3
            and len(_WORD.findall(stripped)) >= 2
        ):
            flush()  # a heading, or a line in capitals that stands as one
            heading = head.group(1) if head else stripped
            add(heading, row=False)
        elif _is_row(stripped):
            flush()
            add(stripped.strip("| "), row=True)
        elif _LIST_ITEM.match(line):
            flush()
            paragraph.append(_LIST_ITEM.sub("", line, count=1))
        else:
            paragraph.append(stripped)
    flush()
    return out


def _clauses(text: str) -> list[tuple[int, str]]:
    """``text`` cut at semicolons, ", " and " and ", each part with where it starts."""
    parts: list[tuple[int, str]] = []
    start = 0
    for match in re.finditer(r";\s+|,\s+|\s+and\s+|\s+while\s+|\s+whereas\s+", text):
        parts.append((start, text[start : match.start()]))
        start = match.end()
    parts.append((start, text[start:]))
    return parts


# --- the question ---------------------------------------------------------------------------------


@dataclass
class _Question:
    """What a question asks about: its subject's names and its key terms (weighed by rarity)."""

    text: str
    subjects: list[set[str]]  # the stems of each name it names
    key: dict[str, str]  # key term stem -> the word as the question wrote it
    terms: set[str]  # every content stem, subjects and key terms alike
    units: set[str]  # the units the question names ("in millimetres")
    anchors: set[tuple[object, ...]]  # what it says itself, which an answer may repeat
    wants: str  # the kind of value it asks for ("name", "date", "number"), "" when unclear
    years: set[int]  # the years it names ("in 2021")

    @classmethod
    def read(cls, question: str) -> _Question:
        names = _names(question)
        for match in re.finditer(r"[A-Z][\w'’-]+", question):  # its first word too, if a name
            word = match.group()
            lower = word.lower()
            if lower in _NOT_NAMES or lower in _STOP or any(word in n.text for n in names):
                continue
            names.append(Anchor("name", ("name", lower), word, match.start()))
        subjects = [_stems(n.text) for n in names]
        subject_stems = set().union(*subjects) if subjects else set()
        words = _WORD.findall(question)
        # The word after a name belongs to it ("Skerry Rock lighthouse", "Lakeside station").
        after_name: set[str] = set()
        for n in names:
            rest = _WORD.findall(question[n.start + len(n.text) :])
            if rest and rest[0].lower() in _KINDS_OF_PLACE:
                after_name.add(_stem(rest[0].lower()))
        key: dict[str, str] = {}
        terms: set[str] = set()
        units: set[str] = set()
        for word in words:
            lower = word.lower()
            if lower in _UNITS and lower not in ("m", "s", "h", "t", "l"):
                units.add(_UNITS[lower])
            if lower in STOPWORDS["en"] or (len(lower) < 3 and not any(c.isdigit() for c in lower)):
                continue
            terms.add(_stem(lower))
            stem = _stem(lower)
            if lower in _ANSWER_KIND or lower in _UNITS or stem in subject_stems:
                continue
            if stem in after_name or lower.isdigit():
                continue
            key.setdefault(stem, lower)
        anchors = {a.key for a in _anchors(question)}
        opening = " ".join(words[:3]).lower()
        wants = (
            "name"
            if re.search(r"\b(?:who|whom|whose)\b", opening)
            else "date"
            if re.search(r"\b(?:when|year|date)\b", question.lower())
            else "number"
            if re.search(
                r"\bhow (?:much|many|long|high|deep|far|old|big|large|wide|tall|often)\b",
                question.lower(),
            )
            or units
            else ""
        )
        return cls(
            question, subjects, key, terms | subject_stems, units, anchors, wants, _years(question)
        )

    def names_subject(self, words: set[str]) -> bool:
        return any(subject <= words for subject in self.subjects)


# --- checking -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Verdict:
    unit: _Unit | None  # the sentence that supports it, or that it was taken from
    note: str = ""  # empty when supported


#: Words by which a sentence of an answer speaks of what an earlier one named.
_PRONOUN = re.compile(r"\b(?:it|its|it's|she|her|he|his|they|their|there)\b", re.IGNORECASE)


class _Checker:
    def __init__(self, question: _Question, units: Sequence[_Unit]) -> None:
        self.question = question
        self.units = units
        self.refers = False  # the answer names the question's subject
        self.anchors = {unit.order: _anchors(unit.text, opening=True) for unit in units}
        #: What a sentence is compared on: the question's key terms and its subject's names.
        self.terms = set(question.key).union(*question.subjects)
        count = max(1, len(units))
        self.weights = {
            term: math.log(1 + count / (1 + sum(term in unit.about for unit in units)))
            for term in self.terms
        }
        everywhere = set().union(*(unit.about for unit in units)) if units else set()
        #: Key terms no passage holds: the question asks about something the documents lack.
        self.missing = [word for stem, word in question.key.items() if stem not in everywhere]

    def holders(self, anchor: Anchor) -> list[_Unit]:
        return [
            unit
            for unit in self.units
            if any(_same(anchor, other) for other in self.anchors[unit.order])
        ]

    def coverage(self, unit: _Unit) -> set[str]:
        return unit.about & self.terms

    def score(self, unit: _Unit) -> float:
        return sum(self.weights.get(term, 0.0) for term in self.coverage(unit))

    def check(self, anchor: Anchor, claim: str) -> _Verdict:
        """Whether a passage sentence about the question holds ``anchor`` of sentence ``claim``
        of the answer (or one the claim restates, whatever the question)."""
        holders = self.holders(anchor)
        if not holders:
            return _Verdict(None, NOT_IN_DOCUMENTS)
        verdicts = [
            (unit, "" if self._restates(claim, anchor, unit) else self._about_else(anchor, unit))
            for unit in holders
        ]
        good = [unit for unit, note in verdicts if not note]
        if good:
            return _Verdict(max(good, key=lambda u: (self.score(u), -u.order)))
        unit, note = max(verdicts, key=lambda pair: (self.score(pair[0]), -pair[0].order))
        return _Verdict(unit, note)

    def _restates(self, claim: str, anchor: Anchor, unit: _Unit) -> bool:
        """Whether ``claim`` says what the clause of ``unit`` holding ``anchor`` says, in its
        words beyond the question's ("She was worn out by 1931" of "She was worn out by 1931 and
        withdrawn"): a true thing said beside the answer, not a value taken for it. A claim that
        names the question's subject restates nothing of a sentence about another."""
        question = self.question
        # "Its tower …" in an answer that names the subject speaks of the subject.
        names = question.names_subject(_stems(claim)) or (
            self.refers and _PRONOUN.search(claim) is not None
        )
        if names and not question.names_subject(unit.about):
            return False
        # A claim that speaks of what the question asks about ("the mileage rate is …") gives
        # the value as its answer, which a sentence about another matter does not support.
        if not (set(question.key) & _stems(claim)) <= unit.about:
            return False
        mine = next(a for a in self.anchors[unit.order] if _same(anchor, a))
        at = next(
            (text for start, text in reversed(_clauses(unit.text)) if start <= mine.start),
            unit.text,
        )
        own = _content(at) - question.terms - {_stem(w.lower()) for w in _WORD.findall(mine.text)}
        shared = own & _content(claim)
        return bool(own) and (len(shared) >= 2 or shared == own)

    def _about_else(self, anchor: Anchor, unit: _Unit) -> str:
        """Why ``unit``, which holds ``anchor``, is about something other than the question
        ("" when nothing says so)."""
        question = self.question
        mine = next(a for a in self.anchors[unit.order] if _same(anchor, a))
        clauses = _clauses(unit.text)
        at = next((text for start, text in reversed(clauses) if start <= mine.start), unit.text)
        here = _stems(at) & self.terms
        others = [text for _, text in clauses if text != at]
        # Within one sentence or row: another clause or cell holds more of the question's terms
        # and another value of this kind ("Tower 14 metres, … the focal plane is 71 metres").
        for text in others:
            if here < (_stems(text) & self.terms) and self._rival_value(anchor, text):
                return f"the passage says this of “{_bare(at)}”"
        # Within one sentence: the anchor's clause names another name, and a clause naming the
        # question's subject holds another value of this kind.
        if question.subjects and not question.names_subject(_stems(at)):
            named = [
                n.text
                for n in _names(at)
                if not question.names_subject(_stems(n.text)) and not _same(anchor, n)
            ]
            if named and any(
                question.names_subject(_stems(text)) and self._rival_value(anchor, text)
                for text in others
            ):
                return f"the passage says this of {named[0]}"
        # The question names a year; this sentence and what it stands under name only others.
        years = _years(f"{unit.text} {unit.context}") - _years(mine.text)
        if question.years and years and years.isdisjoint(question.years):
            return (
                f"the passage says this of {min(years, key=lambda y: abs(y - max(question.years)))}"
            )
        # Another sentence holds the question's terms and more, with another value of this kind.
        have = self.coverage(unit)
        for rival in self.units:
            if rival.passage == unit.passage and rival.order == unit.order:
                continue
            if question.years and _years(f"{rival.text} {rival.context}").isdisjoint(
                question.years
            ):
                continue  # of another year than the question's
            if have < self.coverage(rival) and self._rival_value(anchor, rival.text):
                return f"the passage says this of {self._what(unit, at, mine)}"
        # The question asks about something no passage holds, and this sentence holds none of
        # what it asks about: a cost of building is not a ticket's price.
        asked_unit = bool(mine.unit) and mine.unit in question.units
        # One word missing from the documents is as often a paraphrase ("how full" for
        # "capacity used"); the question is about something they lack when two or more are.
        lacking = len(self.missing) >= 2 or (self.missing and len(question.key) >= 2)
        if lacking and not (unit.about & set(question.key)) and not asked_unit:
            return (
                f"the passage says this of {self._what(unit, at, mine)}; your documents do not "
                f"mention {_listed(self.missing)}"
            )
        return ""

    def _rival_value(self, anchor: Anchor, text: str) -> bool:
        """Whether ``text`` holds a value of ``anchor``'s kind that is not it."""
        values = [a for a in _anchors(text) if _comparable(anchor, a)]
        return bool(values) and not any(_same(anchor, a) for a in values)

    def _what(self, unit: _Unit, clause: str, mine: Anchor) -> str:
        """What ``unit`` is about, in a few words: a name it gives that the question does not
        (in the anchor's ``clause`` first), else the sentence itself."""
        question = self.question
        first = _CELL.match(unit.text)
        if unit.row and first and first.group("value").strip() and first.group() not in clause:
            return first.group("value").strip()
        for text in (clause, unit.text):
            names = [
                n.text
                for n in _names(text)
                if not question.names_subject(_stems(n.text))
                and n.key not in question.anchors
                and _stems(n.text).isdisjoint(_stems(mine.text))
            ]
            if names:
                return names[0]
        return f"“{quote(unit.text, (), 120)}”"


def _years(text: str) -> set[int]:
    """The years ``text`` names, in numbers or dates."""
    found: set[int] = set()
    for anchor in _anchors(text, names=False):
        if anchor.kind == "date" and anchor.key[1]:
            found.add(int(str(anchor.key[1])))
        elif _year_like(anchor) and float(str(anchor.key[1])).is_integer():
            found.add(int(float(str(anchor.key[1]))))
    return found


def _bare(text: str) -> str:
    return quote(text.strip(" *_`"), (), 80).replace("*", "")


def _comparable(claim: Anchor, other: Anchor) -> bool:
    """Whether ``other`` is a value of the kind ``claim`` is: a date or a year for a date or a
    year, a number measured the same way for a number, a name for a name."""
    if claim.kind == "date" or _year_like(claim):
        return other.kind == "date" or _year_like(other)
    if claim.kind == "number":
        return other.kind == "number" and other.unit == claim.unit
    return other.kind == claim.kind


def _year_like(anchor: Anchor) -> bool:
    return anchor.kind == "number" and not anchor.unit and 1000 <= float(str(anchor.key[1])) < 2200


def _same(claim: Anchor, held: Anchor) -> bool:  # noqa: PLR0911 - one case per kind
    """Whether ``held`` (in a passage) is what ``claim`` (in an answer) says."""
    if claim.kind == "date":
        if held.kind != "date":
            return claim.key[1:] == (0, 0, 0)
        _, year, month, day = claim.key
        _, h_year, h_month, h_day = held.key
        return (
            (not year or year == h_year)
            and month == h_month
            and (not day or day == h_day)
            and (bool(h_year) or not year)
        )
    if claim.kind == "number" and held.kind == "date":
        year = held.key[1]
        return bool(year) and claim.key[1] == float(str(year)) and claim.unit in ("", "yr")
    if claim.kind != held.kind:
        return False
    if claim.kind == "name":
        return set(claim.key[1:]) <= set(held.key[1:]) or _name_in(claim, held)
    if claim.key != held.key:
        return False
    if claim.unit and not held.unit and _year_like(held):
        return False  # "1947 minutes" is not the year 1947
    return not (claim.unit and held.unit and claim.unit != held.unit)


def _name_in(claim: Anchor, held: Anchor) -> bool:
    return {_stem(str(w)) for w in claim.key[1:]} <= {_stem(str(w)) for w in held.key[1:]}


def _listed(words: Sequence[str]) -> str:
    words = list(dict.fromkeys(words))[:3]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


# --- quoting --------------------------------------------------------------------------------------


def quote(text: str, around: Iterable[str], limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (and its marks "…") only around what it
    is quoted for (``around``, e.g. the number it supports): never cut before the value."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    parts = [part for part in around if part and part in flat]
    if not parts:
        return flat[: limit - 1].rstrip() + "…"
    first = min(flat.find(part) for part in parts)
    last = max(flat.find(part) + len(part) for part in parts)
    start = max(0, min(first - limit // 3, last - limit))
    end = min(len(flat), start + limit)
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


# --- the answer -----------------------------------------------------------------------------------

#: A Markdown link, or an address: not a claim the documents would hold.
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|<?https?://\S+>?|\b[\w.+-]+@[\w-]+\.[\w.]+")
#: A sentence of an answer: to its stop, or to the end of its paragraph, list item or row. A
#: single line break inside a paragraph (a passage copied with its wrapped lines) goes on.
_ANSWER_SENTENCE = re.compile(
    r".+?(?:(?<![ (][A-Z]\.)(?<=[.!?])(?=\s|$)|\n(?=[ \t]*(?:\n|[-*•+]\s|[#|]|\d{1,3}[.)]\s))|$)",
    re.DOTALL,
)
#: An answer that says the documents do not answer the question.
_DECLINES = re.compile(
    r"\b(?:not (?:mentioned|stated|given|specified|found|included|provided|available|listed)|"
    r"(?:do|does|did)(?: not|n['’]t) (?:mention|say|state|give|specify|contain|include|provide|"
    r"list)|no (?:information|mention|record|data|details?)|"
    r"(?:cannot|can['’]t|could not|couldn['’]t|unable to) (?:find|answer|determine|tell)|"
    r"nothing was found|there is no)\b",
    re.IGNORECASE,
)


def ground(question: str, answer: str, passages: Sequence[PassageText]) -> Grounded:
    """Check ``answer`` to ``question`` against ``passages`` (see the module docstring)."""
    units: list[_Unit] = []
    for passage in passages:
        units += _units(passage, len(units))
    asked = _Question.read(question)
    checker = _Checker(asked, units)
    checker.refers = asked.names_subject(_stems(answer))
    claims: list[ClaimView] = []
    quotes: dict[int, list[str]] = {}
    supporting: set[int] = set()
    pieces: list[str] = []
    for match in _ANSWER_SENTENCE.finditer(answer):
        piece = match.group()
        sentence = " ".join(_CITE.sub("", piece).split())
        claim = _claim(sentence, checker) if sentence.strip(" -*•#") else None
        if claim is None:
            pieces.append(piece)
            continue
        view, supports = claim
        claims.append(view)
        for unit, around in supports:
            supporting.add(unit.order)
            quoted = quote(unit.text, around, QUOTE_CHARS * (2 if unit.row else 1))
            if quoted not in quotes.setdefault(unit.passage, []):
                quotes[unit.passage].append(quoted)
        if view.supported_by and not _CITE.search(piece):
            piece = _cited(piece, view.supported_by)
        pieces.append(piece)
    cited_answer = "".join(pieces)
    # With no passage at all, nothing was found: only a number, date or name it states is
    # flagged (it came from nowhere).
    verdict = _verdict(claims, answer) if units or claims else "not_found"
    offered, offered_from = "", 0
    if verdict in ("unsupported", "partly"):
        best = _offer(checker, supporting)
        if best is not None:
            offered, offered_from = quote(best.text, (), QUOTE_CHARS * 2), best.passage
    grounding = GroundingView(verdict, tuple(claims), offered, offered_from)
    return Grounded(
        cited_answer, grounding, {number: " … ".join(texts) for number, texts in quotes.items()}
    )


def _claim(
    sentence: str, checker: _Checker
) -> tuple[ClaimView, list[tuple[_Unit, list[str]]]] | None:
    question = checker.question
    plain = _LINK.sub(" ", _LIST_ITEM.sub("", sentence))
    anchors = [
        a
        for a in _anchors(plain)
        if a.key not in question.anchors
        and not (a.kind == "name" and question.names_subject(_stems(a.text)))
        # One capitalised word is checked only as the answer to "who": elsewhere it is as often
        # a word as a name ("Copy", "British").
        and not (a.kind == "name" and len(a.key) == 2 and question.wants != "name")
    ]
    supports: list[tuple[_Unit, list[str]]] = []
    notes: list[str] = []
    for anchor in anchors:
        verdict = checker.check(anchor, plain)
        if not verdict.note and verdict.unit is not None:
            held = [a.text for a in checker.anchors[verdict.unit.order] if _same(anchor, a)]
            supports.append((verdict.unit, held))
        elif verdict.unit is None:
            notes.append(f"“{anchor.text}” is {NOT_IN_DOCUMENTS}")
        else:
            cited = f"the passage [{verdict.unit.passage}]"
            notes.append(f"“{anchor.text}”: {verdict.note.replace('the passage', cited, 1)}")
    if not anchors:
        unit = _by_words(sentence, checker)
        if unit is None:
            return None
        supports.append((unit, []))
    by = tuple(dict.fromkeys(unit.passage for unit, _ in supports))
    return ClaimView(sentence, by, "; ".join(notes)), supports


def _by_words(sentence: str, checker: _Checker) -> _Unit | None:
    """The passage sentence that says most of what ``sentence`` (without numbers or names)
    says, if it says most of it."""
    words = {_stem(w.lower()) for w in _WORD.findall(sentence) if w.lower() not in _STOP}
    words = {w for w in words if len(w) > 2}
    if len(words) < 2:
        return None
    best = max(checker.units, key=lambda u: (len(words & u.words), -u.order), default=None)
    if best is None or len(words & best.words) < max(2, math.ceil(0.6 * len(words))):
        return None
    return best


def _cited(piece: str, numbers: Sequence[int]) -> str:
    """``piece`` (a sentence of the answer) with ``numbers`` cited before its last stop."""
    cite = "".join(f"[{n}]" for n in numbers)
    body = piece.rstrip()
    tail = piece[len(body) :]
    end = len(body)
    while end > 0 and body[end - 1] in ".!?:;":
        end -= 1
    if end == 0:
        return piece
    return f"{body[:end]} {cite}{body[end:]}{tail}"


def declines(answer: str) -> bool:
    """Whether ``answer`` says the documents do not answer its question ("not mentioned")."""
    return _DECLINES.search(answer) is not None


def _verdict(claims: Sequence[ClaimView], answer: str) -> GroundingVerdict:
    flagged = sum(bool(c.note) for c in claims)
    supported = sum(bool(c.supported_by) and not c.note for c in claims)
    if declines(answer) and not flagged:
        return "not_found"
    if flagged and (supported or any(c.supported_by for c in claims)):
        return "partly"
    if flagged:
        return "unsupported"
    return "supported" if supported else "unsupported"


def _wanted(question: _Question, anchor: Anchor) -> bool:
    """Whether ``anchor`` is a value of the kind ``question`` asks for (and not its own)."""
    if anchor.key in question.anchors:
        return False
    if anchor.kind == "name":
        return question.wants in ("name", "") and not question.names_subject(_stems(anchor.text))
    if question.wants == "date":
        return anchor.kind == "date" or (anchor.kind == "number" and not anchor.unit)
    return question.wants in ("number", "") and anchor.kind in ("number", "time")


def _offer(checker: _Checker, supporting: set[int]) -> _Unit | None:
    """The passage sentence that answers the question's terms best, to offer in place of an
    unsupported answer: it holds its subject, a key term (when the documents have them) and a
    value a question could want; None when no sentence does."""
    question = checker.question
    present = set(question.key) - {_stem(word) for word in checker.missing}
    candidates = [
        unit
        for unit in checker.units
        if (not question.subjects or question.names_subject(unit.about))
        and (not present or unit.about & present)
        and len(checker.missing) < 2
        and any(_wanted(question, a) for a in _anchors(unit.text))
        and unit.order not in supporting
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda u: (checker.score(u), -u.order))
