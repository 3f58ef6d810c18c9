"""`imprint ask` prints untrusted text to a terminal: no control sequence in it reaches it.

An answer, the model's question and the status line (which quotes the model's tool arguments) may
carry escape sequences: OSC 52 writes the clipboard, OSC 0 retitles the window, CSI 2J clears the
screen, an 8-bit CSI does the same on terminals that read C1 controls, and a carriage return
overwrites what was printed. The words stay; the sequences go. The terminal's own status line
(``CR ESC [ K``) is the one sequence left. The consent prompt shows an address with a
right-to-left override as the escape that is sent, so it cannot read like another site.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support.ask_command import TerminalRun
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]

QUESTION = "Who was the last keeper?"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # OSC 52: put "rm -rf ~" on the clipboard
TITLE = "\x1b]0;owned\x1b\\"  # OSC 0 ended by ST: retitle the window
CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
EIGHT_BIT = "\x9b2J"  # the same clear with the 8-bit CSI
HOSTILE = f"{CLIPBOARD}Ada {TITLE}Quill{CLEAR} kept{EIGHT_BIT} the\x07 light\r [1]."
#: What a terminal would act on: ESC, the C1 controls (as UTF-8), BEL.
CONTROL = re.compile(rb"\x1b|\xc2[\x80-\x9f]|\x07")


def run_on_terminal(
    args: list[str], env: dict[str, str], answers: list[tuple[str, bytes]]
) -> tuple[int, bytes, str]:
    """Run ``imprint`` with stdin and stderr on a terminal; for each (prompt, line) of
    ``answers`` wait until stderr shows ``prompt`` once more, then type ``line``. Returns the exit
    code, stdout, and what the terminal received on stderr."""
    with TerminalRun(args, env) as run:
        for prompt, line in answers:
            run.answer(prompt, line)
        return run.finish()


def test_the_printed_answer_carries_no_control_sequence(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    openai_server.script(Reply.text([HOSTILE[:20], HOSTILE[20:]]))
    result = imprint(
        "ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url
    )
    assert result.returncode == 0, result.stderr[-2000:]
    printed = result.stdout.encode("utf-8")
    assert CONTROL.search(printed) is None, printed
    assert b"\r" not in printed
    assert "Ada Quill kept the light [1]." in result.stdout
    assert CONTROL.search(result.stderr.encode("utf-8")) is None, result.stderr


def test_the_json_answer_carries_no_control_and_parses_back_whole(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path
) -> None:
    """JSON escapes C0 controls itself; the 8-bit CSI and other C1 controls it would write as
    they are, so ``--json`` escapes them too, and the parsed answer is exactly the model's."""
    openai_server.script(Reply.text([f"Ada{EIGHT_BIT} Quill [1]."]))
    result = imprint(
        "ask",
        QUESTION,
        "--workspace",
        str(workspace),
        "--base-url",
        openai_server.base_url,
        "--json",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert CONTROL.search(result.stdout.encode("utf-8")) is None, result.stdout
    assert len(result.stdout.strip().splitlines()) == 1  # one object, on one line
    assert json.loads(result.stdout)["answer"].startswith(f"Ada{EIGHT_BIT} Quill")


def test_the_question_and_the_status_line_on_a_terminal_carry_none(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    search = {"query": f"keeper {CLIPBOARD}{CLEAR}{EIGHT_BIT}\r\n\u202eowned"}
    question = {"question": f"Which{TITLE} keeper do you mean?{CLIPBOARD}{CLEAR}"}
    openai_server.script(
        Reply.tool_calls(ToolCall("s1", "search_workspace", json.dumps(search))),
        Reply.tool_calls(ToolCall("q1", "ask_user", json.dumps(question))),
        Reply.text(HOSTILE),
    )
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    code, stdout, stderr = run_on_terminal(args, imprint_env, [("do you mean?", b"The last\n")])
    assert code == 0, stderr[-2000:]
    # The status line's own sequence is the only one; nothing the model wrote is acted on.
    received = stderr.encode("utf-8").replace(b"\r\x1b[K", b"")
    assert CONTROL.search(received) is None, stderr
    assert "Which keeper do you mean?" in stderr
    assert "Searching" in stderr  # the status line still says what it does
    assert CONTROL.search(stdout) is None, stdout
    assert b"Ada Quill kept the light [1]." in stdout


def test_the_consent_prompt_shows_a_direction_override_as_what_is_sent(
    imprint_env: dict[str, str], openai_server: OpenAIServer, workspace: Path
) -> None:
    url = "https://example.org/?\u202egpj.elgoog.www//:sptth"
    openai_server.script(
        Reply.tool_calls(ToolCall("f1", "fetch_url", json.dumps({"url": url}))),
        Reply.text("I could not read it."),
    )
    args = ["ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url]
    code, _stdout, stderr = run_on_terminal(args, imprint_env, [("[d]eny?", b"d\n")])
    assert code == 0, stderr[-2000:]
    assert "\u202e" not in stderr
    assert "https://example.org/?%E2%80%AEgpj.elgoog.www//:sptth" in stderr
