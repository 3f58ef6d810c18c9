"""An answer checked sentence by sentence: its claims, their citations, its verdict."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from imprint_desktop.core.research.events import ClaimView, GroundingVerdict, GroundingView
from imprint_desktop.core.research.grounding.anchors import (
    Anchor,
    anchors_in,
    same_value,
    year_like,
    years_in,
)
from imprint_desktop.core.research.grounding.asked import unanswered
from imprint_desktop.core.research.grounding.checker import NOT_IN_DOCUMENTS, Checker, Verdict
from imprint_desktop.core.research.grounding.measures import holds_measure
from imprint_desktop.core.research.grounding.passages import (
    CITE,
    LIST_ITEM,
    QUOTE_CHARS,
    PassageText,
    Unit,
    quote,
    units_of,
)
from imprint_desktop.core.research.grounding.question import Question
from imprint_desktop.core.research.grounding.words import (
    STOP,
    WORD,
    stem_of,
    stems_of,
    word_set,
)


@dataclass(frozen=True, slots=True)
class Grounded:
    """An answer checked against its passages: the answer with the citations the engine adds,
    what each claim stands on, and for each cited passage the sentences quoted for it."""

    answer: str
    grounding: GroundingView
    quotes: dict[int, str] = field(default_factory=dict)


#: A Markdown link, or an address: not a claim the documents would hold.
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|<?https?://\S+>?|\b[\w.+-]+@[\w-]+\.[\w.]+")
#: A sentence of an answer: to its stop, or to the end of its paragraph, list item or row. A
#: single line break inside a paragraph (a passage copied with its wrapped lines) goes on.
_ANSWER_SENTENCE = re.compile(
    r".+?(?:(?<![ (][A-Z]\.)(?<=[.!?])(?=\s|$)"
    r"|\n(?=[ \t]*(?:\n|[-*•+]\s|[#|]|\d{1,3}(?:\.\d{1,3})*[.:)]\s))|$)",
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


def answer_sentences(answer: str) -> list[str]:
    """The sentences of ``answer`` as grounding reads them, each with what follows it, so
    that they join back into the answer."""
    return [match.group() for match in _ANSWER_SENTENCE.finditer(answer)]


def ground(question: str, answer: str, passages: Sequence[PassageText]) -> Grounded:
    """Check ``answer`` to ``question`` against ``passages`` (see the module docstring)."""
    return ground_by(checker_for(question, passages), answer)


def checker_for(question: str, passages: Sequence[PassageText]) -> Checker:
    """What ``question`` asks, against the sentences of ``passages``."""
    units: list[Unit] = []
    for passage in passages:
        units += units_of(passage, len(units))
    stale = {p.id: p.superseded for p in passages if p.superseded}
    return Checker(Question.read(question), units, stale)


def ground_by(checker: Checker, answer: str) -> Grounded:
    """Check ``answer`` with ``checker`` (:func:`checker_for`): :func:`ground`'s work."""
    asked, units = checker.question, checker.units
    checker.refers = asked.names_subject(stems_of(answer))
    checker.gives_unit_asked = any(
        a.unit in checker.units_asked and checker.wanted(a) for a in anchors_in(answer, names=False)
    )
    claims: list[ClaimView] = []
    quotes: dict[int, list[str]] = {}
    supporting: set[int] = set()
    pieces: list[str] = []
    given: list[tuple[Anchor, Verdict]] = []
    answered: set[int] = set()  # the sentences a sound claim gave its values from
    for piece in answer_sentences(answer):
        sentence = " ".join(CITE.sub("", piece).split())
        claim = _claim(sentence, checker) if sentence.strip(" -*•#") else None
        if claim is None:
            pieces.append(piece)
            continue
        view, supports, checked = claim
        claims.append(view)
        given += checked
        wanted = [(anchor, verdict) for anchor, verdict in checked if checker.wanted(anchor)]
        if not any(verdict.note for _, verdict in wanted):
            # A sentence a wholly sound claim took its values from; one that also gave a
            # value nothing supports ("8 hours at 5 °C", the 5 °C beside 11 hours) may have
            # taken only a condition from it.
            answered |= {v.unit.order for _, v in wanted if v.unit is not None}
        for unit, around in supports:
            supporting.add(unit.order)
            quoted = quote(unit.text, around, QUOTE_CHARS * (2 if unit.row else 1))
            if quoted not in quotes.setdefault(unit.passage, []):
                quotes[unit.passage].append(quoted)
        # A claim flagged for a value is not cited for the others it holds ("8 hours at 5 °C [1]"
        # of a passage that gives 11 hours at 5 °C): a cite would vouch for the whole of it.
        cite = view.supported_by and not view.note and not CITE.search(piece)
        pieces.append(_cited(piece, view.supported_by) if cite else piece)
    cited_answer = "".join(pieces)
    # "Not specified", with nothing of the kind asked given, where a sentence holds it all.
    gives = any(checker.wanted(anchor) for anchor, _ in given)
    said_after_all = _said_after_all(checker) if declines(answer) and not gives else None
    if said_after_all is not None:
        held = [f"“{w}”" for s, w in asked.key.items() if s not in _ATTRIBUTES]
        words = ", ".join(held[:-1]) + f" and {held[-1]}"
        why = f"yet the passage [{said_after_all.passage}] speaks of {words}"
    else:
        why = "" if declines(answer) or not answer.strip() else unanswered(checker, given, answer)
    if why:
        claims = _noted(claims, why, answer)
    # With no passage at all, nothing was found: only a number, date or name it states is
    # flagged (it came from nowhere).
    verdict = _verdict(claims, answer) if units or claims else "not_found"
    offered, offered_from = "", 0
    if said_after_all is not None:
        offered = quote(said_after_all.text, (), QUOTE_CHARS * 2)
        offered_from = said_after_all.passage
    elif verdict in ("unsupported", "partly"):
        # An answer that does not answer may stand on the very sentence that does.
        # A sentence that holds only the answer's other words ("a collie called Fly") may
        # still hold the value it should have given ("… passed her assessment in 1974").
        best = _offer(checker, set() if why else answered)
        if best is not None:
            offered, offered_from = quote(best.text, (), QUOTE_CHARS * 2), best.passage
    grounding = GroundingView(verdict, tuple(claims), offered, offered_from)
    return Grounded(
        cited_answer, grounding, {number: " … ".join(texts) for number, texts in quotes.items()}
    )


