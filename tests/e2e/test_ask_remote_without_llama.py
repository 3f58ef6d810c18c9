"""A remote reply never loads llama.cpp (issue 42, item 5).

A remote-only install, or one whose llama.cpp build is broken, must still read the calls a server
passes on as text: a reply that starts with ``{`` (the Llama 3 shape) or holds ``<tool_call>``.
Here `imprint ask` runs as a subprocess whose ``PYTHONPATH`` puts a ``llama_cpp`` package first
that refuses to be imported and leaves a mark when anything tries, against the scripted server on
127.0.0.1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.conftest import Imprint
from tests.support.ask_command import ask, of_type, read_trace, the_json_result, tool_results
from tests.support.ask_hostile import last_assistant_calls
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]

_REFUSING_PACKAGE = """\
import os
from pathlib import Path

Path(os.environ["IMPRINT_TEST_LLAMA_MARK"]).write_text("llama_cpp was imported", encoding="utf-8")
raise ImportError("llama_cpp is not installed here (hidden by the test)")
"""


def without_llama(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a process where ``import llama_cpp`` fails, and the mark it leaves."""
    shadow = tmp_path / "no-llama"
    (shadow / "llama_cpp").mkdir(parents=True)
    (shadow / "llama_cpp" / "__init__.py").write_text(_REFUSING_PACKAGE, encoding="utf-8")
    mark = tmp_path / "llama-imported"
    path = os.pathsep.join(filter(None, [str(shadow), os.environ.get("PYTHONPATH", "")]))
    return {"PYTHONPATH": path, "IMPRINT_TEST_LLAMA_MARK": str(mark)}, mark


LLAMA3_CALL = '{"name": "search_workspace", "parameters": {"query": "last keeper"}}'
HERMES_CALL = (
    'Let me look.\n<tool_call>{"name": "search_workspace", "arguments": {"query": "last keeper"}}'
    "</tool_call>"
)


@pytest.mark.parametrize(
    "written", [LLAMA3_CALL, HERMES_CALL], ids=["starts-with-brace", "holds-tool-call"]
)
def test_calls_written_as_text_are_read_without_llama_cpp(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path, written: str
) -> None:
    env, mark = without_llama(tmp_path)
    openai_server.script(Reply.text(written), Reply.text("Ada Quill [1]."))
    trace = tmp_path / "trace.jsonl"
    result = ask(imprint, openai_server, workspace, "--trace", str(trace), env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    payload = the_json_result(result.stdout)
    assert payload["stop_reason"] == "answered" and payload["answer"] == "Ada Quill [1].", payload
    assert not mark.exists(), "a remote reply imported llama_cpp"
    (searched,) = tool_results(openai_server.chat_requests()[1]).values()
    assert "Ada Quill" in searched
    tools = of_type(read_trace(trace), "tool")
    assert [(t["name"], t["status"]) for t in tools] == [("search_workspace", "ok")]
    (call,) = last_assistant_calls(openai_server.chat_requests()[1])
    assert json.loads(call["function"]["arguments"]) == {"query": "last keeper"}


def test_the_hidden_package_really_fails_to_import(imprint: Imprint, tmp_path: Path) -> None:
    """The check above can fail: the same environment does refuse ``import llama_cpp``."""
    env, mark = without_llama(tmp_path)
    result = imprint("ask", "x", "--provider", "local", "--json", env=env)
    assert result.returncode != 0 and mark.exists(), result.stderr[-2000:]
