"""`imprint ask` against servers that state their limits (DESIGN §1, issue 15 items 2, 3, 4, 8).

Black-box, as the other `imprint ask` scenarios (tests/support/ask_command.py): the real command
line as a subprocess against scripted OpenAI-compatible servers on loopback, read through its exit
code, `--json` result, stderr, trace and the requests the server received.

* A server's own context-length refusal ends research with ``context_full`` and the final answer
  is still written (or the labelled fallback), exit 0.
* A 503 whose Retry-After lies past the research deadline ends research with ``time_budget`` at
  once, and the final answer is written, exit 0.
* A server that reports no usage: each request is charged net of the prompt it shares with the
  previous one, and the trace says where the reused prefix came from.
* The context window: asked of the server (vLLM's ``max_model_len``), or assumed and said so on
  stderr; a number the person set is used without asking.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support import ask_command
from tests.support.openai_server import MODELS_PATH, OpenAIServer, RecordedRequest, Reply, Usage

pytestmark = pytest.mark.e2e

QUESTION = "Who was the last keeper?"
ANSWER = "The last keeper was Ada Quill, who left in 1971 [1]."
FALLBACK_LABEL = "No final answer could be written"  # DESIGN §1
SCRIPTED = ("--set", "chat.research_first=false")  # these scenarios script every request


def ask(
    imprint: Imprint, server: OpenAIServer, workspace: Path, trace: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], list[dict[str, Any]]]:
    result = ask_command.ask(
        imprint, server, workspace, "--trace", str(trace), "--no-history", *extra,
        question=QUESTION, timeout=90,
    )  # fmt: skip
    payload = json.loads(result.stdout)
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    return result, payload, records


def of_type(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [record for record in records if record["type"] == kind]


def search(call_id: str, query: str) -> Reply:
    return Reply.tool_calls(ToolCall(call_id, "search_workspace", json.dumps({"query": query})))


def is_final(request: RecordedRequest) -> bool:
    """The final request offers no tools (the remote provider leaves them out)."""
    return not request.tools


# --- 2. a server's own context limit ------------------------------------------------------------

LLAMA_CPP_REFUSAL = json.dumps(
    {
        "error": {
            "code": 400,
            "message": "request (7012 tokens) exceeds the available context size (6000 tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 7012,
            "n_ctx": 6000,
        }
    }
).encode()


def test_a_context_length_refusal_is_a_full_context_and_the_final_answer_is_written(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        search("s1", "last keeper"),
        Reply.error(400, body=LLAMA_CPP_REFUSAL),
        Reply.text(ANSWER),
    )
    result, payload, records = ask(
        imprint, openai_server, workspace, tmp_path / "t.jsonl", *SCRIPTED
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert (payload["stop_reason"], payload["final_mode"]) == ("context_full", "model")
    assert payload["answer"].startswith(ANSWER)
    assert payload["evidence"], "the passages found before the refusal are kept"
    research, refused, final = openai_server.chat_requests()
    assert research.tools and refused.tools and is_final(final)
    assert [record["reason"] for record in of_type(records, "stop")] == ["context_full"]


def test_when_the_final_is_refused_too_the_answer_is_the_labelled_fallback(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        search("s1", "last keeper"),
        Reply.error(400, body=LLAMA_CPP_REFUSAL),
        Reply.error(400, body=LLAMA_CPP_REFUSAL),
    )
    result, payload, _ = ask(imprint, openai_server, workspace, tmp_path / "t.jsonl", *SCRIPTED)

    assert result.returncode == 0, result.stderr[-2000:]
    assert (payload["stop_reason"], payload["final_mode"]) == ("context_full", "fallback")
    assert payload["answer"].startswith(FALLBACK_LABEL)
    assert "Ada Quill" in payload["answer"], "the fallback carries the evidence gathered"


# --- 3. Retry-After past the deadline ------------------------------------------------------------


def test_a_retry_after_past_the_deadline_is_the_time_budget_at_once(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        search("s1", "last keeper"),
        Reply.error(503, "overloaded", retry_after="600"),
        Reply.text(ANSWER),
    )
    started = time.monotonic()
    result, payload, records = ask(
        imprint,
        openai_server,
        workspace,
        tmp_path / "t.jsonl",
        *SCRIPTED,
        "--set",
        "chat.research_timeout_sec=30",
    )
    elapsed = time.monotonic() - started

    assert result.returncode == 0, result.stderr[-2000:]
    assert (payload["stop_reason"], payload["final_mode"]) == ("time_budget", "model")
    assert payload["answer"].startswith(ANSWER)
    assert payload["research_seconds"] < 15, "it stopped at once instead of idling to the end"
    assert elapsed < 30
    assert len(openai_server.chat_requests()) == 3, "the 503 was not retried"
    assert [record["reason"] for record in of_type(records, "stop")] == ["time_budget"]


# --- 4. the reused prefix of a server that reports no usage --------------------------------------


def test_without_usage_each_request_is_charged_past_the_prompt_it_shares(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(search("s1", "last keeper"), search("s2", "left in"), Reply.text(ANSWER))
    result, payload, records = ask(
        imprint, openai_server, workspace, tmp_path / "t.jsonl", *SCRIPTED
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered"
    first, second, third = of_type(records, "request")
    assert (first["reused_prefix"], first["prefix_source"]) == (0, "estimate")
    for before, line in ((first, second), (second, third)):
        assert line["prefix_source"] == "estimate" and line["estimated"] is True
        # The previous prompt, serialized, is the start of this one: all of it is reused.
        assert line["reused_prefix"] == before["prompt_tokens"] > 0
        assert line["charged_prompt"] == line["prompt_tokens"] - line["reused_prefix"]
        assert line["charged"] == line["charged_prompt"] + line["output_tokens"]
    assert payload["tokens"]["charged"] == sum(line["charged"] for line in (first, second, third))
    assert payload["tokens"]["charged"] < sum(
        line["prompt_tokens"] for line in (first, second, third)
    )


def test_the_servers_cached_tokens_are_used_when_it_reports_them(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(
            ToolCall("s1", "search_workspace", '{"query": "keeper"}'), usage=Usage(900, 20)
        ),
        Reply.text(ANSWER, usage=Usage(1300, 15, cached=850)),
    )
    result, _, records = ask(imprint, openai_server, workspace, tmp_path / "t.jsonl", *SCRIPTED)

    assert result.returncode == 0, result.stderr[-2000:]
    first, second = of_type(records, "request")
    assert (first["prefix_source"], second["prefix_source"]) == ("estimate", "server")
    assert (second["reused_prefix"], second["charged_prompt"]) == (850, 1300 - 850)


# --- 8. the server's context window ---------------------------------------------------------------


def vllm_models(max_model_len: int) -> Reply:
    model = {"id": "imprint-test", "object": "model", "owned_by": "vllm"}
    return Reply.json({"object": "list", "data": [model | {"max_model_len": max_model_len}]})


def test_the_window_the_server_states_is_the_one_research_plans_with(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    """vLLM says it holds 1,024 tokens: not even the first research request fits, so research
    ends with context_full before anything is sent (with 8,192 assumed, it would be sent)."""
    openai_server.script(vllm_models(1024), path=MODELS_PATH)
    result, payload, _ = ask(imprint, openai_server, workspace, tmp_path / "t.jsonl")

    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "context_full"
    assert openai_server.chat_requests() == []
    assert "holds 1,024 tokens of context" in result.stderr


def test_a_silent_server_gets_the_assumed_window_and_stderr_says_so(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text(ANSWER))
    result, payload, _ = ask(imprint, openai_server, workspace, tmp_path / "t.jsonl", *SCRIPTED)

    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered"
    assert "does not say how many tokens its model holds, so Imprint assumes 8,192" in (
        result.stderr
    )
    asked = [request.path for request in openai_server.requests if request.method == "GET"]
    assert asked == [MODELS_PATH, "/props", "/api/v0/models"], "once per connection"


def test_a_window_the_person_set_is_used_without_asking(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(vllm_models(1024), path=MODELS_PATH)
    openai_server.script(Reply.text(ANSWER))
    result, payload, _ = ask(
        imprint,
        openai_server,
        workspace,
        tmp_path / "t.jsonl",
        *SCRIPTED,
        "--set",
        "remote.context_window=32768",
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["stop_reason"] == "answered"
    assert [request.method for request in openai_server.requests] == ["POST"]
    assert "context" not in result.stderr.lower()
