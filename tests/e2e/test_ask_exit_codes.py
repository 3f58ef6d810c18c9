"""`imprint ask` refuses bad usage and reports errors with the exit code DESIGN §4 gives each.

Bad usage or settings (an unknown option, a value out of bounds, an API key on the command line, a
workspace that is missing or a file, an empty question) exit 2 with a message naming what is wrong,
before anything is sent; an error (an unreachable server, a model that cannot be loaded) exits 1
and says why; Ctrl+C before research began exits 130. Whichever it is, ``--json`` prints one object
with the exit code and the error (issue 28). The endings that exit 0, 1 and 130 after research are
in ``test_ask_endings.py``.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import ANSWER, QUESTION, ask, search, spawn, the_json_ending
from tests.support.openai_server import MODELS_PATH, OpenAIServer, Reply, closed_port

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
    error = the_json_ending(result)["error"].replace(",", "")
    for word in must_mention:
        assert word in message, (word, result.stderr)
        assert word in error, (word, error)
    assert openai_server.requests == []


def test_bad_usage_without_json_prints_nothing_on_stdout(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    result = ask(imprint, openai_server, workspace, "--set", "chat.max_tokens=1", json_mode=False)
    assert result.returncode == 2 and "chat.max_tokens" in result.stderr, result.stderr
    assert result.stdout == ""


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
    assert str(missing) in the_json_ending(result)["error"]


def test_a_settings_file_value_out_of_bounds_is_a_warning_not_an_ending(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, isolated_dirs: Path
) -> None:
    config = isolated_dirs / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[chat]\nmax_tokens = 1\n", encoding="utf-8")
    openai_server.script(Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace)
    assert "chat.max_tokens" in result.stderr, result.stderr  # told, and the default is used
    payload = the_json_ending(result)
    assert result.returncode == 0 and payload["error"] is None, payload


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
    payload = the_json_ending(result)
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
    trace = tmp_path / "trace.jsonl"
    result = ask(
        imprint,
        None,
        workspace,
        "--provider",
        "local",
        "--model",
        str(model),
        "--trace",
        str(trace),
    )
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    message = result.stderr.strip()
    assert message and len(message.splitlines()) <= 3, message
    payload = the_json_ending(result)
    assert (payload["stop_reason"], payload["final_mode"]) == ("error", None), payload
    assert payload["trace"] == str(trace)
    for word in words:
        assert word in message, (word, message)
        assert word in payload["error"], (word, payload)


def test_an_argument_argparse_refuses_is_one_json_object_too(imprint: Imprint) -> None:
    result = imprint("ask", QUESTION, "--json", "--provider", "cloud")
    assert result.returncode == 2, result.stderr
    assert "usage:" in result.stderr and "cloud" in result.stderr
    assert "cloud" in the_json_ending(result)["error"]


# --- exit 130: Ctrl+C before research began ------------------------------------------------------


def test_sigint_while_the_server_is_asked_for_its_context_window_exits_130_with_the_object(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.stall(), path=MODELS_PATH)
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json") as (process, out, err):
        assert openai_server.wait_for_stall(timeout=60), err.text()[-2000:]
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=30)
        took = time.monotonic() - sent
        ended = subprocess.CompletedProcess(process.args, returncode, out.text(), err.text())
    openai_server.release()
    assert took < 1.0, f"Ctrl+C took {took:.2f} s"
    payload = the_json_ending(ended)
    assert returncode == 130 and payload["stop_reason"] == "cancelled", payload
    assert openai_server.chat_requests() == []


def test_two_quick_sigints_still_leave_one_object_and_exit_130(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "keeper")), Reply.stall())
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    with spawn(imprint_env, *args, "--json") as (process, out, err):
        assert openai_server.wait_for_stall(timeout=60), err.text()[-2000:]
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGINT)  # the second quits at once, if the first is not done
        returncode = process.wait(timeout=30)
        ended = subprocess.CompletedProcess(process.args, returncode, out.text(), err.text())
    openai_server.release()
    payload = the_json_ending(ended)
    assert returncode == 130 and payload["stop_reason"] == "cancelled", payload
