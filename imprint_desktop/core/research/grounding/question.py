"""What a question asks: its subject's names, its key terms, the kind of value it wants."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from imprint_desktop.core.research.grounding.anchors import (
    NOT_NAMES,
    Anchor,
    anchors_in,
    names_in,
    years_in,
)
from imprint_desktop.core.research.grounding.words import (
    ANSWER_KIND,
    KINDS_OF_PLACE,
    STOP,
    UNITS,
    WORD,
    stem_of,
    stems_of,
    word_set,
)
from imprint_desktop.core.research.seed import STOPWORDS


@dataclass
class Question:
    """What a question asks about: its subject's names and its key terms (weighed by rarity)."""

    text: str
    subjects: list[set[str]]  # the stems of each name it names
    key: dict[str, str]  # key term stem -> the word as the question wrote it
    terms: set[str]  # every content stem, subjects and key terms alike
    units: set[str]  # the units the question names ("in millimetres")
    anchors: set[tuple[object, ...]]  # what it says itself, which an answer may repeat
    #: The kind of value it asks for: "name", "date", "time", "number", "which" (one of several
    #: named things: a name, a code or a number), "" when it does not say.
    wants: str
    years: set[int]  # the years it names ("in 2021")
    #: Key terms that narrow down what it asks about, as the question wrote them: a word right
    #: after "a", "the", "first", "in" or an owner's "'s" ("a *senior* ticket", "the first
    #: *chairman*", "in *winter*", "the team's *press* officer"). A verb stands elsewhere ("how
    #: much can it *hold*"), and is as often paraphrased by the documents as not.
    qualifiers: dict[str, str] = field(default_factory=dict)
    #: The names it gives, as it wrote them (each beside its stems in :attr:`subjects`).
    names: list[str] = field(default_factory=list)
    #: Words of order right before a key term ("the *last* principal keeper", "the *first*
    #: chairman"), which a stop list drops: the one asked about among several of its kind.
    order: dict[str, str] = field(default_factory=dict)
    #: What "how many" counts, when that is no unit ("how many *volunteers*"): a count of
    #: things, which a value in hours or pounds is not; "" otherwise.
    counts: str = ""
    #: What "which" asks for, when it opens the question ("Which *orchard* has scab?"): the
    #: answer names one of that kind; "" otherwise.
    kind: str = ""

    @classmethod
    def read(cls, question: str) -> Question:
        names = names_in(question)
        for match in re.finditer(r"[A-Z][\w'’-]+", question):  # its first word too, if a name
            word = match.group().removesuffix("'s").removesuffix("’s")  # "North's sales"
            lower = word.lower()
            if lower in NOT_NAMES or lower in STOP or any(word in n.text for n in names):
                continue
            names.append(Anchor("name", ("name", lower), word, match.start()))
        subjects = [stems_of(n.text) for n in names]
        subject_stems = set().union(*subjects) if subjects else set()
        words = WORD.findall(question)
        # The word after a name belongs to it ("Skerry Rock lighthouse", "Lakeside station").
        after_name: set[str] = set()
        for n in names:
            rest = WORD.findall(question[n.start + len(n.text) :])
            if rest and rest[0].lower() in KINDS_OF_PLACE:
                after_name.add(stem_of(rest[0].lower()))
        key: dict[str, str] = {}
        terms: set[str] = set()
        units: set[str] = set()
        # "the company's profit": the company owns what is asked about (the documents name it
        # by its name), it is not what is asked about.
        owners = {stem_of(w.lower()) for w, after in itertools.pairwise(words) if after == "s"}
        # A period right before what it is of narrows it: "the *weekly* backups" are not the
        # nightly ones (elsewhere "weekly" says how a figure is given: "how much, weekly").
        periods = {
            stem_of(word.lower())
            for word, after in itertools.pairwise(words)
            if word.lower() in _PERIODS and after.lower() not in STOP
        }
        for word in words:
            lower = word.lower()
            if lower in UNITS and lower not in ("m", "s", "h", "t", "l"):
                units.add(UNITS[lower])
            if lower in STOPWORDS["en"] or (len(lower) < 3 and not any(c.isdigit() for c in lower)):
                continue
            terms.add(stem_of(lower))
            stem = stem_of(lower)
            if (lower in ANSWER_KIND and stem not in periods) or lower in UNITS:
                continue
            if stem in subject_stems:
                continue
            if stem in after_name or stem in owners or lower.isdigit():
                continue
            key.setdefault(stem, lower)
        anchors = {a.key for a in anchors_in(question)}
        lowered = [word.lower() for word in words]
        # After an owner's "'s", a word that another key term follows: "the team's *press*
        # officer", not "the team's headquarters", which the documents may call its base.
        compound = {
            at
            for at, (before, after) in enumerate(zip(lowered, lowered[2:], strict=False))
            if before == "s" and stem_of(after) in key
        }
        qualifiers = {
            stem_of(word): word
            for at, (before, word) in enumerate(itertools.pairwise(lowered))
            if (before in _NARROWING or (at == 0 and before in _ASKING_WHICH) or at in compound)
            and stem_of(word) in key
        }
        order = {
            stem_of(before): before
            for before, word in itertools.pairwise(lowered)
            if before in ORDER_WORDS and stem_of(word) in key
        }
        counts = _counted(lowered)
        # "Which *orchard* …?": the kind of thing its answer names.
        opens_which = len(lowered) > 1 and lowered[0] == "which" and stem_of(lowered[1]) in key
        kind = lowered[1] if opens_which else ""
        return cls(
            question,
            subjects,
            key,
            terms | subject_stems,
            units,
            anchors,
            # "Summarize the notes on costs.": an account in words, not a number.
            ""
            if lowered[:1] and lowered[0] in _ASKS_FOR_PROSE
            else _wanted_kind(question, lowered, bool(units)),
            years_in(question),
            qualifiers,
            [n.text for n in names],
            order,
            counts,
            kind,
        )

    @property
    def how_many(self) -> bool:
        """Whether it asks "how many …?": a count, which a year alone is not."""
        return re.match(r"\s*how many\b", self.text, re.IGNORECASE) is not None

    def names_subject(self, words: set[str]) -> bool:
        return any(subject <= words for subject in self.subjects)


