"""Research the engine drives on a model's behalf, when the model does not call tools (issue 43).

A model under a billion parameters answers from the passages of the engine's first search, in a
request without tools (:func:`~.seed.first_request_offers_tools`). A question that asks more than
one thing, or whose answer is in a document another one names, needs more than that one search.
So between the first search and the answer, the engine researches in the model's place, round by
round, under the reply's budgets and novelty ledger like any model's rounds (:mod:`.rounds` runs
them, as rounds of ``origin: engine``). This module decides what each round does:

- it splits the question into its parts (:mod:`.parts`) and searches for each;
- from each new passage it follows what the passage brings up: a document it names ("see
  Inspection Note 14", "set out in the engineer's report on …") is searched for, and the lines
  around a hit are read when the hit does not hold all the part asks (a table row without its
  header, a heading without its paragraph; then the document's opening lines too, where its
  summary and key figures are kept) or the part asks for a whole list;
- a round makes one call for each part that has one waiting; leads come only from new evidence,
  and each query and each place is looked at once, so research ends when the searches stop
  adding — or sooner, when the reply's patience, time or tokens run out (:mod:`.rounds`).

Then the model answers from the evidence laid out part by part, each part's passages under its
own words, and the question last (:meth:`DrivenResearch.answer_turn`). A question of one part
whose first search found a passage holding all its terms, and naming no other document, is
answered at once, as before: no round is added (:meth:`DrivenResearch.answered_at_once`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.parts import Part, parts_of
from imprint_desktop.core.tools.tool import EvidenceItem
from imprint_desktop.core.workspace.passages import focus, query_terms

#: Lines read on each side of a hit, for its neighbouring passages (a table's header, the
#: paragraph under a heading).
NEIGHBOUR_LINES = 12
#: Passages shown for each part in the answer's request: as many as a small model's first
#: search shows (:data:`~.seed.SEED_LIMIT`), so each part's request reads like a question of its
#: own (with two, a table of key figures ranked third for its part was left out).
PART_PASSAGES = 3
#: Passages a search for a document another passage names returns.
REFERENCE_LIMIT = 2
#: How the model answers a question of several parts: one request for each part, joined
#: (True), or one request with every part's passages (False). Chosen by
#: ``bench/bench_quality.py --sets multipart`` (see :func:`answers_part_by_part`).
PART_BY_PART = True
#: The id prefix of the engine's own calls past its first search.
ENGINE_CALL_ID = "imprint_engine"

#: How a passage names another document: "see Inspection Note 14", "set out in the engineer's
#: report on the lamp failure of 1974", "(engineering/lamp-report.md)".
_REFERENCE = re.compile(
    r"\b(?:see(?: also)?|set out in|described in|given in|detailed in|recorded in|reported in|"
    r"listed in|according to|in accordance with|as in)\s+(?:the\s+)?"
    r"(?P<name>[^.;:(),\n]{3,80}?)\s*(?=[.;:(),\n]|$)",
    re.IGNORECASE,
)
_FILE_NAME = re.compile(r"(?<![\w/])(?P<name>[\w./-]+\.(?:md|txt|pdf|docx?|odt|html?|csv|xlsx?))\b")
_LINES = re.compile(r"lines (\d+)-(\d+)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}", re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Lead:
    """One call the engine makes for a part (its index in :attr:`DrivenResearch.parts`)."""

    part: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class Found:
    """A passage a call found for a part, with its citation number."""

    number: int
    item: EvidenceItem
    rank: int  # its place in the result that found it (0: best)


@dataclass
class DrivenResearch:
    """What the engine searches and reads for a question, round by round, and what it found."""

    question: str
    earlier: Sequence[str] = ()
    limit: int = 3  # passages a search returns (the seed's, by the model's size)
    parts: tuple[Part, ...] = field(init=False)
    _found: list[list[Found]] = field(init=False)
    _queue: list[Lead] = field(init=False, default_factory=list)
    _asked: set[str] = field(init=False, default_factory=set)  # queries and places looked at
    _ids: int = field(init=False, default=0)
    _started: bool = field(init=False, default=False)
    _seed: set[int] = field(init=False, default_factory=set)  # the first search's numbers

    def __post_init__(self) -> None:
        self.parts = parts_of(self.question, self.earlier)
        self._found = [[] for _ in self.parts]

    # --- what was found ---------------------------------------------------------------------

    def seeded(self, first: int, items: Sequence[EvidenceItem]) -> None:
        """The first search's passages (numbered from ``first``): found for every part."""
        for index in range(len(self.parts)):
            self._note(index, first, items)
        self._asked.add(_key("search", self.question))
        self._seed = {first + rank for rank in range(len(items))}

    def answered_at_once(self) -> bool:
        """Whether the first search already answers the question: it asks one thing, a passage
        holds all its terms, and no such passage names another document to look in."""
        if len(self.parts) > 1 or self.parts[0].listing:
            return False
        holding = [found for found in self._found[0] if self._holds(0, found)]
        return bool(holding) and not any(_references(found.item.text) for found in holding)

    def found(self, lead: Lead, first: int, items: Sequence[EvidenceItem], new: set[int]) -> None:
        """What ``lead``'s call returned (numbered from ``first``; ``new``: the numbers the ledger
        judged new): kept for its part, and what its new passages bring up queued."""
        self._note(lead.part, first, items)
        fresh = [
            Found(first + rank, item, rank)
            for rank, item in enumerate(items)
            if first + rank in new
        ]
        self._follow(lead.part, fresh)

    # --- what to do next --------------------------------------------------------------------

    def next_round(self) -> list[Lead]:
        """The calls of the next engine round — one for each part that has one waiting, the
        part's own search first — or none when research is done."""
        if not self._started:
            self._started = True
            if len(self.parts) > 1:
                for index, part in enumerate(self.parts):
                    self._search(index, part.query, self.limit)
            for index in range(len(self.parts)):  # what the first search already brought up
                self._follow(index, list(self._found[index]))
        leads: list[Lead] = []
        for lead in list(self._queue):
            if all(taken.part != lead.part for taken in leads):
                leads.append(lead)
                self._queue.remove(lead)
        return leads

    def _follow(self, part: int, fresh: Sequence[Found]) -> None:
        """Queue what the new passages ``fresh`` bring up for ``part``: the documents they name,
        and the lines around the best of them, when it is about the part (it holds some of what
        the part asks) yet no passage holds all of it, or it is one row of a table, or the part
        asks for a whole list."""
        about = [found for found in fresh if self._score(part, found) > 0]
        for found in about:
            for name in _references(found.item.text):
                self._search(part, name, REFERENCE_LIMIT)
        # A question of one part that the first search did not answer whole is shown that
        # search's passages, as before: only a list, or a table cut to a row, is read around.
        held = len(self.parts) == 1 or any(self._holds(part, f) for f in self._found[part])
        for found in sorted(about, key=lambda f: (-self._score(part, f), f.rank))[:1]:
            if self.parts[part].listing or not held or _cut_table(found.item.text):
                self._read_around(part, found.item, opening=not held)

    def _search(self, part: int, query: str, limit: int) -> None:
        key = _key("search", query)
        if key in self._asked or not query.strip():
            return
        self._asked.add(key)
        arguments = {"query": query.strip(), "limit": limit}
        self._queue.append(Lead(part, self._call("search_workspace", arguments)))

    def _read_around(self, part: int, item: EvidenceItem, *, opening: bool = False) -> None:
        """Queue reading the lines around ``item`` for ``part``, once a document; with
        ``opening``, its opening lines too, where a document keeps its summary and its table of
        key figures, when the hit is further down."""
        lines = _LINES.search(item.location)
        if lines is None or "://" in item.source:
            return
        first, last = int(lines.group(1)), int(lines.group(2))
        places = [(max(1, first - NEIGHBOUR_LINES), last + NEIGHBOUR_LINES)]
        if opening and places[0][0] > 1:
            places.append((1, 2 * NEIGHBOUR_LINES))
        for start, end in places:
            key = _key("read", f"{item.source} {start}" if start == 1 else item.source)
            if key in self._asked:
                continue
            self._asked.add(key)
            arguments = {"path": item.source, "start_line": start, "end_line": end}
            self._queue.append(Lead(part, self._call("read_document", arguments)))

    def _call(self, name: str, arguments: dict[str, object]) -> ToolCall:
        self._ids += 1
        return ToolCall(
            f"{ENGINE_CALL_ID}_{self._ids}", name, json.dumps(arguments, ensure_ascii=False)
        )

    # --- the answer's request ---------------------------------------------------------------

    def part_chars(self, seed_chars: int) -> int:
        """The characters each part's passages may take in an answer's request, when the first
        search's passages took ``seed_chars``: all of them for one part, and for more, a share of
        twice as many (two parts take 4/3 of the first search's room, three 3/2)."""
        return seed_chars * 2 // (len(self.parts) + 1)

    def answer_turn(self, ask: str, part_chars: int) -> str:
        """The user turn the model answers: each part's best passages under its words (every
        passage once, each cut to ``part_chars`` // :data:`PART_PASSAGES` characters around what
        the part asks), then ``ask`` (the question block) last."""
        shown: set[tuple[str, str, str]] = set()
        blocks: list[str] = []
        share = max(200, part_chars // PART_PASSAGES)
        for index, part in enumerate(self.parts):
            best = [found for found in self.best(index) if _place(found) not in shown]
            shown.update(map(_place, best))
            if not best:
                continue
            passages = [
                prompts.Passage(
                    found.number,
                    found.item.source,
                    found.item.location,
                    focus(found.item.text, part.terms, share),
                    found.item.title,
                )
                for found in best
            ]
            heading = f"For “{part.text}”:\n\n" if len(self.parts) > 1 else ""
            blocks.append(heading + prompts.passages_block(passages))
        if not blocks:
            return ask
        return f"{prompts.PASSAGES_INTRO}\n\n" + "\n\n".join(blocks) + f"\n\n{ask}"

    def part_turn(self, part: int, part_chars: int) -> str | None:
        """The user turn of a request that answers ``part`` alone: its best passages, then its
        own words as the question; None when nothing was found for it."""
        best = self.best(part)
        if not best:
            return None
        share = max(200, part_chars // PART_PASSAGES)
        terms = self.parts[part].terms
        passages = [
            prompts.Passage(
                found.number,
                found.item.source,
                found.item.location,
                focus(found.item.text, terms, share),
                found.item.title,
            )
            for found in best
        ]
        ask = f"{prompts.QUESTION_LABEL} {self.parts[part].text}"
        return f"{prompts.PASSAGES_INTRO}\n\n{prompts.passages_block(passages)}\n\n{ask}"

    def best(self, part: int) -> list[Found]:
        """The passages that answer ``part`` best: those holding most of what it asks. A passage
        found again has a number of its own: it counts once, by its first number.

        A question of one part keeps its first search's passages in their order, as it is shown
        them without the engine's rounds, and gains what the rounds found about it."""
        first: dict[tuple[str, str, str], Found] = {}
        for found in self._found[part]:
            kept = first.setdefault(_place(found), found)
            if found.number < kept.number:
                first[_place(found)] = found
        ranked = sorted(first.values(), key=lambda f: (-self._score(part, f), f.rank, f.number))
        about = [found for found in ranked if self._score(part, found) > 0]
        if len(self.parts) > 1:
            return about[:PART_PASSAGES]
        seeded = sorted((f for f in first.values() if f.number in self._seed), key=_number)
        more = [found for found in about if found.number not in self._seed]
        return seeded + more[:PART_PASSAGES]

    def evidence_for(self, part: int) -> tuple[int, ...]:
        """The numbers of every passage found for ``part``."""
        return tuple(dict.fromkeys(found.number for found in self._found[part]))

    # --- judging passages -------------------------------------------------------------------

    def _note(self, part: int, first: int, items: Sequence[EvidenceItem]) -> None:
        self._found[part] += [Found(first + rank, item, rank) for rank, item in enumerate(items)]

    def _score(self, part: int, found: Found) -> int:
        return len(self.parts[part].terms & _stems(_read_as(found.item)))

    def _holds(self, part: int, found: Found) -> bool:
        terms = self.parts[part].terms
        return bool(terms) and terms <= _stems(_read_as(found.item))


def _number(found: Found) -> int:
    return found.number


def _place(found: Found) -> tuple[str, str, str]:
    """Where a passage was found, and what it says: the same passage under any number."""
    return (found.item.source, found.item.location, found.item.text)


def _read_as(item: EvidenceItem) -> str:
    """What a passage says, with where it is: its title and path count as its words."""
    return f"{item.title} {item.source} {item.text}"


def _stems(text: str) -> frozenset[str]:
    return query_terms(text)


def _key(kind: str, what: str) -> str:
    return f"{kind}:{' '.join(what.lower().split())}"


def _references(text: str) -> list[str]:
    """The documents ``text`` names as where something is found ("Inspection Note 14"), as a
    search finds them: a file's name by its words ("lead pipe programme" for
    "lead-pipe-programme.md"), a folder not at all (it is no one document)."""
    files = [match.group("name") for match in _FILE_NAME.finditer(text)]
    named = [match.group("name").strip() for match in _REFERENCE.finditer(text)]
    names = [_file_words(name) for name in files]
    names += [name for name in named if not any(file.startswith(name) for file in files)]
    return list(dict.fromkeys(name for name in names if _worth_searching(name)))


def _file_words(name: str) -> str:
    """The words of a file's name: "lead pipe programme" for "water/lead-pipe-programme.md"."""
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return " ".join(re.split(r"[-_.\s]+", stem)).strip()


def _worth_searching(name: str) -> bool:
    words = name.split()
    return (
        1 <= len(words) <= 12
        and any(len(word) > 2 for word in words)
        and not name.rstrip().endswith("/")
    )


def _cut_table(text: str) -> bool:
    """Whether ``text`` holds rows of a table without the rule under its header."""
    return bool(_TABLE_ROW.search(text)) and not _TABLE_RULE.search(text)


def answers_part_by_part(plan: DrivenResearch) -> bool:
    """Whether the model answers ``plan``'s question part by part (:data:`PART_BY_PART`): only a
    question of several parts is."""
    return PART_BY_PART and len(plan.parts) > 1
