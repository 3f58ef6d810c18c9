"""DESIGN §1 over real HTTP: research has no round limit and stops on patience, and what counts as
progress is new evidence only.

Research goes on past twelve rounds while evidence is new; unchanged evidence, alternating queries
with alternating results, different queries finding the same passages, and changing errors or empty
results are not progress; write rounds are excluded from the count, and writes are never
deduplicated.

The reply, the scripted model and the checks of every request: ``tests/support/remote_reply.py``.
"""

from __future__ import annotations

import json

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.workspace import Workspace
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply
from tests.support.progress_scenarios import (
    ALTERNATING,
    ERRORS_AND_EMPTY,
    SAME_PASSAGES,
    UNCHANGED,
    WRITES,
    Call,
    ProgressScenario,
)
from tests.support.remote_reply import (
    LIGHTS,
    Model,
    Run,
    call,
    check_requests,
    research_then_final,
    run_reply,
    search,
    serve,
    settings,
    tool_messages,
    turn,
)

pytestmark = pytest.mark.integration


def scripted(scenario: ProgressScenario, final: str = "Final from the evidence [1].") -> Model:
    """The model playing ``scenario``'s rounds; the final request answers ``final``."""

    def research(request: RecordedRequest) -> Reply:
        planned = scenario.calls(turn(request))
        return Reply.tool_calls(*[_tool_call(request, i, one) for i, one in enumerate(planned)])

    return research_then_final(research, final)


def _tool_call(request: RecordedRequest, index: int, planned: Call) -> ToolCall:
    kind, what = planned
    if kind == "search":
        return search(request, what, index)
    if kind == "read":
        return call(request, index, "read_document", path=what)
    return call(request, index, "write_note", title="Summary", content="Same note.")


def judged(run: Run) -> list[tuple[bool, bool]]:
    return [(event.progress, event.excluded) for event in run.of(ev.RoundEnded)]


# --- 1. no round limit ---------------------------------------------------------------------------


