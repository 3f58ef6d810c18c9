"""The research record as a report: what one reply did, in words and figures, from its trace.

A reply's trace (DESIGN §5) is the one record every view has — the live window, a reply reopened
after a restart, ``imprint ask --report`` — so the report is computed from trace lines alone: the
summary (why research stopped, rounds, evidence, where the time and the tokens went), the budgets
per round for the chart, the activity (one row per tool call, one thin row per model request) and,
from the reply's result, what its answer stands on (:mod:`.claims`).
Pure Python, no Qt: the record window draws the chart with its plotting library, and
:mod:`.page` writes the same report as a self-contained HTML file.

This module reads the trace into the report, in one pass; the rows and their words are
:mod:`.rows`, the budgets as chart series :mod:`.chart`. Everything here that
came from a model, a document or a page is untrusted text:
:func:`~imprint_desktop.core.tools.words.plain` puts it on one line without control characters, and
every view shows it as plain text or escaped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from imprint_desktop.core.research.record.counts import CountsCheck, counts_check
from imprint_desktop.core.research.record.rows import (
    FINAL_GROUP,
    ActivityRow,
    without_unopened_rounds,
    words_without_arguments,
)
from imprint_desktop.core.research.wording import (
    final_mode_words,
    request_words,
    stop_sentence,
)
from imprint_desktop.core.tools.words import plain
from imprint_desktop.core.vocabulary import is_final_mode

if TYPE_CHECKING:  # the window imports this module at startup; the events load with a reply
    from imprint_desktop.core.research.events import EvidenceItemView, GroundingView


@dataclass(frozen=True, slots=True)
class BudgetPoint:
    """The budgets at the end of one round (the chart's x is the round)."""

    round: int
    research_seconds: float
    tokens_charged: int
    tokens_committed: int  # charged before the round's request + what that request reserved
    no_progress_rounds: int


@dataclass(frozen=True, slots=True)
class Summary:
    question: str
    stop_reason: str
    final_mode: str
    rounds: int
    evidence: int
    research_seconds: float
    waiting_seconds: float
    final_seconds: float
    total_seconds: float
    tokens_charged: int
    tokens_refunded: int
    tokens_final: int
    token_budget: int | None
    time_budget: float | None
    patience: int | None
    #: The server's prompt counts against Imprint's estimates (None: a local model, or a server
    #: that reports no usage).
    counts: CountsCheck | None = None

    @property
    def stop_text(self) -> str:
        return stop_sentence(self.stop_reason) or "Research did not finish (it was interrupted)."

    def figures(self) -> list[tuple[str, str]]:
        """The summary as (what, how much) rows in words."""
        budget = f" of {self.token_budget:,}" if self.token_budget else ""
        limit = f" of {seconds_text(self.time_budget)}" if self.time_budget else ""
        rows = [
            ("Rounds", f"{self.rounds}"),
            ("Evidence", f"{self.evidence} piece{'' if self.evidence == 1 else 's'}"),
            ("Research time", f"{seconds_text(self.research_seconds)}{limit}"),
            ("Waiting for you", f"{seconds_text(self.waiting_seconds)} (not counted)"),
            ("Final answer time", seconds_text(self.final_seconds)),
            ("Tokens charged", f"{self.tokens_charged:,}{budget}"),
            ("Tokens refunded", f"{self.tokens_refunded:,}"),
            ("Final answer tokens", f"{self.tokens_final:,} (outside the budget)"),
        ]
        if self.counts is not None:
            rows.append(("Token counts", self.counts.words()))
        if mode := self.final_mode:
            rows.append(("Answer", final_mode_words(mode).answer if is_final_mode(mode) else mode))
        return rows


@dataclass(frozen=True, slots=True)
class Report:
    summary: Summary
    series: tuple[BudgetPoint, ...]
    activity: tuple[ActivityRow, ...]
    evidence: tuple[EvidenceItemView, ...]
    #: Where research stopped on the chart's x: the round it stopped in, or the place just past
    #: the last round when it stopped in a request that opened none (:attr:`stopped_past_rounds`);
    #: None when it never stopped.
    stop_round: int | None
    lines: tuple[Mapping[str, object], ...] = field(default=(), repr=False)
    #: What the answer stands on (:mod:`.claims` words it); None when no answer was written or
    #: the reply is older than the check. Not in the trace: the reply's result keeps it.
    grounding: GroundingView | None = None

    @property
    def stopped_past_rounds(self) -> bool:
        """Whether research stopped in a request that opened no round: the one that answered, or
        one cut short (:func:`~.rows.without_unopened_rounds`). The chart then names that place
        by what happened there, not by a round number the figures do not count."""
        return self.stop_round is not None and self.stop_round > self.summary.rounds

    def groups(self) -> Iterator[tuple[int, list[ActivityRow]]]:
        """The activity rows by round (Imprint's own search first, the final answer last)."""
        by_group: dict[int, list[ActivityRow]] = {}
        for row in self.activity:
            by_group.setdefault(row.group, []).append(row)
        for group in sorted(by_group):
            yield group, by_group[group]


def build_report(  # noqa: PLR0915 - one pass over the trace, one branch per line type
    lines: Sequence[Mapping[str, object]],
    evidence: Sequence[EvidenceItemView] = (),
    *,
    question: str | None = None,
    described: Mapping[tuple[int, str], str] | None = None,
    grounding: GroundingView | None = None,
) -> Report:
    """The report of one reply from its trace ``lines``, the ``evidence`` it kept and what its
    answer stands on (``grounding``).

    ``described`` gives what calls did in words, keyed by (round, call id), when known. New
    evidence is numbered in the order tools found it, so each tool row's share of ``evidence`` is
    the next ``new_evidence`` items.
    """
    described = described or {}
    ordered = sorted(evidence, key=lambda item: item.id)
    denied = {
        str(line.get("call_id"))
        for line in lines
        if line.get("type") == "consent" and str(line.get("decision", "")).startswith("den")
    }
    settings: Mapping[str, object] = {}
    asked = question or ""
    waits = waiting = final_seconds = 0.0
    charged = refunded = final_tokens = 0
    no_progress = rounds = 0
    stop_reason = final_mode = ""
    stop_round: int | None = None
    research_at_stop: float | None = None
    # A stop line written after the final request (its reason settled with the final line, see
    # ending.py): research ended when the final stage began, which the final line tells.
    stop_after_final_request = final_requested = False
    taken = 0
    points: dict[int, BudgetPoint] = {0: BudgetPoint(0, 0.0, 0, 0, 0)}
    rows: list[ActivityRow] = []
    latest = 0

    def mark(round_number: int, seconds: float, committed: int = 0) -> None:
        before = points.get(round_number)
        points[round_number] = BudgetPoint(
            round_number,
            seconds,
            charged,
            max(committed, before.tokens_committed if before else 0, charged),
            no_progress,
        )

    def settle_stop(final_began: float) -> None:
        """Research time at a stop line written after the final request: when the final began."""
        nonlocal research_at_stop, stop_after_final_request
        if stop_after_final_request and stop_round is not None:
            research_at_stop = max(0.0, final_began)
            mark(stop_round, research_at_stop)
            stop_after_final_request = False

    for line in lines:
        kind = line.get("type")
        t = _number(line.get("t"))
        research = max(0.0, t - waits)
        if kind == "run_start":
            given = line.get("settings")
            settings = given if isinstance(given, Mapping) else {}
            asked = asked or str(line.get("question", ""))
        elif kind == "request":
            phase = str(line.get("phase", "research"))
            number = _integer(line.get("round"))
            cost, back = _integer(line.get("charged")), _integer(line.get("refunded"))
            reserved = _integer(line.get("reserved"))
            row = ActivityRow(
                FINAL_GROUP if phase == "final" else number,
                "request",
                request_words(phase) or plain(phase, 30),
                phase,
                t=t,
                charged=cost,
                reused_prefix=_integer(line.get("reused_prefix")),
                refunded=back,
                reserved=reserved,
            )
            rows.append(row)
            if phase == "final":
                final_tokens += cost
                final_requested = True
                continue
            committed = charged + reserved
            charged += cost
            refunded += back
            latest = max(latest, number)
            mark(number, research, committed)
        elif kind == "tool":
            number = _integer(line.get("round"))
            call_id = str(line.get("call_id", ""))
            name = str(line.get("name", ""))
            new = _integer(line.get("new_evidence"))
            # research_sections counts what its workers found, already listed on their lines.
            own = 0 if name == "research_sections" else new
            mine = tuple(item.id for item in ordered[taken : taken + own])
            taken += own
            status = str(line.get("status", ""))
            if call_id in denied and status == "error":
                status = "denied"
            what = described.get((number, call_id)) or words_without_arguments(name, ordered, mine)
            if name == "read_document" and mine and " lines " not in what:
                # the lines it read, which words lacked
                what = words_without_arguments(name, ordered, mine)
            rows.append(
                ActivityRow(
                    number,
                    "tool",
                    what,
                    status,
                    t=t,
                    call_id=call_id,
                    name=name,
                    origin=str(line.get("origin", "model")),
                    new_evidence=new,
                    repeated_evidence=_integer(line.get("repeated_evidence")),
                    evidence_ids=mine,
                    seconds=_number(line.get("seconds")),
                )
            )
            latest = max(latest, number)
            mark(number, research)
        elif kind == "user_wait":  # every wait, a consent decision's too
            seconds = _number(line.get("seconds"))
            waits += seconds
            waiting += seconds
        elif kind == "round_end":
            number = _integer(line.get("round"))
            no_progress = _integer(line.get("no_progress_rounds"))
            rounds = max(rounds, number)
            latest = max(latest, number)
            mark(number, research)
        elif kind == "stop" and not stop_reason:
            stop_reason = str(line.get("reason", ""))
            stop_round = latest
            research_at_stop = research
            stop_after_final_request = final_requested
            mark(latest, research)
        elif kind == "final":
            final_mode = str(line.get("mode", ""))
            seconds = _number(line.get("seconds"))
            final_seconds += seconds
            settle_stop(research - seconds)
    if research_at_stop is None:
        research_at_stop = max((point.research_seconds for point in points.values()), default=0.0)
    summary = Summary(
        question=asked,
        stop_reason=stop_reason,
        final_mode=final_mode,
        rounds=rounds,
        evidence=len(ordered) if ordered else taken,
        research_seconds=research_at_stop,
        waiting_seconds=waiting,
        final_seconds=final_seconds,
        total_seconds=_number(lines[-1].get("t")) if lines else 0.0,
        tokens_charged=charged,
        tokens_refunded=refunded,
        tokens_final=final_tokens,
        token_budget=_setting_int(settings, "chat.research_token_budget"),
        time_budget=_setting_float(settings, "chat.research_timeout_sec"),
        patience=_setting_int(settings, "chat.research_no_progress_rounds"),
        counts=counts_check(lines),
    )
    series = tuple(points[number] for number in sorted(points))
    rows = without_unopened_rounds(rows, rounds, stop_reason)
    activity = tuple(sorted(rows, key=lambda row: row.group))  # stable: trace order within
    return Report(summary, series, activity, tuple(ordered), stop_round, tuple(lines), grounding)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def _integer(value: object) -> int:
    return int(_number(value))


def _setting_int(settings: Mapping[str, object], key: str) -> int | None:
    value = settings.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _setting_float(settings: Mapping[str, object], key: str) -> float | None:
    value = settings.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def seconds_text(seconds: float) -> str:
    """ "4.2 s", "3:05 min"."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}:{rest:02d} min"
