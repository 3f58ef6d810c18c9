"""The research record as a report (issue 16): figures, budgets per round, activity, HTML."""

from __future__ import annotations

import asyncio
import html.parser
import io
import json
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.record.chart import chart_places, chart_series, stop_place
from imprint_desktop.core.research.record.page import (
    budget_svg,
    report_html,
    report_writer,
)
from imprint_desktop.core.research.record.report import build_report
from imprint_desktop.core.research.record.rows import (
    FINAL_GROUP,
    STOPPED_GROUP,
    describe_call,
    describe_started,
    group_title,
)
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.research.wording import stop_sentence
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from imprint_desktop.core.tools.words import plain
from tests.support.fake_tools import FakeTools
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

SETTINGS = {
    "chat.research_timeout_sec": 100,
    "chat.research_token_budget": 10_000,
    "chat.research_no_progress_rounds": 2,
}
Line = dict[str, Any]
HOSTILE = "<img src='file:///dev/zero'><script>alert(1)</script>&amp;"


def item(number: int, source: str = "doc.md", location: str = "lines 1-3") -> ev.EvidenceItemView:
    return ev.EvidenceItemView(number, source, location, f"Passage {number}.")


def request(t: float, round_: int, charged: int, *, phase: str = "research", **more: int) -> Line:
    return {
        "t": t, "type": "request", "phase": phase, "round": round_, "prompt_tokens": charged,
        "reserved": more.get("reserved", charged + 500), "reused_prefix": more.get("reused", 0),
        "charged_prompt": charged, "output_tokens": 0, "charged": charged,
        "refunded": more.get("refunded", 500), "budget_left": 0, "estimated": False,
        "provider_usage": None,
    }  # fmt: skip


def tool(  # noqa: PLR0917 - a trace line, field by field
    t: float, round_: int, call_id: str, name: str, status: str, new: int, **more: Any
) -> Line:
    return {
        "t": t, "type": "tool", "round": round_, "call_id": call_id, "name": name,
        "kind": "read", "status": status, "new_evidence": new, "repeated_evidence": 0,
        "seconds": 0.1, **more,
    }  # fmt: skip


def round_end(t: float, round_: int, progress: bool, no_progress: int) -> Line:
    return {
        "t": t, "type": "round_end", "round": round_, "progress": progress, "excluded": False,
        "no_progress_rounds": no_progress,
    }  # fmt: skip


def a_time_stop() -> list[Line]:
    """Imprint's search, a round with a search and a read, a wait for the person, an error round,
    a stop on time, and a final answer."""
    return [
        {"t": 0.0, "type": "run_start", "question": "When was the light lit?",
         "settings": SETTINGS},
        tool(0.5, 0, "seed", "search_workspace", "ok", 1, origin="engine"),
        round_end(0.5, 0, True, 0),
        request(10.0, 1, 1000, reserved=1500, refunded=400),
        tool(11.0, 1, "c1", "search_workspace", "ok", 2),
        tool(12.0, 1, "c2", "read_document", "ok", 1),
        round_end(12.0, 1, True, 0),
        {"t": 42.0, "type": "user_wait", "seconds": 25.0},
        request(50.0, 2, 2000, reused=900, refunded=300),
        {"t": 51.0, "type": "user_wait", "seconds": 5.0},  # the consent decision's wait
        {"t": 51.0, "type": "consent", "call_id": "c3", "url": "http://x/", "decision": "deny",
         "seconds": 5.0},
        tool(51.0, 2, "c3", "fetch_url", "error", 0),
        tool(52.0, 2, "c4", "search_workspace", "not_executed", 0),
        round_end(52.0, 2, False, 1),
        # Research stopped at 120 s; the stop line is written with the final line, just before.
        request(130.0, 2, 700, phase="final", refunded=100),
        {"t": 131.0, "type": "stop", "reason": "time_budget"},
        {"t": 131.0, "type": "final", "mode": "model", "seconds": 11.0},
    ]  # fmt: skip


EVIDENCE = (item(1), item(3), item(4), item(6, "stations/gannet.md", "lines 10-40"))


