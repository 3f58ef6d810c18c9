"""What a text claims that can be checked: numbers with their units, dates, times and names.

An :class:`Anchor` is compared by its key (:func:`same_value`): "18.50" is "£18.5", "3 March
1986" is found by "1986", "84 metres" is "84 m" but not "84 minutes".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from imprint_desktop.core.research.grounding.words import UNITS, stem_of, word_set
from imprint_desktop.core.workspace.dating import MONTHS

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
    r"(?:\s?(?P<unit>%|per ?cent|°\s?[CF]\b|[^\W\d_]+))?",
    re.IGNORECASE,
)
#: A unit's word, written out, right after the word after a number ("7,589 volunteer *hours*").
_UNIT_AFTER = re.compile(
    r"[ \t]+("
    + "|".join(sorted((w for w in UNITS if len(w) > 2 and w.isalpha()), key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
#: Words that make a unit of length one of area or volume, which :data:`UNITS` does not hold.
_POWERS = frozenset(("square", "cubic", "sq", "cu"))
#: A season or a financial year written with its second year's last two digits ("2025-26"):
#: one year's span, whose "26" is no number of its own.
_SEASON = re.compile(r"\b(?P<y>(?:1\d|20|21)\d{2})[-–/](?P<e>\d{2})\b")
#: A number written as a year is one ("in 1986 two months later" names no months of 1986).
_YEAR = re.compile(r"1\d{3}|20\d{2}|21\d{2}")
_MULTIPLIERS = {"thousand": 10**3, "k": 10**3, "million": 10**6, "billion": 10**9, "bn": 10**9}


@dataclass(frozen=True, slots=True)
class Anchor:
    """One checkable thing in a text: ``key`` is compared, ``unit`` must agree where both say."""

    kind: str  # "number", "date", "time" or "name"
    key: tuple[object, ...]
    text: str  # as written
    start: int
    unit: str = ""


def anchors_in(text: str, *, names: bool = True, opening: bool = False) -> list[Anchor]:
    """The numbers, dates, times and (with ``names``) names in ``text``, each once by key, in
    order. A full date also counts as its year and its day and month, so "3 March 1986" is found
    by "1986"; what a date or time is written with is not counted again as a number."""
    found: list[Anchor] = []
    taken = _season_ends(text)

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
        found += names_in(text, opening=opening)
    found.sort(key=lambda anchor: anchor.start)
    kept: dict[tuple[object, ...], Anchor] = {}
    for anchor in found:
        kept.setdefault((*anchor.key, anchor.unit), anchor)
    return list(kept.values())


def _season_ends(text: str) -> list[tuple[int, int]]:
    """Where ``text`` writes a season's second year ("26" of "2025-26"), which is no number."""
    return [
        match.span("e")
        for match in _SEASON.finditer(text)
        if int(match.group("e")) == (int(match.group("y")) + 1) % 100
    ]


def _number(match: re.Match[str]) -> Anchor | None:
    """The number ``match`` of :data:`_NUMBER` found, with its unit (None for a small bare
    number, which tells nothing)."""
    raw = match.group("n")
    value = Decimal(raw.replace(",", ""))
    mult = (match.group("mult") or "").lower()
    unit_word = (match.group("unit") or "").lower()
    if unit_word.startswith("°"):
        unit_word = unit_word.replace(" ", "")  # "5 ° C" is "5 °C"
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
    unit = UNITS.get(unit_word, "")
    end = match.end("unit") if unit and match.group("unit") and unit_word != "m" else m_end
    if (
        not unit
        and not currency
        and unit_word.islower()
        and unit_word not in _POWERS
        and not _YEAR.fullmatch(raw)
    ):
        # A unit after one word that says what is measured: "7,589 volunteer hours".
        later = _UNIT_AFTER.match(match.string, match.end("unit"))
        if later:
            unit, end = UNITS[later.group(1).lower()], later.end(1)
    if currency:
        unit = UNITS.get(currency, unit)
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
NOT_NAMES = word_set(
    "the a an in on at it its this that these those there their they he she his her we i you "
    "yes no however according based also and but or so then when where what which who how why "
    "after before during since until from to for of by with as if while although because "
    "sources source passage passages document documents imprint answer question note "
    "monday tuesday wednesday thursday friday saturday sunday"
) | frozenset(MONTHS)


