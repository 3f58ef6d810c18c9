"""`imprint ask` against its written contract (DESIGN §3, §4, §5), black-box, as a person uses it.

Every test runs the real command line as a subprocess with private config and data folders, against
scripted OpenAI-compatible servers on 127.0.0.1, and reads only what a person or a script sees: the
exit code, stdout and stderr, the `--json` result, the trace file, the HTTP requests the server
received and the files left in the data folder. Hostile *server* output is covered by
``test_ask_hostile.py``; this file is about the command line itself: every ending's JSON, exit
codes, usage errors, `--answer` and stdin, the API key, the settings layers, the trace and the
history.

Nothing here sleeps: runs are synchronised on the server's stalls and on what the process prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import pytest

from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research.sources import written
from tests.e2e.conftest import Imprint
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, closed_port

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _scripted_first_step(imprint_env: dict[str, str]) -> None:
    """These scenarios script every request: the engine's own search before answering
    (chat.research_first) is tested on its own in test_ask_grounded.py."""
    imprint_env["IMPRINT_CHAT_RESEARCH_FIRST"] = "false"


QUESTION = "Who was the last keeper?"
FALLBACK_PREFIX = "No final answer could be written"  # DESIGN §1, the label of the fallback
ANSWER = "The last keeper was Ada Quill [1]."

STOP_REASONS = {
    "answered",
    "no_progress",
    "time_budget",
    "token_budget",
    "context_full",
    "cancelled",
    "error",
}
EXIT_FOR_STOP = {
    "answered": 0,
    "no_progress": 0,
    "time_budget": 0,
    "token_budget": 0,
    "context_full": 0,
    "cancelled": 130,
    "error": 1,
}

# DESIGN §5: every trace event is {"t", "type"} plus exactly these fields.
TRACE_FIELDS: dict[str, set[str]] = {
    "run_start": {"question", "settings"},
    "request": {
        "phase",
        "round",
        "prompt_tokens",
        "reserved",
        "reused_prefix",
        "charged_prompt",
        "output_tokens",
        "charged",
        "refunded",
        "budget_left",
        "estimated",
        "provider_usage",
        "prefix_source",  # DESIGN §1: which source the reused prefix came from
    },
    "tool": {
        "round",
        "call_id",
        "name",
        "kind",
        "status",
        "new_evidence",
        "repeated_evidence",
        "seconds",
    },
    "user_wait": {"seconds"},
    "consent": {"call_id", "url", "decision", "seconds"},
    "round_end": {"round", "progress", "excluded", "no_progress_rounds"},
    "stop": {"reason"},
    "final": {"mode", "seconds"},
}
TOOL_KINDS = {
    "search_workspace": "read",
    "read_document": "read",
    "list_documents": "read",
    "fetch_url": "read",
    "write_note": "write",
    "ask_user": "ask",
    "research_sections": "coordinator",
}


# --- fixtures and running ------------------------------------------------------------------------


def ask(
    imprint: Imprint,
    server: OpenAIServer | None,
    workspace: Path,
    *extra: str,
    question: str = QUESTION,
    stdin: str = "",
    env: dict[str, str] | None = None,
    json_mode: bool = True,
) -> subprocess.CompletedProcess[str]:
    args = ["ask", question, "--workspace", str(workspace)]
    if server is not None:
        args += ["--base-url", server.base_url]
    if json_mode:
        args.append("--json")
    result = imprint(*args, *extra, stdin=stdin, env=env, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result


def search(call_id: str, query: str) -> ToolCall:
    return ToolCall(call_id, "search_workspace", json.dumps({"query": query}))


def ask_user(call_id: str, question: str) -> ToolCall:
    return ToolCall(call_id, "ask_user", json.dumps({"question": question}))


def fetch(call_id: str, url: str) -> ToolCall:
    return ToolCall(call_id, "fetch_url", json.dumps({"url": url}))


def stalled_page() -> Reply:
    """An HTML page whose body never finishes until the server is released or stopped."""
    return dataclasses.replace(
        Reply.stall("<html><body><p>Loading"), headers=(("Content-Type", "text/html"),)
    )


def tool_results(request: RecordedRequest) -> dict[str, str]:
    return {
        message["tool_call_id"]: message["content"]
        for message in request.messages
        if message.get("role") == "tool"
    }


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- what the contract promises ------------------------------------------------------------------


def the_json_result(stdout: str) -> dict[str, Any]:
    """`--json` prints exactly one JSON object on stdout and nothing else there (DESIGN §4)."""
    assert stdout.endswith("\n") and stdout.count("\n") == 1, f"stdout: {stdout[:800]!r}"
    payload = strict_json(stdout)
    assert isinstance(payload, dict), stdout[:800]
    assert_result_fields(payload)
    return payload


def assert_result_fields(payload: Mapping[str, Any]) -> None:
    """Every field DESIGN §4 names, with its type, in every ending."""
    missing = {
        "answer",
        "final_mode",
        "stop_reason",
        "rounds",
        "evidence",
        "tokens",
        "research_seconds",
        "user_wait_seconds",
        "trace",
    } - set(payload)
    assert not missing, f"missing fields {missing} in {payload}"
    assert isinstance(payload["answer"], str) and payload["answer"].strip(), payload
    assert payload["final_mode"] in ("model", "fallback", "no_evidence"), payload
    assert payload["stop_reason"] in STOP_REASONS, payload
    assert is_int(payload["rounds"]) and payload["rounds"] >= 0, payload
    assert isinstance(payload["evidence"], list)
    ids = []
    for item in payload["evidence"]:
        assert isinstance(item, dict) and {"id", "source", "excerpt"} <= set(item), item
        assert is_int(item["id"]), item
        assert isinstance(item["source"], str) and item["source"], item
        assert isinstance(item["excerpt"], str) and item["excerpt"].strip(), item
        ids.append(item["id"])
    assert len(ids) == len(set(ids)), f"evidence ids repeat: {ids}"
    tokens = payload["tokens"]
    assert isinstance(tokens, dict)
    assert {"budget", "charged", "refunded", "final_charged"} <= set(tokens), tokens
    for key in ("budget", "charged", "refunded", "final_charged"):
        assert is_int(tokens[key]) and tokens[key] >= 0, tokens
    assert tokens["charged"] <= tokens["budget"], f"research spent past its budget: {tokens}"
    for key in ("research_seconds", "user_wait_seconds"):
        assert is_number(payload[key]) and payload[key] >= 0, payload
    assert payload["trace"] is None or isinstance(payload["trace"], str), payload
    if payload["final_mode"] == "fallback":
        assert payload["answer"].startswith(FALLBACK_PREFIX), payload["answer"][:300]
        for item in payload["evidence"]:  # the fallback lists the evidence, each with its source
            assert item["source"] in payload["answer"], (item, payload["answer"][:1000])
    if payload["stop_reason"] == "answered":
        assert payload["final_mode"] == "model" and tokens["final_charged"] == 0, payload


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The trace file, every line checked against DESIGN §5 (types, exact fields, values)."""
    assert path.is_file(), f"no trace at {path}"
    records: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = strict_json(line)
        assert isinstance(record, dict), line
        kind = record.get("type")
        assert kind in TRACE_FIELDS, f"unknown trace event type in {line}"
        assert set(record) == {"t", "type"} | TRACE_FIELDS[kind], (
            f"{kind}: fields {sorted(set(record) - {'t', 'type'})}, "
            f"DESIGN §5 says {sorted(TRACE_FIELDS[kind])}"
        )
        assert is_number(record["t"]) and record["t"] >= 0, line
        records.append(record)
    assert records, "the trace is empty"
    times = [record["t"] for record in records]
    assert times == sorted(times), f"trace times go backwards: {times}"
    assert records[0]["type"] == "run_start", records[0]
    assert [r["type"] for r in records].count("run_start") == 1
    assert [r["type"] for r in records].count("stop") == 1, "one stop per reply"
    for record in records:
        kind = record["type"]
        if kind == "run_start":
            assert isinstance(record["question"], str) and isinstance(record["settings"], dict)
        elif kind == "request":
            assert record["phase"] in ("research", "worker", "condense", "final"), record
            assert isinstance(record["estimated"], bool), record
            words = {"phase", "estimated", "provider_usage", "prefix_source"}
            for key in TRACE_FIELDS["request"] - words:
                assert is_int(record[key]) and record[key] >= 0, (key, record)
            assert record["provider_usage"] is None or isinstance(record["provider_usage"], dict)
            assert record["prefix_source"] in (None, "kv_cache", "server", "estimate"), record
            assert record["charged"] + record["refunded"] == record["reserved"], record
        elif kind == "tool":
            assert record["status"] in ("ok", "empty", "error", "not_executed"), record
            assert TOOL_KINDS.get(record["name"], record["kind"]) == record["kind"], record
            assert is_number(record["seconds"]) and record["seconds"] >= 0, record
            assert is_int(record["new_evidence"]) and is_int(record["repeated_evidence"])
        elif kind == "user_wait":
            assert is_number(record["seconds"]) and record["seconds"] >= 0, record
        elif kind == "round_end":
            assert isinstance(record["progress"], bool) and isinstance(record["excluded"], bool)
            assert is_int(record["round"]) and is_int(record["no_progress_rounds"]), record
        elif kind == "stop":
            assert record["reason"] in STOP_REASONS, record
        elif kind == "final":
            assert record["mode"] in ("model", "fallback", "no_evidence"), record
    return records


