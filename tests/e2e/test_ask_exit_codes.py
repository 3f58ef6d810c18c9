"""`imprint ask` refuses bad usage and reports errors with the exit code DESIGN §4 gives each.

Bad usage or settings (an unknown option, a value out of bounds, an API key on the command line, a
workspace that is missing or a file, an empty question) exit 2 with a message naming what is wrong,
before anything is sent; an error (an unreachable server, a model that cannot be loaded) exits 1
and says why. The endings that exit 0, 1 and 130 after research are in ``test_ask_endings.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import QUESTION, ask, search, the_json_result
from tests.support.openai_server import OpenAIServer, Reply, closed_port

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


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
