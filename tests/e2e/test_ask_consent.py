"""`imprint ask` and the outside world (DESIGN §2, §4, §5), black-box.

The model (a scripted server) calls ``fetch_url`` on a listener on 127.0.0.1 that records every
request. Without ``--allow-fetch`` and with no terminal to ask on, the listener must see nothing;
with it, the page is fetched; on a terminal the person is asked. Link-local and cloud-metadata
addresses are refused even with ``--allow-fetch``: a recording proxy is configured
(``network.proxy``) so that any attempt to reach one would arrive there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.conftest import Imprint
from tests.support import ask_command
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("scripted_first_step")]

QUESTION = "What does the harbour page say?"
PAGE = b"<html><head><title>Tides</title></head><body><p>High water comes at noon.</p></body>"
PROMPT = "[d]eny?"


@pytest.fixture
def web() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def proxy() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def fetch(call_id: str, url: str) -> ToolCall:
    return ToolCall(call_id, "fetch_url", json.dumps({"url": url}))


def page() -> Reply:
    return Reply.garbage(PAGE, content_type="text/html; charset=utf-8")


def tool_results(request: RecordedRequest) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.messages if m.get("role") == "tool"}


def trace_lines(path: Path, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line["type"] == kind]


def ask(
    imprint: Imprint, server: OpenAIServer, workspace: Path, trace: Path, *extra: str
) -> dict[str, Any]:
    """Run `imprint ask --json` with stdin a pipe (not a terminal); the JSON result."""
    result = ask_command.ask(
        imprint, server, workspace, "--trace", str(trace), *extra, question=QUESTION
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert PROMPT not in result.stderr, "asked with no terminal to answer on"
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def test_without_allow_fetch_and_no_terminal_nothing_is_fetched(
    imprint: Imprint,
    openai_server: OpenAIServer,
    web: OpenAIServer,
    workspace: Path,
) -> None:
    url = f"{web.url}/page?d=Ada+Quill+left+in+1971"
    web.script(page(), path="/page")
    openai_server.script(Reply.tool_calls(fetch("f1", url)), Reply.text("I could not read it."))
    trace = workspace.parent / "trace.jsonl"
    ask(imprint, openai_server, workspace, trace)
    assert web.requests == [], "the listener was asked for the page"
    result = tool_results(openai_server.chat_requests()[1])["f1"]
    assert result.startswith(f"Error: the person did not allow fetching {url}"), result
    (consent,) = trace_lines(trace, "consent")
    assert consent["call_id"] == "f1" and consent["url"] == url, consent
    assert consent["decision"] == "deny_unattended" and consent["seconds"] >= 0
    (tool,) = trace_lines(trace, "tool")
    assert (tool["call_id"], tool["status"]) == ("f1", "error")


def test_with_allow_fetch_the_page_is_fetched(
    imprint: Imprint,
    openai_server: OpenAIServer,
    web: OpenAIServer,
    workspace: Path,
) -> None:
    web.script(page(), path="/page")
    openai_server.script(
        Reply.tool_calls(fetch("f1", f"{web.url}/page")), Reply.text("High water is at noon [1].")
    )
    trace = workspace.parent / "trace.jsonl"
    payload = ask(imprint, openai_server, workspace, trace, "--allow-fetch")
    assert [request.path for request in web.requests] == ["/page"]
    assert "High water comes at noon." in tool_results(openai_server.chat_requests()[1])["f1"]
    assert [item["source"] for item in payload["evidence"]] == [f"{web.url}/page"]
    (consent,) = trace_lines(trace, "consent")
    assert (consent["call_id"], consent["decision"]) == ("f1", "allow_flag")


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        # 169.254.169.254 as the system's resolver reads other spellings of it, and Azure's.
        "http://2852039166/latest/meta-data/",
        "http://0xa9fea9fe/latest/meta-data/",
        "http://[::ffff:0:a9fe:a9fe]/latest/meta-data/",
        "http://168.63.129.16/machine?comp=goalstate",
    ],
)
def test_metadata_addresses_are_refused_even_with_allow_fetch(
    url: str,
    imprint: Imprint,
    openai_server: OpenAIServer,
    proxy: OpenAIServer,
    workspace: Path,
) -> None:
    openai_server.script(Reply.tool_calls(fetch("f1", url)), Reply.text("Nothing."))
    trace = workspace.parent / "trace.jsonl"
    ask(
        imprint,
        openai_server,
        workspace,
        trace,
        "--allow-fetch",
        "--set",
        f"network.proxy={proxy.url}",
    )
    assert proxy.requests == [], "a connection towards the metadata address was made"
    result = tool_results(openai_server.chat_requests()[1])["f1"]
    assert result.startswith(f"Error: {url} is never fetched"), result
    assert trace_lines(trace, "consent") == [], "refused before anyone is asked"


def test_a_redirect_to_a_link_local_address_is_refused(
    imprint: Imprint,
    openai_server: OpenAIServer,
    web: OpenAIServer,
    proxy: OpenAIServer,
    workspace: Path,
) -> None:
    target = "http://169.254.169.254/latest/meta-data/"
    web.script(Reply(302, (("Location", target),), (b"",)), path="/hop")
    openai_server.script(Reply.tool_calls(fetch("f1", f"{web.url}/hop")), Reply.text("Nothing."))
    trace = workspace.parent / "trace.jsonl"
    ask(
        imprint,
        openai_server,
        workspace,
        trace,
        "--allow-fetch",
        "--set",
        f"network.proxy={proxy.url}",
    )
    assert [request.path for request in web.requests] == ["/hop"]
    assert proxy.requests == [], "the redirect was followed"
    result = tool_results(openai_server.chat_requests()[1])["f1"]
    assert f"redirected to '{target}', which is refused" in result, result


# --- on a terminal -------------------------------------------------------------------------------


def on_terminal(
    openai_server: OpenAIServer, workspace: Path, trace: Path, env: dict[str, str]
) -> ask_command.TerminalRun:
    """``imprint ask --json`` with stdin on a terminal, so the person is asked; stderr on a pipe
    of its own."""
    args = [
        "ask", QUESTION, "--workspace", str(workspace), "--base-url", openai_server.base_url,
        "--json", "--trace", str(trace),
    ]  # fmt: skip
    return ask_command.TerminalRun(args, env, stderr_on_terminal=False)


def test_on_a_terminal_the_person_is_asked_and_a_site_stays_allowed_for_the_run(
    imprint_env: dict[str, str],
    openai_server: OpenAIServer,
    web: OpenAIServer,
    proxy: OpenAIServer,
    workspace: Path,
) -> None:
    other = proxy  # a second site: another port on this computer
    web.script(page(), path="/a")
    web.script(page(), path="/b")
    openai_server.script(
        Reply.tool_calls(fetch("f1", f"{web.url}/a")),
        Reply.tool_calls(fetch("f2", f"{web.url}/b"), fetch("f3", f"{other.url}/c")),
        Reply.text("High water is at noon [1]."),
    )
    trace = workspace.parent / "trace.jsonl"
    with on_terminal(openai_server, workspace, trace, imprint_env) as run:
        run.wait_for(PROMPT)
        assert web.requests == [], "fetched before the person answered"
        run.type(b"s\n")  # this site, for the rest of the run
        run.answer(PROMPT, b"d\n")  # the other site: no
        code, stdout, stderr = run.finish()
    assert code == 0, stderr[-2000:]
    assert stderr.count(PROMPT) == 2, stderr
    assert f"{web.url}/a" in stderr and f"{other.url}/c" in stderr
    assert f"{web.url}/b" not in stderr, "asked again about a site allowed for the run"
    assert [request.path for request in web.requests] == ["/a", "/b"]
    assert other.requests == []
    decisions = {line["call_id"]: line["decision"] for line in trace_lines(trace, "consent")}
    assert decisions == {"f1": "allow_site", "f2": "allow_remembered", "f3": "deny"}
    payload = json.loads(stdout)
    waited = sum(line["seconds"] for line in trace_lines(trace, "consent"))
    assert waited > 0 and abs(payload["user_wait_seconds"] - waited) < 0.01, (payload, waited)


def test_on_a_terminal_a_redirect_to_another_site_is_asked_about_with_both_addresses(
    imprint_env: dict[str, str],
    openai_server: OpenAIServer,
    web: OpenAIServer,
    proxy: OpenAIServer,
    workspace: Path,
) -> None:
    other = proxy  # a second site: another host name and port on this computer
    start = f"{web.url}/hop?d=the-plan"
    target = f"http://localhost:{other.port}/collect?d=the-plan"
    web.script(Reply(302, (("Location", target),), (b"",)), path="/hop")
    other.script(page(), path="/collect")
    openai_server.script(Reply.tool_calls(fetch("f1", start)), Reply.text("Nothing."))
    trace = workspace.parent / "trace.jsonl"
    with on_terminal(openai_server, workspace, trace, imprint_env) as run:
        run.answer(PROMPT, b"s\n")  # this site, for the rest of the run
        run.wait_for(PROMPT)
        assert other.requests == [], "sent on before the person was asked"
        run.type(b"d\n")  # but not the site it redirects to
        code, stdout, stderr = run.finish()
    assert code == 0, stderr[-2000:]
    second = stderr[stderr.index(PROMPT) + len(PROMPT) :]
    assert "redirects to another site" in second and start in second and target in second
    assert other.requests == []
    assert [request.path for request in web.requests] == ["/hop"]
    decisions = [(line["url"], line["decision"]) for line in trace_lines(trace, "consent")]
    assert decisions == [(start, "allow_site"), (target, "deny")]
    assert "another site" in tool_results(openai_server.chat_requests()[1])["f1"]
    assert json.loads(stdout)["stop_reason"] == "answered"