def test_the_summary_says_why_research_stopped_and_where_time_and_tokens_went() -> None:
    report = build_report(a_time_stop(), EVIDENCE)
    summary = report.summary
    assert summary.question == "When was the light lit?"
    assert summary.stop_text == "Research stopped: the research time ran out."
    assert (summary.rounds, summary.evidence, summary.final_mode) == (2, 4, "model")
    # 120 s of reply, of which 25 s waiting for the person and 5 s for the fetch consent.
    assert summary.research_seconds == pytest.approx(90.0)
    assert summary.waiting_seconds == pytest.approx(30.0)
    assert summary.final_seconds == pytest.approx(11.0)
    assert (summary.tokens_charged, summary.tokens_refunded, summary.tokens_final) == (
        3000,
        700,
        700,
    )
    figures = dict(summary.figures())
    assert figures["Research time"] == "1:30 min of 1:40 min"
    assert figures["Tokens charged"] == "3,000 of 10,000"
    assert figures["Waiting for you"] == "30.0 s (not counted)"


def test_budgets_per_round_with_the_stop_marked() -> None:
    report = build_report(a_time_stop(), EVIDENCE)
    assert [point.round for point in report.series] == [0, 1, 2]
    assert report.stop_round == 2
    one, two = report.series[1], report.series[2]
    assert (one.tokens_charged, one.tokens_committed) == (1000, 1500)
    assert two.tokens_charged == 3000 and two.tokens_committed == 1000 + 2500  # charged + reserved
    assert two.no_progress_rounds == 1
    assert two.research_seconds == pytest.approx(90.0)  # the stop, waits left out
    series = {line.name: line for line in chart_series(report)}
    assert series["Research time"].points[-1] == (2, 90.0)
    assert series["Tokens charged"].points[-1] == (2, 30.0)
    assert series["Charged + reserved"].dashed
    assert series["Patience used"].points[-1] == (2, 50.0)


def test_activity_rows_by_round_with_words_statuses_and_evidence() -> None:
    described = {(1, "c1"): "searched 'harbour light'"}
    report = build_report(a_time_stop(), EVIDENCE, described=described)
    groups = dict(report.groups())
    assert list(groups) == [0, 1, 2, FINAL_GROUP]
    (seed,) = groups[0]
    assert seed.origin == "engine" and seed.text.endswith("(Imprint, before the model)")
    assert seed.evidence_ids == (1,)
    request_1, search, read = groups[1]
    assert request_1.kind == "request"
    assert request_1.text == "model request: 1,000 charged · 0 reused prefix · 400 refunded"
    assert (search.text, search.status_text, search.evidence_text) == (
        "searched 'harbour light'",
        "ok",
        "+2 · [3] [4]",
    )
    # Arguments unknown: a read names what it found, from its evidence.
    assert read.text == "read stations/gannet.md lines 10–40"
    _, fetch, skipped = groups[2]
    assert fetch.status_text == "denied"  # the person said no to the fetch
    assert skipped.status_text == "not executed" and skipped.evidence_text == ""
    (final,) = groups[FINAL_GROUP]
    assert final.text.startswith("final answer request: 700 charged")


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("search_workspace", {"query": "harbour light"}, "searched 'harbour light'"),
        (
            "read_document",
            {"path": "stations/gannet-point.md", "start_line": 10, "end_line": 40},
            "read stations/gannet-point.md lines 10–40",
        ),
        ("read_document", {"path": "a.md"}, "read a.md"),
        ("fetch_url", {"url": "https://example.org/a/b?c=d"}, "fetched example.org/…"),
        ("fetch_url", {"url": "https://example.org"}, "fetched example.org"),
        ("list_documents", {}, "listed documents"),
        ("write_note", '{"title": "Dates", "content": "x"}', "wrote note 'Dates'"),
        ("research_sections", {"sections": ["a", "b"]}, "researched in 2 sections"),
        ("search_workspace", "{not json", "searched the workspace"),
        ("frobnicate", {}, "ran frobnicate"),
    ],
)
def test_a_call_in_plain_words(name: str, arguments: object, words: str) -> None:
    assert describe_call(name, arguments) == words


def test_untrusted_words_are_one_plain_line() -> None:
    said = describe_call("search_workspace", {"query": "a\nb\u202e\x1b[31mc" + "x" * 200})
    assert "\n" not in said and "\u202e" not in said and "\x1b" not in said
    assert len(said) < 80 and said.endswith("…'")
    assert plain("  two\t words ") == "two words"


