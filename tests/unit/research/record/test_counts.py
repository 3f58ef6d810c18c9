"""How far a server's prompt counts and Imprint's estimates diverged (issue 42, item 1): in the
research record's summary and in ``imprint ask --json``, from the trace's request lines."""

from __future__ import annotations

from typing import Any

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.record.counts import RequestLines, counts_check
from imprint_desktop.core.research.record.report import build_report


def request(prompt: int, usage: dict[str, Any] | None, phase: str = "research") -> dict[str, Any]:
    return {
        "t": 1.0, "type": "request", "phase": phase, "round": 1, "prompt_tokens": prompt,
        "reserved": prompt + 100, "reused_prefix": 0, "charged_prompt": prompt,
        "output_tokens": 10, "charged": prompt + 10, "refunded": 90, "budget_left": 1000,
        "estimated": usage is None, "provider_usage": usage, "stop": "stop",
    }  # fmt: skip


def test_the_estimates_are_summed_against_what_the_server_counted() -> None:
    lines = [
        {"t": 0.0, "type": "run_start", "question": "Who kept the light?"},
        request(1200, {"prompt_tokens": 1000, "completion_tokens": 10}),
        request(900, None),  # no usage reported: nothing to compare
        request(330, {"prompt_tokens": 300}, phase="final"),
        request(50, {"prompt_tokens": True}),  # not a count
    ]
    check = counts_check(lines)
    assert check is not None
    assert (check.requests, check.estimated, check.reported) == (2, 1530, 1300)
    assert check.words() == (
        "estimated 1,530 prompt tokens, the server counted 1,300 (1.18×) over 2 requests"
    )
    assert check.to_json() == {
        "requests": 2,
        "estimated_prompt_tokens": 1530,
        "reported_prompt_tokens": 1300,
        "ratio": 1.177,
    }
    figures = dict(build_report(lines).summary.figures())
    assert figures["Token counts"] == check.words()


def test_a_local_model_reports_no_usage_and_the_record_says_nothing_of_it() -> None:
    lines = [request(500, None), request(700, None)]
    assert counts_check(lines) is None
    assert "Token counts" not in dict(build_report(lines).summary.figures())


def test_the_sink_keeps_the_request_lines_as_the_reply_runs() -> None:
    kept = RequestLines()
    kept(ev.TextDelta(0.5, "research", "Hello"))
    kept(
        ev.RequestFinished(
            1.0, "research", 1, 800, 900, 0, 800, 5, 805, 95, 5000, False,
            {"prompt_tokens": 640}, "stop",
        )
    )  # fmt: skip
    assert [line["type"] for line in kept.lines] == ["request"]
    check = kept.check()
    assert check is not None and (check.estimated, check.reported) == (800, 640)
