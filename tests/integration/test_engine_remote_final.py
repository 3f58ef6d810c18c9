"""DESIGN §1 over real HTTP: the final stage.

A full context stops research and the final still fits; evidence is condensed (charged to the
research budget) when the final cannot fit; the labelled fallback when condensing fails or the
final request fails, and it is what the history keeps.

The reply, the scripted model and the checks of every request: ``tests/support/remote_reply.py``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply
from tests.support.remote_reply import (
    LIGHTS,
    QUESTION,
    check_requests,
    phase_of,
    research_then_final,
    run_reply,
    search,
    serve,
    tool_messages,
    turn,
)

pytestmark = pytest.mark.integration


def test_context_full_stops_research_and_the_final_fits(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    serve(
        openai_server,
        research_then_final(
            lambda request: Reply.tool_calls(search(request, LIGHTS[turn(request)])),
            "Final within the window [1].",
        ),
    )
    window = 3000
    run = run_reply(
        openai_server,
        library,
        context_window=window,
        config={"chat.research_max_output_tokens": 512, "chat.max_tokens": 256},
    )
    result = run.result
    assert result.stop_reason == "context_full"
    assert result.final_mode == "model" and result.answer == "Final within the window [1]."
    assert result.rounds >= 2
    requests = run.lines("request")
    for line in requests:
        assert line["reserved"] <= window, line
    assert requests[-1]["phase"] == "final"
    assert requests[-1]["prompt_tokens"] + 256 <= window
    by_phase = check_requests(openai_server, research_max_tokens=512, final_max_tokens=256)
    assert len(by_phase["final"]) == 1 and "condense" not in by_phase
    # Every round's results reached the research conversation (the last request holds the
    # earlier rounds'; the last round's would not fit another) and the final's passages.
    research = by_phase["research"]
    assert len(research) == result.rounds
    assert len(tool_messages(research[-1])) == result.rounds - 1
    final = by_phase["final"][0]
    assert not tool_messages(final)
    assert len(result.evidence) == result.rounds
    for item in result.evidence:
        assert f"[{item.id}] {item.source}, {item.location}" in final.messages[-1]["content"]
    assert run.lines("stop")[0]["reason"] == "context_full"


def test_evidence_condensing_is_charged_to_the_research_budget_when_the_final_cannot_fit(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    notes = "Notes: the Alderney log is the oldest [1]."

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "condense":
            return Reply.text(notes)
        if phase == "final":
            return Reply.text("Answer from the notes [1].")
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]))

    serve(openai_server, model)
    # Research fills the window (its requests carry the tools and every tool result) after three
    # rounds; the final's passages (~1,100 tokens) with a 1,800-token answer allowance do not fit
    # 2,600, while condensed notes with that allowance do.
    window = 2600
    run = run_reply(
        openai_server,
        library,
        context_window=window,
        config={
            "chat.research_max_output_tokens": 200,
            "chat.max_tokens": 1800,
            "chat.research_token_budget": 50_000,
        },
    )
    result = run.result
    assert result.stop_reason == "context_full"
    assert result.final_mode == "model" and result.answer == "Answer from the notes [1]."
    by_phase = check_requests(openai_server, research_max_tokens=200, final_max_tokens=1800)
    condense = by_phase.get("condense", [])
    assert condense, "the evidence was condensed"
    condensed_text = "".join(request.messages[-1]["content"] for request in condense)
    for item in result.evidence:
        assert f"[{item.id}] {item.source}" in condensed_text
    final = by_phase["final"][0]
    assert openai_server.chat_requests()[-1] is final
    assert notes in final.messages[-1]["content"] and not tool_messages(final)
    lines = run.lines("request")
    condense_lines = [line for line in lines if line["phase"] == "condense"]
    assert len(condense_lines) == len(condense)
    assert all(line["charged"] > 0 and line["reserved"] <= window for line in condense_lines)
    research_and_condense = sum(line["charged"] for line in lines if line["phase"] != "final")
    assert result.tokens.charged == research_and_condense and result.tokens.budget == 50_000
    assert result.tokens.final_charged == sum(
        line["charged"] for line in lines if line["phase"] == "final"
    )
    # Condensing is charged to what was left of the research budget, like any research request.
    budgeted = [line for line in lines if line["phase"] != "final"]
    assert budgeted[0]["budget_left"] == 50_000 - budgeted[0]["charged"]
    for before, line in itertools.pairwise(budgeted):
        assert line["budget_left"] == before["budget_left"] - line["charged"], line


def test_the_labelled_fallback_when_the_final_cannot_fit_and_condensing_fails(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "condense":
            return Reply.error(503, "overloaded", retry_after="0")
        if phase == "final":
            return Reply.text("A final that must never be asked for.")
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]))

    serve(openai_server, model)
    # As above: the final's passages with a 1,800-token allowance do not fit the 2,600 window.
    run = run_reply(
        openai_server,
        library,
        context_window=2600,
        config={"chat.research_max_output_tokens": 200, "chat.max_tokens": 1800},
    )
    result = run.result
    assert result.stop_reason == "context_full" and result.final_mode == "fallback"
    assert result.answer.startswith(
        f"{FALLBACK_LABEL}: the conversation no longer fits the model's context window"
    )
    for item in result.evidence:
        assert f"[{item.id}] {item.source}, {item.location}" in result.answer
    assert len(result.evidence) == result.rounds >= 2
    by_phase = check_requests(openai_server, research_max_tokens=200, final_max_tokens=1800)
    assert "final" not in by_phase and by_phase["condense"], "condensing was tried, no final sent"
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]


def test_the_labelled_fallback_when_the_final_request_fails_is_persisted(
    openai_server: OpenAIServer, workspace: Workspace, tmp_path: Path
) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.error(500, "the model crashed", retry_after="0")
        return Reply.tool_calls(search(request, "harbour"))

    serve(openai_server, model)
    history = HistoryStore(tmp_path / "history.sqlite3")
    try:
        conversation = history.create_conversation(QUESTION)
        recorder = history.start_reply(conversation, QUESTION)
        run = run_reply(
            openai_server,
            workspace,
            extra_sink=recorder,
            config={
                "chat.research_no_progress_rounds": 2,
                "chat.research_max_output_tokens": 300,
                "chat.max_tokens": 900,
            },
        )
        stored = history.reply(recorder.stored_id)
    finally:
        history.close()
    result = run.result
    assert result.stop_reason == "no_progress" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: research stopped finding new evidence")
    assert "3 March 1862" in result.answer and "[1] harbour.md, lines" in result.answer
    assert result.error is not None and "500" in result.error
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=900)
    assert len(by_phase["research"]) == 3 and len(by_phase["final"]) >= 1
    assert len({final.body for final in by_phase["final"]}) == 1, "only retries of the one final"
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]
    assert stored.final_mode == "fallback" and stored.answer == result.answer
    assert stored.stop_reason == "no_progress"
    assert [item.source for item in stored.evidence] == ["harbour.md"]
