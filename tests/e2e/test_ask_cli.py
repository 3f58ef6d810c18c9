"""`imprint ask` as a person runs it, against scripted OpenAI-compatible servers on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.research.trace import read_trace
from imprint_desktop.core.workspace.embedding import StaticEmbedder
from tests.e2e.conftest import Imprint
from tests.support import ask_command
from tests.support.ask_command import the_json_ending
from tests.support.openai_server import OpenAIServer, Reply, Usage

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample-workspace"


def ask(
    imprint: Imprint, server: OpenAIServer, workspace: Path, *extra: str, stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    result = ask_command.ask(
        imprint, server, workspace, *extra, question="Who was the last keeper?", stdin=stdin,
        timeout=120,
    )  # fmt: skip
    try:
        payload = json.loads(result.stdout)
    except json.JSONDecodeError:
        payload = None
    return result, payload


def search(call_id: str, query: str) -> ToolCall:
    return ToolCall(call_id, "search_workspace", json.dumps({"query": query}))


def test_research_then_answer(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("call_1", "last keeper"), usage=Usage(900, 20)),
        Reply.text("The last keeper was Ada Quill [1].", usage=Usage(1300, 12, cached=900)),
    )
    trace = tmp_path / "trace.jsonl"
    result, payload = ask(imprint, openai_server, workspace, "--trace", str(trace))
    assert result.returncode == 0, result.stderr
    assert payload is not None
    assert payload["answer"] == "The last keeper was Ada Quill [1]."
    assert (payload["final_mode"], payload["stop_reason"], payload["rounds"]) == (
        "model",
        "answered",
        1,
    )
    assert payload["evidence"][0]["source"] == "keepers.md"
    assert "Ada Quill" in payload["evidence"][0]["excerpt"]
    assert payload["trace"] == str(trace)
    assert payload["runaway"] is None
    # Nothing has run the better embedder over this new folder: the built-in one ranked alone.
    assert payload["search_embedder"] == StaticEmbedder.name
    # The server counted 900 and 1,300 prompt tokens; the estimates charged first are beside them.
    counts = payload["token_counts"]
    assert counts["requests"] == 2 and counts["reported_prompt_tokens"] == 2200
    assert counts["estimated_prompt_tokens"] > 0
    assert counts["ratio"] == round(counts["estimated_prompt_tokens"] / 2200, 3)
    assert payload["tokens"]["budget"] == 65536 and payload["tokens"]["final_charged"] == 0
    # Charged as the server reported: 900 + 20, then (1300 - 900 cached) + 12.
    assert payload["tokens"]["charged"] == 920 + 412
    requests = [line for line in read_trace(trace) if line["type"] == "request"]
    assert requests[1]["reused_prefix"] == 900 and requests[1]["estimated"] is False
    assert requests[1]["provider_usage"]["prompt_tokens_details"] == {"cached_tokens": 900}
    first, second = openai_server.chat_requests()
    assert first.json["stream_options"] == {"include_usage": True}
    assert {tool["function"]["name"] for tool in first.tools or []} >= {
        "search_workspace",
        "read_document",
        "list_documents",
        "write_note",
    }
    assert second.messages[-1]["role"] == "tool"
    assert "Ada Quill" in second.messages[-1]["content"]


def test_bad_setting_is_a_usage_error(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    result, _ = ask(imprint, openai_server, workspace, "--set", "chat.research_timeout_sec=5")
    assert result.returncode == 2
    assert "chat.research_timeout_sec" in result.stderr and "10 and 3600" in result.stderr
    assert openai_server.requests == []


def test_ask_user_takes_answers_then_stdin(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    question = lambda n: ToolCall(f"ask_{n}", "ask_user", json.dumps({"question": f"Q{n}?"}))  # noqa: E731
    openai_server.script(
        Reply.tool_calls(question(1)),
        Reply.tool_calls(question(2)),
        Reply.text("Thanks, both answers noted."),
    )
    result, payload = ask(
        imprint, openai_server, workspace, "--answer", "first answer", stdin="second answer\n"
    )
    assert result.returncode == 0, result.stderr
    assert payload is not None and payload["stop_reason"] == "answered"
    assert "Q2?" in result.stderr  # the question read from stdin is shown on stderr
    tool_results = [
        m["content"] for m in openai_server.chat_requests()[-1].messages if m["role"] == "tool"
    ]
    assert "first answer" in tool_results[0] and "second answer" in tool_results[1]
    assert payload["user_wait_seconds"] >= 0


def test_hostile_model_output_becomes_tool_errors(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(
            ToolCall("c1", "search_workspace", "{not json"),
            ToolCall("c2", "rm_rf", "{}"),
            ToolCall("c3", "read_document", json.dumps({"path": "../../etc/passwd"})),
            ToolCall("c4", "search_workspace", json.dumps({"query": 42})),
        ),
        Reply.text("I could not use those tools."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    assert result.returncode == 0, result.stderr
    assert payload is not None and payload["stop_reason"] == "answered"
    results = [
        m["content"] for m in openai_server.chat_requests()[1].messages if m["role"] == "tool"
    ]
    assert len(results) == 4 and all(text.startswith("Error:") for text in results)
    assert "root:" not in " ".join(results)


def test_unauthorised_server_exits_1_without_the_key(imprint: Imprint, workspace: Path) -> None:
    with OpenAIServer(api_key="right-key") as server:
        result, payload = ask(
            imprint, server, workspace, "--api-key-env", "IMPRINT_TEST_KEY", stdin=""
        )
        env_result = imprint(
            "ask",
            "q",
            "--workspace",
            str(workspace),
            "--base-url",
            server.base_url,
            "--json",
            "--api-key-env",
            "IMPRINT_TEST_KEY",
            env={"IMPRINT_TEST_KEY": "wrong-secret-key"},
        )
    # A variable that is not set is bad usage (2), said before anything is sent; a wrong key is
    # the server's refusal (1).
    assert result.returncode == 2 and "IMPRINT_TEST_KEY is not set" in result.stderr
    assert env_result.returncode == 1
    payload = json.loads(env_result.stdout)
    assert payload["stop_reason"] == "error" and payload["final_mode"] == "fallback"
    assert "API key" in payload["error"]
    assert "wrong-secret-key" not in env_result.stdout + env_result.stderr


def test_garbage_from_the_server_is_an_error_not_a_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.garbage())
    result, payload = ask(imprint, openai_server, workspace)
    assert result.returncode == 1 and payload is not None
    assert payload["stop_reason"] == "error" and "Traceback" not in result.stderr
    assert payload == the_json_ending(result) and payload["exit_code"] == 1
    assert isinstance(payload["error"], str) and payload["error"].strip(), payload


def test_repeated_evidence_stops_with_a_final_answer(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    same = [Reply.tool_calls(search(f"c{n}", "last keeper Ada")) for n in range(6)]
    openai_server.script(*same[:4], Reply.text("Ada Quill [1]."))
    result, payload = ask(
        imprint, openai_server, workspace, "--set", "chat.research_no_progress_rounds=3"
    )
    assert result.returncode == 0, result.stderr
    assert payload is not None and payload["stop_reason"] == "no_progress"
    assert payload["rounds"] == 4 and payload["answer"] == "Ada Quill [1]."
    final = openai_server.chat_requests()[-1]
    assert "tools" not in final.json and "tool_choice" not in final.json
    assert final.json["max_tokens"] == 2048


def test_time_budget_cuts_a_stalled_stream_then_answers(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("c1", "keeper")),
        Reply.stall(),
        Reply.text("From the evidence: Ada Quill [1]."),
    )
    started = time.monotonic()
    result, payload = ask(
        imprint, openai_server, workspace, "--set", "chat.research_timeout_sec=10"
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert payload is not None and payload["stop_reason"] == "time_budget"
    assert 10 <= payload["research_seconds"] < 12 and elapsed < 60
    assert payload["answer"] == "From the evidence: Ada Quill [1]."


def test_sigint_stops_at_once_and_prints_what_it_has(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("c1", "keeper")), Reply.stall())
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "imprint_desktop",
            "ask",
            "Who?",
            "--workspace",
            str(workspace),
            "--base-url",
            openai_server.base_url,
            "--json",
        ],
        env=imprint_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert openai_server.wait_for_stall(timeout=60)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 1.0
    assert process.returncode == 130, stderr
    payload = json.loads(stdout)
    assert payload["stop_reason"] == "cancelled" and payload["final_mode"] == "fallback"
    assert payload["exit_code"] == 130
    assert payload["answer"].startswith(FALLBACK_LABEL) and "Ada Quill" in payload["answer"]
    openai_server.release()


def test_sample_workspace_is_the_default(imprint: Imprint, openai_server: OpenAIServer) -> None:
    openai_server.script(
        Reply.tool_calls(ToolCall("c1", "list_documents", "{}")), Reply.text("Listed.")
    )
    result = imprint("ask", "What is here?", "--base-url", openai_server.base_url, "--json")
    assert result.returncode == 0, result.stderr
    listing = openai_server.chat_requests()[1].messages[-1]["content"]
    some_sample_file = sorted(path.name for path in SAMPLE.iterdir() if path.is_file())[0]
    assert some_sample_file in listing
