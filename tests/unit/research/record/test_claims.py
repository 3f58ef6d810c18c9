"""What an answer stands on, in the research record (issue 40): the verdict in words, each claim
with the passages that hold it or the note that flags it — as rows, as text and in the report."""

from __future__ import annotations

from pathlib import Path

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.record.claims import (
    GROUNDING_TITLE,
    UNMATCHED,
    claim_rows,
    offered_line,
    verdict_sentence,
)
from imprint_desktop.core.research.record.page import ReportWriter, report_html
from imprint_desktop.core.research.record.report import build_report
from imprint_desktop.core.research.sources import OFFERED_LABEL

HOSTILE = "<img src='file:///dev/zero'><script>alert(1)</script>"
NOTE = "“1986”: the passage [2] says this of Gannet Point"
LINES: list[dict[str, object]] = [
    {"t": 0.0, "type": "run_start", "question": "When was Marrow Head automated?", "settings": {}},
    {"t": 0.2, "type": "stop", "reason": "answered"},
    {"t": 0.3, "type": "final", "mode": "model", "seconds": 0.1},
]
EVIDENCE = (
    ev.EvidenceItemView(1, "stations/marrow-head.md", "lines 3-3", "Marrow Head … in 1991."),
    ev.EvidenceItemView(2, "stations/gannet-point.md", "lines 3-3", "Gannet Point … in 1986."),
)
PARTLY = ev.GroundingView(
    "partly",
    (
        ev.ClaimView("Marrow Head is a lighthouse on the\nnorth coast.", (1,)),
        ev.ClaimView("It was automated in 1986.", (), NOTE),
        ev.ClaimView("Its keeper kept a log.", (1, 2), "“Tuesday”: not in your documents"),
        ev.ClaimView("I hope this helps."),
    ),
    "Marrow Head was automated in 1991.",
    1,
)


def test_every_verdict_is_a_sentence_of_its_own() -> None:
    sentences = [verdict_sentence(verdict) for verdict in ev.GROUNDING_VERDICTS]
    assert len(set(sentences)) == len(sentences)
    assert all(sentence.endswith(".") for sentence in sentences)
    flagged = [verdict for verdict in ev.GROUNDING_VERDICTS if verdict_sentence(verdict)[0] == "⚠"]
    assert flagged == ["partly", "unsupported"]
    assert "check it" in verdict_sentence("unsupported")
    assert "Every claim" in verdict_sentence("supported")


def test_each_claim_stands_on_its_passages_or_says_why_it_is_flagged() -> None:
    rows = claim_rows(PARTLY)
    assert [row.claim for row in rows] == [
        "Marrow Head is a lighthouse on the north coast.",  # on one line
        "It was automated in 1986.",
        "Its keeper kept a log.",
        "I hope this helps.",
    ]
    assert [row.stands_on for row in rows] == [
        "[1]",
        f"⚠ {NOTE}",
        "[1] [2] · ⚠ “Tuesday”: not in your documents",
        UNMATCHED,
    ]
    assert [row.flagged for row in rows] == [False, True, True, False]
    assert claim_rows(None) == ()


def test_the_sentence_offered_is_quoted_with_its_passage() -> None:
    assert offered_line(PARTLY) == f"{OFFERED_LABEL} “Marrow Head was automated in 1991.” [1]"
    assert offered_line(PARTLY, numbered=False).endswith("1991.”")
    assert offered_line(ev.GroundingView("supported", (ev.ClaimView("x", (1,)),))) == ""
    assert offered_line(None) == ""


def test_the_report_shows_the_grounding_with_links_to_the_evidence_escaped() -> None:
    grounding = ev.GroundingView("unsupported", (ev.ClaimView(HOSTILE, (2,), HOSTILE),), HOSTILE, 2)
    page = report_html(build_report(LINES, EVIDENCE, grounding=grounding))
    assert f"<h2>{GROUNDING_TITLE}</h2>" in page
    assert verdict_sentence("unsupported") in page
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "<a href='#evidence-2'>[2]</a>" in page and "id='evidence-2'" in page
    assert f"{OFFERED_LABEL} “&lt;img" in page and "” <a href='#evidence-2'>[2]</a></p>" in page
    # The grounding comes before the budgets; a reply without one has no such section.
    assert page.index(GROUNDING_TITLE) < page.index("Budgets over the reply")
    assert GROUNDING_TITLE not in report_html(build_report(LINES, EVIDENCE))


def test_imprint_ask_report_carries_the_replys_grounding(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    problems: list[str] = []
    writer = ReportWriter(path, problems.append)
    tokens = ev.TokenTotals(1000, 10, 0, 5)
    result = ev.ReplyResult(
        "It was automated in 1986.", "model", "answered", 1, EVIDENCE, tokens, 0.2, 0.0,
        grounding=PARTLY,
    )  # fmt: skip
    writer(ev.ReplyFinished(0.4, result))
    page = path.read_text(encoding="utf-8")
    assert problems == [] and writer.written
    assert verdict_sentence("partly") in page and "It was automated in 1986." in page
    assert "Gannet Point" in page


def test_a_claims_markdown_emphasis_is_not_shown_as_asterisks() -> None:
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.research.record.claims import claim_rows

    grounding = ev.GroundingView(
        "supported",
        (ev.ClaimView("Gannet Point was first lit on **1 November 1857**.", (2,), ""),),
    )
    [row] = claim_rows(grounding)
    assert row.claim == "Gannet Point was first lit on 1 November 1857."
