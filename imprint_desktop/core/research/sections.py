"""Research in sections (DESIGN §1, ``research_sections``): a read-only worker per section.

The coordinator splits a broad question into sections; the round loop (:mod:`.rounds`) runs one
worker conversation per section, in turn, under the reply-wide budgets. This module says what a
worker is (its prompt, its read-only tools, its own patience), what its section's result tells the
coordinator — its summary and the evidence it found, so what it found reaches the final request
even when it was stopped — and which stops end only the worker rather than the reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from imprint_desktop.core.providers.base import Message
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.budgets import Patience
from imprint_desktop.core.research.conversation import Conversation
from imprint_desktop.core.research.ledger import EvidenceLedger
from imprint_desktop.core.research.stop import ResearchStop
from imprint_desktop.core.research.wording import stop_words
from imprint_desktop.core.tools.tool import ToolKind


def worker(
    question: str, section: str, read_only: tuple[Mapping[str, Any], ...], patience: int
) -> Conversation:
    """The conversation of the worker that researches ``section`` of ``question``."""
    return Conversation(
        messages=[
            Message("system", prompts.WORKER),
            Message("user", f"Question: {question}\nYour section: {section}"),
        ],
        phase="worker",
        worker=section,
        patience=Patience(patience),
        tool_schemas=read_only,
        allowed=frozenset({ToolKind.READ}),
        seed=section,
    )


def summary(section: str, text: str, ledger: EvidenceLedger, since: int, share: int) -> str:
    """A section's part of the result: the worker's summary and the evidence it found (items
    ``since`` on, in about ``share`` characters)."""
    return f"Section “{section}”:\n{text or '(no summary)'}" + _evidence(ledger, since, share)


def stopped(
    section: str, stop: ResearchStop, ledger: EvidenceLedger, since: int, share: int
) -> str:
    """A stopped section's part of the result: why it stopped and the evidence it found."""
    return f"Section “{section}”: stopped ({stop_words(stop.reason).why})." + _evidence(
        ledger, since, share
    )


def ends_only_the_worker(stop: ResearchStop) -> bool:
    """Whether ``stop`` ended the worker's own conversation (the next section may go on), not
    the reply (a reply-wide budget ran out, the model failed or Stop was pressed)."""
    return stop.reason in ("no_progress", "context_full")


def _evidence(ledger: EvidenceLedger, since: int, limit_chars: int) -> str:
    text = ledger.as_text(limit_chars=max(limit_chars, 400), since=since)
    return f"\nEvidence this section found:\n{text}" if text else "\nIt found no new evidence."