def of_type(records: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [record for record in records if record["type"] == kind]


def assert_trace_matches_result(
    records: Sequence[Mapping[str, Any]], payload: Mapping[str, Any]
) -> None:
    """The trace and the JSON result tell the same story (one source of truth)."""
    (stop,) = of_type(records, "stop")
    assert stop["reason"] == payload["stop_reason"]
    finals = of_type(records, "final")
    if payload["stop_reason"] != "answered":
        assert len(finals) == 1 and finals[0]["mode"] == payload["final_mode"], finals
    requests = of_type(records, "request")
    research = [r for r in requests if r["phase"] != "final"]
    final = [r for r in requests if r["phase"] == "final"]
    tokens = payload["tokens"]
    assert sum(r["charged"] for r in research) == tokens["charged"], (requests, tokens)
    assert sum(r["refunded"] for r in research) == tokens["refunded"], (requests, tokens)
    assert sum(r["charged"] for r in final) == tokens["final_charged"], (requests, tokens)
    assert len(of_type(records, "round_end")) == payload["rounds"]
    waits = sum(r["seconds"] for r in of_type(records, "user_wait"))
    assert abs(waits - payload["user_wait_seconds"]) < 0.01, (waits, payload)
    settings = records[0]["settings"]
    assert settings["chat.research_token_budget"] == tokens["budget"]


# --- processes that are signalled or fed while they run -----------------------------------------


class Watched:
    """A pipe read on a thread into a buffer, so a test can wait for what the process printed."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._data = bytearray()
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, name="watched-pipe")
        self._thread.start()

    def _read(self) -> None:
        while True:
            piece = os.read(self._pipe.fileno(), 4096)
            with self._changed:
                if not piece:
                    self._done = True
                    self._changed.notify_all()
                    return
                self._data += piece
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        needle = text.encode()
        with self._changed:
            return self._changed.wait_for(lambda: needle in self._data or self._done, timeout) and (
                needle in self._data
            )

    def text(self) -> str:
        self._thread.join(timeout=30)
        with self._changed:
            return bytes(self._data).decode("utf-8", errors="replace")


@contextmanager
def spawn(
    imprint_env: Mapping[str, str], *args: str
) -> Iterator[tuple[subprocess.Popen[bytes], Watched, Watched]]:
    """`imprint ARGS` with pipes on all three streams; killed (only it) if the test fails."""
    process = subprocess.Popen(
        [sys.executable, "-m", "imprint_desktop", *args],
        env=dict(imprint_env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    out, err = Watched(process.stdout), Watched(process.stderr)
    try:
        yield process, out, err
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        out.text()
        err.text()
        for pipe in (process.stdin, process.stdout, process.stderr):
            with suppress(OSError):
                pipe.close()


# --- every ending: the JSON result, the exit code, the trace -------------------------------------


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
        assert written(payload["answer"]) == ANSWER and payload["rounds"] == 1
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
    assert written(payload["answer"]) == "From what was found: Ada Quill [1]."
    assert 10 <= payload["research_seconds"] < 12.5 and elapsed < 40, (payload, elapsed)
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    statuses = {record["call_id"]: record["status"] for record in of_type(records, "tool")}
    assert statuses["s1"] == "ok" and statuses["s2"] == "not_executed", statuses
    final = openai_server.chat_requests()[-1]
    assert "tools" not in final.json or final.json.get("tool_choice") == "none"
    results = tool_results(final)
    assert results["s2"].startswith("not executed"), results
    assert "time" in results["s2"], results


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


# --- without --json: a readable answer on stdout, the rest on stderr -----------------------------


def test_without_json_the_answer_alone_is_on_stdout_and_the_status_on_stderr(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper"), ask_user("a1", "Which lighthouse?")),
        Reply.text(ANSWER),
    )
    result = ask(imprint, openai_server, workspace, json_mode=False, stdin="Greyness Point\n")
    assert result.returncode == 0, result.stderr[-2000:]
    assert written(result.stdout.strip()) == ANSWER, result.stdout
    assert "Sources:\n- [1] keepers.md" in result.stdout  # under the answer, as in the window
    assert "Which lighthouse?" in result.stderr and "Which lighthouse?" not in result.stdout
    assert "answered" in result.stderr, result.stderr


def test_the_status_line_speaks_proper_english_for_one_round(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace, json_mode=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 round " in result.stderr and "1 piece of evidence" in result.stderr, result.stderr


def test_without_json_an_error_says_why_on_stderr(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.error(400, "this server rejects the request"))
    result = ask(imprint, openai_server, workspace, json_mode=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "this server rejects the request" in result.stderr or "400" in result.stderr, (
        result.stderr
    )


# --- exit 2: bad usage and bad settings, and nothing is sent -------------------------------------


@pytest.mark.parametrize(
    ("extra", "must_mention"),
    [
        (["--no-such-option"], ["--no-such-option"]),
        (["--provider", "cloud"], ["--provider", "cloud"]),
        (["--set", "chat.no_such_setting=1"], ["chat.no_such_setting"]),
        (["--set", "chat.max_tokens"], ["KEY=VALUE", "chat.max_tokens"]),
        (["--set", "chat.max_tokens=lots"], ["chat.max_tokens", "64", "32768"]),
        (["--set", "chat.research_timeout_sec=9"], ["chat.research_timeout_sec", "10", "3600"]),
        (
            ["--set", "chat.research_token_budget=2000001"],
            ["chat.research_token_budget", "1024", "2000000"],
        ),
        (
            ["--set", "chat.research_no_progress_rounds=1"],
            ["chat.research_no_progress_rounds", "2", "20"],
        ),
        (["--set", "chat.max_tokens=32769"], ["chat.max_tokens", "64", "32768"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_bad_usage_exits_2_with_a_message_and_sends_nothing(
    extra: list[str],
    must_mention: list[str],
    imprint: Imprint,
    openai_server: OpenAIServer,
    workspace: Path,
) -> None:
    result = ask(imprint, openai_server, workspace, *extra)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    message = result.stderr.replace(",", "")  # 32,768 and 32768 both name the bound
    for word in must_mention:
        assert word in message, (word, result.stderr)
    assert result.stdout == ""
    assert openai_server.requests == []


def test_an_api_key_given_with_set_is_refused_without_echoing_it(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    result = ask(imprint, openai_server, workspace, "--set", "remote.api_key=sk-typed-on-argv-77")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "remote.api_key" in result.stderr and "--api-key-env" in result.stderr
    assert "sk-typed-on-argv-77" not in result.stdout + result.stderr
    assert openai_server.requests == []


def test_a_workspace_that_does_not_exist_is_bad_usage(
    imprint: Imprint, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-folder"
    result = ask(imprint, openai_server, missing)
    assert str(missing) in result.stderr, result.stderr
    assert openai_server.requests == []
    assert result.returncode == 2, (result.returncode, result.stderr)


def test_a_workspace_that_is_a_file_is_bad_usage_and_said_so(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    a_file = workspace / "keepers.md"
    result = ask(imprint, openai_server, a_file)
    assert str(a_file) in result.stderr, result.stderr
    assert openai_server.requests == []
    assert "does not exist" not in result.stderr and "folder" in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)


def test_an_empty_question_is_bad_usage(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "anything")), Reply.text("An answer."))
    result = ask(imprint, openai_server, workspace, question="   ")
    assert openai_server.requests == [], "a blank question was sent to the model"
    assert result.returncode == 2 and "question" in result.stderr.lower(), result.stderr


# --- exit 1: errors ------------------------------------------------------------------------------


def test_an_unreachable_server_is_an_error_with_exit_1_and_the_json_result(
    imprint: Imprint, workspace: Path
) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    result = imprint(
        "ask", QUESTION, "--workspace", str(workspace), "--base-url", base_url, "--json"
    )
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    payload = the_json_result(result.stdout)
    assert (payload["stop_reason"], payload["final_mode"]) == ("error", "fallback")
    assert base_url in payload["error"] and base_url in payload["answer"], payload


def _random_bytes(path: Path) -> Path:
    path.write_bytes(bytes(range(256)) * 64)
    return path


def _cut_header(path: Path) -> Path:
    path.write_bytes(b"GGUF\x03\x00\x00\x00\x10\x00")
    return path


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "nonexistent.gguf", ["nonexistent.gguf"]),
        (lambda tmp: _random_bytes(tmp / "noise.gguf"), ["noise.gguf", "GGUF"]),
        (lambda tmp: _cut_header(tmp / "cut.gguf"), ["cut.gguf"]),
    ],
    ids=["missing", "random-bytes", "cut-header"],
)
def test_a_local_model_that_cannot_be_loaded_is_an_error_with_exit_1(
    make: Any, words: list[str], imprint: Imprint, workspace: Path, tmp_path: Path
) -> None:
    model = make(tmp_path)
    result = ask(imprint, None, workspace, "--provider", "local", "--model", str(model))
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    message = result.stderr.strip()
    assert message and len(message.splitlines()) <= 3, message
    for word in words:
        assert word in message, (word, message)
    assert result.stdout == "" or the_json_result(result.stdout)["stop_reason"] == "error"


# --- --answer and stdin ---------------------------------------------------------------------------


def test_answers_are_taken_in_order_then_stdin_then_end_of_file_says_no_answer(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(ask_user("q1", "First?"), ask_user("q2", "Second?")),
        Reply.tool_calls(ask_user("q3", "Third?"), ask_user("q4", "Fourth?")),
        Reply.text("Thanks for all four."),
    )
    result = ask(
        imprint,
        openai_server,
        workspace,
        "--answer",
        "from argv one",
        "--answer",
        "from argv two",
        stdin="from stdin three\n",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = the_json_result(result.stdout)  # the questions did not reach stdout
    assert (
        written(payload["answer"]) == "Thanks for all four."
        and payload["stop_reason"] == "answered"
    )
    results = tool_results(openai_server.chat_requests()[-1])
    assert "from argv one" in results["q1"] and "from argv two" in results["q2"], results
    assert "from stdin three" in results["q3"], results
    fourth = results["q4"]
    assert "from" not in fourth and fourth.strip(), f"end of file gave {fourth!r}"
    assert "no answer" in fourth.lower(), fourth
    assert "Third?" in result.stderr and "Fourth?" in result.stderr
    for question in ("First?", "Second?", "Third?", "Fourth?"):
        assert question not in result.stdout


def test_time_waiting_for_the_person_is_user_wait_not_research_time(
    imprint: Imprint,
    imprint_env: dict[str, str],
    openai_server: OpenAIServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    openai_server.script(
        Reply.tool_calls(search("s1", "last keeper"), ask_user("a1", "Which lighthouse?")),
        Reply.text(ANSWER),
    )
    trace = tmp_path / "trace.jsonl"
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json", "--trace", str(trace)) as (process, out, err):
        assert err.wait_for("Which lighthouse?"), err.text()[-2000:]
        asked = time.monotonic()
        # The person does something else before answering: here, another imprint command.
        other = imprint("settings", "get", "chat.max_tokens")
        assert other.returncode == 0 and "2048" in other.stdout, other.stderr
        delay = time.monotonic() - asked
        assert process.stdin is not None
        process.stdin.write(b"Greyness Point\n")
        process.stdin.flush()
        assert process.wait(timeout=60) == 0, err.text()[-2000:]
        payload = the_json_result(out.text())
    assert written(payload["answer"]) == ANSWER
    assert payload["user_wait_seconds"] >= delay - 0.01, (payload, delay)
    # The wait covered at least `delay`; research itself (two instant requests) took far less.
    assert payload["research_seconds"] < delay, (payload, delay)
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    assert len(of_type(records, "user_wait")) == 1


# --- the API key ---------------------------------------------------------------------------------

SECRET = "sk-contract-7f3a9c1e5b"


def files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path))
    return hits


def test_the_api_key_reaches_the_server_and_nowhere_else(
    imprint: Imprint, workspace: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    with OpenAIServer(api_key=SECRET) as server:
        server.script(
            Reply.tool_calls(search("s1", "last keeper")),
            Reply.tool_calls(ask_user("a1", "Which lighthouse?")),
            Reply.text(ANSWER),
        )
        result = ask(
            imprint,
            server,
            workspace,
            "--api-key-env",
            "CONTRACT_KEY",
            "--trace",
            str(trace),
            stdin="Greyness Point\n",
            env={"CONTRACT_KEY": SECRET},
        )
        requests = server.requests
        server.assert_protocol_complete()
    assert result.returncode == 0, result.stderr[-2000:]
    assert written(the_json_result(result.stdout)["answer"]) == ANSWER
    assert requests and all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in requests)
    assert SECRET not in result.stdout + result.stderr
    # tmp_path holds the config and data folders, the workspace and the trace.
    assert files_containing(tmp_path, SECRET) == []


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_a_missing_api_key_variable_is_a_clear_error_before_anything_is_sent(
    value: str | None, imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    env = {} if value is None else {"CONTRACT_KEY": value}
    result = ask(imprint, openai_server, workspace, "--api-key-env", "CONTRACT_KEY", env=env)
    assert result.returncode == 2, (result.returncode, result.stderr)  # bad usage (DESIGN §4)
    assert "CONTRACT_KEY" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
    assert openai_server.requests == []


# --- settings: the file, the environment and --set ----------------------------------------------


def research_settings(request: RecordedRequest) -> tuple[Any, Any]:
    return request.json.get("temperature"), request.json.get("max_tokens")


def test_settings_come_from_the_file_then_the_environment_then_set(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "imprint.toml"
    config.write_text(
        "# my settings\n[chat]\ntemperature = 0.7  # warm\nresearch_max_output_tokens = 100\n",
        encoding="utf-8",
    )
    before = config.read_bytes()
    seen: list[tuple[Any, tuple[Any, Any]]] = []
    for env, extra in (
        ({}, []),
        ({"IMPRINT_CHAT_TEMPERATURE": "0.9"}, []),
        ({"IMPRINT_CHAT_TEMPERATURE": "0.9"}, ["--set", "chat.temperature=1.1"]),
    ):
        openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
        trace = tmp_path / f"trace-{len(seen)}.jsonl"
        result = ask(
            imprint,
            openai_server,
            workspace,
            "--config",
            str(config),
            "--trace",
            str(trace),
            *extra,
            env=env,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        settings = read_trace(trace)[0]["settings"]
        seen.append(
            (settings["chat.temperature"], research_settings(openai_server.chat_requests()[-1]))
        )
    assert seen == [(0.7, (0.7, 100)), (0.9, (0.9, 100)), (1.1, (1.1, 100))]
    assert config.read_bytes() == before, "ask changed the settings file"


def test_a_settings_file_that_does_not_parse_is_reported_and_left_alone(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "broken.toml"
    config.write_text("# hand edited\n[chat\nresearch_timeout_sec = 60\n", encoding="utf-8")
    before = config.read_bytes()
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    trace = tmp_path / "trace.jsonl"
    result = ask(imprint, openai_server, workspace, "--config", str(config), "--trace", str(trace))
    assert result.returncode == 0, result.stderr[-2000:]
    assert written(the_json_result(result.stdout)["answer"]) == ANSWER
    assert "broken.toml" in result.stderr and "TOML" in result.stderr, result.stderr
    assert config.read_bytes() == before
    assert read_trace(trace)[0]["settings"]["chat.research_timeout_sec"] == 300


def test_bad_values_in_the_file_and_environment_fall_back_and_retired_keys_are_ignored(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "imprint.toml"
    config.write_text(
        "[chat]\n# patience\nresearch_no_progress_rounds = 99\nmax_tool_iters = 3\n",
        encoding="utf-8",
    )
    before = config.read_bytes()
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    trace = tmp_path / "trace.jsonl"
    result = ask(
        imprint,
        openai_server,
        workspace,
        "--config",
        str(config),
        "--trace",
        str(trace),
        env={"IMPRINT_CHAT_MAX_TOKENS": "10", "IMPRINT_CHAT_MAX_TOOL_ITERS": "5"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert the_json_result(result.stdout)["stop_reason"] == "answered"
    warnings = result.stderr.replace(",", "")
    assert "chat.research_no_progress_rounds" in warnings and "2 and 20" in warnings, warnings
    assert "IMPRINT_CHAT_MAX_TOKENS" in warnings or "chat.max_tokens" in warnings, warnings
    settings = read_trace(trace)[0]["settings"]
    assert settings["chat.research_no_progress_rounds"] == 4 and settings["chat.max_tokens"] == 2048
    assert "chat.max_tool_iters" not in settings
    assert config.read_bytes() == before


# --- the trace file ------------------------------------------------------------------------------


def test_a_trace_in_a_folder_that_does_not_exist_yet_is_written(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    trace = tmp_path / "new" / "folder" / "trace.jsonl"
    result = ask(imprint, openai_server, workspace, "--trace", str(trace))
    assert result.returncode == 0, result.stderr[-2000:]  # the folders are made
    payload = the_json_result(result.stdout)
    assert payload["trace"] == str(trace)
    assert_trace_matches_result(read_trace(trace), payload)


@pytest.mark.parametrize("where", ["parent-is-a-file", "is-a-folder"])
def test_a_trace_path_that_cannot_be_written_is_a_clear_message_not_a_traceback(
    where: str, imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    trace = blocker / "trace.jsonl" if where == "parent-is-a-file" else tmp_path
    result = imprint(
        "ask",
        QUESTION,
        "--workspace",
        str(workspace),
        "--base-url",
        openai_server.base_url,
        "--json",
        "--trace",
        str(trace),
    )
    assert "Traceback" not in result.stderr, result.stderr[-1500:]
    assert str(trace) in result.stderr, result.stderr
    # A trace that cannot be written is bad usage, said before anything is sent (DESIGN §4).
    assert result.returncode == 2, result.returncode
    assert openai_server.requests == []


def test_the_trace_records_every_kind_of_event_with_the_fields_of_design_5(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(
        Reply.tool_calls(
            search("s1", "last keeper"),
            search("s2", "zebra quasar"),  # nothing found
            ToolCall("r1", "read_document", json.dumps({"path": "missing.md"})),
            ask_user("a1", "Which lighthouse?"),
        ),
        Reply.tool_calls(search("s3", "last keeper")),
        Reply.tool_calls(search("s4", "keeper Ada Quill")),
        Reply.text("Ada Quill [1]."),
    )
    trace = tmp_path / "trace.jsonl"
    result = ask(
        imprint,
        openai_server,
        workspace,
        "--set",
        "chat.research_no_progress_rounds=2",
        "--trace",
        str(trace),
        stdin="Greyness Point\n",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = the_json_result(result.stdout)
    assert (payload["stop_reason"], payload["final_mode"]) == ("no_progress", "model")
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    # Every type but consent (a fetch's, in test_ask_consent.py).
    assert {record["type"] for record in records} == set(TRACE_FIELDS) - {"consent"}
    assert records[0]["question"] == QUESTION
    statuses = {record["call_id"]: record["status"] for record in of_type(records, "tool")}
    assert statuses == {
        "s1": "ok",
        "s2": "empty",
        "r1": "error",
        "a1": "ok",
        "s3": "ok",
        "s4": "ok",
    }
    rounds = of_type(records, "round_end")
    assert [r["progress"] for r in rounds] == [True, False, False]
    assert [r["no_progress_rounds"] for r in rounds] == [0, 1, 2]
    phases = [r["phase"] for r in of_type(records, "request")]
    assert phases == ["research"] * 3 + ["final"]
    assert of_type(records, "final")[0]["mode"] == "model"
    assert records[-1]["type"] == "final"


# --- the history ---------------------------------------------------------------------------------


def sqlite_dumps(root: Path) -> dict[Path, str]:
    """Every SQLite database under ``root``, as SQL text."""
    dumps = {}
    for path in sorted(root.rglob("*")):
        if (
            not path.is_file()
            or path.suffix in (".wal", ".shm")
            or path.name.endswith(("-wal", "-shm"))
        ):
            continue
        with path.open("rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                continue
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            dumps[path] = "\n".join(connection.iterdump())
        finally:
            connection.close()
    return dumps


def test_the_reply_is_kept_in_the_history_with_its_answer_and_evidence(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace)
    assert result.returncode == 0, result.stderr[-2000:]
    dumps = sqlite_dumps(isolated_dirs / "data")
    assert dumps, "no database at all in the data folder"
    with_reply = [text for text in dumps.values() if ANSWER in text]
    assert with_reply, f"the answer is in none of {sorted(map(str, dumps))}"
    (history,) = with_reply
    assert QUESTION in history and "answered" in history
    assert "keepers.md" in history and "Ada Quill, who left in 1971" in history


def test_a_killed_ask_leaves_its_reply_to_reopen_interrupted_with_its_evidence(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.stall())
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json") as (process, _out, _err):
        assert openai_server.wait_for_stall(timeout=60), "the second request never came"
        process.kill()  # SIGKILL: nothing of the process gets to run any more
        process.wait(timeout=30)
    openai_server.release()
    # What the window does when it starts: replies still "running" were cut short.
    store = HistoryStore(isolated_dirs / "data" / "history.sqlite3")
    try:
        assert store.mark_interrupted() == 1
        (conversation,) = store.conversations()
        (reply,) = store.replies(conversation.id)
        assert (reply.question, reply.status, reply.answer) == (QUESTION, "interrupted", None)
        assert [item.source for item in reply.evidence] == ["keepers.md"]
        assert "Ada Quill" in reply.evidence[0].excerpt
    finally:
        store.close()


def test_no_history_keeps_the_reply_out_of_the_history(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace, "--no-history")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (isolated_dirs / "data" / "history.sqlite3").exists()
