"""The evidence of one reply: citation numbers, novelty, and what the person is shown.

Every evidence item a tool returns gets the next citation number (the toolbox prints the same
numbers into the text the model reads), is judged new or repeated by the reply-wide
:class:`~.novelty.EvidenceStore`, and new items are kept for the person, the final answer and the
fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from imprint_desktop.core.research.events import EvidenceItemView
from imprint_desktop.core.research.novelty import EvidenceStore
from imprint_desktop.core.tools.notes import MODEL_WRITTEN, engine_lines_dropped
from imprint_desktop.core.tools.tool import EvidenceItem

EXCERPT_CHARS = 400


@dataclass(frozen=True)
class Judged:
    """What one tool result added."""

    new: tuple[EvidenceItemView, ...]
    repeated: int


class EvidenceLedger:
    def __init__(self, store: EvidenceStore | None = None) -> None:
        self.store = store if store is not None else EvidenceStore()
        self._next_id = 1
        self._new: list[EvidenceItemView] = []
        self._texts: dict[int, str] = {}
        # Every numbered item, repeats included: an answer may cite a repeat's number.
        self._citable: dict[int, EvidenceItemView] = {}
        # (source, location, text with its numbers and ids masked) of every item seen in earlier
        # results: the same place read again whose only change is a number (a visit counter, a
        # clock) or an id (a request id, a nonce, a UUID) repeats itself, while other places that
        # differ only in their numbers stay apart.
        self._masked: set[tuple[str, str, int]] = set()

    @property
    def next_citation(self) -> int:
        return self._next_id

    @property
    def items(self) -> tuple[EvidenceItemView, ...]:
        """New evidence in the order it was found."""
        return tuple(self._new)

    def text_of(self, citation: int) -> str:
        return self._texts.get(citation, "")

    def record(self, items: Sequence[EvidenceItem], *, judge: bool = True) -> Judged:
        """Number ``items`` (as the toolbox did) and judge their novelty in one pass.

        With ``judge=False`` (writes: never deduplicated) every item is kept as new, and the
        store learns it all the same: what the model wrote is known evidence from then on, so
        reading its note back is no progress (ADR 0102). A note read back is judged without the
        front matter and footer the engine wrapped it in, so not even its first read-back is.
        """
        first = self._next_id
        self._next_id += len(items)
        if not items:
            return Judged((), 0)
        judged = [_evidence_text(item) for item in items]
        verdicts = [novelty.is_new for novelty in self.store.add_many(judged)]
        masked = [
            (_place(item.source), item.location, hash(_mask_numbers(item.text))) for item in items
        ]
        verdicts = [
            is_new and key not in self._masked for is_new, key in zip(verdicts, masked, strict=True)
        ]
        self._masked.update(masked)
        if not judge:
            verdicts = [True] * len(items)
        new: list[EvidenceItemView] = []
        for offset, (item, is_new) in enumerate(zip(items, verdicts, strict=True)):
            view = EvidenceItemView(
                first + offset,
                item.source,
                item.location,
                _excerpt(item.text),
                item.title,
                item.currency,
            )
            self._citable[view.id] = view
            if not is_new:
                continue
            self._texts[view.id] = item.text
            new.append(view)
        self._new += new
        return Judged(tuple(new), len(items) - len(new))

    def learn(self, texts: Sequence[str]) -> None:
        """Know ``texts`` as seen evidence without numbering or keeping them (what the model
        wrote in a note: reading it back is no progress, ADR 0102)."""
        kept = [text for text in texts if text.strip()]
        if kept:
            self.store.add_many(kept)

    @property
    def citable(self) -> dict[int, EvidenceItemView]:
        """Every numbered item by its number, repeats included (for an answer's Sources)."""
        return dict(self._citable)

    def as_text(self, limit_chars: int | None = None, *, since: int = 0) -> str:
        """The new evidence as numbered text, for the fallback and for section results.

        Every item is listed with its source; with ``limit_chars`` the texts share that many
        characters (each cut short with "…" where needed), so no item is ever left out.
        ``since`` leaves out the first items (those found before a section worker started).
        """
        views = self._new[since:]
        if not views:
            return ""
        texts = [self._texts[view.id].strip() for view in views]
        if limit_chars is not None:
            texts = _fair_cut(texts, limit_chars)
        return "\n\n".join(
            f"[{view.id}] {view.source}, {view.location}"
            + (f" ({view.currency})" if view.currency else "")
            + f":\n{text}"
            for view, text in zip(views, texts, strict=True)
        )


def _fair_cut(texts: list[str], limit: int) -> list[str]:
    """``texts`` cut so that together they fit ``limit`` characters, the longest cut first."""
    if sum(map(len, texts)) <= limit:
        return texts
    # The largest equal share that fits: short texts keep all they have, long ones are cut to it.
    sizes = sorted(len(text) for text in texts)
    remaining, share = limit, 0
    for index, size in enumerate(sizes):
        even = remaining // (len(sizes) - index)
        if size > even:
            share = even
            break
        remaining -= size
    return [
        text if len(text) <= share else text[: max(share - 1, 0)].rstrip() + "…" for text in texts
    ]


_NUMBER = re.compile(r"\b\d+(?:[.,:]\d+)*\b")
# A run of letters, digits, "_" and "-" long enough to be an id (UUIDs, request ids, nonces,
# hashes); it is one only with both letters and digits in it, which a plain word never has.
_ID_LIKE = re.compile(r"[\w-]{8,}")


def _id_masked(match: re.Match[str]) -> str:
    run = match.group()
    is_id = any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
    return "#" if is_id else run


def _mask_numbers(text: str) -> str:
    """``text`` with every number and every id the same, and its white space and case folded."""
    masked = _ID_LIKE.sub(_id_masked, text.lower())
    return " ".join(_NUMBER.sub("#", masked).split())


def _place(source: str) -> str:
    """Where ``source`` was read, for the same place read again: a page's address with its
    numbers and ids masked (a counter, a page number, a nonce in its query), a document's path
    as it is ("budget-2025.md" and "budget-2026.md" are two documents, however alike)."""
    return _mask_numbers(source) if "://" in source else source


#: The location of a document's line in a list of the workspace's documents.
LISTING = "listing"


def _evidence_text(item: EvidenceItem) -> str:
    """What of ``item`` is judged for novelty: all of it, but for a model-written note the lines
    the engine wrapped it in (front matter, footer), which the model never wrote and which are
    no evidence of anything; a listed document with its path."""
    if item.location.startswith(MODEL_WRITTEN):
        return engine_lines_dropped(item.text)
    if item.location == LISTING:
        # "Budget (230 bytes)": what tells one listed document from another is its path, which a
        # short line changed in one word ("Budget (219 bytes)" of last year's) would not show.
        return f"{item.source}: {item.text}"
    return item.text


def _excerpt(text: str) -> str:
    """The start of ``text`` on one line, at most :data:`EXCERPT_CHARS` characters."""
    # Only the start is ever shown, so only the start is flattened (unless it is mostly space).
    head = text[: EXCERPT_CHARS * 2]
    flat = " ".join(head.split())
    if len(flat) <= EXCERPT_CHARS and len(head) < len(text):
        flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rstrip() + "…"
