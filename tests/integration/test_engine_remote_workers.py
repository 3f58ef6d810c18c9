"""DESIGN §1 over real HTTP: section workers.

Every worker request is reserved and charged and offers read-only tools, and evidence is
reply-wide: what a worker finds again is not progress.

The reply, the scripted model and the checks of every request: ``tests/support/remote_reply.py``.
"""

from __future__ import annotations

import json

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, Usage
from tests.support.remote_reply import (
    LIGHTS,
    call,
    check_requests,
    phase_of,
    run_reply,
    search,
    serve,
    settings,
    tool_messages,
    tool_names,
    turn,
)

pytestmark = pytest.mark.integration


def test_every_section_worker_request_is_reserved_and_charged(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    sections = {"history": LIGHTS[0:2], "technology": LIGHTS[2:4]}

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        usage = Usage(len(json.dumps(request.messages)) // 5, 30)
        if phase == "worker":
            section = request.messages[1]["content"].rsplit("Your section: ", 1)[1]
            done = turn(request)
            if done < 2:
                return Reply.tool_calls(search(request, sections[section][done]), usage=usage)
            return Reply.text(f"Summary of {section} [1].", usage=usage)
        if turn(request) == 0:
            return Reply.tool_calls(
                call(request, 0, "research_sections", sections=list(sections)), usage=usage
            )
        return Reply.text("Combined answer [1].", usage=usage)

    serve(openai_server, model)
    run = run_reply(openai_server, library, config={"chat.research_max_output_tokens": 300})
    result = run.result
    assert result.stop_reason == "answered" and result.answer == "Combined answer [1]."
    assert [item.source for item in result.evidence] == [
        f"{name.lower()}.md" for name in LIGHTS[:4]
    ]
    by_phase = check_requests(openai_server, research_max_tokens=300)
    workers = by_phase["worker"]
    assert len(workers) == 6, "two workers, three requests each"
    read_only = {"search_workspace", "read_document", "list_documents", "fetch_url"}
    for request in workers:
        assert tool_names(request) <= read_only
    assert "research_sections" in tool_names(by_phase["research"][0])
    worker_lines = run.lines("request", phase="worker")
    assert len(worker_lines) == 6
    for line, request in zip(worker_lines, workers, strict=True):
        assert line["reserved"] >= line["prompt_tokens"] + 300
        # Charged past the prompt shared with the previous request (DESIGN §1).
        prompt = len(json.dumps(request.messages)) // 5
        assert line["charged"] == prompt - line["reused_prefix"] + 30
        assert line["refunded"] == line["reserved"] - line["charged"]
    assert [event.reserved for event in run.of(ev.RequestStarted) if event.phase == "worker"] == [
        line["reserved"] for line in worker_lines
    ]
    assert result.tokens.charged == sum(line["charged"] for line in run.lines("request"))
    summary = tool_messages(by_phase["research"][-1])[0]["content"]
    assert "Summary of history [1]." in summary and "Summary of technology [1]." in summary
    assert run.of(ev.RoundEnded)[-1].progress is True


def test_a_section_worker_repeating_known_evidence_is_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    """Evidence is reply-wide: what a worker finds again was already found by the coordinator."""

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "final":
            return Reply.text("Lit in 1862 [1].")
        if phase == "worker":
            if turn(request) == 0:
                return Reply.tool_calls(search(request, "harbour lens"))
            return Reply.text("Nothing new for this section.")
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        section = f"part {turn(request)}"
        return Reply.tool_calls(call(request, 0, "research_sections", sections=[section]))

    serve(openai_server, model)
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": 2,
            "chat.research_max_output_tokens": 300,
            "chat.research_token_budget": 40_000,  # a reply that never stops ends here instead
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress"
    coordinator = [e.round for e in run.of(ev.RoundStarted) if e.worker is None]
    workers = [e.round for e in run.of(ev.RoundStarted) if e.worker is not None]
    assert len(coordinator) == 3 and len(workers) == 2
    progress = {e.round: e.progress for e in run.of(ev.RoundEnded)}
    assert [progress[number] for number in coordinator] == [True, False, False]
    assert [progress[number] for number in workers] == [False, False]
    assert [item.source for item in result.evidence] == ["harbour.md"]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    assert len(by_phase["worker"]) == 4 and len(by_phase["final"]) == 1
    assert len(run.lines("request", phase="worker")) == 4
