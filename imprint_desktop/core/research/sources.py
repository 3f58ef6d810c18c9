"""What an answer rests on, said under it: the Sources block, and "nothing was found".

Every answer the model writes ends with its sources: the evidence items it cites, or — when it
cites none although evidence was found — the top passages found, labelled as not cited, so the
person can always check the answer against their documents. When research ended on a budget with
no evidence at all, the engine does not ask the model to answer (it would invent one): the reply is
this module's message naming where it looked, what it searched and read, and what to try next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.seed import content_words
from imprint_desktop.core.workspace.passages import focus, query_terms, term_weights

SOURCES_HEADING = "Sources:"
UNCITED_HEADING = "Passages found (not cited):"
NOT_FOUND_LABEL = "Nothing was found"
WITHOUT_EVIDENCE_LABEL = "Not from your documents"
#: Passages shown under an answer that cites none.
TOP_PASSAGES = 3
_EXCERPT_CHARS = 160
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
    return {
        s.id: focus(" ".join(plain[s.id].split()), terms, _EXCERPT_CHARS, weights) for s in sources
    }


def with_sources(answer: str, sources: Sequence[ev.SourceView]) -> str:
    """``answer`` followed by its Sources block, as text (nothing added when there are none):
    how the command line, the transcript and the export show an answer with its sources."""
    if not sources:
        return answer
    if sources[0].cited:
        lines = [f"- [{s.id}] {_where(s)}" for s in sources]
        return f"{answer.rstrip()}\n\n{SOURCES_HEADING}\n" + "\n".join(lines)
    lines = [f"- [{s.id}] {_where(s)}: “{_short(s.excerpt)}”" for s in sources]
    return f"{answer.rstrip()}\n\n{UNCITED_HEADING}\n" + "\n".join(lines)


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
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1].rstrip() + "…"
