"""What the scenarios of `imprint ask` against hostile or unusual servers share.

Those scenarios (``tests/e2e/test_ask_hostile_*.py``) run the real command line as a subprocess
against a scripted OpenAI-compatible server on 127.0.0.1 and check what a reviewer would: the exit
code of DESIGN §4 (0 with an answer or the labelled fallback, 1 on an error, never a Python
traceback), the ``--json`` result, that every tool call the model made was answered exactly once
in the next request (the ``openai_server`` fixture checks every request; several tests also read
the answers), and the trace (DESIGN §5) where it matters.

A hostile server may leave any value odd, so the result is read more leniently than in
:mod:`tests.support.ask_command` (its fields and types, not how they add up), and a trace only has
to be strict JSON, line by line. The tool-call fragments here are what a server streams in its
own way: out of order, in pieces, without ids.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.research.final import FALLBACK_LABEL
from tests.e2e.conftest import Imprint
from tests.support import ask_command
from tests.support.ask_command import QUESTION, STOP_REASONS, strict_json
from tests.support.openai_server import OpenAIServer, RecordedRequest, chunk

# --- running `imprint ask` -----------------------------------------------------------------------


def ask(
    imprint: Imprint,
    server: OpenAIServer,
    workspace: Path,
    *extra: str,
    stdin: str = "",
    question: str = QUESTION,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run `imprint ask --json`; the result always has to be one JSON object, never a traceback."""
    result = ask_command.ask(imprint, server, workspace, *extra, question=question, stdin=stdin)
    try:
        payload = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"stdout is not one JSON object (exit {result.returncode}): {result.stdout[:500]!r}\n"
            f"stderr: {result.stderr[-2000:]}"
        )
    assert isinstance(payload, dict)
    assert_result_shape(payload)
    return result, payload


def assert_result_shape(payload: Mapping[str, Any]) -> None:
    """The fields and types DESIGN §4 promises for every `--json` result."""
    assert isinstance(payload["answer"], str)
    assert payload["final_mode"] in ("model", "fallback", "no_evidence")
    assert payload["stop_reason"] in STOP_REASONS
    assert isinstance(payload["rounds"], int) and payload["rounds"] >= 0
    for item in payload["evidence"]:
        assert {"id", "source", "excerpt"} <= set(item)
    tokens = payload["tokens"]
    for key in ("budget", "charged", "refunded", "final_charged"):
        assert isinstance(tokens[key], int) and not isinstance(tokens[key], bool), tokens
        assert tokens[key] >= 0, tokens
    assert isinstance(payload["research_seconds"], int | float) and payload["research_seconds"] >= 0
    assert isinstance(payload["user_wait_seconds"], int | float)
    assert payload["trace"] is None or isinstance(payload["trace"], str)


def answered(result: subprocess.CompletedProcess[str], payload: Mapping[str, Any]) -> None:
    assert result.returncode == 0, result.stderr[-2000:]
    assert payload["final_mode"] == "model" and payload["stop_reason"] == "answered", payload


def failed(result: subprocess.CompletedProcess[str], payload: Mapping[str, Any]) -> None:
    """An unrecoverable provider failure: exit 1, the labelled fallback, the error in words."""
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert payload["stop_reason"] == "error" and payload["final_mode"] == "fallback", payload
    assert payload["answer"].startswith(FALLBACK_LABEL)
    assert isinstance(payload["error"], str) and payload["error"].strip()


def read_trace_strictly(path: Path) -> list[dict[str, Any]]:
    """Every line of a finished trace must be one strict JSON object with `t` and `type`."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = strict_json(line)
        assert isinstance(record, dict) and "t" in record and "type" in record, line
        records.append(record)
    return records


# --- what the server sends and receives ----------------------------------------------------------


def last_assistant_calls(request: RecordedRequest) -> list[dict[str, Any]]:
    assistants = [
        m for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    assert assistants, "the request echoes no assistant message with tool calls"
    return list(assistants[-1]["tool_calls"])


def call_delta(
    index: int | None = 0,
    *,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One streamed chunk carrying one tool-call fragment."""
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    call: dict[str, Any] = {"function": function, **extra}
    if index is not None:
        call["index"] = index
    if call_id is not None:
        call["id"] = call_id
        call["type"] = "function"
    return chunk({"tool_calls": [call]})


def opening() -> dict[str, Any]:
    return chunk({"role": "assistant", "content": None})


def tools_offered(request: RecordedRequest) -> bool:
    return bool(request.tools) and request.json.get("tool_choice") != "none"


def files_in(root: Path) -> set[str]:
    return {
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    }
