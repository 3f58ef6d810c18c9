"""The research engine through the real RemoteProvider and a real toolbox, over HTTP on 127.0.0.1.

Scripted servers give exact protocol scenarios; one run uses the real `python -m llama_cpp.server`
serving the starter model (DESIGN §7).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.workspace import Workspace
from tests.support.llama_server import LlamaServer
from tests.support.openai_server import OpenAIServer, Reply, Usage
from tests.support.remote_reply import run_reply

pytestmark = pytest.mark.integration


def search(call_id: str, query: str) -> ToolCall:
    return ToolCall(call_id, "search_workspace", json.dumps({"query": query}))


def test_rounds_over_http_answer_every_call_and_charge_the_reported_usage(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    openai_server.script(
        Reply.tool_calls(
            search("a1", "harbour light lit"), search("a2", "lens"), usage=Usage(1000, 40)
        ),
        Reply.tool_calls(search("b1", "keepers automation"), usage=Usage(1400, 30, cached=1000)),
        Reply.text("It was first lit on 3 March 1862 [1].", usage=Usage(1700, 15, cached=1400)),
    )
    result = run_reply(openai_server, workspace, context_window=4096).result
    assert result.stop_reason == "answered" and result.rounds == 2
    assert result.tokens.charged == (1000 + 40) + (400 + 30) + (300 + 15)
    assert {item.source for item in result.evidence} == {"harbour.md", "keepers.md"}
    openai_server.assert_protocol_complete()
    second = openai_server.chat_requests()[1]
    assert [m["tool_call_id"] for m in second.messages if m["role"] == "tool"] == ["a1", "a2"]


def test_stop_while_a_stream_is_open_finishes_the_reply_fast(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    openai_server.script(Reply.tool_calls(search("a1", "harbour")), Reply.stall())
    cancel = CancelToken()
    stopped_at: list[float] = []

    def press_stop_on_stall() -> None:
        assert openai_server.wait_for_stall(timeout=60)
        stopped_at.append(time.monotonic())
        cancel.cancel()

    async def scenario() -> tuple[ev.ReplyResult, float]:
        stopper = asyncio.create_task(asyncio.to_thread(press_stop_on_stall))
        run = await asyncio.to_thread(
            run_reply, openai_server, workspace, cancel=cancel, context_window=4096
        )
        finished = time.monotonic()
        await stopper
        return run.result, finished

    result, finished = asyncio.run(scenario())
    latency = finished - stopped_at[0]
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert latency < 0.25, f"Stop took {latency * 1000:.0f} ms"
    openai_server.release()


def test_a_retry_after_within_the_deadline_is_honoured(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    openai_server.script(Reply.error(429, retry_after="0.2"), Reply.text("Lit in 1862."))
    result = run_reply(openai_server, workspace, context_window=4096).result
    assert result.stop_reason == "answered" and len(openai_server.chat_requests()) == 2


def test_one_reply_against_the_real_llama_cpp_server(
    real_llama_server: LlamaServer, workspace: Workspace
) -> None:
    run = run_reply(
        real_llama_server,
        workspace,
        model=real_llama_server.model,
        context_window=4096,
        config={
            "chat.research_timeout_sec": 60,
            "chat.research_max_output_tokens": 128,
            "chat.max_tokens": 128,
        },
    )
    result, events = run.result, run.events
    assert result.stop_reason in (
        "answered",
        "no_progress",
        "time_budget",
        "token_budget",
        "context_full",
    )
    assert result.answer.strip()
    requests = [event for event in events if isinstance(event, ev.RequestFinished)]
    assert requests and all(event.prompt_tokens > 0 for event in requests)
    assert result.tokens.charged + result.tokens.final_charged == sum(
        event.charged for event in requests
    )
