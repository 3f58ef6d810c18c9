"""`imprint ask` against servers that send broken text: invalid UTF-8, control characters and NUL,
lone surrogates in the answer or in tool arguments. The output stays valid text and valid JSON, and
a call with broken arguments is still answered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import tool_results
from tests.support.ask_hostile import answered, ask, opening
from tests.support.openai_server import DONE, OpenAIServer, Reply, chunk, sse

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]


def test_invalid_utf8_in_the_stream_is_replaced_not_fatal(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    good = json.dumps(chunk({"content": "Ada QUILL"})).encode()
    broken = good.replace(b"QUILL", b"Qu\xff\xfeill \xc3")  # stray bytes, a cut sequence
    openai_server.script(
        Reply.raw(b"data: " + broken + b"\n\n", sse(chunk(finish_reason="stop")), DONE)
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"].startswith("Ada Qu") and "ill" in payload["answer"]
    assert "\ufffd" in payload["answer"]
    result.stdout.encode("utf-8")  # what was printed is valid text


def test_control_characters_and_nul_in_the_answer_survive_as_json(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    text = "Ada\x00Quill\x07 kept\x1b[2J the\x08 light\u2028 [1]\x7f."
    openai_server.script(Reply.text([text]))
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"] == text
    assert "\x00" not in result.stdout and "\x1b" not in result.stdout  # escaped in the JSON


def test_a_lone_surrogate_in_the_answer_does_not_crash_the_output(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    # A server that cut an emoji's surrogate pair in half: valid JSON, invalid Unicode text.
    openai_server.script(
        Reply.raw(
            b'data: {"choices": [{"index": 0, "delta": '
            b'{"content": "Ada Quill \\ud83d [1]."}}]}\n\n',
            sse(chunk(finish_reason="stop")),
            DONE,
        )
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert payload["answer"].startswith("Ada Quill") and payload["answer"].endswith("[1].")


@pytest.mark.parametrize(
    "escape",
    [
        pytest.param(b"\\\\ud800", id="inside-the-arguments-json"),
        pytest.param(b"\\ud800", id="in-the-arguments-string"),
    ],
)
def test_a_lone_surrogate_in_tool_arguments_is_answered_not_a_crash(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, escape: bytes
) -> None:
    openai_server.script(
        Reply.raw(
            sse(opening()),
            b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "sur",'
            b' "type": "function", "function": {"name": "search_workspace", "arguments": '
            b'"{\\"query\\": \\"keeper ' + escape + b'\\"}"}}]}}]}\n\n',
            sse(chunk(finish_reason="tool_calls")),
            DONE,
        ),
        Reply.text("Ada Quill [1]."),
    )
    result, payload = ask(imprint, openai_server, workspace)
    answered(result, payload)
    assert list(tool_results(openai_server.chat_requests()[1])) == ["sur"]
