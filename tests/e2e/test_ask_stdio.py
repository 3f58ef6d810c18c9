"""What `imprint ask` writes where, and where the person's answers come from (DESIGN §4).

Without ``--json`` the answer and its sources alone are on stdout and the status on stderr; the
model's questions go to stderr, and ``ask_user`` takes ``--answer`` values in order, then lines of
stdin, then says there is no answer at end of file. Time spent waiting for the person is user
wait, not research time.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from imprint_desktop.core.workspace.embedding import StaticEmbedder
from tests.e2e.conftest import Imprint
from tests.support.ask_command import (
    ANSWER,
    QUESTION,
    ask,
    ask_user,
    assert_trace_matches_result,
    of_type,
    read_trace,
    search,
    spawn,
    the_json_result,
    tool_results,
)
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


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
    # The answer, then its sources under it, as in the window.
    assert result.stdout.startswith(f"{ANSWER}\n\nSources:\n- [1] keepers.md"), result.stdout
    assert "Which lighthouse?" in result.stderr and "Which lighthouse?" not in result.stdout
    assert "answered" in result.stderr, result.stderr


def test_the_status_line_speaks_proper_english_for_one_round(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.tool_calls(search("s1", "last keeper")), Reply.text(ANSWER))
    result = ask(imprint, openai_server, workspace, json_mode=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 round " in result.stderr and "1 piece of evidence" in result.stderr, result.stderr
    # The last line says which embedder ranked the searches by meaning: the built-in one here.
    assert result.stderr.rstrip().splitlines()[-1] == f"[search by meaning: {StaticEmbedder.name}]"


def test_without_json_an_error_says_why_on_stderr(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.error(400, "this server rejects the request"))
    result = ask(imprint, openai_server, workspace, json_mode=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "this server rejects the request" in result.stderr or "400" in result.stderr, (
        result.stderr
    )


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
    assert payload["answer"] == "Thanks for all four." and payload["stop_reason"] == "answered"
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
    assert payload["answer"] == ANSWER
    assert payload["user_wait_seconds"] >= delay - 0.01, (payload, delay)
    # The wait covered at least `delay`; research itself (two instant requests) took far less.
    assert payload["research_seconds"] < delay, (payload, delay)
    records = read_trace(trace)
    assert_trace_matches_result(records, payload)
    assert len(of_type(records, "user_wait")) == 1
