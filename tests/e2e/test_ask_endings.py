"""How each way a reply can end (DESIGN §1) reaches a script: `imprint ask --json` prints the
full result of DESIGN §4 and exits with its code — 0 for an answer, a fallback or "not found", 1 on
an error, 130 on Ctrl+C after printing what it has — and the trace tells the same story (§5).

A time budget cuts a tool that hangs, and Ctrl+C ends a run at once, during a tool or while the
person is being asked. Runs are synchronised on the servers' stalls and on what the process
prints; helpers are in ``tests/support/ask_command.py``.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import (
    ANSWER,
    EXIT_FOR_STOP,
    FALLBACK_PREFIX,
    QUESTION,
    ask,
    ask_user,
    assert_trace_matches_result,
    fetch,
    of_type,
    read_trace,
    search,
    spawn,
    stalled_page,
    the_json_result,
    tool_results,
)
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


ENDINGS: dict[str, tuple[list[Reply], list[str], str]] = {
    # name: (script, extra arguments, final_mode)
    "answered": (
        [Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER)],
        [],
        "model",
    ),
    "no_progress": (
        [
            Reply.tool_calls(search("s1", "last keeper")),
            Reply.tool_calls(search("s2", "keeper Ada")),
            Reply.tool_calls(search("s3", "the last keeper")),
            Reply.text("From the evidence: Ada Quill [1]."),
        ],
        ["--set", "chat.research_no_progress_rounds=2"],  # the lower bound is accepted
        "model",
    ),
    "token_budget": (
        [],  # too small for one research request: nothing found, and said so without a request
        ["--set", "chat.research_token_budget=1024"],
        "no_evidence",
    ),
    "context_full": (
        [],  # not even the first research request fits: nothing found, no request at all
        ["--set", "remote.context_window=512"],
        "no_evidence",
    ),
    "error": (
        [Reply.error(400, "this server rejects the request")],
        [],
        "fallback",
    ),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_every_ending_prints_the_full_json_result_and_its_exit_code(
    ending: str, imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    script, extra, final_mode = ENDINGS[ending]
    openai_server.script(*script)
    trace = tmp_path / "trace.jsonl"
    result = ask(imprint, openai_server, workspace, *extra, "--trace", str(trace))
    payload = the_json_result(result.stdout)
    assert payload["stop_reason"] == ending, (payload, result.stderr[-2000:])
    assert result.returncode == EXIT_FOR_STOP[ending], (result.returncode, result.stderr[-2000:])
    assert payload["final_mode"] == final_mode, payload
    assert payload["trace"] == str(trace)
    assert_trace_matches_result(read_trace(trace), payload)
    assert openai_server.remaining == 0, "the script was not used up: the run stopped early"
    if ending == "answered":
        assert payload["answer"] == ANSWER and payload["rounds"] == 1
        assert [item["source"] for item in payload["evidence"]] == ["keepers.md"]
    if ending == "error":
        assert isinstance(payload.get("error"), str) and "400" in payload["error"], payload
        assert "this server rejects the request" in payload["answer"]
    if ending == "token_budget":
        assert payload["tokens"]["budget"] == 1024 and payload["tokens"]["final_charged"] == 0
        assert "too small for even one request" in payload["answer"]


def test_a_time_budget_cuts_a_hanging_tool_and_the_rest_of_the_batch_is_not_executed(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    with OpenAIServer() as web:
        web.script(stalled_page(), path="/slow")
        openai_server.script(
            Reply.tool_calls(
                search("s1", "last keeper"),
                fetch("f1", f"{web.url}/slow"),
                search("s2", "fog signal"),
            ),
            Reply.text("From what was found: Ada Quill [1]."),
        )
        started = time.monotonic()
        result = ask(
            imprint,
            openai_server,
            workspace,
            "--set",
            "chat.research_timeout_sec=10",
            "--trace",
            str(trace),
            "--allow-fetch",
        )
        elapsed = time.monotonic() - started
        assert web.wait_for_stall(timeout=0), "the page was never fetched"
    payload = the_json_result(result.stdout)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (payload["stop_reason"], payload["final_mode"]) == ("time_budget", "model")
    assert payload["answer"] == "From what was found: Ada Quill [1]."
    assert 10 <= payload["research_seconds"] < 12.5 and elapsed < 40, (payload, elapsed)
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    statuses = {record["call_id"]: record["status"] for record in of_type(records, "tool")}
    assert statuses["s1"] == "ok" and statuses["s2"] == "not_executed", statuses
    final = openai_server.chat_requests()[-1]
    assert "tools" not in final.json or final.json.get("tool_choice") == "none"
    # The final is a request of its own: the passage s1 found is there, and nothing of the
    # fog-signal document, whose search (s2) was never run.
    assert not tool_results(final)
    passages = final.messages[-1]["content"]
    assert "[1] keepers.md" in passages and "Ada Quill" in passages
    assert "signals.md" not in passages and "diaphone" not in passages
    assert [item["source"] for item in payload["evidence"]] == ["keepers.md"]


@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "text"])
def test_sigint_during_a_tool_prints_what_it_has_and_exits_130(
    json_mode: bool,
    imprint_env: dict[str, str],
    openai_server: OpenAIServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    with OpenAIServer() as web:
        web.script(stalled_page(), path="/slow")
        openai_server.script(
            Reply.tool_calls(
                search("s1", "last keeper"),
                fetch("f1", f"{web.url}/slow"),
                search("s2", "fog signal"),
            ),
        )
        args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url"]
        args += [openai_server.base_url, "--trace", str(trace), "--allow-fetch"]
        with spawn(imprint_env, *args, *(["--json"] if json_mode else [])) as (process, out, err):
            assert web.wait_for_stall(timeout=60), err.text()[-2000:]
            sent = time.monotonic()
            process.send_signal(signal.SIGINT)
            returncode = process.wait(timeout=30)
            took = time.monotonic() - sent
            stdout, stderr = out.text(), err.text()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert returncode == 130, (returncode, stderr[-2000:])
    assert took < 1.0, f"Ctrl+C took {took:.2f} s"
    if json_mode:
        payload = the_json_result(stdout)
        assert (payload["stop_reason"], payload["final_mode"]) == ("cancelled", "fallback")
        assert [item["source"] for item in payload["evidence"]] == ["keepers.md"]
        assert_trace_matches_result(read_trace(trace), payload)
    else:
        assert stdout.startswith(FALLBACK_PREFIX), stdout[:500]
        assert "keepers.md" in stdout and "Ada Quill" in stdout, stdout
        assert not stdout.lstrip().startswith("{")
    records = read_trace(trace)
    statuses = {record["call_id"]: record["status"] for record in of_type(records, "tool")}
    assert statuses.get("s2") == "not_executed", statuses
    assert of_type(records, "stop")[0]["reason"] == "cancelled"


def test_sigint_while_waiting_for_the_persons_answer_exits_130_at_once(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper"), ask_user("a1", "Which lighthouse?")),
        Reply.text("never asked for"),
    )
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json") as (process, out, err):
        assert err.wait_for("Which lighthouse?"), err.text()[-2000:]
        process.send_signal(signal.SIGINT)
        try:
            returncode = process.wait(timeout=3)  # stdin stays open: a person at the terminal
        except subprocess.TimeoutExpired:
            returncode = None
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
        stdout = out.text()
    assert returncode == 130, "still running 3 s after Ctrl+C, waiting for a line on stdin"
    payload = the_json_result(stdout)
    assert payload["stop_reason"] == "cancelled" and payload["evidence"]