def test_a_started_event_without_arguments_is_said_in_the_past_tense() -> None:
    started = ev.ToolStarted(1.0, 1, "c1", "search_workspace", "read", "Searching 'quarry'")
    assert describe_started(started) == "searched 'quarry'"


def test_the_request_that_answered_is_the_final_answers_row_not_a_round() -> None:
    lines: list[Line] = [
        {"t": 0.0, "type": "run_start", "question": "When?", "settings": SETTINGS},
        tool(0.5, 0, "seed", "search_workspace", "ok", 1, origin="engine"),
        round_end(0.5, 0, True, 0),
        request(3.0, 1, 800),
        {"t": 3.0, "type": "stop", "reason": "answered"},
        {"t": 3.0, "type": "final", "mode": "model", "seconds": 0.0},
    ]
    report = build_report(lines, EVIDENCE[:1])
    # The request that answered opened no round: it is the final answer's, beside "Rounds 0".
    assert [group for group, _ in report.groups()] == [0, FINAL_GROUP]
    assert dict(report.summary.figures())["Rounds"] == "0"


def test_a_trace_without_a_stop_is_an_interrupted_reply() -> None:
    lines = a_time_stop()[:7]
    report = build_report(lines, EVIDENCE[:3])
    assert report.stop_round is None
    assert report.summary.stop_text.startswith("Research did not finish")
    assert stop_sentence(None) == ""


def test_html_is_self_contained_and_escapes_everything_untrusted() -> None:
    lines = a_time_stop()
    lines[0] = {**lines[0], "question": HOSTILE}
    evidence = (ev.EvidenceItemView(1, HOSTILE, HOSTILE, HOSTILE), *EVIDENCE[1:])
    described = {(1, "c1"): describe_call("search_workspace", {"query": HOSTILE})}
    page = report_html(build_report(lines, evidence, described=described))

    parsed = _Tags()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    # Nothing to fetch: no attribute names anything outside the file.
    assert all(not value.startswith(("http", "file", "//")) for value in parsed.urls), parsed.urls
    assert all(value.startswith("#evidence-") for value in parsed.links)
    assert "default-src 'none'" in page
    assert "&lt;img src=&#x27;file:///dev/zero&#x27;&gt;" in page
    assert parsed.tags.count("svg") == 1 and "polyline" in parsed.tags
    assert "Research stopped: the research time ran out." in page
    assert "id='evidence-6'" in page and "href='#evidence-6'" in page


def test_the_svg_marks_the_stop_and_draws_every_budget() -> None:
    svg = budget_svg(build_report(a_time_stop(), EVIDENCE))
    assert svg.count("<polyline") == 4
    assert "stopped: time ran out" in svg


def test_a_real_reply_reports_what_its_result_says(tmp_path: Path) -> None:
    """The engine's own trace and result: the report's figures agree with ``imprint ask --json``."""
    found = {
        "granite": ("alpha.md", "The harbour wall was rebuilt in granite."),
        "quokka": ("deep/gamma.md", "A quokka was seen near the pier once."),
    }

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        source, text = found.get(values.get("query", ""), ("", ""))
        if not source:
            return ToolResult(name, "empty", "Nothing.")
        return ToolResult(name, "ok", text, (EvidenceItem(source, "lines 3-3", text),))

    script = [
        Step(calls=[("search_workspace", {"query": "granite"})]),
        Step(calls=[("search_workspace", {"query": "nothing"}),
                    ("search_workspace", {"query": "quokka"})]),
        Step("Granite [1] and a quokka [2]."),
    ]  # fmt: skip
    settings = research_settings({**SETTINGS, "chat.research_first": False})
    path = tmp_path / "report.html"
    err = io.StringIO()
    writer = report_writer(path, err)
    lines: list[dict[str, Any]] = []

    def sink(event: ev.Event) -> None:
        line = trace_line(event)
        if line is not None:
            lines.append(json.loads(json.dumps(line)))
        assert writer is not None
        writer(event)

    engine = ResearchEngine(ScriptedProvider(script), settings, sink=sink)
    result = asyncio.run(engine.run("Wall and animal?", FakeTools(respond)))

    report = build_report(lines, result.evidence)
    summary = report.summary
    assert summary.stop_reason == result.stop_reason == "answered"
    assert summary.rounds == result.rounds == 2
    assert summary.tokens_charged == result.tokens.charged
    assert summary.tokens_refunded == result.tokens.refunded
    assert summary.research_seconds == pytest.approx(result.research_seconds, abs=0.05)
    assert (summary.token_budget, summary.time_budget, summary.patience) == (10_000, 100, 2)
    assert [row.evidence_ids for row in report.activity if row.kind == "tool"] == [(1,), (), (2,)]
    assert report.stop_round == 3  # the request that answered would have opened round 3
    page = path.read_text(encoding="utf-8")
    assert err.getvalue() == ""
    assert "searched &#x27;quokka&#x27;" in page and "deep/gamma.md" in page


