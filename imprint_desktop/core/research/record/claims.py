"""What an answer stands on, as the research record shows it: the verdict in words, and each claim
with the passages that hold it or the note that flags it.

The grounding itself is the engine's (:class:`~imprint_desktop.core.research.events.GroundingView`,
kept with every reply in the history and in ``imprint ask --json``); under the answer the
transcript shows only what to check. The record shows all of it — also the claims that stand — so
a person can see which sentence rests on which passage. The record window lists
:func:`claim_rows` under :func:`verdict_sentence` and :func:`offered_line`, and the HTML report
(:mod:`.page`) writes the same. Claims are the model's words and quotes are the documents':
untrusted text, put on one line by :func:`~imprint_desktop.core.tools.words.plain`, and shown as
plain text or escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never

from imprint_desktop.core.tools.words import plain

if TYPE_CHECKING:  # the window imports this module at startup; the events load with a reply
    from imprint_desktop.core.research.events import GroundingVerdict, GroundingView

#: The section's title, in the record window and the report.
GROUNDING_TITLE = "What the answer stands on"
#: The most of a claim or a quote shown on one row (a runaway sentence is cut).
CLAIM_CHARS = 400
#: A claim matched to no passage sentence that carries no note either: nothing in it (a number, a
#: date, a name) says it is wrong, and nothing in the documents says it is right.
UNMATCHED = "not matched to a passage"


def verdict_sentence(verdict: GroundingVerdict) -> str:
    """How far the answer stands on the documents, as one sentence; marked "⚠" as the check
    under the answer is, when there is something to check."""
    match verdict:
        case "supported":
            return "Every claim checked is held by a passage of your documents."
        case "partly":
            return (
                "⚠ Some claims are held by a passage of your documents; the others are marked: "
                "check them."
            )
        case "unsupported":
            return (
                "⚠ No claim of this answer is held by a passage about the question: check it "
                "against your documents."
            )
        case "not_found":
            return "Nothing in your documents answered the question, and the reply says so."
        case _:
            assert_never(verdict)


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """One claim of the answer as the record lists it."""

    claim: str  # the sentence, on one line
    sources: tuple[int, ...]  # the passages (the answer's [n] numbers) whose sentences hold it
    note: str  # why it is flagged ("" when it stands)

    @property
    def flagged(self) -> bool:
        """Whether the person should check it: what it says, no passage about the question holds."""
        return bool(self.note)

    @property
    def stands_on(self) -> str:
        """The passages that hold it, "[1] [3]", then what flags it, "⚠ “1986”: the passage [2]
        says this of Gannet Point" (a claim can be held in part and flagged for the rest)."""
        parts = [" ".join(f"[{number}]" for number in self.sources)] if self.sources else []
        if self.note:
            parts.append(f"⚠ {self.note}")
        return " · ".join(parts) or UNMATCHED


#: The model's Markdown emphasis around a claim's words ("**1 November 1857**"), which the
#: record shows as plain text.
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)[*_`](?=\S)|(?<=\S)[*_`](?!\w)")


def claim_rows(grounding: GroundingView | None) -> tuple[ClaimRow, ...]:
    """Every claim of the answer, in its order, with what it stands on."""
    if grounding is None:
        return ()
    return tuple(
        ClaimRow(
            plain(_EMPHASIS.sub("", claim.text), CLAIM_CHARS),
            tuple(claim.supported_by),
            plain(claim.note, CLAIM_CHARS),
        )
        for claim in grounding.claims
        if claim.text.strip()
    )


def offered_line(grounding: GroundingView | None, *, numbered: bool = True) -> str:
    """The passage sentence offered in place of an unsupported answer, with its number (unless
    not ``numbered``: the report links it): "Your documents say: “Marrow Head was automated in
    1991.” [1]" ("" when none is)."""
    if grounding is None or not grounding.offered:
        return ""
    from imprint_desktop.core.research.sources import OFFERED_LABEL  # noqa: PLC0415 - with a reply

    number = f" [{grounding.offered_from}]" if grounding.offered_from and numbered else ""
    return f"{OFFERED_LABEL} “{plain(grounding.offered, CLAIM_CHARS)}”{number}"
