"""What a question asks its answer to be measured in, and whether a sentence holds such a value.

"How long does the battery last?" asks for a time, "What did the scenery cost?" for a sum of
money, "How much does the cloth weigh?" for a weight. A sentence that holds no value of that
measure, in a unit or in its table column's name ("gallery_pounds: 12.50", "Weight each (kg):
1.6"), does not answer the question, however many of its words it shares: it is neither offered
as the documents' answer first nor asked again from.
"""

from __future__ import annotations

import re

from imprint_desktop.core.research.grounding.anchors import anchors_in
from imprint_desktop.core.research.grounding.words import MEASURES, UNITS, WORD

#: The measures a "how …" question asks its answer in, by its word.
_HOW = {
    "long": frozenset(("length", "time")),
    "tall": frozenset(("length",)),
    "high": frozenset(("length",)),
    "deep": frozenset(("length",)),
    "wide": frozenset(("length",)),
    "far": frozenset(("length",)),
    "heavy": frozenset(("mass",)),
}
#: "How long does it *last*": a time, not a length.
_LASTING = re.compile(r"\b(?:last|lasts|lasted|take|takes|took|run|runs)\b", re.IGNORECASE)
#: Words by which a question asks for a sum of money or a weight, wherever they stand.
_ASKS = {
    "money": re.compile(
        r"(?<![\w-])(?:cost|costs|costed|price|priced|prices|pay|paid|pays|spend|spent|spends|charge|"
        r"charged|charges|fee|fees|fare|fares|rent|rents|budget|budgets|takings|revenue|income|"
        r"salary|wage|wages|bill|bills)\b",
        re.IGNORECASE,
    ),
    "mass": re.compile(r"(?<![\w-])(?:weigh|weighs|weighed|weight|heavy)\b", re.IGNORECASE),
}
#: How a sentence or a table's column names a measure without a unit beside each value: a
#: currency's sign or name, a weight's unit ("Weight each (kg)"), and so on. A column name
#: joined with "_" names it too ("gallery_pounds").
_NAMED_IN = {
    "money": re.compile(
        r"[£$€]|(?<![^\W_])(?:pounds?|euros?|dollars?|pence|gbp|eur|usd)(?![^\W_])", re.I
    ),
    "mass": re.compile(
        r"(?<![^\W_])(?:kg|kilos?|kilograms?|tonnes?|tons?|grams?|lbs?|weight)(?![^\W_])", re.I
    ),
    "length": re.compile(
        r"(?<![^\W_])(?:m|km|mm|cm|metres?|meters?|kilometres?|miles?|feet|ft)(?![^\W_])", re.I
    ),
    "time": re.compile(
        r"(?<![^\W_])(?:hours?|minutes?|mins?|days?|weeks?|months?|years?|h)(?![^\W_])", re.I
    ),
    "share": re.compile(r"%|(?<![^\W_])(?:per ?cent|percentage|pct)(?![^\W_])", re.I),
}


def measures_asked(question: str) -> frozenset[str]:
    """The measures (:data:`.words.MEASURES`) ``question`` asks its answer in: by "how long",
    "how tall" and the like, by a unit it names ("how many *nautical miles*", "what
    *percentage*"), or by what it asks for ("cost", "weigh"); none when it asks for a count, a
    name, a date, or does not say."""
    how = re.match(r"\s*how\s+(\w+)\b", question, re.IGNORECASE)
    measures = _HOW.get(how.group(1).lower(), frozenset()) if how else frozenset()
    if measures == {"length", "time"} and _LASTING.search(question):
        return frozenset(("time",))
    if measures:
        return measures
    named = frozenset(MEASURES[unit] for unit in units_asked(question) if unit in MEASURES)
    return named or frozenset(kind for kind, words in _ASKS.items() if words.search(question))


#: The words after which a unit is the one a question asks its answer in ("how *many*
#: minutes", "*in* kilometres", "*what* percentage").
_ASKED_IN = frozenset(("many", "much", "in", "into", "what"))


def units_asked(question: str) -> frozenset[str]:
    """The units (:data:`.words.UNITS`) ``question`` asks its answer in: a unit's word right
    after "how many", "in" or "what", or one word after ("how many *nautical miles*"); not one
    that says what it is of ("per *hour*", "the open *day*")."""
    words = [word.lower() for word in WORD.findall(question)]
    units = set()
    for at, word in enumerate(words):
        unit = UNITS.get(word, "") if len(word) > 2 and word != "per" else ""
        before = words[max(0, at - 2) : at]
        if not unit or "per" in before[-1:]:
            continue
        asked_by = before[-1] if before[-1:] and before[-1] in _ASKED_IN else ""
        if not asked_by and len(before) == 2 and before[1] in UNITS and before[1] != "per":
            asked_by = before[0] if before[0] in _ASKED_IN else ""  # "how many nautical miles"
        if asked_by == "what" and unit != "%":
            continue  # "what percentage", not "in what year"
        if asked_by:
            units.add(unit)
    return frozenset(units)


def holds_measure(text: str, measures: frozenset[str]) -> bool:
    """Whether ``text`` holds a value of one of ``measures``: in a unit of its own, or in a
    sentence or table row that names the measure's unit."""
    if any(MEASURES.get(a.unit, "") in measures for a in anchors_in(text, names=False) if a.unit):
        return True
    values = any(a.kind == "number" for a in anchors_in(text, names=False))
    return values and any(_NAMED_IN[kind].search(text) for kind in measures if kind in _NAMED_IN)