def test_a_report_that_cannot_be_written_is_said(tmp_path: Path) -> None:
    err = io.StringIO()
    writer = report_writer(tmp_path / "missing" / "report.html", err)
    assert writer is not None and report_writer(None, err) is None
    writer.write(())
    assert "cannot write the report" in err.getvalue() and not writer.written


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data", "poster") and value:
                self.urls.append(value)
                if name == "href":
                    self.links.append(value)


def cut_short() -> list[Line]:
    """Imprint's own search, then Stop while the model is asked for its first round."""
    return [
        {"t": 0.0, "type": "run_start", "question": "When?", "settings": SETTINGS},
        tool(0.5, 0, "seed", "search_workspace", "ok", 1, origin="engine"),
        round_end(0.5, 0, True, 0),
        request(1.3, 1, 2024),
        {"t": 1.3, "type": "stop", "reason": "cancelled"},
        {"t": 1.3, "type": "final", "mode": "fallback", "seconds": 0.0},
    ]  # fmt: skip


def answered_after_two_rounds() -> list[Line]:
    return [
        *a_time_stop()[:14],
        request(60.0, 3, 500),
        {"t": 60.0, "type": "stop", "reason": "answered"},
        {"t": 60.0, "type": "final", "mode": "model", "seconds": 0.0},
    ]


def test_a_request_research_stopped_during_opens_no_round() -> None:
    """Issue 41, item 5: "Rounds: 0" was shown beside an activity group "Round 1"."""
    report = build_report(cut_short(), EVIDENCE[:1])
    assert dict(report.summary.figures())["Rounds"] == "0"
    assert [group for group, _ in report.groups()] == [0, STOPPED_GROUP]
    assert group_title(STOPPED_GROUP) == "Stopped during the model's request"
    assert report.summary.tokens_charged == 2024  # its tokens are still counted
    assert report.stopped_past_rounds
    assert chart_places(report) == ((0, "0"), (1, "stopped"))
    assert stop_place(report) == "after round 0"
    svg = budget_svg(report)
    assert ">stopped</text>" in svg and ">1</text>" not in svg


@pytest.mark.parametrize("trace", [a_time_stop, cut_short, answered_after_two_rounds])
def test_the_figures_the_activity_and_the_chart_count_the_same_rounds(trace: Any) -> None:
    report = build_report(trace(), EVIDENCE)
    rounds = report.summary.rounds
    numbered = {group for group, _ in report.groups() if group < STOPPED_GROUP}
    assert numbered <= set(range(rounds + 1))  # no activity group for a round not counted
    named = [int(name) for _, name in chart_places(report) if name.isdigit()]
    assert max(named) <= rounds
    page = report_html(report)
    assert f"<th>Rounds</th><td>{rounds}</td>" in page
    assert f"Round {rounds + 1}" not in page


def test_the_chart_names_the_answer_after_the_last_round() -> None:
    report = build_report(answered_after_two_rounds(), EVIDENCE)
    assert report.summary.rounds == 2 and report.stop_round == 3
    assert chart_places(report) == ((0, "0"), (1, "1"), (2, "2"), (3, "answer"))
    assert stop_place(report) == "after round 2"
    assert [group for group, _ in report.groups()] == [0, 1, 2, FINAL_GROUP]
