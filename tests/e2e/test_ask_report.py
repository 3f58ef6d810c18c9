"""`imprint ask --report FILE.html`: the research record as one self-contained HTML file.

A scripted server drives a reply with searches, reads, an error and a stop on patience; the report
is read back as a browser would parse it.
"""

from __future__ import annotations

import html.parser
import json
import re
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.openai_server import OpenAIServer, Reply, Usage

pytestmark = pytest.mark.e2e

HOSTILE = "<script>alert(1)</script><img src=http://127.0.0.1:9/x>"


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


class Page(html.parser.HTMLParser):
    """What a browser would load or run from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.fetched: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "srcset", "data", "poster", "action") and value:
                self.fetched.append(value)
            elif name in ("href", "xlink:href") and value:
                self.links.append(value)
            elif name == "style" and value and "url(" in value:
                self.fetched.append(value)


def test_the_report_tells_the_whole_reply(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(call("c1", "search_workspace", query="last keeper"), usage=Usage(900, 20)),
        Reply.tool_calls(
            call("c2", "read_document", path="signals.md", start_line=1, end_line=3),
            call("c3", "read_document", path="missing.md"),
        ),
        Reply.tool_calls(call("c4", "search_workspace", query=HOSTILE)),
        Reply.tool_calls(call("c5", "search_workspace", query="last keeper")),
        Reply.text("The last keeper was Ada Quill [1]."),
    )
    report = tmp_path / "record.html"
    result = imprint(
        "ask",
        "Who was the last keeper?",
        "--workspace",
        str(workspace),
        "--base-url",
        openai_server.base_url,
        "--json",
        "--report",
        str(report),
        "--set",
        "chat.research_no_progress_rounds=2",
        env={"IMPRINT_CHAT_RESEARCH_FIRST": "false"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "no_progress"
    page = report.read_text(encoding="utf-8")
    parsed = Page()
    parsed.feed(page)

    # Self-contained and inert: nothing to fetch, nothing to run, links only inside the file.
    assert parsed.fetched == []
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert parsed.links and all(link.startswith("#evidence-") for link in parsed.links)
    assert "default-src 'none'" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page

    # The summary, then the chart, the activity and the evidence, in that order.
    order = [
        page.index("Research stopped: recent rounds found no new evidence."),
        page.index("<svg"),
        page.index("<h2>Activity</h2>"),
        page.index("<h2>Evidence</h2>"),
        page.index("Raw trace"),
    ]
    assert order == sorted(order)
    assert page.count("<polyline") == 4 and "stopped: no new evidence" in page
    assert "searched &#x27;last keeper&#x27;" in page
    assert "read signals.md lines 1–3" in page  # in words, from what it read
    assert re.search(r"read missing\.md</td><td class='status-error'>error</td>", page)
    assert "model request: 920 charged" in page  # as the server reported its usage
    assert "final answer request:" in page
    assert "id='evidence-1'" in page and "id='evidence-2'" in page and "diaphone" in page
    assert "Ada Quill [1]" not in page  # the report is the research, not the answer
    assert "<th>Rounds</th><td>4</td>" in page


def test_a_report_that_cannot_be_written_is_said_and_the_answer_still_printed(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text("Nothing to research."))
    result = imprint(
        "ask",
        "Hello?",
        "--workspace",
        str(workspace),
        "--base-url",
        openai_server.base_url,
        "--report",
        str(tmp_path / "no" / "such" / "folder" / "record.html"),
        env={"IMPRINT_CHAT_RESEARCH_FIRST": "false"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Nothing to research." in result.stdout
    assert "cannot write the report" in result.stderr
