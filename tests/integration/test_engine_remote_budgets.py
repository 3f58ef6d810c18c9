"""DESIGN §1 over real HTTP: the token and time budgets of research.

Tokens are charged net of the reused prefix, with the refund in the trace, and a request that would
not fit is never sent; the deadline cuts a request in flight (stalled or trickling) and answers the
calls of a batch it did not start as not executed; the person's thinking time is user wait, not
research time, and their answer is progress.

The reply, the scripted model and the checks of every request: ``tests/support/remote_reply.py``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, Usage
from tests.support.remote_reply import (
    LIGHTS,
    call,
    check_requests,
    phase_of,
    research_then_final,
    run_reply,
    search,
    serve,
    settings,
    stalled_page,
    stops,
    tool_messages,
    tool_names,
    turn,
)

pytestmark = pytest.mark.integration


# --- 7. tokens ----------------------------------------------------------------------------------


def test_token_stop_charges_net_of_the_reused_prefix_and_the_refund_is_in_the_trace(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    sent: list[Usage] = []
    previous: list[list[dict[str, object]]] = []

    def usage_for(request: RecordedRequest) -> Usage:
        """What a server with a prompt cache reports: the previous prompt is the reused prefix
        when this request continues it. The final is a new conversation (its own system prompt,
        the passages and the question), so it reuses nothing."""
        prompt = len(json.dumps(request.messages)) // 5
        continues = bool(previous) and request.messages[: len(previous[-1])] == previous[-1]
        cached = sent[-1].prompt_tokens if continues else (0 if sent else None)
        usage = Usage(prompt, 40, cached=cached)
        sent.append(usage)
        previous.append(list(request.messages))
        return usage

    def model(request: RecordedRequest) -> Reply:
        usage = usage_for(request)
        if phase_of(request) == "final":
            return Reply.text("Everything the logs say [1].", usage=usage)
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]), usage=usage)

    serve(openai_server, model)
    budget = 4000
    run = run_reply(
        openai_server,
        library,
        config={
            "chat.research_token_budget": budget,
            "chat.research_max_output_tokens": 400,
            "chat.max_tokens": 500,
        },
    )
    result = run.result
    assert result.stop_reason == "token_budget"
    requests = run.lines("request")
    research = [line for line in requests if line["phase"] == "research"]
    assert len(research) >= 3
    assert len(sent) == len(requests) == len(openai_server.chat_requests())
    for line, usage in zip(requests, sent, strict=True):
        assert line["estimated"] is False
        assert line["provider_usage"] == usage.to_json(), "the trace keeps the server's usage"
        assert line["reused_prefix"] == (usage.cached or 0)
        assert line["charged_prompt"] == usage.prompt_tokens - (usage.cached or 0)
        assert line["output_tokens"] == usage.completion_tokens
        assert line["charged"] == line["charged_prompt"] + line["output_tokens"]
    for line in research[1:]:
        assert line["reused_prefix"] > 0, "the reused prefix is not charged"
    for line in research:
        assert line["reserved"] == line["prompt_tokens"] + 400, "the prompt and all of the output"
        assert line["refunded"] == line["reserved"] - line["charged"] > 0
    assert result.tokens.charged == sum(line["charged"] for line in research) <= budget
    assert result.tokens.refunded == sum(line["refunded"] for line in research)
    assert result.tokens.budget == budget
    # The request that would not fit was never sent: the one after the last research request
    # is the final answer, outside the research budget.
    stopped = run.of(ev.ResearchStopped)[0]
    needed, left = (int(n) for n in re.findall(r"\d+", stopped.detail)[:2])
    assert needed > left == research[-1]["budget_left"], stopped.detail
    assert requests[-1]["phase"] == "final"
    assert result.tokens.final_charged == requests[-1]["charged"] > 0
    assert result.final_mode == "model" and result.answer == "Everything the logs say [1]."
    check_requests(openai_server, research_max_tokens=400, final_max_tokens=500)


# --- 8-9. time ----------------------------------------------------------------------------------


@pytest.mark.timeout(30)  # a deadline that is not kept hangs: fail fast
@pytest.mark.parametrize(
    "endless",
    [
        pytest.param(Reply.stall("Let me think about"), id="stalled-stream"),
        # Bytes keep arriving, so no read timeout ever fires: only the deadline can cut it. (Dots:
        # words said again and again would be cut sooner, as a runaway.)
        pytest.param(
            Reply.trickle(".", lead="Let me think ", interval=0.02), id="trickling-stream"
        ),
    ],
)
def test_time_stop_cuts_an_in_flight_request_at_the_deadline_then_a_final(
    openai_server: OpenAIServer, workspace: Workspace, endless: Reply
) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.text("Lit on 3 March 1862 [1].")
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        return endless  # never finishes on its own

    serve(openai_server, model)
    timeout = 1.0
    started = time.monotonic()
    run = run_reply(
        openai_server,
        workspace,
        config={"chat.research_timeout_sec": timeout, "chat.research_max_output_tokens": 300},
    )
    elapsed = time.monotonic() - started
    result = run.result
    assert result.stop_reason == "time_budget"
    assert timeout - 0.01 <= result.research_seconds < timeout + 0.5
    assert elapsed < timeout + 2, "the endless stream was cut at the deadline"
    assert result.final_mode == "model" and result.answer == "Lit on 3 March 1862 [1]."
    assert stops(run, "research") == ["tool_calls", "deadline"]
    research_lines = run.lines("request", phase="research")
    assert research_lines[1]["charged"] > 0, "the work of a cut request is still charged"
    deltas = "".join(e.text for e in run.of(ev.TextDelta) if e.phase == "research")
    assert deltas.startswith("Let me think")
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    assert len(by_phase["research"]) == 2 and len(by_phase["final"]) == 1
    assert openai_server.chat_requests()[-1] is by_phase["final"][0]
    # What the first round found reached the cut request, and the final request's passages.
    assert "3 March 1862" in tool_messages(by_phase["research"][1])[0]["content"]
    final = by_phase["final"][0]
    assert final.messages[0]["content"] == prompts.FINAL_SYSTEM
    assert "3 March 1862" in final.messages[-1]["content"]
    assert run.lines("stop")[0]["reason"] == "time_budget"


@pytest.mark.timeout(30)  # a deadline that is not kept hangs: fail fast
def test_calls_not_started_when_time_runs_out_mid_batch_are_answered_not_executed(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    with stalled_page() as (pages, url):

        def research(request: RecordedRequest) -> Reply:
            return Reply.tool_calls(
                call(request, 0, "fetch_url", url=url),
                search(request, "harbour", 1),
                call(request, 2, "write_note", title="Never", content="Not to be written."),
            )

        serve(openai_server, research_then_final(research, "What I have [1]."))
        run = run_reply(
            openai_server,
            workspace,
            config={
                "chat.research_timeout_sec": 1.0,
                "chat.research_max_output_tokens": 300,
                "chat.answer_without_evidence": True,  # nothing is found: still ask for a final
                "tools.fetch_url_confirm": False,  # fetched without asking (consent: elsewhere)
            },
        )
        assert pages.wait_for_stall(timeout=0), "the page was being fetched"
    result = run.result
    assert result.stop_reason == "time_budget" and result.rounds == 1
    assert [event.name for event in run.of(ev.ToolStarted)] == ["fetch_url"]
    assert [(line["call_id"], line["status"]) for line in run.lines("tool")] == [
        ("r0_0", "error"),
        ("r0_1", "not_executed"),
        ("r0_2", "not_executed"),
    ]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    # No research request follows the cut batch, so each call's one result is the trace's line
    # above (the words a model reads for a call not executed: tests/unit/workspace/test_tools.py).
    # The final is a request of its own (no tool messages): the search never ran, so it has no
    # passage to show and says nothing was found.
    assert [len(by_phase[phase]) for phase in ("research", "final")] == [1, 1]
    final = by_phase["final"][0]
    assert not tool_messages(final) and not final.tools
    assert final.messages[0]["content"] == prompts.FINAL_WITHOUT_EVIDENCE
    assert "3 March 1862" not in json.dumps(final.messages)
    assert result.evidence == ()
    assert not (workspace.root / workspace.notes_folder).exists(), "the write never started"
    assert result.answer.endswith("\n\nWhat I have [1].")  # labelled: not from the documents


# --- 11. the person -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thinking",
    [
        pytest.param(0.0, id="through-assistant.research"),
        pytest.param(1000.0, id="engine-clock-1000s-person"),
    ],
)
def test_waiting_for_the_person_is_not_research_time_and_the_answer_is_progress(
    openai_server: OpenAIServer, workspace: Workspace, thinking: float
) -> None:
    """The person answers an ``ask_user`` question. Through ``assistant.research`` (real clock),
    and through the same engine and toolbox on a clock where the person thinks for 1000 s, far
    past the 30 s research budget (tests do not sleep: the clock jumps)."""
    offset = [0.0]

    def clock() -> float:
        return time.monotonic() + offset[0]

    questions: list[str] = []

    async def person(call_id: str, question: str) -> str:
        questions.append(question)
        offset[0] += thinking
        return "The northern lights, please."

    rounds: list[Callable[[RecordedRequest], Reply]] = [
        lambda r: Reply.tool_calls(search(r, "harbour")),  # new evidence
        lambda r: Reply.tool_calls(search(r, "harbour")),  # nothing new: 1 of 2
        lambda r: Reply.tool_calls(call(r, 0, "ask_user", question="Which lights?")),
        lambda r: Reply.tool_calls(search(r, "harbour")),  # nothing new: 1 of 2 again
        lambda r: Reply.text("About the northern lights [1]."),
    ]
    serve(openai_server, lambda request: rounds[turn(request)](request))
    run = run_reply(
        openai_server,
        workspace,
        ask=person,
        clock=clock if thinking else None,
        config={
            "chat.research_timeout_sec": 30,
            "chat.research_no_progress_rounds": 2,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert questions == ["Which lights?"]
    assert result.stop_reason == "answered", "the answer reset the no-progress count"
    assert result.rounds == 4 and result.answer == "About the northern lights [1]."
    assert [e.progress for e in run.of(ev.RoundEnded)] == [True, False, True, False]
    assert [e.no_progress_rounds for e in run.of(ev.RoundEnded)] == [0, 1, 0, 1]
    assert result.user_wait_seconds >= thinking and result.research_seconds < 30
    assert run.of(ev.QuestionAsked)[0].question == "Which lights?"
    assert run.of(ev.UserWait)[0].seconds >= thinking
    assert run.lines("user_wait")[0]["seconds"] >= thinking
    assert result.user_wait_seconds == pytest.approx(run.of(ev.UserWait)[0].seconds, abs=0.05)
    paused = [event.time_paused for event in run.of(ev.BudgetUpdate)]
    assert True in paused and paused[-1] is False
    assert [item.source for item in result.evidence] == ["harbour.md", "user"]
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert "ask_user" in tool_names(by_phase["research"][0])
    answer = tool_messages(by_phase["research"][-1])[2]
    assert answer["name"] == "ask_user" and "The northern lights, please." in answer["content"]
