"""A question's parts, for the research the engine does on a small model's behalf (issue 43).

"Which orchard has apple scab and how much will the new press cost?" asks two things, which two
different passages answer; one search for the whole question finds passages for one half. The
engine searches for each part on its own (:mod:`.driven`), so it splits a question into them:

- clauses joined by "and", "but", "also", ";" or a second question mark, when the second starts
  a question of its own ("… and *how much* will …", "… and *who* was its last keeper?");
- the sides of a comparison ("Compare the estimated with the actual saving of automation",
  "the difference between the 2023 and the 2024 harvest", "A versus B"), each side completed
  with the words the other side shares ("the estimated *saving of automation*");
- the items of a list joined by "and" or commas ("What are the range and the height of the
  light?", "List every keeper and station"), completed the same way.

A part says what it asks in the words a person would write (:attr:`Part.text`, the subject an "it"
refers to named, :func:`~.seed.resolved_question`); a part that asks for every item of something
("each", "every", "all", "list") is a *list* part, whose passages the engine reads around, since
one table row is not the list. A name with "and" in it ("Hartley and Stowe") is never split, nor is
a question with nothing on one side of its "and". What does not split is one part: the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from imprint_desktop.core.research import seed
from imprint_desktop.core.workspace.passages import query_terms
from imprint_desktop.core.workspace.query_words import WORD, content_words, word_set

#: What a part is: the whole question, one of its clauses, a side of a comparison, an item.
PartKind: TypeAlias = Literal["whole", "clause", "side", "item"]

#: Words that open a question of its own after "and" ("… and *who* was …").
_OPENERS = word_set(
    "how what when where who whom whose which why is are was were does do did can could will "
    "would should has have had list name"
)
#: Words after which an English question's verb comes last, bare ("When was the dam *built*?").
_AUXILIARIES = word_set("did does do was were is are will would can could has have had should")
#: Words that ask for every item of something.
_LISTING = word_set("each every all list")
#: Words of a question that ask how to answer, not what about, and adverbs a passage says in
#: its own words ("When was it *first* lit?" of "Lit: 1 November 1857."): a passage that answers
#: need not hold them.
_ASKING = word_set(
    "compare comparison contrast difference between versus list name each every all much many "
    "tell give show describe first ever still also never always already once again even just"
)
_COMPARE = re.compile(
    r"^.*?\b(?:compare|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against)\s+(?P<b>.+)$",
    re.IGNORECASE,
)
_BETWEEN = re.compile(r"^.*?\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+)$", re.IGNORECASE)
_VERSUS = re.compile(
    r"^(?P<a>.+?)\s+(?:versus|vs\.?|compared (?:with|to))\s+(?P<b>.+)$", re.IGNORECASE
)
_HOW_COMPARE = re.compile(
    r"^how\s+(?:does|do|did)\s+(?P<a>.+?)\s+compare\s+(?:with|to)\s+(?P<b>.+)$", re.IGNORECASE
)
#: Where clauses part: a second question mark, a semicolon, a conjunction or a comma (the last
#: two only before a question of their own).
_CLAUSE_BREAK = re.compile(
    r"\?\s+(?=\S)|;\s*|,?\s+\b(?:and|but|also|and also)\s+|,\s+", re.IGNORECASE
)
_DETERMINERS = word_set("the a an its their his her this that these those")
#: At most this many parts: a question listing more is asked about as a whole beside them.
MAX_PARTS = 4


@dataclass(frozen=True, slots=True)
class Part:
    """One thing a question asks."""

    text: str  # as a question of its own: "How much will the new press cost?"
    kind: PartKind
    listing: bool = False  # asks for every item of something: its passages are read around
    #: What the engine searches for it: its content words, and for a short part that names
    #: nothing or one that refers back, the question's names and numbers ("What caused the
    #: failure?" of "… at Skerry Head …").
    query: str = ""

    @property
    def terms(self) -> frozenset[str]:
        """The words a passage that answers it holds, by their first letters
        (:func:`~imprint_desktop.core.workspace.passages.query_terms`): its content words but
        those that say how to answer ("compare", "every", "how many")."""
        words = [word for word in content_words(self.text) if word not in _ASKING]
        return query_terms(" ".join(words))


def parts_of(question: str, earlier: Sequence[str] = ()) -> tuple[Part, ...]:
    """The parts of ``question`` (a follow-up's ``earlier`` questions name what it refers to);
    one :data:`whole <PartKind>` part when it asks one thing."""
    asked = question.strip()
    body = asked.rstrip("?!. ")
    if not body:
        return (Part(asked, "whole"),)
    found = _comparison(body) or _clauses(body) or _items(body)
    if not found or len(found) > MAX_PARTS:
        query = seed.seed_words(asked, earlier)
        return (Part(asked, "whole", listing=_lists(asked), query=query),)
    names = _names(body)
    parts: list[Part] = []
    for kind, text in found:
        written = _as_question(text)
        if parts:
            written = _with_subject(_filled(written, parts[0].text), parts[0].text)
        own = content_words(written)
        # A short part that names nothing, or one that refers back ("that incident"), is about
        # what the question names ("What caused the failure?").
        asks = [word for word in own if word not in _ASKING]
        leans = len(asks) < _WHOLE or seed.refers_back(written)
        lacking = (
            [name for name in names if name not in own] if leans and not _names(written) else []
        )
        if len([word for word in own if word not in _ASKING]) < 2:  # "Who designed it?"
            lacking += content_words(parts[0].text) if parts else []
        query = " ".join(dict.fromkeys([*own, *lacking])) or written
        parts.append(Part(written, kind, listing=_lists(written), query=query))
    return tuple(parts)


def _names(text: str) -> list[str]:
    """The names and numbers of ``text`` (capitalised words past the first, digits), lower-cased,
    as its content words write them."""
    words = WORD.findall(text)
    content = set(content_words(text))
    named = [
        word.lower()
        for index, word in enumerate(words)
        if (index > 0 and word[:1].isupper()) or any(char.isdigit() for char in word)
    ]
    return [word for word in dict.fromkeys(named) if word in content]


#: "It" and its like, and what stands in their place: the subject, or its possessive.
_REFERRING = {
    **dict.fromkeys(("it", "they", "them"), "{}"),
    **dict.fromkeys(("its", "their"), "{}'s"),
}
_NAME_RUN = re.compile(r"(?<=\s)(?:[A-Z][\w'’-]*)(?:\s+[A-Z][\w'’-]*)*")


def _with_subject(text: str, first: str) -> str:
    """``text`` with an "it" or "its" written as the name the first part is about ("Who was its
    last keeper?" after "When did Gannet Point become automatic?" → "Who was Gannet Point's last
    keeper?"), or the "the …" it closes with ("When will it be delivered?" after "Who supplies
    the new press?"); unchanged when it has neither."""
    runs = _NAME_RUN.findall(first)
    closing = re.search(r"\bthe(?:\s+[\w'’-]+){1,3}\s*\??$", first, re.IGNORECASE)
    if runs:
        subject = max(runs, key=lambda run: len(run.split()))
    elif closing is not None:  # "the new press" of "Who supplies the new press?"
        subject = closing.group().rstrip(" ?")
        opening = [word.lower() for word in first.split()[:3]]
        if any(word in _AUXILIARIES for word in opening) and len(subject.split()) > 2:
            subject = subject.rsplit(" ", 1)[0]  # "the dam", not "the dam built"
    else:
        return text

    def named(match: re.Match[str]) -> str:
        return _REFERRING[match.group().lower()].format(subject)

    return re.sub(r"\b(?:its|it|they|them|their)\b", named, text, count=1, flags=re.IGNORECASE)


_ELLIPSIS = re.compile(
    r"^(how (?:many|much))\s+(?=(?:does|do|did|is|are|was|were|has|have)\b)", re.I
)
_COUNTED = re.compile(
    r"^how (?:many|much)\s+(?P<what>(?:\w+\s+){0,2}?\w+)\s+"
    r"(?:does|do|did|is|are|was|were|has|have)\b",
    re.I,
)


def _filled(text: str, first: str) -> str:
    """``text`` with the thing counted that the first part names ("How many does Hill Field
    have?" after "How many trees does Long Meadow have?" → "How many trees does …")."""
    counted = _COUNTED.match(first)
    if counted is None or _ELLIPSIS.match(text) is None:
        return text
    return _ELLIPSIS.sub(lambda m: f"{m.group(1)} {counted['what']} ", text, count=1)


def _lists(text: str) -> bool:
    return any(word.lower() in _LISTING for word in WORD.findall(text))


def _as_question(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;")
    return text[:1].upper() + text[1:] + ("" if text.endswith("?") else "?")


def _comparison(body: str) -> list[tuple[PartKind, str]]:
    """The two sides of a comparison, each completed by the other's shared words; or []."""
    for pattern in (_HOW_COMPARE, _COMPARE, _BETWEEN, _VERSUS):
        match = pattern.match(body)
        if match is None:
            continue
        a, b = _completed(match["a"], match["b"])
        if _has_content(a) and _has_content(b):
            return [("side", a), ("side", b)]
    return []


def _clauses(body: str) -> list[tuple[PartKind, str]]:
    """Clauses that each ask a question of their own; or [] when there is one."""
    pieces: list[str] = []
    start = 0
    for match in _CLAUSE_BREAK.finditer(body):
        rest = body[match.end() :]
        first = WORD.match(rest)
        opens = first is not None and first.group().lower() in _OPENERS
        question_mark = match.group().startswith("?") or match.group().startswith(";")
        if not (opens or question_mark):
            continue
        if _in_name(body, match.start(), match.end()):
            continue
        pieces.append(body[start : match.start()])
        start = match.end()
    pieces.append(body[start:])
    pieces = [piece for piece in pieces if piece.strip()]
    if len(pieces) < 2 or not all(map(_has_content, pieces)):
        return []
    return [("clause", piece) for piece in pieces]


def _items(body: str) -> list[tuple[PartKind, str]]:
    """The items of a list joined by "and" (and commas) inside one question, each completed
    with the words the question says of all of them; or []."""
    match = re.search(r"(?:,\s*|\s+)(?:and|&)\s+", body, re.IGNORECASE)
    if match is None or _in_name(body, match.start(), match.end()):
        return []
    left, right = body[: match.start()], body[match.end() :]
    # Further items before the "and", parted by commas ("the range, the height and the colour").
    lefts = [piece for piece in re.split(r",\s*", left) if piece.strip()]
    if len(lefts) > 1 and not all(_is_phrase(piece) for piece in lefts[1:]):
        lefts = [left]
    head, first = _leading_question(lefts[0])
    items = [first, *lefts[1:], right]
    if not _is_phrase(first) or not all(map(_has_content, items)):
        return []
    last = items[-1]
    completed = [_completed(item, last)[0] for item in items[:-1]]
    # The last item takes the words the first one opens with ("every keeper and station").
    last = _completed(items[0], last)[1]
    return [("item", f"{head}{item}") for item in [*completed, last]]


def _leading_question(text: str) -> tuple[str, str]:
    """``text`` parted into its question words ("What are ", "List every ") and the rest (the
    first item); the head is "" when the text opens with no question word."""
    words = text.split()
    taken = 0
    for word in words:
        bare = word.lower().strip(",")
        if bare in _OPENERS or bare in _LISTING or bare in ("is", "are", "was", "were", "me"):
            taken += 1
            continue
        break
    if taken == 0 or taken == len(words):
        return "", text
    return " ".join(words[:taken]) + " ", " ".join(words[taken:])


def _completed(a: str, b: str) -> tuple[str, str]:
    """Two sides that share words completed by each other: a shorter left side takes the right
    one's words past as many words as it has ("the estimated" and "the actual saving of
    automation" → "the estimated saving of automation"; "the range" and "the height of the light"
    → "the range of the light"), a shorter right side takes the left one's words before as many
    as it has ("the cost of the north wing" and "the south wing" → "the cost of the south wing").
    A side of three content words or more is whole already."""
    a_words, b_words = a.split(), b.split()
    a_core, b_core = _core(a_words), _core(b_words)
    if len(a_core) < len(b_core) and _content_count(a_words) < _WHOLE:
        return " ".join(a_words + b_core[len(a_core) :]), b
    if len(b_words) < len(a_words) and _content_count(b_words) < _WHOLE:
        return a, " ".join(a_words[: len(a_words) - len(b_words)] + b_words)
    return a, b


#: A side of a comparison or an item of a list with this many content words is not completed.
_WHOLE = 3


def _core(words: Sequence[str]) -> list[str]:
    """``words`` without the determiners they open with."""
    index = 0
    while index < len(words) - 1 and words[index].lower() in _DETERMINERS:
        index += 1
    return list(words[index:])


def _content_count(words: Sequence[str]) -> int:
    return len(content_words(" ".join(words)))


def _in_name(text: str, start: int, end: int) -> bool:
    """Whether the conjunction at ``text[start:end]`` joins the words of a name ("Hartley and
    Stowe"): capitalised words on both sides of it."""
    before = text[:start].split()[-1:]
    after = text[end:].split()[:1]
    return bool(before and after and before[0][:1].isupper() and after[0][:1].isupper())


def _is_phrase(text: str) -> bool:
    """A short run of words without a verb of its own: a list item, not a clause."""
    words = text.split()
    return 0 < len(words) <= _PHRASE_WORDS and not any(word.lower() in _OPENERS for word in words)


#: A list item has at most this many words.
_PHRASE_WORDS = 8


def _has_content(text: str) -> bool:
    return any(word not in _ASKING for word in content_words(text))
