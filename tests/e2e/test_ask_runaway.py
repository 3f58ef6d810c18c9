"""`imprint ask` against a server whose answer runs away (issue 40): a line streamed slowly over
and over, or the request pasted back. The stream is closed within seconds of the loop showing,
and the reply ends `answered` with the sound part, or falls back to the labelled evidence when
nothing sound was written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from imprint_desktop.core.research.final import FALLBACK_LABEL
from tests.e2e.conftest import Imprint
from tests.support.ask_command import of_type
from tests.support.ask_hostile import ask, read_trace_strictly
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]

LINE = "The last keeper of Greyness Point was Ada Quill, who left in 1971.\n"


def test_a_line_streamed_over_and_over_is_cut_within_seconds_and_kept_once(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    # One copy of the line every 0.3 s until the client closes the stream: the server alone
    # would go on for as long as the research time allows (300 s).
    openai_server.script(Reply.trickle(LINE, interval=0.3))
    trace = tmp_path / "trace.jsonl"
    started = time.monotonic()
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered" and payload["final_mode"] == "model"
    assert payload["answer"] == LINE.strip()
    # The third copy comes 0.6 s after the first: the whole process, start-up included, ends
    # within seconds of it.
    assert seconds < 15, seconds
    [request] = of_type(read_trace_strictly(trace), "request")
    assert request["output_tokens"] < 100  # about three copies, not minutes of them
    assert len(openai_server.chat_requests()) == 1


def test_an_answer_that_pastes_its_request_back_falls_back_to_the_evidence(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    paste = "Question: Who was the last keeper?\nPassages from the documents:\n"
    openai_server.script(Reply.trickle(paste, interval=0.2))
    result, payload = ask(imprint, openai_server, workspace, "--set", "chat.research_first=true")
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered" and payload["final_mode"] == "fallback"
    assert payload["answer"].startswith(FALLBACK_LABEL)
    assert "copying its instructions back" in payload["answer"]
    assert "Ada Quill" in payload["answer"]  # the evidence the search found, labelled
