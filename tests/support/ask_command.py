"""Running `imprint ask` in the end-to-end scenarios and reading what it leaves, against its
written contract (DESIGN §4, §5).

The scenario modules (``tests/e2e/test_ask_*.py``) run the real command line as a subprocess with
private config and data folders, against scripted OpenAI-compatible servers on 127.0.0.1, and read
only what a person or a script sees: the exit code, stdout and stderr, the ``--json`` result, the
trace file and the HTTP requests the server received. This module holds what they share: the
question and answer they script, the tool calls a scripted model makes, :func:`ask` (one run to
its end), :func:`spawn` (a run to signal or feed while it works) and :class:`TerminalRun` (a run
with stdin on a terminal, answering its prompts), and the checks of the ``--json`` result and of
the trace against every field DESIGN §4 and §5 name.

Nothing here sleeps: runs are synchronised on the servers' stalls and on what the process prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Any

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

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
        "past_deadline",  # how far past the research deadline the call returned (issue 42)
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


# --- running -------------------------------------------------------------------------------------


def ask(
    imprint: Imprint,
    server: OpenAIServer | None,
    workspace: Path,
    *extra: str,
    question: str = QUESTION,
    stdin: str = "",
    env: dict[str, str] | None = None,
    json_mode: bool = True,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `imprint ask QUESTION --workspace DIR [--base-url URL] [--json] EXTRA` to its end; never
    a Python traceback."""
    args = ["ask", question, "--workspace", str(workspace)]
    if server is not None:
        args += ["--base-url", server.base_url]
    if json_mode:
        args.append("--json")
    result = imprint(*args, *extra, stdin=stdin, env=env, timeout=timeout)
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
    """The tool messages of a request, by the id of the call they answer."""
    results: dict[str, str] = {}
    for message in request.messages:
        if message.get("role") == "tool":
            call_id = message["tool_call_id"]
            assert call_id not in results, f"{call_id!r} answered twice"
            results[call_id] = message["content"]
    return results


def strict_json(text: str) -> Any:
    """JSON as the standard defines it: NaN and Infinity are not JSON."""

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


def the_json_ending(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """With `--json`, whatever happened, stdout is one JSON object at the end, carrying the exit
    code and why the run failed (issue 28). A run that wrote no reply (bad usage, a model that
    cannot be loaded, Ctrl+C before research began) has the same fields: no answer, no
    ``final_mode``, and an ``error``."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, (
        f"stdout: {result.stdout[:800]!r}; stderr: {result.stderr[-2000:]}"
    )
    payload = strict_json(result.stdout)
    assert isinstance(payload, dict), result.stdout[:800]
    assert payload.get("exit_code") == result.returncode, (payload, result.returncode)
    if payload["final_mode"] is not None:
        assert_result_fields(payload)
        return payload
    assert result.returncode in (1, 2, 130), payload
    assert payload["answer"] == "" and payload["rounds"] == 0, payload
    assert payload["evidence"] == [] and payload["sources"] == [], payload
    assert payload["stop_reason"] == ("cancelled" if result.returncode == 130 else "error"), payload
    assert isinstance(payload["error"], str) and payload["error"].strip(), payload
    assert payload["trace"] is None or isinstance(payload["trace"], str), payload
    return payload


def assert_result_fields(payload: Mapping[str, Any]) -> None:
    """Every field DESIGN §4 names, with its type, in every ending, and the exit code."""
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
        "grounding",
        "runaway",
        "search_embedder",
        "token_counts",
    } - set(payload)
    assert not missing, f"missing fields {missing} in {payload}"
    assert isinstance(payload["answer"], str) and payload["answer"].strip(), payload
    assert payload["final_mode"] in ("model", "fallback", "no_evidence"), payload
    assert payload["stop_reason"] in STOP_REASONS, payload
    assert payload.get("exit_code") == EXIT_FOR_STOP[payload["stop_reason"]], payload
    if payload["stop_reason"] == "error":
        assert isinstance(payload["error"], str) and payload["error"].strip(), payload
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
            assert is_number(record["past_deadline"]) and record["past_deadline"] >= 0, record
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
    """A pipe, or the terminal's side of a pty, read on a thread into a buffer to its end, so a
    test can wait for what the process printed."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._data = bytearray()
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, name="watched-output")
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                piece = os.read(self._fd, 4096)
            except OSError:  # EIO: every process holding the other side of the pty has exited
                piece = b""
            with self._changed:
                self._data += piece
                self._done = not piece
                self._changed.notify_all()
            if not piece:
                return

    def wait_for(self, text: str, count: int = 1, timeout: float = 60) -> bool:
        """Whether ``text`` came ``count`` times (or more) before ``timeout`` or the end."""
        needle = text.encode()
        with self._changed:
            self._changed.wait_for(lambda: self._data.count(needle) >= count or self._done, timeout)
            return self._data.count(needle) >= count

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
    out, err = Watched(process.stdout.fileno()), Watched(process.stderr.fileno())
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


class TerminalRun:
    """``imprint ARGS`` with its stdin on a terminal (a pty), as a person runs it: the test waits
    for each prompt on stderr and types the answer. Stderr goes to the same terminal, or
    (``stderr_on_terminal=False``) to a pipe of its own. A context manager that kills the process
    if the test leaves it running."""

    def __init__(
        self, args: list[str], env: dict[str, str], *, stderr_on_terminal: bool = True
    ) -> None:
        self._controller, terminal = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "imprint_desktop", *args],
            env=env,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=terminal if stderr_on_terminal else subprocess.PIPE,
        )
        os.close(terminal)
        self._stderr_pipe = self.process.stderr  # read by the thread alone:
        self.process.stderr = None  # communicate() reads stdout only
        pipe = self._stderr_pipe
        self.stderr = Watched(self._controller if pipe is None else pipe.fileno())
        self._seen: dict[str, int] = {}

    def wait_for(self, prompt: str) -> None:
        """Wait until stderr shows ``prompt`` once more than before."""
        self._seen[prompt] = self._seen.get(prompt, 0) + 1
        assert self.stderr.wait_for(prompt, self._seen[prompt]), self.stderr.text()[-2000:]

    def type(self, line: bytes) -> None:
        os.write(self._controller, line)

    def answer(self, prompt: str, line: bytes) -> None:
        """Wait for ``prompt`` once more, then type ``line``."""
        self.wait_for(prompt)
        self.type(line)

    def finish(self, timeout: float = 60) -> tuple[int, bytes, str]:
        """The exit code, stdout, and all that came on stderr, once the process has ended."""
        stdout, _ = self.process.communicate(timeout=timeout)
        return self.process.returncode, stdout, self.stderr.text()

    def __enter__(self) -> TerminalRun:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.stderr.text()  # the reader has seen the end
        for pipe in (self.process.stdout, self._stderr_pipe):
            if pipe is not None:
                pipe.close()
        os.close(self._controller)