#: The words right before a value an answer denies.
_DENIED = re.compile(r"\b(?:not|rather than|instead of)\s+$", re.IGNORECASE)


def _noted(claims: list[ClaimView], why: str, answer: str) -> list[ClaimView]:
    """``claims`` with ``why`` the answer does not answer said of it: of its first claim (of
    its first sentence when nothing in it was a claim)."""
    if not claims:
        first = next(iter(_ANSWER_SENTENCE.finditer(answer.strip())), None)
        text = " ".join(CITE.sub("", first.group() if first else answer).split())
        return [ClaimView(text, (), why)]
    head = claims[0]
    note = f"{head.note}; {why}" if head.note else why
    return [ClaimView(head.text, head.supported_by, note), *claims[1:]]


#: An outline's number opening an item ("1.1.1 The document …", "1.2: Costs"): a label, not
#: a value ("14.1 tonnes.").
_OUTLINE = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3}){2,}[.:)]?|\d{1,3}(?:\.\d{1,3})*[:)])\s+")


def _claim(
    sentence: str, checker: Checker
) -> tuple[ClaimView, list[tuple[Unit, list[str]]], list[tuple[Anchor, Verdict]]] | None:
    question = checker.question
    plain = _LINK.sub(" ", _OUTLINE.sub("", LIST_ITEM.sub("", sentence)))
    anchors = [
        a
        for a in anchors_in(plain)
        if a.key not in question.anchors
        and not (a.kind == "name" and question.names_subject(stems_of(a.text)))
        # One capitalised word is checked only as the answer to "who": elsewhere it is as often
        # a word as a name ("Copy", "British").
        and not (
            a.kind == "name"
            and len(a.key) == 2
            and question.wants not in ("name", "which")
            and not question.kind  # "Which orchard … and how much …?": its name is asked
        )
        # A value the answer denies ("36 metres tall, *not 31*") is no claim of it.
        and not _DENIED.search(plain[: a.start])
    ]
    supports: list[tuple[Unit, list[str]]] = []
    notes: list[str] = []
    checked: list[tuple[Anchor, Verdict]] = []
    for anchor in anchors:
        verdict = checker.check(anchor, plain)
        checked.append((anchor, verdict))
        if not verdict.note and verdict.unit is not None:
            held = [a.text for a in checker.anchors[verdict.unit.order] if same_value(anchor, a)]
            supports.append((verdict.unit, held))
        elif verdict.unit is None:
            notes.append(f"“{anchor.text}” is {NOT_IN_DOCUMENTS}")
        else:
            notes.append(f"“{anchor.text}”: {_cited_note(verdict.note, verdict.unit.passage)}")
    if not anchors:
        # What it says in words of its own is its claim: the question's words around them
        # ("The light stands on piles because of …") say nothing the passages could hold.
        if unheld := _unheld_words(sentence, checker):
            return ClaimView(sentence, (), f"{_quoted_words(unheld)} {NOT_IN_DOCUMENTS}"), [], []
        unit = _by_words(sentence, checker)
        if unit is None:
            return None
        if note := checker.of_another(plain, unit):
            return ClaimView(sentence, (unit.passage,), _cited_note(note, unit.passage)), [], []
        supports.append((unit, []))
    by = tuple(dict.fromkeys(unit.passage for unit, _ in supports))
    return ClaimView(sentence, by, "; ".join(notes)), supports, checked


