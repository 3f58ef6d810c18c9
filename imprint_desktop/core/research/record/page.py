"""The research record as one self-contained HTML file (``imprint ask --report``, Export report…).

One file, nothing to fetch: the styles are inline, the chart is an inline SVG drawn here from
:func:`~.chart.chart_series`, and a Content-Security-Policy forbids every resource but inline
styles, so a browser loads nothing for it even if something slipped through. Everything that came
from a model, a document, a page or the question is escaped with :func:`html.escape`; links are
only ``#evidence-n`` anchors inside the file.
"""

from __future__ import annotations

import html
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.record.chart import (
    STOP_COLOUR,
    chart_places,
    chart_series,
    last_place,
    stop_label,
)
from imprint_desktop.core.research.record.claims import (
    GROUNDING_TITLE,
    claim_rows,
    offered_line,
    verdict_sentence,
)
from imprint_desktop.core.research.record.report import Report, build_report
from imprint_desktop.core.research.record.rows import describe_started, round_heading
from imprint_desktop.core.research.trace import trace_json, trace_line
from imprint_desktop.core.tools.words import plain

_WIDTH, _HEIGHT = 720, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 170, 24, 44

_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --line: #d0d7de;
  --bg: #ffffff; --soft: #f6f8fa; --bad: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --fg: #dfe1e5; --muted: #9198a1; --line: #3d444d;
  --bg: #1e1f22; --soft: #2b2d30; --bad: #ff8a80; } }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