#: A name's initial right before a word ("W." of "W. Dale").
_INITIAL = re.compile(r"(?:^|[\s(])[A-Z]\.$")


def names_in(text: str, *, opening: bool = False) -> list[Anchor]:
    """Runs of capitalised words ("Brindley", "Gannet Point", "Ruth Calloway"); the first word of
    a sentence alone only with ``opening`` (in a passage: there a word too many costs nothing)."""
    out: list[Anchor] = []
    for match in re.finditer(r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*", text):
        words = match.group().split()
        start = match.start()
        while words and words[0].lower().strip("'’") in NOT_NAMES:
            start += len(words[0]) + 1
            words = words[1:]
        words = [w.removesuffix("'s").removesuffix("’s") for w in words]
        words = [w for w in words if w.lower() not in NOT_NAMES]
        if not words or all(len(w) < 2 for w in words):
            continue
        before = text[: match.start()].rstrip()
        opens = not before or before.endswith((".", "!", "?", ":", "\n", "-", "*", "•"))
        opens = opens and not _INITIAL.search(before)  # "W. Dale": an initial ends no sentence
        if opens and len(words) == 1 and start == match.start() and not opening:
            continue  # a sentence's first word, alone: a word, not a name, as often as not
        key = ("name", *sorted(w.lower() for w in words))
        out.append(Anchor("name", key, " ".join(words), start))
    return out


def years_in(text: str) -> set[int]:
    """The years ``text`` names, in numbers or dates."""
    found: set[int] = set()
    for anchor in anchors_in(text, names=False):
        if anchor.kind == "date" and anchor.key[1]:
            found.add(int(str(anchor.key[1])))
        elif year_like(anchor) and float(str(anchor.key[1])).is_integer():
            found.add(int(float(str(anchor.key[1]))))
    return found


def comparable(claim: Anchor, other: Anchor) -> bool:
    """Whether ``other`` is a value of the kind ``claim`` is: a date or a year for a date or a
    year, a number measured the same way for a number, a name for a name."""
    if claim.kind == "date" or year_like(claim):
        return other.kind == "date" or year_like(other)
    if claim.kind == "number":
        return other.kind == "number" and other.unit == claim.unit
    return other.kind == claim.kind


def year_like(anchor: Anchor) -> bool:
    """Whether ``anchor`` may be a year: a bare number from 1000 to 2199, not written with a
    thousands comma ("1,212 hours" is no year)."""
    return (
        anchor.kind == "number"
        and not anchor.unit
        and 1000 <= float(str(anchor.key[1])) < 2200
        and "," not in anchor.text
    )


def part_of(whole: Anchor, other: Anchor) -> bool:
    """Whether ``other`` is a part of the date ``whole`` written apart: its year, or its day and
    month without one ("1857" and "1 November" in a row "| 1857 | … lit on 1 November |" are
    no other date than 1 November 1857)."""
    if whole.kind != "date" or len(whole.key) != 4:
        return False
    year, month, day = whole.key[1:]
    if other.kind == "number":
        return isinstance(year, int) and year > 0 and other.key[1:] == (float(year),)
    if other.kind == "date" and len(other.key) == 4:
        other_year, other_month, other_day = other.key[1:]
        same_day = (other_month, other_day) == (month, day)
        return (other_year == 0 and same_day) or (other_year == year and not other_month)
    return False


def same_value(claim: Anchor, held: Anchor) -> bool:  # noqa: PLR0911 - one case per kind
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
    if claim.unit and not held.unit and year_like(held):
        return False  # "1947 minutes" is not the year 1947
    return not (claim.unit and held.unit and claim.unit != held.unit)


def _name_in(claim: Anchor, held: Anchor) -> bool:
    return {stem_of(str(w)) for w in claim.key[1:]} <= {stem_of(str(w)) for w in held.key[1:]}