def _cited_note(note: str, passage: int) -> str:
    """``note`` ("the passage says this of …") with the passage it speaks of numbered."""
    return note.replace("the passage", f"the passage [{passage}]", 1)


def _by_words(sentence: str, checker: Checker) -> Unit | None:
    """The passage sentence that says most of what ``sentence`` (without numbers or names)
    says, if it says most of it."""
    words = {stem_of(w.lower()) for w in WORD.findall(sentence) if w.lower() not in STOP}
    words = {w for w in words if len(w) > 2}
    if len(words) < 2:
        return None
    best = max(checker.units, key=lambda u: (len(words & u.words), -u.order), default=None)
    if best is None or len(words & best.words) < max(2, math.ceil(0.6 * len(words))):
        return None
    return best


#: Words a sentence of an answer may add that tell nothing of the documents ("I hope this
#: helps", "In short, …").
_COURTESY = frozenset(
    stem_of(word)
    for word in word_set(
        "hope help helps helpful let know glad happy please note short summary sum overall "
        "conclusion mean means answer question document documents passage passages text say "
        "says said state states stated mention mentions mentioned"
    )
)


def _unheld_words(sentence: str, checker: Checker) -> list[str]:
    """What ``sentence`` says in words of its own that no passage holds, when it holds no
    number, date or name to check and its question asks for no such value ("Why …?", "What is a
    screw-pile?"): the words it adds to the question's, as it wrote them, when none of them is
    found ("the *design* of the light"); [] when any is, or when it adds none."""
    question = checker.question
    if question.wants or not checker.units or declines(sentence):
        return []  # ("… is not specified in the document" says nothing of its own)
    own: dict[str, str] = {}
    for word in WORD.findall(sentence):
        lower = word.lower()
        if len(lower) <= 2 or lower in STOP or lower.isdigit():
            continue
        stem = stem_of(lower)
        if stem not in question.terms and stem not in _COURTESY:
            own.setdefault(stem, lower)
    if not own or not own.keys().isdisjoint(checker.everywhere):
        return []
    return list(own.values())


def _quoted_words(words: Sequence[str]) -> str:
    shown = [f"“{word}”" for word in words[:3]]
    said = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"{said} {'is' if len(shown) == 1 else 'are'}"


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


#: Words for what is asked of a thing ("what *colour* was it painted?"), which a passage that
#: answers says in its own words ("painted teal").
_ATTRIBUTES = {stem_of(word) for word in ("colour", "color", "shape", "material")}


def _said_after_all(checker: Checker) -> Unit | None:
    """The passage sentence that holds every term of a question an answer says the documents
    do not answer ("What colour was the harbour crane painted?" answered "not specified", over
    "The harbour crane was painted teal in March."): two or more key terms, every name the
    question gives, a value of the kind it asks for, its year and its conditions ("at 25 °C");
    None when no sentence does, and the answer's "not found" may well be right."""
    question = checker.question
    key = set(question.key) - _ATTRIBUTES
    if len(key) < 2:
        return None
    for unit in sorted(checker.units, key=lambda u: (-checker.score(u), u.order)):
        if unit.header or not key <= unit.words:
            continue  # in the sentence itself, not only under its heading
        if not all(subject <= unit.about for subject in question.subjects):
            continue
        values = anchors_in(unit.said())
        if question.wants and not any(checker.wanted(a) for a in values):
            continue
        years = years_in(f"{unit.text} {unit.context}")
        if question.years and years and years.isdisjoint(question.years):
            continue
        if any(
            any(a.unit == asked.unit for a in values)
            and not any(same_value(asked, a) for a in values)
            for asked in checker.conditions
        ):
            continue  # "11 hours at 5 °C" to "… at 25 °C?"
        return unit
    return None


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