.question { font-style: italic; color: var(--muted); overflow-wrap: anywhere; }
.stop { font-weight: 600; font-size: 1.1rem; }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; overflow-wrap: anywhere; }
table.figures { width: auto; } table.figures th { font-weight: 600; padding-right: 2rem; }
tr.round th { background: var(--soft); }
tr.request td { font-size: .85em; color: var(--muted); padding-top: .1rem; padding-bottom: .1rem; }
td.status-error, td.status-denied, td.status-not_executed { color: var(--bad); }
td.num { text-align: right; white-space: nowrap; }
td.flagged { color: var(--bad); } table.claims td:first-child { width: 60%; }
svg { max-width: 100%; height: auto; color: var(--fg); }
svg .grid { stroke: var(--line); } svg .axis { fill: var(--muted); font-size: 12px; }
ol.evidence { list-style: none; padding: 0; }
ol.evidence li { margin: .6rem 0; } ol.evidence li:target { background: var(--soft); }
blockquote { margin: .2rem 0 0 1rem; color: var(--muted); overflow-wrap: anywhere; }
pre { background: var(--soft); padding: .5rem; overflow-x: auto; font-size: .8em; }
"""


def report_html(report: Report) -> str:
    """The whole report as one HTML document."""
    summary = report.summary
    esc = html.escape
    figures = "".join(
        f"<tr><th>{esc(what)}</th><td>{esc(value)}</td></tr>" for what, value in summary.figures()
    )
    title = f"Research record: {plain(summary.question, 80)}" if summary.question else "Research"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' "
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"
        "<h1>Research record</h1>"
        f"<p class='question'>{esc(summary.question)}</p>"
        f"<p class='stop'>{esc(summary.stop_text)}</p>"
        f"<table class='figures'>{figures}</table>"
        f"{_grounding(report)}"
        "<h2>Budgets over the reply</h2>"
        f"{budget_svg(report)}{_series_table(report)}"
        f"<h2>Activity</h2>{_activity(report)}"
        f"<h2>Evidence</h2>{_evidence(report)}"
        f"<h2>Trace</h2>{_trace(report)}"
        "</body></html>\n"
    )


def budget_svg(report: Report) -> str:
    """The budgets per round as an inline SVG line chart, with the stop marked."""
    series = chart_series(report)
    last = last_place(report)
    top = max([100.0, *(value for s in series for _, value in s.points)])
    top = 25.0 * -(-top // 25)  # up to the next quarter
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(round_number: float) -> float:
        return _LEFT + inner_w * round_number / last

    def y(percent: float) -> float:
        return _TOP + inner_h * (1 - percent / top)

    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_WIDTH} {_HEIGHT}' "
        f"width='{_WIDTH}' height='{_HEIGHT}' role='img' "
        "aria-label='Budgets used per round, as a percentage of each budget'>"
        "<title>Budgets used per round</title>"
    ]
    for percent in range(0, int(top) + 1, 25):
        parts.append(
            f"<line class='grid' x1='{_LEFT}' x2='{_LEFT + inner_w}' y1='{y(percent):.1f}' "
            f"y2='{y(percent):.1f}'/><text class='axis' x='{_LEFT - 6}' y='{y(percent) + 4:.1f}' "
            f"text-anchor='end'>{percent}%</text>"
        )
    for number, name in chart_places(report):
        parts.append(
            f"<text class='axis' x='{x(number):.1f}' y='{_TOP + inner_h + 18}' "
            f"text-anchor='middle'>{html.escape(name)}</text>"
        )
    parts.append(
        f"<text class='axis' x='{_LEFT + inner_w / 2:.1f}' y='{_HEIGHT - 6}' "
        "text-anchor='middle'>round</text>"
    )
    if report.stop_round is not None:
        at = x(report.stop_round)
        right = report.stop_round * 2 >= last  # the label reads away from the nearer edge
        parts.append(
            f"<line x1='{at:.1f}' x2='{at:.1f}' y1='{_TOP}' y2='{_TOP + inner_h}' "
            f"stroke='{STOP_COLOUR}' stroke-width='2' stroke-dasharray='2 3'/>"
            f"<text x='{at + (-4 if right else 4):.1f}' y='{_TOP - 8}' fill='{STOP_COLOUR}' "
            f"font-size='12' text-anchor='{'end' if right else 'start'}'>"
            f"{html.escape(stop_label(report))}</text>"
        )
    for index, line in enumerate(series):
        dash = " stroke-dasharray='6 4'" if line.dashed else ""
        coords = " ".join(f"{x(r):.1f},{y(v):.1f}" for r, v in line.points)
        parts.append(
            f"<polyline fill='none' stroke='{line.colour}' stroke-width='2'{dash} "
            f"points='{coords}'/>"
        )
        for r, v in line.points:
            parts.append(f"<circle cx='{x(r):.1f}' cy='{y(v):.1f}' r='2.5' fill='{line.colour}'/>")
        key_y = _TOP + 10 + 22 * index
        key_x = _WIDTH - _RIGHT + 16
        parts.append(
            f"<line x1='{key_x}' x2='{key_x + 22}' y1='{key_y}' y2='{key_y}' "
            f"stroke='{line.colour}' stroke-width='2'{dash}/>"
            f"<text x='{key_x + 28}' y='{key_y + 4}' font-size='12' fill='currentColor'>"
            f"{html.escape(line.name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _series_table(report: Report) -> str:
    """The chart's numbers, for a screen reader or a closer look."""
    series = chart_series(report)
    if not series:
        return ""
    head = "".join(f"<th>{html.escape(s.name)}</th>" for s in series)
    names = dict(chart_places(report))
    rows = "".join(
        f"<tr><td>{html.escape(names.get(point.round, str(point.round)))}</td>"
        + "".join(f"<td class='num'>{s.points[i][1]:.0f}%</td>" for s in series)
        + "</tr>"
        for i, point in enumerate(report.series)
    )
    return (
        "<details><summary>The chart's numbers</summary>"
        f"<table><tr><th>Round</th>{head}</tr>{rows}</table></details>"
    )


def _activity(report: Report) -> str:
    esc = html.escape
    if not report.activity:
        return "<p>No tool was called and no request was made.</p>"
    rows = ["<table><tr><th>What</th><th>Status</th><th>New evidence</th></tr>"]
    for group, members in report.groups():
        calls = [row for row in members if row.kind == "tool"]
        heading = round_heading(group, len(calls), sum(row.new_evidence for row in calls))
        rows.append(f"<tr class='round'><th colspan='3'>{esc(heading)}</th></tr>")
        for row in members:
            if row.kind == "request":
                rows.append(f"<tr class='request'><td colspan='3'>{esc(row.text)}</td></tr>")
                continue
            links = " ".join(
                f"<a href='#evidence-{number}'>[{number}]</a>" for number in row.evidence_ids
            )
            added = f"+{row.new_evidence} {links}" if row.new_evidence else ""
            rows.append(
                f"<tr><td>{esc(row.text)}</td>"
                f"<td class='status-{esc(row.status)}'>{esc(row.status_text)}</td>"
                f"<td>{added}</td></tr>"
            )
    rows.append("</table>")
    return "".join(rows)


