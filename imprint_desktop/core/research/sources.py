"""What an answer rests on, said under it: the Sources block, and "nothing was found".

Every answer the model writes ends with its sources: the evidence items it cites, or — when it
cites none although evidence was found — the top passages found, labelled as not cited, so the
person can always check the answer against their documents. Before that, the answer is checked
against its passages (:mod:`.grounding`): a sentence a passage supports is cited inline (also when
the model cited nothing), each cited source quotes the sentences that support the answer, and what
no passage about the question holds is flagged above the Sources ("Check against your documents").
When research ended on a budget with no evidence at all, the engine does not ask the model to
answer (it would invent one): the reply is this module's message naming where it looked, what it
searched and read, and what to try next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import grounding, prompts
from imprint_desktop.core.research.grounding import PassageText, ground
from imprint_desktop.core.research.grounding.passages import FLAT_RULE, ROW_BREAK
from imprint_desktop.core.research.seed import content_words
from imprint_desktop.core.workspace.dating import SUPERSEDED_MARK
from imprint_desktop.core.workspace.passages import TABLE_RULE, focus, query_terms, term_weights

SOURCES_HEADING = "Sources:"
UNCITED_HEADING = "Passages found (not cited):"
NOT_FOUND_LABEL = "Nothing was found"
WITHOUT_EVIDENCE_LABEL = "Not from your documents"
CHECK_HEADING = "⚠ Check against your documents:"
OFFERED_LABEL = "Your documents say:"
UNMATCHED_NOTE = "Nothing in this answer could be matched to a passage of your documents."
#: Passages shown under an answer that cites none.
TOP_PASSAGES = 3
_EXCERPT_CHARS = 160
#: The most of a quote shown under an answer: quotes are cut around their value already (a table
#: row is quoted whole), this only bounds one from an older reply.
_QUOTE_SHOWN = 600
#: "[3]", "[3, 5]", "[3][5]", "[3–5]": the numbers an answer cites.
_CITATION = re.compile(r"\[(\d{1,6}(?:\s*(?:,|;|-|–|and)\s*\d{1,6})*)\]")


@dataclass
class LookedAt:
    """What research searched for and read, for the "nothing was found" message."""

    queries: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    def note(self, name: str, arguments: Mapping[str, object]) -> None:
        """Keep what a call of tool ``name`` with ``arguments`` searched, read or fetched."""
        key = {"search_workspace": "query", "read_document": "path", "fetch_url": "url"}.get(name)
        text = arguments.get(key) if key else None
        if not isinstance(text, str) or not text.strip():
            return
        into = {"query": self.queries, "path": self.paths, "url": self.urls}[key or ""]
        if text.strip() not in into:
            into.append(text.strip())


def cited_ids(text: str) -> list[int]:
    """The evidence numbers ``text`` cites, in order of first citation."""
    cited: list[int] = []
    for group in _CITATION.findall(text):
        numbers = [int(n) for n in re.findall(r"\d+", group)]
        if re.search(r"[-–]", group) and len(numbers) == 2 and 0 < numbers[1] - numbers[0] < 50:
            numbers = list(range(numbers[0], numbers[1] + 1))
        cited += [n for n in numbers if n not in cited]
    return cited


def sources_for(
    answer: str,
    evidence: Sequence[ev.EvidenceItemView],
    citable: Mapping[int, ev.EvidenceItemView] | None = None,
) -> tuple[ev.SourceView, ...]:
    """The Sources of ``answer``: the items it cites, else the top passages found (not cited).

    ``citable`` holds every numbered item, repeats included, so that a citation of a passage
    that repeated an earlier one still names its source.
    """
    by_id = {item.id: item for item in evidence} | dict(citable or {})
    cited = [by_id[number] for number in cited_ids(answer) if number in by_id]
    if cited:
        return tuple(_view(item, cited=True) for item in cited)
    # Passages before listings and the person's answers; within each, the order found (the
    # engine's own search comes first, best first).
    passages = [item for item in evidence if item.location != "listing" and item.source != "user"]
    top = (passages or list(evidence))[:TOP_PASSAGES]
    return tuple(_view(item, cited=False) for item in top)


def _quoted(supporting: str | None, best: str) -> str:
    """What a cited source quotes: the sentence that supports the answer, but for a table cut
    onto one line (which the grounding reads as one sentence), whose best row is quoted with
    its header instead."""
    if supporting and best and _row_of(supporting, best):
        return best  # the same row, with its header
    if supporting and not (FLAT_RULE.search(supporting) and best):
        return supporting
    return best


def _row_of(row: str, labelled: str) -> bool:
    """Whether ``row``, a table row's cells ("1863 | Carrick Spit light …"), is the row that
    ``labelled`` quotes with its header ("year: 1863; work: Carrick Spit light …")."""
    cells = [cell.strip(" *") for cell in row.strip(" |").split(" | ")]
    return len(cells) >= 2 and all(cell in labelled for cell in cells)


def grounded(
    question: str,
    answer: str,
    evidence: Sequence[ev.EvidenceItemView],
    citable: Mapping[int, ev.EvidenceItemView],
    texts: Mapping[int, str],
) -> tuple[str, tuple[ev.SourceView, ...], ev.GroundingView]:
    """``answer`` checked against its evidence: the answer with the citations the check adds,
    its Sources (each cited one quoting the sentences that support the answer, or else the part
    that matches ``question`` best), and its grounding. ``texts`` holds the evidence's whole texts
    by number (an item's excerpt stands in for one it lacks)."""
    checked = ground(question, answer, _passages(evidence, texts))
    answer = checked.answer
    found = sources_for(answer, evidence, citable)
    full = {s.id: texts.get(s.id) or (citable.get(s.id) or s).excerpt for s in found}
    if found and found[0].cited:
        best = snippets(found, full, question)
        found = tuple(
            replace(s, excerpt=_quoted(checked.quotes.get(s.id), best.get(s.id, ""))) for s in found
        )
    else:
        found = with_snippets(found, full, question)
    return answer, found, checked.grounding


def second_look(
    question: str,
    answer: str,
    evidence: Sequence[ev.EvidenceItemView],
    texts: Mapping[int, str],
) -> grounding.SecondLook | None:
    """The passage sentence to ask ``question`` again from, when ``answer`` is flagged and a
    sentence of ``evidence`` answers it (:mod:`.grounding.second_look`); None otherwise."""
    return grounding.worth_a_second_look(question, answer, _passages(evidence, texts))


def second_look_stands(
    question: str,
    again: str,
    evidence: Sequence[ev.EvidenceItemView],
    texts: Mapping[int, str],
    look: grounding.SecondLook,
) -> str:
    """What of ``again``, the answer asked from ``look``'s sentence, replaces the first: all of
    it or the opening of it that stands; "" when none does."""
    return grounding.what_stands(question, again, _passages(evidence, texts), look)


def unmentioned(
    question: str, evidence: Sequence[ev.EvidenceItemView], texts: Mapping[int, str]
) -> tuple[str, ...]:
    """The words of ``question`` that say what it is about, when no passage of ``evidence``
    (whole texts in ``texts`` by number) holds any of them; () when one does."""
    return grounding.unmentioned(question, _passages(evidence, texts))


def unmentioned_why(words: Sequence[str]) -> str:
    """Why a reply is "not found" when nothing found mentions ``words``, within a sentence."""
    shown = [f"“{word}”" for word in words[:4]]
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"nothing found mentions {listed}"


def _passages(
    evidence: Sequence[ev.EvidenceItemView], texts: Mapping[int, str]
) -> list[PassageText]:
    return [
        PassageText(
            item.id,
            texts.get(item.id) or item.excerpt,
            item.source,
            item.title,
            item.currency.partition(SUPERSEDED_MARK)[2],
        )
        for item in evidence
        if item.location != "listing"
    ]


def with_snippets(
    sources: Sequence[ev.SourceView], texts: Mapping[int, str], question: str
) -> tuple[ev.SourceView, ...]:
    """``sources`` found but not cited, each with its excerpt: the part of its text (``texts``
    by id) that matches ``question`` best, short. Cited sources are returned as they are."""
    if not sources or sources[0].cited:
        return tuple(sources)
    quoted = snippets(sources, texts, question)
    return tuple(replace(s, excerpt=quoted.get(s.id, "")) for s in sources)


def snippets(
    sources: Sequence[ev.SourceView], texts: Mapping[int, str], question: str
) -> dict[int, str]:
    """For passages shown uncited: the part of each that matches ``question`` best, short.

    The question's content words are weighed by how rare they are among the passages' sentences,
    so the sentence holding "range" is quoted rather than the one naming the lighthouse that every
    passage names."""
    terms = query_terms(" ".join(content_words(question)))
    plain = {s.id: _HEADING_MARK.sub(r"\1", texts.get(s.id, "")) for s in sources}
    weights = term_weights(terms, list(plain.values()))
    return {s.id: _focused(plain[s.id], terms, weights) for s in sources}


#: A line of a table as the reader writes it: "Region: North; Q1: 1200" (or "| a | b |").
_ROW = re.compile(r"^[^:;\n]{1,60}: [^;\n]*(?:; [^:;\n]{1,60}: [^;\n]*)+$|^\|?(?:[^|\n]+\|){2,}")


def table_rows(text: str) -> list[str]:
    """The rows of the tables in ``text`` as a person reads a row quoted alone: each cell with
    its column's header ("year: 1857; work: Gannet Point lighthouse lit on 1 November" for a
    Markdown table's row), as the reader writes a spreadsheet's ("Region: North; Q1: 1200").
    A table's header and its rule are no rows of their own."""
    if "\n" not in text.strip() and FLAT_RULE.search(text):
        # A search result cut around what matched comes on one line: "…| year | work | |---|---|
        # | 1854 | … |": its rows end where one "|" meets the next across a space.
        text = ROW_BREAK.sub("|\n|", text.lstrip("…"))
    lines = [line.strip() for line in text.splitlines()]
    rows: list[str] = []
    header: list[str] = []
    for at, line in enumerate(lines):
        if line.startswith("|") and line.count("|") >= 2 and not TABLE_RULE.match(line):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if at + 1 < len(lines) and TABLE_RULE.match(lines[at + 1]):
                header = cells  # the header row: what the next rows' cells are
            elif len(header) == len(cells):
                rows.append(
                    "; ".join(f"{name}: {cell}" for name, cell in zip(header, cells, strict=True))
                )
            else:
                rows.append(" | ".join(cells))
        elif not TABLE_RULE.match(line):
            header = []
            if _ROW.match(line):
                rows.append(line)
    return rows


def _focused(text: str, terms: frozenset[str], weights: Mapping[str, float]) -> str:
    """The part of ``text`` that matches ``terms`` best, short. A table row that matches best
    is quoted whole, with its header (a row cut short loses the value at its end, and one without
    its header says nothing of what its numbers are); otherwise
    :func:`~imprint_desktop.core.workspace.passages.focus` cuts around the best sentence."""
    rows = table_rows(text)
    if rows and terms:
        scored = [(_row_score(row, terms, weights), -index, row) for index, row in enumerate(rows)]
        score, _, row = max(scored)
        flat = " ".join(text.split())
        best = focus(flat, terms, _EXCERPT_CHARS, weights)
        if score > 0 and row not in best:
            return row if len(row) <= _QUOTE_SHOWN else row[: _QUOTE_SHOWN - 1] + "…"
    return focus(" ".join(text.split()), terms, _EXCERPT_CHARS, weights)


def _row_score(row: str, terms: frozenset[str], weights: Mapping[str, float]) -> float:
    held = {word[:5] for word in re.findall(r"\w+", row.lower())} & terms
    return sum(weights.get(term, 1.0) for term in held)


#: Where a labelled fallback's evidence starts (:mod:`.final`): numbered passages, as found.
EVIDENCE_GATHERED = "Evidence gathered:"
#: A passage's line in a fallback: "[3] stations/gannet-point.md, lines 1-4 (dated …):".
_EVIDENCE_HEAD = re.compile(r"^\[\d+\] \S.*:$")
#: What Markdown could read as a mark in a passage's text.
_MARKDOWN_MARK = re.compile(r"[\\`*_{}\[\]()#+\-.!|<>~]")


def literal_evidence(answer: str) -> str:
    """A labelled fallback answer as Markdown that shows its evidence as written: each passage's
    lines quoted, its headings, list marks, tables and emphasis never drawn as such (a
    document's "# Title" in a stopped reply was a page-wide heading). What comes before the
    evidence, and each "[n] source, lines:" line, are unchanged; any other answer too."""
    head, marker, body = answer.partition(f"\n\n{EVIDENCE_GATHERED}\n\n")
    if not marker:
        return answer
    lines = [
        line
        if not line.strip() or _EVIDENCE_HEAD.match(line)
        else "> " + _MARKDOWN_MARK.sub(lambda mark: "\\" + mark.group(), line) + "  "
        for line in body.split("\n")
    ]
    return head + marker + "\n".join(lines)


def with_sources(
    answer: str,
    sources: Sequence[ev.SourceView],
    grounding: ev.GroundingView | None = None,
    *,
    strong: str = "",
) -> str:
    """``answer`` followed by what to check in it (:func:`check_block`) and its Sources block, as
    text (nothing added when there is neither): how the command line, the transcript and the
    export show an answer. ``strong`` wraps the check's heading ("**" in Markdown), and makes
    a fallback's evidence literal Markdown (:func:`literal_evidence`)."""
    if strong:
        answer = literal_evidence(answer)
    text = answer.rstrip()
    check = check_block(grounding, strong=strong)
    if check:
        text = f"{text}\n\n{check}"
    if not sources:
        return text if check else answer
    if sources[0].cited:
        lines = [
            f"- [{s.id}] {_where(s)}" + (f": “{_short(s.excerpt)}”" if s.excerpt else "")
            for s in sources
        ]
        return f"{text}\n\n{SOURCES_HEADING}\n" + "\n".join(lines)
    lines = [f"- [{s.id}] {_where(s)}: “{_short(s.excerpt)}”" for s in sources]
    return f"{text}\n\n{UNCITED_HEADING}\n" + "\n".join(lines)


def check_block(grounding: ev.GroundingView | None, *, strong: str = "") -> str:
    """What a person should check in an answer, as text: each claim no passage about the
    question supports, with why, and the passage sentence that does answer the question, where
    one does ("" when there is nothing to check)."""
    if grounding is None or grounding.verdict in ("supported", "not_found"):
        return ""
    lines = [f"{strong}{CHECK_HEADING}{strong}"]
    lines += [f"- {note}." for note in dict.fromkeys(c.note for c in grounding.flagged)]
    if len(lines) == 1 and not grounding.offered:
        lines.append(f"- {UNMATCHED_NOTE}")
    if grounding.offered:
        lines.append(f"{OFFERED_LABEL} “{grounding.offered}” [{grounding.offered_from}]")
    return "\n".join(lines)


#: A Markdown heading's marks ("## "), left out of a quoted passage.
_HEADING_MARK = re.compile(r"(^|\n)[ \t]*#{1,6}[ \t]+")
#: A sentence or line of an answer with the space after it, to find repeats.
_UNIT = re.compile(r".+?(?:(?<=[.!?:])[ \t]+|\n+|$)", re.DOTALL)


def without_repeats(answer: str) -> str:
    """``answer`` with every sentence or line that repeats an earlier one left out.

    A small model can loop, writing one sentence over and over until its allowance runs out;
    the person should read it once. Short units (list markers, "Yes.") are kept as they are.
    """
    seen: set[str] = set()
    kept: list[str] = []
    for match in _UNIT.finditer(answer):
        unit = match.group(0)
        key = " ".join(unit.lower().split())
        if len(key) >= 12 and key in seen:
            continue
        seen.add(key)
        kept.append(unit)
    return "".join(kept).strip() or answer.strip()


def without_prompt_echo(answer: str, sources: Iterable[str]) -> str:
    """``answer`` without the lines in which a small model copies its request's scaffolding
    instead of answering: the question's label line ("Question: How deep is …?"), the line that
    opens the passages, and a passage's head ("[4] assets/askridge.md, lines 1-5 — Askridge
    Reservoir", whatever its number) for any of ``sources``. What the model wrote beside them
    stays; an answer that is nothing but such lines is kept whole, so there is always one."""
    heads = tuple(source for source in sources if source)
    kept = "".join(
        line
        for line in answer.splitlines(keepends=True)
        if not _is_scaffolding(line.strip(), heads)
    ).strip()
    return kept or answer.strip()


#: The number a passage's head starts with in the request ("[4] ").
_PASSAGE_NUMBER = re.compile(r"\[\d{1,4}\] ")


def _is_scaffolding(line: str, heads: tuple[str, ...]) -> bool:
    if line.startswith(prompts.QUESTION_LABEL) or line == prompts.PASSAGES_INTRO:
        return True
    number = _PASSAGE_NUMBER.match(line)
    return number is not None and line[number.end() :].startswith(heads)


def not_found_message(scope: str, looked: LookedAt, reason: str) -> str:
    """The reply when research ended (``reason``, in words) without any evidence."""
    parts = [f"{NOT_FOUND_LABEL} in {scope} that answers this question ({reason})."]
    if looked.queries:
        parts.append("Searched for: " + ", ".join(f"“{q}”" for q in looked.queries[:12]) + ".")
    if looked.paths:
        parts.append("Read: " + ", ".join(looked.paths[:12]) + ".")
    if looked.urls:
        parts.append("Fetched: " + ", ".join(looked.urls[:6]) + ".")
    if not (looked.queries or looked.paths or looked.urls):
        parts.append("Nothing could be searched or read before research stopped.")
    parts.append(
        "You could ask again with other words (names, dates or terms the documents would use), "
        "choose another workspace folder (Preferences → Workspace), or use a larger model "
        "(Model → Models…), which researches better than the small starter model."
    )
    return "\n\n".join(parts)


def without_evidence_label(scope: str) -> str:
    """The line above a model's answer written although nothing was found in the documents."""
    return (
        f"{WITHOUT_EVIDENCE_LABEL}: nothing was found in {scope}, so this answer comes from the "
        "model's own knowledge and may be wrong."
    )


def _view(item: ev.EvidenceItemView, *, cited: bool) -> ev.SourceView:
    return ev.SourceView(item.id, item.source, item.location, item.title, cited)


def _where(source: ev.SourceView) -> str:
    title = f" — {source.title}" if source.title and source.title != source.source else ""
    return f"{source.source}, {source.location}{title}"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_SHOWN else flat[: _QUOTE_SHOWN - 1].rstrip() + "…"
