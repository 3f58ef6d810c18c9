"""DESIGN §1 over real HTTP: Stop during a request, during a tool and during the final stage ends
the reply at once with the labelled fallback, and nothing more is asked of the server.

The reply, the scripted model and the checks of every request: ``tests/support/remote_reply.py``.
"""

from __future__ import annotations

import time

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply
from tests.support.remote_reply import (
    call,
    check_requests,
    phase_of,
    run_reply,
    search,
    serve,
    stalled_page,
    stop_on_stall,
    stops,
    turn,
)

pytestmark = pytest.mark.integration


# A Stop that went unheard would end the reply on the time budget instead, well before the timeout.
CANCEL_SETTINGS = {"chat.research_timeout_sec": 15, "chat.research_max_output_tokens": 300}


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_a_request(openai_server: OpenAIServer, workspace: Workspace) -> None:
    def model(request: RecordedRequest) -> Reply:
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        return Reply.stall("Half an")

    serve(openai_server, model)
    cancel = CancelToken()
    run = stop_on_stall(
        openai_server,
        cancel,
        lambda: run_reply(openai_server, workspace, cancel=cancel, config=CANCEL_SETTINGS),
    )
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert "3 March 1862" in result.answer and "harbour.md" in result.answer
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert set(by_phase) == {"research"} and len(by_phase["research"]) == 2, "no final request"
    assert stops(run, "research") == ["tool_calls", "cancelled"]
    assert run.lines("stop")[0]["reason"] == "cancelled"


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_a_tool(openai_server: OpenAIServer, workspace: Workspace) -> None:
    cancel = CancelToken()
    with stalled_page() as (pages, url):

        def model(request: RecordedRequest) -> Reply:
            return Reply.tool_calls(
                call(request, 0, "fetch_url", url=url), search(request, "harbour", 1)
            )

        serve(openai_server, model)
        started = time.monotonic()
        run = stop_on_stall(
            pages,
            cancel,
            lambda: run_reply(
                openai_server,
                workspace,
                cancel=cancel,
                config={**CANCEL_SETTINGS, "tools.fetch_url_confirm": False},
            ),
        )
        elapsed = time.monotonic() - started
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert elapsed < 5, "the fetch was abandoned when Stop was pressed"
    assert [event.name for event in run.of(ev.ToolStarted)] == ["fetch_url"], "search never ran"
    assert [event.status for event in run.of(ev.ToolFinished)] == ["error", "not_executed"]
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert result.evidence == ()
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert len(by_phase["research"]) == 1 and set(by_phase) == {"research"}


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_the_final_stage(openai_server: OpenAIServer, workspace: Workspace) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.stall("The harbour light")
        return Reply.tool_calls(search(request, "harbour"))

    serve(openai_server, model)
    cancel = CancelToken()
    run = stop_on_stall(
        openai_server,
        cancel,
        lambda: run_reply(
            openai_server,
            workspace,
            cancel=cancel,
            config={
                "chat.research_no_progress_rounds": 2,
                "chat.research_max_output_tokens": 300,
                "chat.max_tokens": 600,
            },
        ),
    )
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert "3 March 1862" in result.answer
    assert not result.answer.startswith("The harbour light")
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=600)
    assert len(by_phase["research"]) == 3 and len(by_phase["final"]) == 1
    # One stop reason everywhere: Stop during the final made the reply cancelled.
    assert [line["reason"] for line in run.lines("stop")] == ["cancelled"]
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]
    assert stops(run, "final") == ["cancelled"]