def _grounding(report: Report) -> str:
    """The verdict, then each claim beside the passages that hold it (links to the evidence) or
    the note that flags it; nothing for a reply without a grounding."""
    grounding = report.grounding
    if grounding is None:
        return ""
    esc = html.escape
    parts = [f"<h2>{esc(GROUNDING_TITLE)}</h2><p>{esc(verdict_sentence(grounding.verdict))}</p>"]
    rows = claim_rows(grounding)
    if rows:
        parts.append("<table class='claims'><tr><th>Claim</th><th>Stands on</th></tr>")
        for row in rows:
            links = " ".join(
                f"<a href='#evidence-{number}'>[{number}]</a>" for number in row.sources
            )
            note = f"⚠ {esc(row.note)}" if row.note else ""
            stands = " · ".join(part for part in (links, note) if part) or esc(row.stands_on)
            flagged = " flagged" if row.flagged else ""
            parts.append(
                f"<tr><td>{esc(row.claim)}</td><td class='stands{flagged}'>{stands}</td></tr>"
            )
        parts.append("</table>")
    if offered := offered_line(grounding, numbered=False):
        number = grounding.offered_from
        link = f" <a href='#evidence-{number}'>[{number}]</a>" if number else ""
        parts.append(f"<p>{esc(offered)}{link}</p>")
    return "".join(parts)


def _evidence(report: Report) -> str:
    esc = html.escape
    if not report.evidence:
        return "<p>No evidence was found.</p>"
    items = "".join(
        f"<li id='evidence-{item.id}'><b>[{item.id}]</b> {esc(item.source)} · "
        f"{esc(item.location)}<blockquote>{esc(item.excerpt)}</blockquote></li>"
        for item in report.evidence
    )
    return f"<ol class='evidence'>{items}</ol>"


def _trace(report: Report) -> str:
    text = "\n".join(trace_json(dict(line)) for line in report.lines)
    return (
        "<details><summary>Raw trace (JSON Lines; no secrets)</summary>"
        f"<pre>{html.escape(text)}</pre></details>"
    )


def write_report(path: Path, report: Report) -> None:
    """Write ``report`` to ``path`` atomically (a temporary file beside it, then a rename)."""
    path = path.expanduser()
    text = report_html(report)
    handle, temporary = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ReportWriter(EventHandler):
    """An event sink that keeps what the report needs and writes it when the reply finishes.

    Tool arguments are not in the trace, so it also keeps what each call did in words.
    """

    def __init__(self, path: Path, on_problem: Callable[[str], None]) -> None:
        self.path = path
        self._on_problem = on_problem
        self._lines: list[Mapping[str, object]] = []
        self._described: dict[tuple[int, str], str] = {}
        self.written = False

    def __call__(self, event: ev.Event) -> None:
        line = trace_line(event)
        if line is not None:
            self._lines.append(line)
        ev.dispatch(event, self)

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        self._described[(event.round, event.call_id)] = describe_started(event)

    def on_reply_finished(self, event: ev.ReplyFinished) -> None:
        self.write(event.result.evidence, event.result.grounding)

    def write(
        self,
        evidence: Sequence[ev.EvidenceItemView],
        grounding: ev.GroundingView | None = None,
    ) -> None:
        report = build_report(self._lines, evidence, described=self._described, grounding=grounding)
        try:
            write_report(self.path, report)
        except OSError as error:
            self._on_problem(f"cannot write the report to {self.path}: {error.strerror or error}")
            return
        self.written = True


def report_writer(path: Path | None, err: TextIO) -> ReportWriter | None:
    """A :class:`ReportWriter` for ``imprint ask --report PATH`` (None without the option); a
    report that cannot be written is said on ``err``."""
    if path is None:
        return None
    return ReportWriter(path, lambda problem: print(f"imprint: {problem}", file=err, flush=True))
