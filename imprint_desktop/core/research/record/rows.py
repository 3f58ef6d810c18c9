"""The research record's activity: one row per tool call and per model request, in words.

A row is what the record window's activity list, the live activity view and the HTML report show
of one call or request: what it did ("searched 'harbour light'"), how it ended, the evidence it
added and the tokens a request cost. Tool arguments are not in the trace; when the caller saw the
live events it passes what each call did in words (:func:`describe_started`), and otherwise a row
says what kind of call it was (:func:`words_without_arguments`). The words come from each tool's
spec (:mod:`imprint_desktop.core.tools.specs`), untrusted text put on one line by
:func:`~imprint_desktop.core.tools.words.plain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from imprint_desktop.core.research.wording import status_words
from imprint_desktop.core.tools import specs
from imprint_desktop.core.tools.words import plain

if TYPE_CHECKING:  # the window imports this module at startup; the events load with a reply
    from imprint_desktop.core.research.events import EvidenceItemView, ToolStarted

#: The group of activity rows that belong to the final answer, after every round.
FINAL_GROUP = 1 << 30
#: The group of the model's request research stopped during (Stop, the time running out, a failure):
#: it opened no round, so it is named by what happened, not by a round the record does not count.
STOPPED_GROUP = FINAL_GROUP - 1


def describe_call(name: str, arguments: object) -> str:
    """What a tool call did, in the past tense and plain words ("searched 'harbour light'"), as
    the tool's spec words it."""
    return specs.describe_call(name, arguments).done


def describe_started(event: ToolStarted) -> str:
    """What a started call does, from its arguments when the event carries them, else from the
    engine's status-line words."""
    arguments = getattr(event, "arguments", "")
    if arguments:
        return describe_call(event.name, arguments)
    return specs.done_from_status(event.name, event.summary)


@dataclass(frozen=True, slots=True)
class ActivityRow:
    """One tool call, or one model request (a thin row with its tokens), of a reply."""

    group: int  # the round; 0 is Imprint's own search before the model; FINAL_GROUP the final
    kind: Literal["tool", "request"]
    what: str  # plain words: "searched 'harbour light'", or the request's phase in words
    status: str  # a tool: ok|empty|error|not_executed|denied|running; a request: its phase
    t: float = 0.0
    call_id: str = ""
    name: str = ""
    origin: str = "model"  # "engine": Imprint's own search before the model
    new_evidence: int = 0
    repeated_evidence: int = 0
    evidence_ids: tuple[int, ...] = ()
    seconds: float = 0.0
    charged: int = 0
    reused_prefix: int = 0
    refunded: int = 0
    reserved: int = 0

    @property
    def status_text(self) -> str:
        return status_words(self.status) if self.kind == "tool" else ""

    @property
    def evidence_text(self) -> str:
        """The evidence a call added: "+2 · [3] [4]", or "" when it added none."""
        if self.kind != "tool" or not self.new_evidence:
            return ""
        numbers = " ".join(f"[{number}]" for number in self.evidence_ids[:6])
        more = "…" if len(self.evidence_ids) > 6 else ""
        return f"+{self.new_evidence}" + (f" · {numbers}{more}" if numbers else "")

    @property
    def tokens_text(self) -> str:
        """A request's tokens: "1,234 charged · 800 reused prefix · 512 refunded"."""
        return (
            f"{self.charged:,} charged · {self.reused_prefix:,} reused prefix · "
            f"{self.refunded:,} refunded"
        )

    @property
    def text(self) -> str:
        """The row in one line of words (its first column)."""
        if self.kind == "request":
            if self.status == "running":
                return f"{self.what}: {self.reserved:,} tokens reserved…"
            return f"{self.what}: {self.tokens_text}"
        return self.what + (" (Imprint, before the model)" if self.origin == "engine" else "")


def group_title(group: int) -> str:
    if group == FINAL_GROUP:
        return "Final answer"
    if group == STOPPED_GROUP:
        return "Stopped during the model's request"
    if group == 0:
        return "Before the model"
    return f"Round {group}"


def round_heading(group: int, calls: int, found: int) -> str:
    """A round's title with what it did: "Round 3 · 2 calls · +1 new"."""
    words = group_title(group)
    if calls:
        words += f" · {calls} call{'' if calls == 1 else 's'}"
    return words + (f" · +{found} new" if found else "")


def without_unopened_rounds(
    rows: Sequence[ActivityRow], rounds: int, stop_reason: str
) -> list[ActivityRow]:
    """``rows`` with no group for a round that never began.

    A round begins when the model's request returns the calls it asks for (DESIGN §1; the engine
    counts ``rounds``, Imprint's own search before the model being round 0). The last research
    request, numbered for the round it would have opened, opens none when it answered (it is the
    final answer's row) or when research stopped while it ran (the row of
    :data:`STOPPED_GROUP`). So the activity, the chart and the figure "Rounds" count the same
    rounds. A trace without a stop (an interrupted reply) is left as it is.
    """
    if not stop_reason:
        return list(rows)
    with_calls = {row.group for row in rows if row.kind == "tool"}
    home = FINAL_GROUP if stop_reason == "answered" else STOPPED_GROUP
    return [
        replace(row, group=home)
        if row.kind == "request"
        and row.status in {"research", "running"}
        and rounds < row.group < STOPPED_GROUP
        and row.group not in with_calls
        else row
        for row in rows
    ]


def words_without_arguments(
    name: str, evidence: Sequence[EvidenceItemView], ids: tuple[int, ...]
) -> str:
    """Words for a call whose arguments are unknown; a read names what it found."""
    if name == "read_document" and ids:
        return read_words([item for item in evidence if item.id in ids])
    return describe_call(name, None)


def read_words(found: Sequence[EvidenceItemView]) -> str:
    """A read in words from the passages it returned: "read a.md lines 10–40"."""
    first, last = found[0], found[-1]
    return f"read {plain(first.source, 60)}{_span(first.location, last.location)}"


def _span(first: str, last: str) -> str:
    """ "lines 10-20" … "lines 31-40" → " lines 10–40"."""
    start, end = first.rpartition("lines ")[2], last.rpartition("lines ")[2]
    low, high = start.partition("-")[0], end.rpartition("-")[2]
    if low.isdigit() and high.isdigit():
        return f" lines {low}–{high}"
    return ""
