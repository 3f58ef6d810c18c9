"""The research record's chart: each budget per round as the share of its limit used.

One chart shows which budget came close to running out: research time, tokens charged (and
charged plus reserved) and patience, each in percent of its limit, with the round research stopped
in marked. The record window draws these series with its plotting library and
:mod:`.page` as an inline SVG; both take the series, colours and stop mark from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from imprint_desktop.core.research.wording import stop_mark

if TYPE_CHECKING:
    from imprint_desktop.core.research.record.report import Report

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


def last_place(report: Report) -> int:
    """The chart's last place along x (at least 1, so that the axis has a length)."""
    last = max((point.round for point in report.series), default=0)
    return max(last, report.stop_round or 0, 1)


def chart_places(report: Report) -> tuple[tuple[int, str], ...]:
    """The chart's places along x, each with its name on the axis: the rounds by number (Imprint's
    own search before the model is round 0; at most about a dozen named), and, when research
    stopped in a request that opened no round, that place named by what happened there ("answer",
    "stopped"). So the chart counts the rounds the record's figures and activity count."""
    last = last_place(report)
    numbered = report.summary.rounds if report.stop_round is not None else last
    step = max(1, -(-numbered // 12))
    places = [(number, str(number)) for number in range(0, numbered + 1, step)]
    if report.stopped_past_rounds and report.stop_round is not None:
        answered = report.summary.stop_reason == "answered"
        places.append((report.stop_round, "answer" if answered else "stopped"))
    return tuple(places)


def stop_place(report: Report) -> str:
    """Where research stopped, in words: "in round 3", or "after round 2" when it stopped in a
    request that opened no round ("" when it never stopped)."""
    if report.stop_round is None:
        return ""
    if report.stopped_past_rounds:
        return f"after round {report.summary.rounds}"
    return f"in round {report.stop_round}"
