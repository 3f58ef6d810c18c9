"""Where the settings of `imprint ask` come from (DESIGN §3): the file, then the environment,
then ``--set``; a file that does not parse or values out of bounds are reported and fall back to
the defaults, retired keys are ignored, and the file is never changed by a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import ANSWER, ask, read_trace, search, the_json_result
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


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
    assert the_json_result(result.stdout)["answer"] == ANSWER
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
