"""`imprint ask` against servers that fail over HTTP: an HTML 500 that persists, a 429 whose
Retry-After lies past the deadline, a 200 carrying an error object, an error after evidence, a
failed final request, a connection dropped inside a tool call. Each is the exit code and the result
DESIGN §1 and §4 give it; no tool runs on a call that never finished arriving.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core.research.final import FALLBACK_LABEL
from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type, search
from tests.support.ask_hostile import (
    ask,
    call_delta,
    failed,
    files_in,
    opening,
    read_trace_strictly,
)
from tests.support.openai_server import OpenAIServer, Reply, sse

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


HTML_500 = (
    b"<html><head><title>500 Internal Server Error</title></head><body><h1>Oops</h1></body></html>"
)


def test_an_html_500_that_persists_is_an_error_with_exit_1(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    failure = Reply(500, (("Content-Type", "text/html"), ("Retry-After", "0")), (HTML_500,))
    openai_server.script(*[failure] * 10)
    result, payload = ask(imprint, openai_server, workspace)
    failed(result, payload)
    assert "500" in payload["error"]
    assert 2 <= len(openai_server.chat_requests()) <= 10


def test_429_with_retry_after_beyond_the_budget_ends_the_time_at_once(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    """DESIGN §1: a retry whose Retry-After lies past the deadline is time_budget, not error."""
    openai_server.script(Reply.error(429, "slow down", retry_after=86_400), Reply.text("late"))
    result, payload = ask(
        imprint, openai_server, workspace, "--set", "chat.research_timeout_sec=30"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "time_budget"
    assert len(openai_server.chat_requests()) == 1
    assert payload["research_seconds"] < 10  # did not idle towards the deadline


def test_a_200_with_an_error_object_is_an_error(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.json({"error": {"message": "model 'x' is loading", "type": "unavailable"}})
    )
    result, payload = ask(imprint, openai_server, workspace)
    failed(result, payload)
    assert "model 'x' is loading" in payload["error"]


def test_an_error_after_evidence_keeps_the_evidence_in_the_fallback(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("e1", "last keeper")),
        Reply.stream_error("CUDA out of memory", before="Partial"),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    failed(result, payload)
    assert "CUDA out of memory" in payload["error"]
    assert "Ada Quill" in payload["answer"]
    assert payload["evidence"][0]["source"] == "keepers.md"
    records = read_trace_strictly(trace)
    assert [r["reason"] for r in of_type(records, "stop")] == ["error"]


def test_a_failed_final_request_gives_the_labelled_fallback_with_exit_0(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    same = [Reply.tool_calls(search(f"f{n}", "last keeper Ada")) for n in range(3)]
    openai_server.script(*same, Reply.error(429, "quota exhausted", retry_after=86_400))
    result, payload = ask(
        imprint, openai_server, workspace, "--set", "chat.research_no_progress_rounds=2"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "no_progress" and payload["final_mode"] == "fallback"
    assert payload["answer"].startswith(FALLBACK_LABEL) and "Ada Quill" in payload["answer"]
    assert "keepers.md" in payload["answer"]  # each item with its source


def test_a_connection_dropped_inside_a_tool_call_runs_no_tool(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    before = files_in(workspace)
    openai_server.script(
        Reply(
            parts=(
                sse(opening()),
                sse(call_delta(0, call_id="w", name="write_note", arguments='{"title": "x", ')),
                *Reply.drop(before="").parts,
            )
        )
    )
    result, payload = ask(imprint, openai_server, workspace)
    failed(result, payload)
    assert len(openai_server.chat_requests()) == 1
    assert files_in(workspace) == before