def _offer(checker: Checker, supporting: set[int]) -> Unit | None:
    """The passage sentence that answers the question's terms best, to offer in place of an
    unsupported answer: it holds its subject, a key term (when the documents have them) and a
    value a question could want; None when no sentence does."""
    question = checker.question
    present = set(question.key) - {stem_of(word) for word in checker.missing}
    measures = checker.measures

    def answers(unit: Unit) -> bool:
        if len(re.findall(r",\S", unit.text)) > 2:
            return False  # a table's lines run together ("Old Quay,1854,F G,,green")
        if unit.header or _words_of(unit.text) in _words_of(unit.context):
            # A table's header row ("Year | Pipes replaced | Samples over 10 µg/l"), or a title
            # or heading, which says nothing ("Pikestone Pumping Station").
            return False
        years = years_in(f"{unit.text} {unit.context}") if question.years else set()
        if years and years.isdisjoint(question.years):
            return False  # of another year than the one asked (2022's row, 2024's report)
        if (
            question.wants
            and measures
            and not holds_measure(f"{unit.text} {unit.columns}", measures)
        ):
            return False  # no value of the measure asked ("how long does it *last*": a time)
        if values := [a for a in anchors_in(unit.said()) if checker.wanted(a)]:
            # A value of the kind asked for; to "how many", not only years ("From 2025 all new
            # meters are smart").
            return not (question.how_many and all(year_like(a) for a in values))
        # Or, to a question that asks for no value ("Why …?"), a sentence of prose that says
        # what it asks about.
        prose = not question.wants and not unit.row and len(unit.text) <= QUOTE_CHARS * 2
        return prose and bool(unit.words & present)

    if _narrows_what_is_asked(question, checker.narrowed_to_nothing()):
        return None  # what it asks about is narrower than anything found ("the *weekly* backups")
    candidates = [
        unit
        for unit in checker.units
        if (not question.subjects or question.names_subject(unit.about))
        # What it asks about, in the question's words, or where nothing found has them, its
        # subject's name; else nothing found speaks of it ("the society's rotavators" were
        # offered the heaviest marrow's weight).
        and (
            not question.key
            or unit.about & present
            or checker.of_the_year(unit)
            or (not present and bool(question.subjects))
        )
        and len(checker.missing) < 2
        and answers(unit)
        and unit.order not in supporting
    ]
    if not candidates:
        return None
    # The one of the year asked first; then one from a document that does not look superseded
    # (the production battery's life, not the prototype's); then one with a value in the unit
    # the question names ("in kilometres": 4.8 km, not 60 metres); then the one that holds what
    # narrows the question ("the *last* principal keeper"); and to "when", one that holds a
    # date or a year before one that holds other numbers only.
    narrowing = set(question.qualifiers) | set(question.order)

    def fit(unit: Unit) -> tuple[bool, bool, bool, int, bool, bool]:
        of_year = not question.years.isdisjoint(years_in(f"{unit.text} {unit.context}"))
        said = unit.said()
        values = [a for a in anchors_in(said) if checker.wanted(a)]
        dated = any(_dated(question, a) for a in values)
        # A count of what is asked before one of something else it names ("83 of the 131
        # callouts" to "How many volunteers … on callouts?").
        own = any(not checker.counts_else(said, a) for a in values)
        current = checker.is_current(unit)
        in_unit = any(a.unit in checker.units_asked for a in values)
        return of_year, current, in_unit, len(narrowing & unit.about), own, dated

    fits = {unit.order: fit(unit) for unit in candidates}
    most = max(fits.values())
    top = [unit for unit in candidates if fits[unit.order] == most]
    best = checker.best(top)
    if best.row and any(
        other.row and other is not best and checker.score(other) == checker.score(best)
        for other in top
    ):
        return None  # rows alike to the question ("the costume department" of four): no pick
    return best


def _narrows_what_is_asked(question: Question, missing: Sequence[str]) -> bool:
    """Whether a word of ``missing`` (narrowing words nothing found holds) stands right before a
    key term of ``question``, narrowing it to a kind of it ("the *weekly* backups", "a *senior*
    return"), not what is asked about itself ("a *seat* in the gallery")."""
    words = [word.lower() for word in WORD.findall(question.text)]
    return any(
        word in missing and stem_of(after) in question.key
        for word, after in itertools.pairwise(words)
    )


def _dated(question: Question, value: Anchor) -> bool:
    """Whether ``value`` answers "when" as a date or a year (not any number); any value of the
    kind asked answers another question."""
    return question.wants != "date" or value.kind == "date" or year_like(value)


def _words_of(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))