def test_research_continues_past_twelve_rounds_while_evidence_is_new(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    def model(request: RecordedRequest) -> Reply:
        done = turn(request)
        if done < 15:
            return Reply.tool_calls(search(request, LIGHTS[done]))
        return Reply.text("Fifteen lights, fifteen logs [1].")

    serve(openai_server, model)
    run = run_reply(
        openai_server,
        library,
        config={
            "chat.research_no_progress_rounds": 2,
            "chat.research_token_budget": 2_000_000,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert result.rounds == 15 and result.answer == "Fifteen lights, fifteen logs [1]."
    assert [item.source for item in result.evidence] == [f"{n.lower()}.md" for n in LIGHTS[:15]]
    assert [event.progress for event in run.of(ev.RoundEnded)] == [True] * 15
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert set(by_phase) == {"research"}, "an answer completes at once: no final request"
    last = by_phase["research"][-1]
    assert len(by_phase["research"]) == 16
    for name, message in zip(LIGHTS[:15], tool_messages(last), strict=True):
        assert f"The {name} light log" in message["content"]
    assert [line["reason"] for line in run.lines("stop")] == ["answered"]


# --- 2-5. what is not progress -------------------------------------------------------------------


def test_unchanged_evidence_stops_after_patience_then_a_tools_free_final(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    serve(openai_server, scripted(UNCHANGED, "It was first lit on 3 March 1862 [1]."))
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": UNCHANGED.patience,
            "chat.max_tokens": 777,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress" and result.rounds == 4
    assert result.final_mode == "model" and result.answer == "It was first lit on 3 March 1862 [1]."
    assert judged(run) == list(UNCHANGED.judged)
    assert [item.source for item in result.evidence] == ["harbour.md"]
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=777)
    assert len(by_phase["research"]) == 4 and len(by_phase["final"]) == 1
    final = by_phase["final"][0]
    assert openai_server.chat_requests()[-1] is final
    # Each round found the same passage: the last research request holds the first three
    # rounds' results, the trace the fourth's; the final (no tools) shows the one passage.
    earlier = tool_messages(by_phase["research"][-1])
    assert len(earlier) == 3
    assert all("3 March 1862" in message["content"] for message in earlier)
    assert [(line["new_evidence"], line["repeated_evidence"]) for line in run.lines("tool")] == [
        (1, 0),
    ] + [(0, 1)] * 3
    assert not tool_messages(final) and not final.tools
    assert final.messages[0]["content"] == prompts.FINAL_SYSTEM
    assert "[1] harbour.md" in final.messages[-1]["content"]
    assert "[2]" not in final.messages[-1]["content"]
    assert "3 March 1862" in final.messages[-1]["content"]
    assert [line["no_progress_rounds"] for line in run.lines("round_end")] == [0, 1, 2, 3]
    assert run.lines("stop")[0]["reason"] == "no_progress"
    assert [line["mode"] for line in run.lines("final")] == ["model"]


def test_alternating_queries_with_alternating_results_are_caught(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    queries = ["harbour lens", "keepers shifts"]
    serve(openai_server, scripted(ALTERNATING))
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": ALTERNATING.patience,
            "chat.research_max_output_tokens": 300,
        },
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 6
    assert judged(run) == list(ALTERNATING.judged)
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    # The last research request holds the first five rounds' results (A, B, A, B, A); the sixth
    # (B again) is in the trace below.
    contents = [message["content"] for message in tool_messages(by_phase["research"][-1])]
    assert ["1862" in text for text in contents] == [True, False] * 2 + [True], "A, B, A, B, A"
    assert ["1971" in text for text in contents] == [False, True] * 2 + [False]
    assert [json.loads(e.arguments)["query"] for e in run.of(ev.ToolStarted)] == queries * 3
    assert [(line["new_evidence"], line["repeated_evidence"]) for line in run.lines("tool")] == [
        (1, 0),
        (1, 0),
    ] + [(0, 1)] * 4


def test_different_queries_returning_the_same_passages_are_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    # Two queries find one passage each; then other words find the same passages, one at a time
    # and both together (in the order the index ranks them).
    queries = [planned[0][1] for planned in SAME_PASSAGES.rounds]
    serve(openai_server, scripted(SAME_PASSAGES))
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": SAME_PASSAGES.patience,
            "chat.research_max_output_tokens": 300,
        },
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 5
    assert judged(run) == list(SAME_PASSAGES.judged)
    assert [item.source for item in run.result.evidence] == ["keepers.md", "harbour.md"]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    # The last research request holds the first four rounds (calls and results); the fifth
    # round's call is in the events and its two repeated passages in the trace.
    last = by_phase["research"][-1]
    sent = [
        json.loads(tool_call["function"]["arguments"])["query"]
        for message in last.messages
        if message["role"] == "assistant"
        for tool_call in message["tool_calls"]
    ]
    assert sent == queries[:4]
    executed = [json.loads(event.arguments)["query"] for event in run.of(ev.ToolStarted)]
    assert executed == queries, "five different queries"
    contents = [message["content"] for message in tool_messages(last)]
    assert ["Four keepers served" in text for text in contents] == [True, False, True, True]
    assert ["3 March 1862" in text for text in contents] == [False, True, False, True]
    assert [line["repeated_evidence"] for line in run.lines("tool")] == [0, 0, 1, 2, 2]
    assert [line["new_evidence"] for line in run.lines("tool")] == [1, 1, 0, 0, 0]


def test_changing_errors_and_empty_results_are_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    serve(openai_server, scripted(ERRORS_AND_EMPTY, "I could not find it."))
    run = run_reply(
        openai_server,
        workspace,
        config={
            # Four rounds, so that the last research request shows both errors.
            "chat.research_no_progress_rounds": ERRORS_AND_EMPTY.patience,
            "chat.research_max_output_tokens": 300,
            "chat.answer_without_evidence": True,  # nothing is found: still ask for a final
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress" and result.rounds == 4
    assert result.evidence == ()
    statuses = [event.status for event in run.of(ev.ToolFinished)]
    assert statuses == ["error", "empty", "error", "empty"]
    assert judged(run) == list(ERRORS_AND_EMPTY.judged)
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    last_research = by_phase["research"][-1]
    contents = [message["content"] for message in tool_messages(last_research)]
    assert "missing-0.md" in contents[0] and "missing-2.md" in contents[2], "the errors changed"
    assert contents[0] != contents[2]
    final = by_phase["final"][0]
    assert final.messages[0]["content"] == prompts.FINAL_WITHOUT_EVIDENCE


# --- 6. writes ----------------------------------------------------------------------------------


def test_write_rounds_are_excluded_and_writes_never_deduplicated(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    serve(openai_server, scripted(WRITES))
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": WRITES.patience,
            "chat.research_max_output_tokens": 300,
        },
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 7
    assert judged(run) == list(WRITES.judged)
    notes = sorted(path.name for path in (workspace.root / workspace.notes_folder).iterdir())
    assert notes == ["summary-2.md", "summary-3.md", "summary-4.md", "summary.md"]
    for path in (workspace.root / workspace.notes_folder).iterdir():
        assert "Same note." in path.read_text(encoding="utf-8")
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings().chat.max_tokens
    )
    # The last research request holds rounds 1-6, so every write's result.
    last = by_phase["research"][-1]
    saved = [m["content"] for m in tool_messages(last) if m["name"] == "write_note"]
    assert len(saved) == 4 and len(set(saved)) == 4, saved
    assert [line["excluded"] for line in run.lines("round_end")] == [
        False, True, True, True, False, True, False,
    ]  # fmt: skip
