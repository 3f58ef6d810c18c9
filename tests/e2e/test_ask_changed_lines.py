"""`imprint ask`: a short changed line at a changed address is no new evidence (issue 42, item 4).

The model fetches ``/serp?q=<a new word each time>`` from a page server on 127.0.0.1 twelve
times. Each page holds the same three results, rotated, a new "generated" time and one short line
that changes: the word searched for, a request id, a visitor count. Under patience 4 research stops
after the fifth fetch (it ran to the twelfth before). The control's pages each add a fact of their
own: all twelve are new, and the model answers after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, read_trace
from tests.support.ask_hostile import ask, tools_offered
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply
from tests.support.serp_pages import CHANGED_LINES, FACTS, WORDS, serp_page

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]

ANSWER = "Ada Quill was the last keeper [1]."


def fetch_twelve_pages(
    imprint: Imprint,
    openai_server: OpenAIServer,
    workspace: Path,
    tmp_path: Path,
    line_of: str,
    *,
    facts: bool,
) -> tuple[dict[str, object], list[dict[str, object]], list[str]]:
    """Run `imprint ask` whose model fetches the twelve pages, one a round, then answers; the
    JSON result, the trace's tool lines and the words the page server was asked for."""
    asked: list[str] = []

    def page(request: RecordedRequest) -> Reply:
        (word,) = parse_qs(urlsplit(request.target).query)["q"]
        n = WORDS.index(word)
        asked.append(word)
        html = serp_page(n, CHANGED_LINES[line_of](n), fact=FACTS[n] if facts else "")
        return Reply.garbage(html.encode(), content_type="text/html; charset=utf-8")

    with OpenAIServer() as web:
        web.script(*[page] * len(WORDS), path="/serp")
        fetches = iter(range(len(WORDS)))

        def fetch_next(request: RecordedRequest) -> Reply:
            n = next(fetches, None)
            if not tools_offered(request) or n is None:
                return Reply.text(ANSWER)
            url = f"{web.url}/serp?q={WORDS[n]}"
            return Reply.tool_calls(ToolCall(f"f{n}", "fetch_url", json.dumps({"url": url})))

        openai_server.script(*[fetch_next] * (len(WORDS) + 2))
        trace = tmp_path / "trace.jsonl"
        result, payload = ask(
            imprint,
            openai_server,
            workspace,
            "--trace",
            str(trace),
            "--allow-fetch",
            "--set",
            "chat.research_no_progress_rounds=4",
        )
    assert result.returncode == 0, result.stderr[-2000:]
    tools = [dict(t) for t in of_type(read_trace(trace), "tool")]
    return payload, tools, asked


@pytest.mark.parametrize("line_of", sorted(CHANGED_LINES))
def test_pages_whose_only_change_is_a_short_line_stop_on_patience(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path, line_of: str
) -> None:
    payload, tools, asked = fetch_twelve_pages(
        imprint, openai_server, workspace, tmp_path, line_of, facts=False
    )
    assert payload["stop_reason"] == "no_progress" and payload["rounds"] == 5, payload
    assert asked == list(WORDS[:5])
    assert [(t["status"], t["new_evidence"] > 0) for t in tools] == [("ok", True)] + [
        ("ok", False)
    ] * 4
    # Five research requests, then the final one.
    assert len(openai_server.chat_requests()) == 6
    assert payload["final_mode"] == "model" and payload["answer"].startswith("Ada Quill")


@pytest.mark.parametrize("line_of", sorted(CHANGED_LINES))
def test_the_same_pages_with_a_new_fact_each_are_all_new(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path, line_of: str
) -> None:
    payload, tools, asked = fetch_twelve_pages(
        imprint, openai_server, workspace, tmp_path, line_of, facts=True
    )
    assert payload["stop_reason"] == "answered" and payload["answer"] == ANSWER, payload
    assert asked == list(WORDS)
    assert [t["new_evidence"] > 0 for t in tools] == [True] * 12
