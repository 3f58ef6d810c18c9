"""The research record as a report: what one reply did, in words and figures, from its trace.

A reply's trace (DESIGN §5) is the one record every view has — the live window, a reply reopened
after a restart, ``imprint ask --report`` — so the report is computed from trace lines alone: the
summary (why research stopped, rounds, evidence, where the time and the tokens went), the budgets
per round for the chart, and the activity (one row per tool call, one thin row per model request).
Pure Python, no Qt: the record window draws the chart with its plotting library, and
:mod:`.report_html` writes the same report as a self-contained HTML file.

Tool arguments are not in the trace; when the caller saw the live events it passes what each call
did in words (:func:`describe_started`), keyed by round and call id, and otherwise a row says what
kind of call it was. Everything here that came from a model, a document or a page is untrusted text:
:func:`plain` puts it on one line without control characters, and every view shows it as plain text
or escaped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from imprint_desktop.core.research.wording import (
    final_mode_words,
    request_words,
    status_words,
    stop_mark,
    stop_sentence,
)
from imprint_desktop.core.tools import specs
from imprint_desktop.core.tools.words import plain as plain  # noqa: PLC0414 - re-exported for the views
from imprint_desktop.core.vocabulary import is_final_mode

if TYPE_CHECKING:  # the window imports this module at startup; the events load with a reply
    from imprint_desktop.core.research.events import EvidenceItemView, ToolStarted

#: The group of activity rows that belong to the final answer, after every round.
FINAL_GROUP = 1 << 30


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


# --- the report ------------------------------------------------------------------------------


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
    if group == 0:
        return "Before the model"
    return f"Round {group}"


def round_heading(group: int, calls: int, found: int) -> str:
    """A round's title with what it did: "Round 3 · 2 calls · +1 new"."""
    words = group_title(group)
    if calls:
        words += f" · {calls} call{'' if calls == 1 else 's'}"
    return words + (f" · +{found} new" if found else "")


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
        if mode := self.final_mode:
            rows.append(("Answer", final_mode_words(mode).answer if is_final_mode(mode) else mode))
        return rows


@dataclass(frozen=True, slots=True)
class Report:
    summary: Summary
    series: tuple[BudgetPoint, ...]
    activity: tuple[ActivityRow, ...]
    evidence: tuple[EvidenceItemView, ...]
    stop_round: int | None  # the round research stopped in, None when it never stopped
    lines: tuple[Mapping[str, object], ...] = field(default=(), repr=False)

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
) -> Report:
    """The report of one reply from its trace ``lines`` and the ``evidence`` it kept.

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
            mine = tuple(item.id for item in ordered[taken : taken + new])
            taken += new
            status = str(line.get("status", ""))
            if call_id in denied and status == "error":
                status = "denied"
            what = described.get((number, call_id)) or _what_from(name, ordered, mine)
            if name == "read_document" and mine and " lines " not in what:
                what = _what_from(name, ordered, mine)  # the lines it read, which words lacked
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
        elif kind in ("user_wait", "consent"):
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
            mark(latest, research)
        elif kind == "final":
            final_mode = str(line.get("mode", ""))
            final_seconds += _number(line.get("seconds"))
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
    )
    series = tuple(points[number] for number in sorted(points))
    activity = tuple(sorted(rows, key=lambda row: row.group))  # stable: trace order within
    return Report(summary, series, activity, tuple(ordered), stop_round, tuple(lines))


def _what_from(name: str, evidence: Sequence[EvidenceItemView], ids: tuple[int, ...]) -> str:
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


# --- the chart ---------------------------------------------------------------------------------

#: Colours that read on a light and on a dark background alike.
STOP_COLOUR = "#ef4444"


@dataclass(frozen=True, slots=True)
class ChartSeries:
    """One budget over the rounds, as a share of that budget (percent), for every chart."""

    name: str
    colour: str
    dashed: bool
    points: tuple[tuple[int, float], ...]  # (round, percent used)


def chart_series(report: Report) -> tuple[ChartSeries, ...]:
    """The budgets per round, each as the percentage of its limit used, so that one chart shows
    which budget came close to running out (a budget whose limit is unknown is left out)."""
    summary, points = report.summary, report.series

    def share(used: float, limit: float | None) -> float:
        return round(100.0 * used / limit, 2) if limit else 0.0

    series: list[ChartSeries] = []
    if summary.time_budget:
        series.append(
            ChartSeries(
                "Research time",
                "#3b82f6",
                False,
                tuple((p.round, share(p.research_seconds, summary.time_budget)) for p in points),
            )
        )
    if summary.token_budget:
        series += [
            ChartSeries(
                "Tokens charged",
                "#f59e0b",
                False,
                tuple((p.round, share(p.tokens_charged, summary.token_budget)) for p in points),
            ),
            ChartSeries(
                "Charged + reserved",
                "#f59e0b",
                True,
                tuple((p.round, share(p.tokens_committed, summary.token_budget)) for p in points),
            ),
        ]
    if summary.patience:
        series.append(
            ChartSeries(
                "Patience used",
                "#a855f7",
                False,
                tuple((p.round, share(p.no_progress_rounds, summary.patience)) for p in points),
            )
        )
    return tuple(series)


def stop_label(report: Report) -> str:
    """The chart's stop mark: "stopped: time ran out"."""
    return stop_mark(report.summary.stop_reason)