#: Words after which a word narrows down what a question asks about ("the *original* viaduct").
_NARROWING = word_set(
    "a an the its their his her this these those each every "
    "first last original new old former current next previous "
    "in of for during"
)
#: Words that pick one of several things of a kind by their order.
ORDER_WORDS = word_set("first last latest earliest final original previous former current next")
#: Opening a question, these narrow down the word after them ("Which *form* …?"); within one
#: ("the aqueduct that carries …") a verb follows them, as after "that".
_ASKING_WHICH = word_set("what which whose")


#: Words for what is counted that say nothing else ("how many *people*").
_COUNTED = word_set("people persons times")


#: What a quantity is called: "What was the gross *margin* …?" asks for a number, as "how
#: much" does.
_QUANTITIES = word_set(
    "margin budget length width height depth weight distance rate revenue turnover profit "
    "income salary wage fee fare charge rent allowance limit capacity population temperature "
    "speed duration area volume spend spending expenditure takings attendance deficit surplus "
    "bill"
)
#: Words for how often, which narrow the thing they stand before ("the *weekly* backups"); a
#: year's is what most figures are given for, and is written in many ways ("£58.40 a year").
_PERIODS = word_set("daily weekly monthly quarterly nightly")
#: Words that open a request for an account in words, whatever it is about.
_ASKS_FOR_PROSE = word_set("summarize summarise summary describe explain outline tell discuss")


def _counted(words: list[str]) -> str:
    """What "how many" counts in a question of lower-case ``words``, when that is no unit: the
    last word of the words after it, up to the first small word ("how many passenger
    *journeys* were made", "how many of the team's *volunteers*"); "" otherwise."""
    for at, (before, word) in enumerate(itertools.pairwise(words)):
        if (before, word) != ("how", "many"):
            continue
        phrase: list[str] = []
        for later in words[at + 2 :]:
            if later == "s":  # what came before owns what is counted: "the team's volunteers"
                phrase = []
                continue
            if later in ("of", "the", "its", "their") and not phrase:
                continue
            if later in STOPWORDS["en"] or (later in STOP and later not in _COUNTED):
                break
            phrase.append(later)
        if phrase and phrase[-1] not in UNITS:
            return phrase[-1]
    return ""


def _wanted_kind(question: str, words: list[str], units: bool) -> str:
    """The kind of value ``question`` (its lower-case ``words``) asks for: "name", "date",
    "time", "number", or "" when it does not say."""
    lowered = question.lower()
    if re.search(r"\b(?:who|whom|whose)\b", " ".join(words[:3])):
        return "name"
    if re.search(r"\b(?:what|which|at what) time\b", lowered):
        return "time"
    # "In which *year* …?", not "the bill for the year to September".
    if re.search(r"\b(?:when|date)\b|\b(?:what|which) year\b|\byear (?:did|was|were)\b", lowered):
        return "date"
    if (
        re.search(
            r"\bhow (?:much|many|long|high|deep|far|old|big|large|wide|tall|often|heavy)\b", lowered
        )
        or re.search(
            r"\b(?:cost|costs|price|priced|spend|spent|paid|charge|charges|fee|fees|fare|fares)\b",
            lowered,
        )
        or units
        or (
            re.match(r"\s*what (?:is|was|are|were)\b", lowered)
            and not _QUANTITIES.isdisjoint(words)
        )
    ):
        return "number"
    if len(words) > 1 and words[0] == "which":
        return "which"  # one of several named things: "Which form …?", "Which company …?"
    return ""
