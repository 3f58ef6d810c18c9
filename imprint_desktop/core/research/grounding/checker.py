"""Whether a passage sentence about the question holds what a claim states."""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from imprint_desktop.core.research.grounding.anchors import (
    Anchor,
    anchors_in,
    comparable,
    names_in,
    part_of,
    same_value,
    year_like,
    years_in,
)
from imprint_desktop.core.research.grounding.measures import (
    holds_measure,
    measures_asked,
    units_asked,
)
from imprint_desktop.core.research.grounding.passages import CELL, Unit, clauses_of, quote
from imprint_desktop.core.research.grounding.question import ORDER_WORDS, Question
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

NOT_IN_DOCUMENTS = "not in your documents"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a value of an answer stands on: the passage sentence, and why not, if it does not."""

    unit: Unit | None  # the sentence that supports it, or that it was taken from
    note: str = ""  # empty when supported


#: Numbers written as words, which pick no kind of thing ("one search dog team").
_COUNTS = word_set("one two three four five six seven eight nine ten both each every")
#: Words after which a word narrows a question to a time, an order or a version.
_NARROWS = word_set("in during first last original new old former current next previous")
#: What a value only a document that looks superseded holds is said to stand on.
_STALE = "the passage is from a document that looks superseded"
#: Words by which a question asks of an earlier version than the current one.
_PAST = word_set("previous former old older earlier original archived superseded past prior")
#: … or in so many words ("last year's charge", "what it used to cost").
_PAST_PHRASE = re.compile(
    r"\b(?:last (?:year|month|quarter|week|time|version)|used to|until|before)\b", re.IGNORECASE
)
#: Words by which a sentence of an answer speaks of what an earlier one named.
_PRONOUN = re.compile(r"\b(?:it|its|it's|she|her|he|his|they|their|there)\b", re.IGNORECASE)


#: Words a question narrows by that documents often write in other words: a "*minimum*
#: length" of "at least 14 characters".
_WRITTEN_AS = {
    "minimum": r"at least|no (?:fewer|less) than|not (?:fewer|less) than",
    "maximum": r"at most|up to|no more than|not (?:more than|to exceed)",
}


def _written_as(word: str, text: str) -> str:
    """How ``text`` writes ``word`` in other words (:data:`_WRITTEN_AS`), or ""."""
    pattern = _WRITTEN_AS.get(word)
    found = re.search(rf"\b(?:{pattern})\b", text, re.IGNORECASE) if pattern else None
    return found.group().lower() if found else ""


def _clause_at(unit: Unit, value: Anchor) -> str:
    """The clause (or cell) of ``unit`` that its value ``value`` stands in."""
    return next(
        (text for start, text in reversed(clauses_of(unit.text)) if start <= value.start),
        unit.text,
    )


class Checker:
    def __init__(
        self, question: Question, units: Sequence[Unit], stale: Mapping[int, str] | None = None
    ) -> None:
        self.question = question
        self.units = units
        #: Why the document of each passage that looks superseded does, by passage number.
        self.stale = dict(stale or {})
        #: The measures the question names the conditions of its answer in, as values with a
        #: unit that is no year ("at 25 °C", "over 10 km").
        self.conditions = [
            a
            for a in anchors_in(question.text, names=False)
            if a.kind == "number" and a.unit and not year_like(a)
        ]
        self.refers = False  # the answer names the question's subject
        #: The answer gives a value in the unit the question asks in ("99.96%" to "What
        #: percentage …?"): its other numbers are said beside it, not in place of it.
        self.gives_unit_asked = False
        #: The units the question asks its answer in ("how many *minutes*", "*in* kilometres").
        self.units_asked = units_asked(question.text)
        #: The measures it asks its answer in ("how long does it *last*": a time).
        self.measures = measures_asked(question.text)
        self.anchors = {unit.order: anchors_in(unit.text, opening=True) for unit in units}
        #: The passages' words as written: one found there in lower case is a word, not a name.
        self.passage_text = " ".join(unit.text for unit in units)
        #: What a sentence is compared on: the question's key terms and its subject's names.
        self.terms = set(question.key).union(*question.subjects)
        if question.counts:  # what "how many" counts, "people" too ("people_assisted: 134")
            self.terms.add(stem_of(question.counts))
        count = max(1, len(units))
        self.weights = {
            term: math.log(1 + count / (1 + sum(term in unit.about for unit in units)))
            for term in self.terms
        }
        everywhere = set().union(*(unit.about for unit in units)) if units else set()
        #: Every word the passages hold, with what they stand under.
        self.everywhere = everywhere
        #: Key terms no passage holds: the question asks about something the documents lack.
        self.missing = [word for stem, word in question.key.items() if stem not in everywhere]
        #: Of those, the words that narrow down what it asks about: "senior" of a senior fare.
        self.narrowing_missing = [
            word for stem, word in question.qualifiers.items() if stem not in everywhere
        ]
        #: Of those, the words that may be said another way, by what they narrow: "search dog"
        #: for "qualified", when the passages write "search dog" after no word of their own.
        self.paraphrased: dict[str, str] = {}
        for word in self.narrowing_missing:
            if head := self._said_another_way(word) or _written_as(word, self.passage_text):
                self.paraphrased[word] = head
        # What each passage holds, with what it stands under: a name may be written in one of
        # its sentences and its other words in the next ("Elias … Brandt").
        held: dict[int, set[str]] = {}
        for unit in units:
            held.setdefault(unit.passage, set()).update(unit.about)
        #: Every word of each passage, with what it stands under, by passage number.
        self.held = held
        #: The key terms that narrow what the question asks to a time, an order or a version
        #: ("in *winter*", "the first *chairman*"), as (stem, word): a passage that holds none
        #: of them does not say what it asks.
        words = [word.lower() for word in WORD.findall(question.text)]
        self.narrowing = [
            (stem_of(word), word)
            for before, word in itertools.pairwise(words)
            if before in _NARROWS and stem_of(word) in question.qualifiers
        ]
        #: The passages that name the question's subject (any of its names).
        self.naming = {number for number, words in held.items() if question.names_subject(words)}
        #: The names the question gives that no passage holds: what it asks about is not there.
        self.unnamed = [
            name
            for name, stems in zip(question.names, question.subjects, strict=True)
            if stems and not any(stems <= words for words in held.values())
        ]

    def _said_another_way(self, word: str) -> str:
        """What ``word``, which no passage holds, narrows, when it may be said another way ("a
        *qualified* search dog" of "the team's first search dog … passed her assessment"): the
        key terms after it in the question, which the passages write, each time after a small
        word, a number or a word of order only. "" when it picks one of several kinds they name
        ("a *senior* return" beside the adult and the child return), narrows what is missing
        too, or is the thing asked about itself ("the first *chairman*")."""
        words = [w.lower() for w in WORD.findall(self.question.text)]
        if word not in words:
            return ""
        key = self.question.key
        head: list[str] = []
        for later in words[words.index(word) + 1 :]:
            if stem_of(later) not in key:
                break
            head.append(later)
        if not head or any(stem_of(w) not in self.everywhere for w in head):
            return ""
        # The longest start of what it narrows that the passages write ("search dog" of
        # "search dog", "return" of "return ticket"), and the words they write before it.
        for size in range(len(head), 0, -1):
            phrase = r"\s+".join(map(re.escape, head[:size]))
            others = re.findall(rf"\b([^\W\d_]+)\s+{phrase}\b", self.passage_text, re.I)
            if others:
                picks = any(
                    not is_function_word(other.lower())
                    and other.lower() not in ORDER_WORDS
                    and other.lower() not in _COUNTS
                    and other.lower() != word
                    for other in others
                )
                return "" if picks else " ".join(head[:size])
        return ""

    def narrowed_to_nothing(self, unit: Unit | None = None) -> list[str]:
        """The words narrowing what is asked that nothing found holds, but for those said
        another way in ``unit`` (it writes what they narrow: "first search dog"); without a
        unit, but for any that may be said another way somewhere."""
        return [
            word
            for word in self.narrowing_missing
            if word not in self.paraphrased
            or (
                unit is not None
                and re.search(rf"\b{re.escape(self.paraphrased[word])}\b", unit.text, re.IGNORECASE)
                is None
            )
        ]

    def counts_else(self, text: str, anchor: Anchor) -> bool:
        """Whether the number ``anchor`` of ``text`` counts another thing the question names
        than what "how many" counts ("83 of the 131 *callouts*" to "How many volunteers can be
        sent out on callouts?"), or is a year."""
        if not self.question.counts or anchor.kind != "number" or anchor.unit:
            return False
        return year_like(anchor) or bool(self._counted_other(text, anchor))

    def _counted_other(self, text: str, anchor: Anchor) -> str:
        """The key term other than what "how many" counts that the number ``anchor`` of
        ``text`` counts, by the words right after it ("callouts" of "83 of the 131 callouts");
        "" when it counts what is asked, however it is named ("745 lead service *pipes*"), or
        nothing the question names."""
        after = WORD.findall(text[anchor.start + len(anchor.text) :])[:4]
        stems = [stem_of(word.lower()) for word in after]
        counted = stem_of(self.question.counts)
        if counted in stems:
            return ""
        others = set(self.question.key) - {counted}
        return next((word for word, stem in zip(after, stems, strict=True) if stem in others), "")

    def _counts_of_another(self, unit: Unit, mine: Anchor) -> str:
        """Why the count ``mine`` of ``unit`` is not of what the question counts, by what each
        count's part of the sentence says: from its clause to the next count ("46 operational
        members, who carry pagers and can be *sent* out on a rescue" against "19 supporting
        members, who run fundraising …" to "How many … can be sent out on callouts?"); ""
        when another count's part holds no more of the question's terms."""
        counts = [
            a
            for a in self.anchors[unit.order]
            if a.kind == "number" and self.wanted(a) and not self.counts_else(unit.text, a)
        ]
        starts = [start for start, _ in clauses_of(unit.text)]
        scopes: list[tuple[int, int]] = []  # (start, end) of each count's part
        for a in sorted(counts, key=lambda a: a.start):
            begin = max((s for s in starts if s <= a.start), default=0)
            if scopes and scopes[-1][0] == begin:
                continue
            if scopes:
                scopes[-1] = (scopes[-1][0], begin)
            scopes.append((begin, len(unit.text)))
        if len(scopes) < 2:
            return ""
        held = {span: stems_of(unit.text[span[0] : span[1]]) & self.terms for span in scopes}
        own = next((span for span in scopes if span[0] <= mine.start < span[1]), None)
        if own is None:
            return ""
        if any(held[own] < held[span] for span in scopes if span != own):
            return f"the passage says this of “{_bare(unit.text[own[0] : own[1]].strip(' ,;'))}”"
        return ""

    def wanted(self, anchor: Anchor) -> bool:
        """Whether ``anchor`` is a value of the kind the question asks for (not its own)."""
        return wanted_by(self.question, anchor)

    def holders(self, anchor: Anchor) -> list[Unit]:
        return [
            unit
            for unit in self.units
            if any(same_value(anchor, other) for other in self.anchors[unit.order])
        ]

    @staticmethod
    def _titled(anchor: Anchor, unit: Unit) -> bool:
        """Whether the title, heading or file name ``unit`` stands under names ``anchor``."""
        return any(same_value(anchor, name) for name in names_in(unit.context, opening=True))

    def coverage(self, unit: Unit) -> set[str]:
        return unit.about & self.terms

    def best(self, units: Sequence[Unit]) -> Unit:
        """Of ``units``, the one that holds most of what the question asks (the first of
        equals)."""
        return max(units, key=lambda u: (self.score(u), -u.order))

    def score(self, unit: Unit) -> float:
        return sum(self.weights.get(term, 0.0) for term in self.coverage(unit))

    def check(self, anchor: Anchor, claim: str) -> Verdict:
        """Whether a passage sentence about the question holds ``anchor`` of sentence ``claim``
        of the answer (or one the claim restates, whatever the question)."""
        holders = self.holders(anchor)
        if not holders and anchor.kind == "name":
            anchor = self._without_common_head(anchor)
            holders = self.holders(anchor)
        if not holders and anchor.kind == "name":
            # Named only where a passage stands: its title or heading says nothing of it.
            titled = [u for u in self.units if self._titled(anchor, u)]
            if titled:
                return Verdict(titled[0], "the passage names it only in its title")
        if not holders:
            return Verdict(None, NOT_IN_DOCUMENTS)
        if anchor.kind == "name" and (typed := self._of_another_column(anchor, holders)):
            return typed
        if anchor.kind == "name" and not stems_of(anchor.text).isdisjoint(self.question.key):
            # What the question asks about, written as the documents name it ("the Audit and
            # Risk Committee" of "the audit committee"): the documents' words, not an answer.
            return Verdict(self.best(holders))
        verdicts = [(unit, self._doubt(anchor, unit, claim)) for unit in holders]
        good = [unit for unit, note in verdicts if not note]
        if good:
            return self._of_good(anchor, good)
        unit, note = max(verdicts, key=lambda pair: (self.score(pair[0]), -pair[0].order))
        return Verdict(unit, note)

    def _of_good(self, anchor: Anchor, good: Sequence[Unit]) -> Verdict:
        """What ``anchor`` stands on, of the sentences ``good`` that hold it and are about the
        question: the best of them, or why what it asks is still not what they say."""
        best = self.best(good)
        if not self.wanted(anchor):
            return Verdict(best)
        narrowed = min((self.narrowed_to_nothing(unit) for unit in good), key=len)
        if missing := [*self.unnamed, *narrowed]:
            # What it asks about is not in anything found ("the dam at *Fellgate*"), or is
            # narrower than it ("a *senior* fare"): whatever value is given for it, nothing
            # found says it of that.
            return Verdict(best, f"nothing found mentions {_quoted(missing)}")
        current = [unit for unit in good if unit.passage not in self.stale]
        unit = self.best(current or good)
        if lacking := [
            word for stem, word in self.narrowing if stem not in self.held[unit.passage]
        ]:
            # What it asks about is narrower than anything its passage says ("the last train …
            # in *winter*" of the summer timetable).
            return Verdict(unit, f"the passage does not mention {_quoted(lacking)}")
        if not current and not self._asks_of_the_past and not self._edition_of(unit):
            # Only an older version says it: the current one says otherwise, or nothing.
            return Verdict(unit, f"{_STALE} ({self.stale[unit.passage]})")
        return Verdict(unit)

    def of_another(self, sentence: str, unit: Unit) -> str:
        """Why ``unit``, whose words support ``sentence`` of an answer that gives no value to
        check, is about something else ("" when nothing says so): the sentence names, or its
        question asks about, what the unit's passage names nowhere but another passage does,
        and the unit, or what it stands under, names another ("… variable-speed pumps will be
        installed at *Pikestone*" from a note under "Rudd Lane Booster Pumping Station",
        Pikestone's own passage beside it)."""
        held = self.held.get(unit.passage, set())
        question = self.question
        elsewhere = self._held_elsewhere(unit.passage)
        named = [
            (name.text, stems_of(name.text))
            for name in names_in(sentence)
            if name.key not in question.anchors
        ]
        if self.naming and unit.passage not in self.naming:  # what the question asks about
            named += [
                (name, stems) for name, stems in zip(question.names, question.subjects, strict=True)
            ]
        for name, stems in named:
            if not stems or stems <= held or not any(stems <= words for words in elsewhere):
                continue  # (a name no passage holds is the value checks' to flag)
            # The sentence's own names, then its heading's, title's and file's, each apart.
            places = [unit.text, *re.split(r"\s{2,}", unit.context)]
            others = [
                n.text
                for n in itertools.chain.from_iterable(names_in(text) for text in places)
                if stems_of(n.text).isdisjoint(stems) and n.key not in question.anchors
            ]
            if others:
                other = max(others, key=lambda text: len(text.split()) > 1)  # a whole name first
                return f"the passage says this of {other}, not of {name}"
        return ""

    def of_the_year(self, unit: Unit) -> bool:
        """Whether ``unit`` is a table row of the year the question names ("2022,119,134,…" to
        "… in 2022?"): it names what it is about in its columns, seldom in the question's words
        ("people_assisted" for "came to the aid of")."""
        return unit.row and not self.question.years.isdisjoint(years_in(unit.said()))

    def _of_another_column(self, anchor: Anchor, holders: Sequence[Unit]) -> Verdict | None:
        """Why the name ``anchor`` is not of the kind "which" asks for, by a table that has a
        column of that kind and gives the name in another ("Which orchard …?" answered
        "Bramley", the Main variety of the Long Meadow row); None when nothing says so, or a
        table gives it in the column asked."""
        kind = self.question.kind  # (whatever a later ask wants: "… and how much …?")
        if not kind:
            return None
        asked = stem_of(kind)
        other: Verdict | None = None
        for unit in holders:
            cells = unit.cells()
            if not any(asked in stems_of(label) for label, _ in cells):
                continue  # no column of the kind asked: the table says nothing of it
            for label, value in cells:
                if not any(same_value(anchor, name) for name in names_in(value, opening=True)):
                    continue
                if asked in stems_of(label):
                    return None  # given as the kind asked
                other = other or Verdict(
                    unit, f"the passage gives it as the {label.lower()}, not the {kind}"
                )
        return other

    def _held_elsewhere(self, passage: int) -> list[set[str]]:
        """The words every other passage than ``passage`` holds, a set per passage."""
        return [words for number, words in self.held.items() if number != passage]

    def is_current(self, unit: Unit) -> bool:
        """Whether ``unit`` speaks for the documents as they stand: its document does not look
        superseded, or the question asks of an earlier version, or it is the edition of the
        year asked."""
        return unit.passage not in self.stale or self._asks_of_the_past or self._edition_of(unit)

    def _edition_of(self, unit: Unit) -> bool:
        """Whether ``unit`` stands in the edition of a series for the year the question asks
        of ("annual-report-2023" to "… in 2023?"): superseded by the next year's, it is still
        the document of its own year. A draft is never that."""
        named = years_in(unit.context)
        return bool(self.question.years & named) and "draft" not in unit.context.lower()

    @functools.cached_property
    def _asks_of_the_past(self) -> bool:
        """Whether the question asks of an earlier version ("last year's charge", "the previous
        policy") or of a year no current document speaks of, which a superseded document may
        well answer."""
        question = self.question
        words = WORD.findall(question.text.lower())
        if not _PAST.isdisjoint(words) or _PAST_PHRASE.search(question.text):
            return True
        if not question.years:
            return False
        current = [u for u in self.units if u.passage not in self.stale]
        return all(years_in(f"{u.text} {u.context}").isdisjoint(question.years) for u in current)

    def _without_common_head(self, name: Anchor) -> Anchor:
        """``name`` without its first word when the passages write that word in lower case: a
        sentence's first word is capitalised and joins the name after it ("Form OP-17." of
        "form OP-17"); ``name`` itself otherwise."""
        head, _, rest = name.text.partition(" ")
        if not rest or not re.search(rf"\b{re.escape(head.lower())}\b", self.passage_text):
            return name
        words = sorted(word.lower() for word in rest.split())
        return Anchor("name", ("name", *words), rest, name.start + len(head) + 1)

    def _doubt(self, anchor: Anchor, unit: Unit, claim: str) -> str:
        """Why ``unit``, which holds ``anchor`` of sentence ``claim``, does not support it ("" when
        it does)."""
        # A value not in the unit asked is flagged however well its sentence is restated.
        unasked = self._not_in_unit_asked(anchor, unit) if self.wanted(anchor) else ""
        if unasked or self._restates(claim, anchor, unit):
            return unasked
        note = self._about_else(anchor, unit)
        if note or not self.wanted(anchor):
            return note
        mine = next(a for a in self.anchors[unit.order] if same_value(anchor, a))
        if self.question.counts and (scoped := self._counts_of_another(unit, mine)):
            return scoped
        if (
            self.question.counts
            and not mine.unit
            and not year_like(mine)
            and (counted := self._counted_other(unit.text, mine))
        ):
            # "131 volunteers" of "the 131 callouts": the passage counts another thing.
            return f"the passage counts {counted} with it, not {self.question.counts}"
        if self.question.counts and not anchor.unit and mine.unit in MEASURES:
            # "How many volunteers …?" answered "7,589" of "7,589 volunteer hours": a measure
            # given as a count of what the question counts.
            return f"the passage gives {mine.text}, not a number of {self.question.counts}"
        at = _clause_at(unit, mine)
        return (
            self._said_of_another_clause(claim, anchor, unit, at)
            or self._answers_else(anchor, unit, at, mine)
            or self._claims_else(claim, unit)
        )

    def _said_of_another_clause(self, claim: str, anchor: Anchor, unit: Unit, at: str) -> str:
        """Why the value ``anchor`` of ``claim``, which its sentence ``unit`` gives in the clause
        ``at``, is not what the claim says it is of ("" when nothing says so): the claim gives
        it of terms of the question that clause lacks, and another clause of the sentence holds
        two or more of them with another value of this kind ("… into six storage tanks of 3,000
        litres each, …, and a seventh tank of 1,200 litres behind the trading hut …" to "the
        tank of the shared shed holds 1,200 litres")."""
        lacking = (stems_of(claim) & self.terms) - stems_of(at)
        for _, text in clauses_of(unit.text):
            if (
                text != at
                and len(stems_of(text) & lacking) >= 2
                and self._rival_value(anchor, text)
            ):
                return f"the passage says this of “{_bare(at)}”"
        return ""

    def _claims_else(self, claim: str, unit: Unit) -> str:
        """Why ``unit`` does not say what ``claim`` says of the date it gives ("" when nothing
        says so): the claim states a term of the question ("*opened* to passengers in 2023")
        that this sentence and what it stands under lack, where another passage holds it, and the
        sentence holds half the question's key terms or fewer. A year a sentence gives for
        something else — a report's edition, a count's period — is no date of the event asked
        about; one that holds most of them ("converted from acetylene to solar-charged batteries
        in 1989" to "When did it switch from acetylene to solar-charged batteries?") says it in
        words of its own."""
        question = self.question
        key = set(question.key)
        if question.wants != "date" or 2 * len(key & unit.about) > len(key):
            return ""  # a sentence that holds most of what it asks states its date, in its words
        said = (key & content_stems(claim)) - unit.about
        others = self._held_elsewhere(unit.passage)
        lacking = [question.key[stem] for stem in said if any(stem in words for words in others)]
        return f"the passage does not mention {_quoted(lacking)}" if lacking else ""

    def _restates(self, claim: str, anchor: Anchor, unit: Unit) -> bool:
        """Whether ``claim`` says what the clause of ``unit`` holding ``anchor`` says, in its
        words beyond the question's ("She was worn out by 1931" of "She was worn out by 1931 and
        withdrawn"): a true thing said beside the answer, not a value taken for it. A claim that
        names the question's subject restates nothing of a sentence about another."""
        question = self.question
        # "Its tower …" in an answer that names the subject speaks of the subject.
        names = question.names_subject(stems_of(claim)) or (
            self.refers and _PRONOUN.search(claim) is not None
        )
        if names and not question.names_subject(unit.about):
            return False
        # Nor does one that gives the year asked restate a sentence of other years only ("the
        # 2019-20 season … 41 members" of "41 members in all" in the 2025-26 programme).
        years = years_in(f"{unit.text} {unit.context}")
        if question.years & years_in(claim) and years and years.isdisjoint(question.years):
            return False
        # A claim that speaks of what the question asks about ("the mileage rate is …") gives
        # the value as its answer, which a sentence about another matter does not support.
        if not (set(question.key) & stems_of(claim)) <= unit.about:
            return False
        mine = next(a for a in self.anchors[unit.order] if same_value(anchor, a))
        at = _clause_at(unit, mine)
        own = (
            content_stems(at)
            - question.terms
            - {stem_of(w.lower()) for w in WORD.findall(mine.text)}
        )
        shared = own & content_stems(claim)
        return bool(own) and (len(shared) >= 2 or shared == own)

    def _about_else(self, anchor: Anchor, unit: Unit) -> str:
        """Why ``unit``, which holds ``anchor``, is about something other than the question
        ("" when nothing says so)."""
        question = self.question
        mine = next(a for a in self.anchors[unit.order] if same_value(anchor, a))
        at = _clause_at(unit, mine)
        here = stems_of(at) & self.terms
        others = [text for _, text in clauses_of(unit.text) if text != at]
        # Within one sentence or row: another clause or cell holds more of the question's terms
        # and another value of this kind ("Tower 14 metres, … the focal plane is 71 metres"),
        # or the rest of the sentence does, together: "Rainwater from the roofs of the
        # pavilion and the shared shed runs into six storage tanks of 3,000 litres each, …, and
        # a seventh tank of 1,200 litres behind the trading hut …". A clause that holds none of
        # the terms ("which hold 18,000 litres between them") speaks of what the one before it
        # does.
        rest = set().union(*(stems_of(text) & self.terms for text in others))
        if any(
            here < (stems_of(text) & self.terms) and self._rival_value(anchor, text)
            for text in others
        ) or (here and here < rest and any(self._rival_value(anchor, t) for t in others)):
            return f"the passage says this of “{_bare(at)}”"
        # Within one sentence: the anchor's clause names another name, and a clause naming the
        # question's subject holds another value of this kind.
        if question.subjects and not question.names_subject(stems_of(at)):
            named = [
                n.text
                for n in names_in(at)
                if not question.names_subject(stems_of(n.text)) and not same_value(anchor, n)
            ]
            if named and any(
                question.names_subject(stems_of(text)) and self._rival_value(anchor, text)
                for text in others
            ):
                return f"the passage says this of {named[0]}"
        if note := self._other_subject_or_year(anchor, unit, at, mine):
            return note
        # Another sentence holds the question's terms and more, with another value of this kind.
        have = self.coverage(unit)
        for rival in self.units:
            if rival.passage == unit.passage and rival.order == unit.order:
                continue
            if question.years and years_in(f"{rival.text} {rival.context}").isdisjoint(
                question.years
            ):
                continue  # of another year than the question's
            if anchor.kind == "name" and any(
                same_value(anchor, name) for name in names_in(rival.context, opening=True)
            ):
                continue  # said under a heading that names it ("## Long Meadow"): of it
            if have < self.coverage(rival) and self._rival_value(anchor, rival.text):
                return f"the passage says this of {self._what(unit, at, mine)}"
        # The question asks about something no passage holds, and this sentence holds none of
        # what it asks about: a cost of building is not a ticket's price.
        asked_unit = bool(mine.unit) and mine.unit in question.units
        # One word missing from the documents is as often a paraphrase ("how full" for
        # "capacity used"); the question is about something they lack when two or more are.
        lacking = len(self.missing) >= 2 or (self.missing and len(question.key) >= 2)
        if (
            lacking
            and not (unit.about & set(question.key))
            and not asked_unit
            and not self.of_the_year(unit)
        ):
            return (
                f"the passage says this of {self._what(unit, at, mine)}; your documents do not "
                f"mention {listed(self.missing)}"
            )
        return ""

    def _other_subject_or_year(self, anchor: Anchor, unit: Unit, at: str, mine: Anchor) -> str:
        """Why ``unit`` is about another subject or year than the question's, by what its
        passage names ("" when nothing says so)."""
        question = self.question
        # The question names its subject, another passage names it too, but this one names it
        # nowhere, and this sentence, or what it stands under, names another: the value is that
        # other's ("the dam at Brantwater is 41 m high", or "The road over the dam …" under
        # "Brantwater Reservoir", to "… the dam at Fellgate?").
        if self.naming and unit.passage not in self.naming and self.wanted(anchor):
            named = [
                n.text
                for n in [*names_in(at), *names_in(unit.context)]
                if not question.names_subject(stems_of(n.text))
                and n.key not in question.anchors
                and stems_of(n.text).isdisjoint(stems_of(mine.text))
            ]
            if named:
                return f"the passage says this of {named[0]}"
        # The question names a year; this sentence and what it stands under name only others.
        years = years_in(f"{unit.text} {unit.context}") - years_in(mine.text)
        if question.years and years and years.isdisjoint(question.years):
            nearest = min(years, key=lambda y: abs(y - max(question.years)))
            return f"the passage says this of {nearest}"
        # The question names a measure it asks under ("at 25 °C"); this sentence names that
        # measure only with other values ("8 hours at 5 °C").
        held = anchors_in(unit.text)
        for asked in self.conditions:
            others = [a for a in held if a.unit == asked.unit and not same_value(a, anchor)]
            if others and not any(same_value(asked, a) for a in others):
                return f"the passage says this of {others[0].text}"
        return ""

    def _answers_else(self, anchor: Anchor, unit: Unit, at: str, mine: Anchor) -> str:
        """Why ``unit``, which holds the value ``anchor`` that the answer gives for what the
        question asks, is not about what it asks ("" when nothing says so): the question names a
        year and the sentence names none; or the sentence holds none of the question's key
        terms, or not a word that narrows them ("original", "the *last* keeper"), where another
        sentence holds them with another value of the kind asked for."""
        question = self.question
        if question.years and not years_in(f"{unit.text} {unit.context}"):
            return f"the passage does not say this of {max(question.years)}"
        if note := self._in_another_unit(anchor, unit, at, mine):
            return note
        key = set(question.key)
        about = unit.about
        narrowing = (set(question.qualifiers) | set(question.order)) - about
        for rival in self.units:
            if rival.order == unit.order or not self._rival_answer(anchor, rival.text):
                continue
            if self.of_the_year(unit) and question.years.isdisjoint(
                years_in(f"{rival.text} {rival.context}")
            ):
                continue  # a sentence of no year asked is no rival to a row of that year
            lacks_key = key and not about & key and rival.about & key
            lacks_narrowing = narrowing & rival.about and len(rival.about & key) >= len(about & key)
            if lacks_key or lacks_narrowing:
                if anchor.kind == "name":
                    # A name is not said "of" anything: the passage names it for no part of
                    # what the question asks ("Assistants: W. Dale" to "Who was the engineer?").
                    lacking = (key - about) if lacks_key else narrowing
                    words = [
                        w
                        for stem, w in {**question.key, **question.order}.items()
                        if stem in lacking
                    ]
                    return f"the passage does not mention {_quoted(words)}"
                return f"the passage says this of {self._what(unit, at, mine)}"
        return ""

    def _not_in_unit_asked(self, anchor: Anchor, unit: Unit) -> str:
        """Why the value ``anchor``, held by ``unit``, is not given in the unit the question
        asks in, where another passage sentence gives a value in it ("" when nothing says so):
        "60 metres" (lowered on ropes) to "Over what distance in kilometres …?" beside "4.8
        kilometres"; "34" (callouts) to "What percentage …?" beside "26 per cent"."""
        mine = next(a for a in self.anchors[unit.order] if same_value(anchor, a))
        asked = self.units_asked
        if not asked or mine.unit in asked or self.gives_unit_asked:
            return ""
        at = _clause_at(unit, mine)
        if not mine.unit and holds_measure(
            at, frozenset(MEASURES[u] for u in asked if u in MEASURES)
        ):
            return ""  # its clause or cell names the measure ("Share (%): 26")
        others = [
            a
            for u in self.units
            for a in self.anchors[u.order]
            if a.unit in asked and self.wanted(a) and not same_value(a, mine)
        ]
        measures = {MEASURES.get(u) for u in asked}
        if not others or (mine.unit and MEASURES.get(mine.unit) not in measures):
            return ""  # nothing in that unit, or another measure: the answer's check says so
        if mine.unit and any(a.unit in asked for a in self.anchors[unit.order]):
            return ""  # the same measure in both units ("597 millimetres (1 ft 11½ in)")
        words = WORD.findall(self.question.text)
        at_unit = next((i for i, w in enumerate(words) if UNITS.get(w.lower(), "") in asked), 0)
        # The unit as the question writes it, with the word after it if that is one too
        # ("nautical miles").
        named = " ".join(w for w in words[at_unit : at_unit + 2] if w.lower() in UNITS)
        wanted = "a percentage" if "%" in asked else f"a value in {named}"
        return f"the passage gives {mine.text}, not {wanted} (as {others[0].text} is)"

    def _in_another_unit(self, anchor: Anchor, unit: Unit, at: str, mine: Anchor) -> str:
        """Why a value in another unit of the measure the question asks in ("9.6 kilometres"
        to "… in millimetres?") is not its answer ("" when nothing says so): its sentence gives
        none in that unit, and another sentence does."""
        asked = self.question.units
        if not asked or not anchor.unit or anchor.unit in asked:
            return ""
        if MEASURES.get(anchor.unit) not in {MEASURES.get(u) for u in asked}:
            return ""  # another measure altogether: the answer's own check says so
        if any(a.unit in asked for a in self.anchors[unit.order]):
            return ""  # the same measure in both units ("597 millimetres (1 ft 11½ in)")
        if not any(
            a.unit in asked and self.wanted(a) for u in self.units for a in self.anchors[u.order]
        ):
            return ""
        return f"the passage says this of {self._what(unit, at, mine)}"

    def _rival_answer(self, anchor: Anchor, text: str) -> bool:
        """Whether ``text`` holds a value of the kind asked for, comparable with ``anchor``,
        none of which is it (a year does not stand against a measure)."""
        values = [
            a
            for a in anchors_in(text)
            if comparable(anchor, a)
            and self.wanted(a)
            and _yearish(a) == _yearish(anchor)
            and not part_of(anchor, a)
            and not self.counts_else(text, a)
        ]
        return bool(values) and not any(same_value(anchor, a) for a in values)

    def _rival_value(self, anchor: Anchor, text: str) -> bool:
        """Whether ``text`` holds a value of ``anchor``'s kind that is not it. To a "who"
        question, a name it could not want as its answer (what it asks about, as the documents
        name it: "Our *Audit and Risk Committee* has a new chair, Dr Malcolm Tyas") is no
        rival."""
        values = [
            a
            for a in anchors_in(text)
            if comparable(anchor, a)
            and not part_of(anchor, a)
            and (a.kind != "name" or self.question.wants != "name" or self.wanted(a))
            and not self.counts_else(text, a)
        ]
        return bool(values) and not any(same_value(anchor, a) for a in values)

    def _what(self, unit: Unit, clause: str, mine: Anchor) -> str:
        """What ``unit`` is about, in a few words: a name it gives that the question does not
        (in the anchor's ``clause`` first), else the sentence itself."""
        question = self.question
        first = CELL.match(unit.text)
        if unit.row and first and first.group("value").strip() and first.group() not in clause:
            return first.group("value").strip()
        for text in (clause, unit.text):
            names = [
                n.text
                for n in names_in(text)
                if not question.names_subject(stems_of(n.text))
                and n.key not in question.anchors
                and stems_of(n.text).isdisjoint(stems_of(mine.text))
            ]
            if names:
                return names[0]
        return f"“{quote(unit.text, (), 120)}”"


def wanted_by(question: Question, anchor: Anchor) -> bool:
    """Whether ``anchor`` is a value of the kind ``question`` asks for (not one it names)."""
    if anchor.key in question.anchors:
        return False
    if anchor.kind == "name":
        return _a_name_wanted(question, stems_of(anchor.text))
    if question.wants == "which":
        return True
    if question.wants == "date":
        return anchor.kind == "date" or (anchor.kind == "number" and not anchor.unit)
    if question.wants == "time":
        return anchor.kind == "time"
    # Hours or pounds are no count of the volunteers "how many" asks about.
    counted = not question.counts or anchor.unit not in MEASURES
    return counted and question.wants in ("number", "") and anchor.kind in ("number", "time")


def _a_name_wanted(question: Question, stems: set[str]) -> bool:
    """Whether a name of ``stems`` could answer ``question``: not its subject, and to a "who"
    question not what it asks about as the documents name it ("the Chair of the Audit and Risk
    Committee" to "Who was made chair of the audit committee?"): half its words or more the
    question's key terms."""
    if question.wants == "name" and 2 * len(stems & set(question.key)) >= len(stems):
        return False
    return question.wants in ("name", "which", "") and not question.names_subject(stems)


def _yearish(anchor: Anchor) -> bool:
    return anchor.kind == "date" or year_like(anchor)


def _quoted(words: list[str]) -> str:
    return listed([f"“{word}”" for word in words])


def _bare(text: str) -> str:
    return quote(text.strip(" *_`"), (), 80).replace("*", "")
