"""Words as grounding compares them: by their first letters, without function words.

A question's words are of three kinds here: what it asks about (its key terms), the kind of
answer it wants ("how much", "year", "cost": :data:`ANSWER_KIND`), and what a name it gives is
the name of ("Skerry Rock *lighthouse*": :data:`KINDS_OF_PLACE`). Units are words too, read by
what they measure (:data:`UNITS`: "84 metres" is "84 m").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from imprint_desktop.core.research.seed import STOPWORDS

#: Words compared by their first letters: "restored" finds "restoration".
STEM = 5
WORD = re.compile(r"[^\W_]+")


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that say what kind of answer a question wants, not what it is about.
ANSWER_KIND = word_set(
    "cost costs costed price priced prices much many long old year years date dates day time "
    "times number numbers amount total value figure level size big large high deep wide far "
    "often name named called happen happened take took taken make made get got use used "
    "come came comes coming go goes went gone give gave given "
    "first last main exactly approximately roughly per across within among along around "
    "behind beyond near toward towards upon via without onto inside outside throughout "
    "average overall currently current now today "
    # a superlative of one, the period a figure is given for, a word for anyone or anything
    "deepest highest longest largest biggest widest oldest tallest tall furthest farthest "
    "heavy heavier heaviest weigh weighs weighed weight "
    "yearly annually daily weekly monthly percentage proportion "
    "someone somebody anyone anybody everyone everything anything something nothing people "
    "person thing things part parts kind "
    "type way work point"
)
STOP = STOPWORDS["en"] | ANSWER_KIND
#: What a name is often followed by in a question, as part of it ("Skerry Rock lighthouse",
#: "Lakeside station"): the subject's kind, not what the question asks about.
KINDS_OF_PLACE = word_set(
    "lighthouse lighthouses light station halt railway line reservoir dam viaduct bridge works "
    "depot society company committee council board school church hall house street road river "
    "lake bay point head rock island harbour port wharf quarry locomotive engine ship village "
    "town city county district region site plant centre center building tower farm estate park "
    "mill mine canal tunnel treatment"
)


def _by_form(forms: dict[str, str]) -> dict[str, str]:
    """``forms`` (a word -> its forms, space-separated) turned round: each form -> its word."""
    return {form: word for word, written in forms.items() for form in written.split()}


#: Units by what they measure: "84 metres" is "84 m".
UNITS = _by_form(
    {
        "%": "% percent per cent pct percentage",
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
        "degc": "°c celsius",
        "degf": "°f fahrenheit",
    }
) | {"per cent": "%", "percent": "%"}


#: What each unit of :data:`UNITS` measures: values in units of one measure may be converted
#: into each other (a gauge in metres for one asked in millimetres), not across measures.
MEASURES = {
    **dict.fromkeys(("m", "km", "mm", "cm", "ft", "mi", "nmi"), "length"),
    **dict.fromkeys(("t", "kg"), "mass"),
    **dict.fromkeys(("l", "ml"), "volume"),
    **dict.fromkeys(("gbp", "usd", "eur"), "money"),
    **dict.fromkeys(("min", "h", "s", "day", "week", "month", "yr"), "time"),
    "%": "share",
    **dict.fromkeys(("degc", "degf"), "temperature"),
}


def stems_of(text: str) -> set[str]:
    return {stem_of(word) for word in WORD.findall(text.lower())}


#: Past forms a question often uses of what the documents say otherwise ("Who kept the light?"
#: of "the keepers"), by the word they are a form of.
_IRREGULAR = _by_form(
    {
        "keep": "kept",
        "build": "built",
        "make": "made",
        "drive": "drove driven",
        "run": "ran",
        "hold": "held",
        "send": "sent",
        "take": "took taken",
        "give": "gave given",
        "write": "wrote written",
        "sell": "sold",
        "buy": "bought",
        "lead": "led",
        "bring": "brought",
        "begin": "began begun",
        "rise": "rose risen",
        "fall": "fell fallen",
        "spend": "spent",
        "win": "won",
    }
)


def stem_of(word: str) -> str:
    """``word`` as words are compared: without its ending ("opened", "opening", "keepers" are
    "open", "open", "keep"), by its first letters."""
    word = _IRREGULAR.get(word, word)
    for ending in ("ing", "ers", "ed", "es", "er", "s"):
        if ending == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
            continue  # "notes" is "note" + "s", as "note" is; "boxes" is "box" + "es"
        if word.endswith(ending) and len(word) - len(ending) >= 3 and not word.endswith("ss"):
            word = word[: -len(ending)]
            break
    return word[:STEM]


def content_stems(text: str) -> set[str]:
    """The stems of the words of ``text`` that say what it is about (no function words,
    numbers or units)."""
    return {
        stem_of(word)
        for word in WORD.findall(text.lower())
        if len(word) > 2 and word not in STOP and word not in UNITS and not word.isdigit()
    }


def listed(words: Sequence[str]) -> str:
    words = list(dict.fromkeys(words))[:3]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
