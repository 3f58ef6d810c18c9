"""What a question asks: its subject's names, its key terms, the kind of value it wants."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    wants: str  # the kind of value it asks for ("name", "date", "number"), "" when unclear
    years: set[int]  # the years it names ("in 2021")

    @classmethod
    def read(cls, question: str) -> Question:
        names = names_in(question)
        for match in re.finditer(r"[A-Z][\w'’-]+", question):  # its first word too, if a name
            word = match.group()
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
        for word in words:
            lower = word.lower()
            if lower in UNITS and lower not in ("m", "s", "h", "t", "l"):
                units.add(UNITS[lower])
            if lower in STOPWORDS["en"] or (len(lower) < 3 and not any(c.isdigit() for c in lower)):
                continue
            terms.add(stem_of(lower))
            stem = stem_of(lower)
            if lower in ANSWER_KIND or lower in UNITS or stem in subject_stems:
                continue
            if stem in after_name or lower.isdigit():
                continue
            key.setdefault(stem, lower)
        anchors = {a.key for a in anchors_in(question)}
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
            question,
            subjects,
            key,
            terms | subject_stems,
            units,
            anchors,
            wants,
            years_in(question),
        )

    def names_subject(self, words: set[str]) -> bool:
        return any(subject <= words for subject in self.subjects)
