"""The API key of `imprint ask --api-key-env VAR` reaches the server and nowhere else (not stdout,
stderr, the trace, the config or data folders), and a variable that is not set is bad usage, said
before anything is sent (DESIGN §4).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import ANSWER, ask, ask_user, search, the_json_result
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


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
    assert the_json_result(result.stdout)["answer"] == ANSWER
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
