"""The research engine against a scripted provider and scripted tools (DESIGN §1, item by item)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ProviderUnavailableError,
)
from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.research.trace import TraceWriter, read_trace, trace_line
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from tests.support.fake_tools import FakeTools, passage
from tests.support.progress_scenarios import (
    ALTERNATING,
    ERRORS_AND_EMPTY,
    FOUND,
    SAME_PASSAGES,
    UNCHANGED,
    WRITES,
    Call,
    ProgressScenario,
)
from tests.support.research_run import (
    Recorder,
    assert_protocol_complete,
    make,
    research_then_final,
    run,
    search,
)
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config, research_settings


def new_passage_each_time() -> Callable[[str, dict[str, Any]], ToolResult]:
    counter = iter(range(10_000))

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        index = next(counter)
        return passage(
            f"Finding number {index}: the light keeper's log for year {1850 + index} "
            f"records storm {index * 7} and a supply boat named Wren {index}.",
            location=f"lines {3 * index + 1}-{3 * index + 3}",  # each from its own place
        )

    return respond


def test_research_continues_past_twelve_rounds_while_evidence_is_new() -> None:
    script = [Step(calls=[search(f"q{index}")]) for index in range(15)] + [Step("Done [1].")]
    engine, tools, provider, _recorder = make(script, new_passage_each_time())
    result = run(engine.run("When was the light built?", tools))
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert result.rounds == 15 and result.answer == "Done [1]."
    assert len(result.evidence) == 15
    assert all(request.phase == "research" for request in provider.requests)  # no final request
    for request in provider.requests:
        assert_protocol_complete(request)


def play(
    scenario: ProgressScenario, final: str = "From the evidence [1].", **settings: object
) -> tuple[ev.ReplyResult, FakeTools, ScriptedProvider, Recorder]:
    """``scenario`` on scripted tools: its rounds' calls, what :data:`FOUND` says each search
    finds; the final request answers ``final``. Checks how the engine judged every round."""

    def step(request: CompletionRequest) -> Step:
        if request.phase == "final":
            return Step(final)
        number = sum(1 for message in request.messages if message.role == "assistant")
        return Step(calls=[_tool_call(c) for c in scenario.calls(number)])

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if name == "search_workspace":
            found = FOUND[values["query"]]
            items = tuple(EvidenceItem(source, "lines 3-3", text) for source, text in found)
            return ToolResult(name, "ok" if items else "empty", "Passages.", items)
        if name == "read_document":
            return ToolResult.error(name, f"no document {values['path']} in the workspace")
        return ToolResult(name, "ok", "Saved.")

    engine, tools, provider, recorder = make(
        step, respond, settings={"chat.research_no_progress_rounds": scenario.patience, **settings}
    )
    result = run(engine.run("When?", tools))
    judged = [(event.progress, event.excluded) for event in recorder.of(ev.RoundEnded)]
    assert judged == list(scenario.judged)
    assert result.stop_reason == "no_progress" and result.rounds == len(scenario.judged)
    return result, tools, provider, recorder


def _tool_call(call: Call) -> tuple[str, dict[str, Any]]:
    kind, what = call
    if kind == "search":
        return search(what)
    if kind == "read":
        return ("read_document", {"path": what})
    return ("write_note", {"title": "Summary", "content": "Same note."})


def test_every_request_samples_with_the_seed_of_the_settings() -> None:
    _, _, provider, _ = play(UNCHANGED, **{"chat.seed": 1234})
    assert {request.phase for request in provider.requests} == {"research", "final"}
    assert {request.seed for request in provider.requests} == {1234}


def test_unchanged_evidence_stops_after_patience_with_a_tools_free_final() -> None:
    result, _, provider, _ = play(UNCHANGED, "Lit in 1862 [1].", **{"chat.max_tokens": 777})
    assert result.final_mode == "model" and result.answer == "Lit in 1862 [1]."
    final = provider.requests[-1]
    assert final.phase == "final" and not final.offers_tools and final.max_tokens == 777
    # Its own 120 s, not what was left of the research time (60 s here).
    assert 119 < final.deadline - time.monotonic() <= 120
    assert_protocol_complete(final)
    # The final request is laid out to be answered from: its own short instructions, then the
    # evidence as numbered passages with their sources, and the question restated last. It
    # carries no instruction in the person's turn for the model to echo as its answer.
    assert [m.role for m in final.messages] == ["system", "user"]
    assert final.messages[0].content == prompts.FINAL_SYSTEM
    turn = final.messages[1].content
    assert turn.startswith("Passages from the documents:\n\n[1] ")
    assert "The harbour light was first lit on 3 March 1862." in turn
    assert turn.endswith("\n\nQuestion: When?")


def test_alternating_queries_with_alternating_results_are_caught() -> None:
    result, tools, _, _ = play(ALTERNATING)
    assert [values["query"] for _, values in tools.calls] == ["harbour lens", "keepers shifts"] * 3
    assert [item.source for item in result.evidence] == ["harbour.md", "keepers.md"]


def test_different_queries_returning_the_same_passages_are_not_progress() -> None:
    result, tools, _, _ = play(SAME_PASSAGES)
    assert len({values["query"] for _, values in tools.calls}) == 5, "five different queries"
    assert [item.source for item in result.evidence] == ["keepers.md", "harbour.md"]


def test_changing_errors_and_empty_results_are_not_progress() -> None:
    result, _, provider, recorder = play(ERRORS_AND_EMPTY)
    assert [event.status for event in recorder.of(ev.ToolFinished)] == [
        "error", "empty", "error", "empty",
    ]  # fmt: skip
    assert result.evidence == ()
    # With nothing found, the model is not asked to answer: the engine says so (DESIGN §1).
    assert result.final_mode == "no_evidence"
    assert [request.phase for request in provider.requests] == ["research"] * 4


def test_write_rounds_are_excluded_and_writes_never_deduplicated() -> None:
    _, tools, _, _ = play(WRITES)
    assert len(tools.writes) == 4, "every write is carried out, however alike"


def test_token_budget_stop_charges_net_of_reused_prefix_and_refunds(tmp_path: Path) -> None:
    script = research_then_final(lambda n: Step(calls=[search(f"q{n}")]), "All of it [1].")
    trace = TraceWriter(tmp_path / "trace.jsonl")
    engine, tools, _provider, _ = make(
        script,
        new_passage_each_time(),
        also=trace,
        settings={"chat.research_token_budget": 6000, "chat.research_max_output_tokens": 400},
    )
    result = run(engine.run("Tell me everything.", tools))
    trace.close()
    assert result.stop_reason == "token_budget"
    requests = [line for line in read_trace(tmp_path / "trace.jsonl") if line["type"] == "request"]
    research = [line for line in requests if line["phase"] == "research"]
    assert len(research) >= 3
    for line in research[1:]:
        assert line["reused_prefix"] > 0
        assert line["charged_prompt"] == line["prompt_tokens"] - line["reused_prefix"]
        assert line["charged"] == line["charged_prompt"] + line["output_tokens"]
        assert line["refunded"] == line["reserved"] - line["charged"] > 0
    charged = sum(line["charged"] for line in research)
    assert result.tokens.charged == charged <= 6000
    assert result.tokens.refunded == sum(line["refunded"] for line in research)
    # The request that did not fit was never sent; the final answer was, outside the budget.
    assert requests[-1]["phase"] == "final" and result.tokens.final_charged > 0
    assert result.final_mode == "model"


def test_time_budget_cuts_an_in_flight_request() -> None:
    script = [Step(calls=[search("a")]), Step(hang=True), Step("Final from evidence [1].")]
    engine, tools, provider, _ = make(script, new_passage_each_time(), timeout_sec=0.3)
    result = run(engine.run("?", tools))
    assert result.stop_reason == "time_budget"
    assert 0.3 <= result.research_seconds < 0.6, "the final stage is not research time"
    assert provider.requests[-1].phase == "final"
    assert result.answer == "Final from evidence [1]." and result.final_mode == "model"


def test_calls_not_started_when_time_runs_out_are_answered_not_executed() -> None:
    async def slow(name: str, values: dict[str, Any]) -> ToolResult:
        await asyncio.Event().wait()  # runs until the research time is gone
        raise AssertionError("unreachable")

    script = [
        Step(calls=[search("a"), search("b"), ("write_note", {"title": "t", "content": "c"})]),
        Step("Final."),
    ]
    engine, tools, _provider, recorder = make(
        script, slow, timeout_sec=0.3, settings={"chat.answer_without_evidence": True}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "time_budget"
    statuses = [event.status for event in recorder.of(ev.ToolFinished)]
    assert statuses[0] == "error"
    # Every call has exactly one result: the two never started are answered "not executed".
    finished = recorder.of(ev.ToolFinished)
    assert [event.status for event in finished] == ["error", "not_executed", "not_executed"]
    assert len({event.call_id for event in finished}) == 3
    assert [name for name, _values in tools.calls] == ["search_workspace"]  # the rest never ran
    # The engine answered them itself: the toolbox was never asked to run them.
    assert [name for name, _ in tools.calls] == ["search_workspace"]
    assert statuses[1:] == ["not_executed"] * 2
    assert tools.writes == [], "the write was never started"


def test_stop_during_a_request_ends_cancelled_with_the_evidence() -> None:
    cancel = CancelToken()
    hang = Step(hang=True)
    script = [Step(calls=[search("a")]), hang]
    engine, tools, provider, _ = make(script, new_passage_each_time(), cancel=cancel)

    async def scenario() -> ev.ReplyResult:
        task = asyncio.create_task(engine.run("?", tools))
        await asyncio.to_thread(hang.started.wait, 10)
        threading.Timer(0, cancel.cancel).start()
        return await task

    result = run(scenario())
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(FALLBACK_LABEL) and "you stopped the reply" in result.answer
    assert "[1] doc.md" in result.answer
    assert all(request.phase == "research" for request in provider.requests)


def test_stop_during_a_tool_leaves_no_call_unanswered() -> None:
    cancel = CancelToken()
    entered = asyncio.Event()

    async def slow(name: str, values: dict[str, Any]) -> ToolResult:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    script = [Step(calls=[search("a"), search("b")])]
    engine, tools, _provider, recorder = make(script, slow, cancel=cancel)

    async def scenario() -> ev.ReplyResult:
        task = asyncio.create_task(engine.run("?", tools))
        await entered.wait()
        cancel.cancel()
        return await task

    result = run(scenario())
    assert result.stop_reason == "cancelled"
    # The running call is given up ("stopped while running"), the next one is never started;
    # both are answered and both are reported, and the cut round still ends.
    finished = recorder.of(ev.ToolFinished)
    assert [(event.call_id, event.status) for event in finished] == [
        ("call_1_0", "error"),
        ("call_1_1", "not_executed"),
    ]
    assert [event.round for event in recorder.of(ev.RoundEnded)] == [1]


def test_stop_during_the_final_stage_wins() -> None:
    cancel = CancelToken()
    final = Step(hang=True)
    same = passage("Same thing.")
    script = [Step(calls=[search("a")]), Step(calls=[search("a")]), final]
    engine, tools, _, _ = make(
        script,
        lambda name, values: same,
        cancel=cancel,
        settings={"chat.research_no_progress_rounds": 1},
    )

    async def scenario() -> ev.ReplyResult:
        task = asyncio.create_task(engine.run("?", tools))
        await asyncio.to_thread(final.started.wait, 10)
        cancel.cancel()
        return await task

    result = run(scenario())
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"


def test_waiting_for_the_person_is_not_research_time_and_is_progress() -> None:
    offset = [0.0]

    def clock() -> float:
        return time.monotonic() + offset[0]

    async def person(call_id: str, question: str) -> str:
        offset[0] += 1000.0  # the person thinks for far longer than the whole research budget
        return "The northern lights, please."

    settings = research_settings({"chat.research_timeout_sec": 5, "chat.research_first": False})
    provider = ScriptedProvider(
        [Step(calls=[("ask_user", {"question": "Which lights?"})]), Step("Here [1].")]
    )
    recorder = Recorder()
    engine = ResearchEngine(provider, settings, ask=person, sink=recorder, clock=clock)
    tools = FakeTools(new_passage_each_time())
    result = run(engine.run("Tell me about the lights.", tools))
    assert result.stop_reason == "answered"
    assert result.user_wait_seconds >= 1000 and result.research_seconds < 5
    assert recorder.of(ev.QuestionAsked)[0].question == "Which lights?"
    assert recorder.of(ev.UserWait)[0].seconds >= 1000
    assert recorder.of(ev.RoundEnded)[0].progress is True
    paused = [event.time_paused for event in recorder.of(ev.BudgetUpdate)]
    assert True in paused and paused[-1] is False


def test_context_full_stops_research_and_the_final_still_fits() -> None:
    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return passage(f"{values['query']} " + "fact " * 700)

    script = research_then_final(lambda n: Step(calls=[search(f"topic{n}")]), "Final.")
    engine, tools, provider, _ = make(
        script,
        respond,
        context_window=3000,
        settings={"chat.research_max_output_tokens": 256, "chat.max_tokens": 256},
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "context_full"
    final = provider.requests[-1]
    assert final.phase == "final" and final.max_tokens == 256
    assert result.final_mode == "model" and result.answer == "Final."
    assert run(provider.count_prompt(final)) + final.max_tokens <= 3000


def test_final_that_cannot_fit_is_condensed_with_charged_requests() -> None:
    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return passage(f"{values['query']} detail " + f"{values['query']}lore " * 420)

    def script(request: CompletionRequest) -> Step:
        if request.phase == "condense":
            return Step("Notes: the light dates from 1862 [1].")
        if request.phase == "final":
            return Step("Answer from notes [1].")
        return Step(calls=[search(f"q{len(request.messages)}")])

    engine, tools, provider, recorder = make(
        script,
        respond,
        context_window=2600,
        # A final allowance that leaves too little room for the passages (cut to
        # FINAL_PASSAGE_CHARS each), so they must be condensed.
        settings={"chat.research_max_output_tokens": 200, "chat.max_tokens": 1800},
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "context_full"
    phases = [request.phase for request in provider.requests]
    assert "condense" in phases and phases[-1] == "final"
    condense_lines = [e for e in recorder.of(ev.RequestFinished) if e.phase == "condense"]
    assert condense_lines and all(line.charged > 0 for line in condense_lines)
    research_and_condense = sum(
        e.charged for e in recorder.of(ev.RequestFinished) if e.phase != "final"
    )
    assert result.tokens.charged == research_and_condense
    assert result.answer == "Answer from notes [1]."


def test_labelled_fallback_when_the_final_request_fails() -> None:
    same = passage("The light keeper's name was Ada Quill.")
    script = [Step(calls=[search("a")]), Step(calls=[search("a")]), Step(fail=True)]
    engine, tools, _, _ = make(
        script, lambda name, values: same, settings={"chat.research_no_progress_rounds": 1}
    )
    result = run(engine.run("Who kept the light?", tools))
    assert result.stop_reason == "no_progress" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: research stopped finding new evidence")
    assert "Ada Quill" in result.answer and "[1] doc.md, lines 1-3" in result.answer


def test_provider_failure_during_research_is_an_error_with_fallback() -> None:
    script = [Step(calls=[search("a")]), Step(fail=True)]
    engine, tools, _, _ = make(script, new_passage_each_time())
    result = run(engine.run("?", tools))
    assert result.stop_reason == "error" and result.final_mode == "fallback"
    assert result.error is not None and "scripted server is down" in result.error


def test_section_workers_share_budgets_and_every_worker_request_is_charged() -> None:
    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            worked = sum(1 for m in request.messages if m.role == "tool")
            if worked < 2:
                return Step(calls=[search(f"{request.messages[1].content} {worked}")])
            return Step("Section summary [1].")
        if any(m.name == "research_sections" for m in request.messages):
            return Step("Combined answer.")
        return Step(calls=[("research_sections", {"sections": ["history", "technology"]})])

    engine, tools, _provider, recorder = make(script, new_passage_each_time())
    result = run(engine.run("History and technology of the lights?", tools))
    assert result.stop_reason == "answered" and result.answer == "Combined answer."
    worker_requests = [e for e in recorder.of(ev.RequestFinished) if e.phase == "worker"]
    assert len(worker_requests) == 6  # two workers, three requests each
    assert all(event.charged > 0 for event in worker_requests)
    assert result.tokens.charged == sum(e.charged for e in recorder.of(ev.RequestFinished))
    assert recorder.of(ev.RoundEnded)[-1].progress is True  # the workers found new evidence
    assert len(result.evidence) == 4


def test_a_worker_repeating_known_evidence_is_not_progress() -> None:
    same = passage("Only one fact exists about the keepers.")

    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            return Step(calls=[search("again")])
        return Step(calls=[("research_sections", {"sections": ["one"]})])

    engine, tools, _, recorder = make(
        script, lambda name, values: same, settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "no_progress"
    worker_rounds = [e for e in recorder.of(ev.RoundStarted) if e.worker == "one"]
    assert worker_rounds, "the worker ran"


def test_trace_has_the_documented_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    script = [Step(calls=[search("a")]), Step("Answer [1].")]
    writer = TraceWriter(path)
    engine, tools, _, _ = make(script, new_passage_each_time(), also=writer)
    run(engine.run("Q?", tools))
    writer.close()
    lines = read_trace(path)
    assert [line["type"] for line in lines] == [
        "run_start",
        "request",
        "tool",
        "round_end",
        "request",
        "stop",
        "final",  # exactly one per reply (DESIGN §5), also when research itself answered
    ]
    fields = {  # DESIGN §5, exactly
        "run_start": {"question", "settings"},
        "request": {
            "phase", "round", "prompt_tokens", "reserved", "reused_prefix", "charged_prompt",
            "output_tokens", "charged", "refunded", "budget_left", "estimated", "provider_usage",
            "prefix_source",
        },
        "tool": {
            "round", "call_id", "name", "kind", "status", "new_evidence", "repeated_evidence",
            "seconds", "past_deadline",
        },
        "round_end": {"round", "progress", "excluded", "no_progress_rounds"},
        "stop": {"reason"},
        "final": {"mode", "seconds"},
    }  # fmt: skip
    for line in lines:
        assert set(line) == {"t", "type"} | fields[line["type"]], line
    assert lines[0]["question"] == "Q?"
    # The request that opened round 1 is round 1's; the answering request would open round 2.
    assert [line["round"] for line in lines if line["type"] != "run_start" and "round" in line] == [
        1, 1, 1, 2,
    ]  # fmt: skip
    assert lines[-2] == {"t": lines[-2]["t"], "type": "stop", "reason": "answered"}
    assert lines[-1] == {"t": lines[-1]["t"], "type": "final", "mode": "model", "seconds": 0.0}
    assert all(isinstance(line["t"], float) for line in lines)


def test_the_trace_keeps_no_credentials_from_urls_in_settings() -> None:
    config = make_config(
        {
            "remote.base_url": "https://alice:s3cr3t-token@llm.example:8443/v1?api_key=k3y&mode",
            "network.proxy": "http://bob:hunter2@[::1]:3128",
            "chat.max_tokens": 2048,
            "workspace.path": "/home/alice/docs",
        }
    )
    line = trace_line(ev.ReplyStarted(0.0, "Q?", config, "remote"))
    assert line is not None
    text = json.dumps(line)
    for secret in ("s3cr3t-token", "alice:", "k3y", "hunter2", "bob"):
        assert secret not in text, secret
    # Every setting, in the schema's order; only the addresses are redacted.
    assert list(line["settings"].items()) == list(
        {
            **config.as_values(),
            "remote.base_url": "https://***@llm.example:8443/v1?api_key=***&mode",
            "network.proxy": "http://***@[::1]:3128",
        }.items()
    )
    assert line["settings"]["workspace.path"] == "/home/alice/docs"
    assert line["settings"]["chat.max_tokens"] == 2048


def test_an_empty_reply_is_nudged_and_counts_against_patience() -> None:
    script = [Step(""), Step(""), Step("")]
    engine, tools, provider, _ = make(
        script, new_passage_each_time(), settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "no_progress"
    assert provider.requests[1].messages[-1].content.startswith("Please either call")


@pytest.mark.parametrize("reason", ["time_budget", "no_progress"])
def test_json_result_shape(reason: str) -> None:
    same = passage("x y z w v u t s")
    script = research_then_final(lambda n: Step(calls=[search("a")]), "Final.")
    engine, tools, _, _ = make(
        script,
        lambda name, values: same,
        timeout_sec=60 if reason == "no_progress" else 0.0001,
        settings={"chat.research_no_progress_rounds": 1},
    )
    result = run(engine.run("?", tools)).to_json()
    assert set(result) == {
        "answer",
        "final_mode",
        "stop_reason",
        "rounds",
        "evidence",
        "tokens",
        "research_seconds",
        "user_wait_seconds",
        "error",
        "trace",
        "sources",
        "grounding",
        "runaway",
    }
    assert set(result["tokens"]) == {"budget", "charged", "refunded", "final_charged"}
    assert result["stop_reason"] == reason


# --- behaviour an audit of DESIGN §1 found missing ---------------------------------------------


def test_a_worker_that_finds_new_then_repeats_still_makes_the_coordinator_round_progress() -> None:
    facts = iter(range(1000))

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if values["query"].endswith("again"):
            return passage("The same old fact about the keepers, once more.")
        fact = next(facts)
        return passage(
            f"New fact {fact}: a supply boat called at the light in 18{next(facts)}.",
            location=f"line {fact}",  # each fact from its own line
        )

    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            worked = sum(1 for m in request.messages if m.role == "tool")
            # Round 1 finds something new; rounds 2 and 3 only repeat it; then it sums up.
            query = "fresh" if worked == 0 else "again"
            return Step(calls=[search(query)]) if worked < 3 else Step("Summary.")
        coordinator_rounds = sum(1 for m in request.messages if m.name == "research_sections")
        if coordinator_rounds < 4:
            return Step(calls=[("research_sections", {"sections": [f"part {coordinator_rounds}"]})])
        return Step("Done.")

    engine, tools, _, recorder = make(
        script, respond, settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "answered", "every coordinator round found new evidence"
    coordinator_ends = [
        e
        for e in recorder.of(ev.RoundEnded)
        if e.round in {s.round for s in recorder.of(ev.RoundStarted) if s.worker is None}
    ]
    assert [e.progress for e in coordinator_ends] == [True] * 4


def test_a_worker_whose_model_fails_stops_the_reply_with_an_error() -> None:
    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            return Step(fail=True)
        return Step(calls=[("research_sections", {"sections": ["one", "two"]}), search("after")])

    engine, tools, provider, recorder = make(script, new_passage_each_time())
    result = run(engine.run("?", tools))
    assert result.stop_reason == "error" and result.final_mode == "fallback"
    assert [r.phase for r in provider.requests] == ["research", "worker"], "no second worker"
    statuses = [(e.name, e.status) for e in recorder.of(ev.ToolFinished)]
    assert statuses == [("research_sections", "ok"), ("search_workspace", "not_executed")]


def test_a_write_that_failed_still_excludes_the_round() -> None:
    """ADR 0159: any batch containing a write is left out of the count, whatever it returned."""

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if name == "write_note":
            return ToolResult.error(name, "the notes folder is not writable.")
        return passage("Nothing new under the lamp.")

    write = ("write_note", {"title": "t", "content": "c"})
    script = [Step(calls=[search("same"), write]) for _ in range(5)] + [Step("Answer [1].")]
    engine, tools, _, recorder = make(
        script, respond, settings={"chat.research_no_progress_rounds": 3}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "answered"
    assert [e.excluded for e in recorder.of(ev.RoundEnded)] == [False] + [True] * 4


def test_condensing_is_charged_to_research_time() -> None:
    now = [0.0]

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        query = values["query"]
        return passage(" ".join(f"{query}word{index}" for index in range(300)))

    def script(request: CompletionRequest) -> Step:
        if request.phase == "condense":
            now[0] += 0.7  # each condensing request takes 0.7 s of a 1 s research budget
            return Step("Notes [1].")
        if request.phase == "final":
            return Step("Answer.")
        return Step(calls=[search(f"q{len(request.messages)}")])

    provider = ScriptedProvider(script, context_window=2600)
    settings = research_settings(
        {
            "chat.research_timeout_sec": 1.0,
            "chat.research_max_output_tokens": 200,
            "chat.max_tokens": 1800,  # the passages do not fit beside it: they are condensed
            "chat.research_first": False,
        }
    )
    recorder = Recorder()
    engine = ResearchEngine(provider, settings, sink=recorder, clock=lambda: now[0])
    tools = FakeTools(respond)
    result = run(engine.run("?", tools))
    assert result.stop_reason == "context_full"
    condensing = [r for r in provider.requests if r.phase == "condense"]
    assert len(condensing) == 2, "the second condensing request used the last of the time"
    assert result.research_seconds == pytest.approx(1.4)
    assert result.final_mode == "fallback"
    assert "could not be condensed" in result.answer and "time budget ran out" in result.answer


def test_stop_during_condensing_is_a_cancelled_reply() -> None:
    cancel = CancelToken()

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return passage(f"{values['query']} detail " + f"{values['query']}lore " * 420)

    def script(request: CompletionRequest) -> Step:
        if request.phase == "condense":
            return Step(hang=True)
        if request.phase == "final":
            raise AssertionError("no final request after Stop")
        return Step(calls=[search(f"q{len(request.messages)}")])

    engine, tools, provider, recorder = make(
        script,
        respond,
        cancel=cancel,
        context_window=2600,
        # A final allowance that leaves too little room for the passages (cut to
        # FINAL_PASSAGE_CHARS each), so they must be condensed.
        settings={"chat.research_max_output_tokens": 200, "chat.max_tokens": 1800},
    )

    async def scenario() -> ev.ReplyResult:
        task = asyncio.create_task(engine.run("?", tools))
        while not any(r.phase == "condense" for r in provider.requests):
            await asyncio.sleep(0)
        cancel.cancel()
        return await task

    result = run(scenario())
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    # One stop reason per reply (DESIGN §5), the same in the stop line: Stop won.
    assert [e.reason for e in recorder.of(ev.ResearchStopped)] == ["cancelled"]


def test_the_fallback_lists_every_item_and_never_claims_there_was_none() -> None:
    sizes = iter([25_000] + [3_000] * 29)

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return passage(f"{values['query']} " + "x" * next(sizes))

    script = [Step(calls=[search(f"doc{n}") for n in range(30)]), Step(fail=True)]
    engine, tools, _, _ = make(script, respond)
    result = run(engine.run("?", tools))
    assert result.final_mode == "fallback" and len(result.evidence) == 30
    assert "No evidence was gathered" not in result.answer
    for item in result.evidence:
        assert f"[{item.id}] {item.source}, {item.location}:" in result.answer
    assert len(result.answer) < 20_000 + 30 * 100


def test_an_unexpected_provider_failure_ends_the_reply_instead_of_raising() -> None:
    class Broken(ScriptedProvider):
        async def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")

    provider = Broken([])
    recorder = Recorder()
    engine = ResearchEngine(
        provider, research_settings({"chat.research_first": False}), sink=recorder
    )
    result = run(engine.run("?", FakeTools(new_passage_each_time())))
    assert result.stop_reason == "error" and result.final_mode == "fallback"
    assert result.error is not None and "RecursionError" in result.error
    assert [e.phase for e in recorder.of(ev.RequestFinished)] == ["research"]
    assert result.tokens.charged == 0 and result.tokens.refunded > 0


def test_an_unexpected_failure_of_the_final_request_is_the_labelled_fallback() -> None:
    class BrokenFinal(ScriptedProvider):
        async def complete(self, request: CompletionRequest, *args: Any, **kwargs: Any) -> Any:
            if request.phase == "final":
                raise KeyError("choices")
            return await super().complete(request, *args, **kwargs)

    same = passage("The light keeper's name was Ada Quill.")
    provider = BrokenFinal([Step(calls=[search("a")]), Step(calls=[search("a")])])
    engine = ResearchEngine(
        provider,
        research_settings({"chat.research_no_progress_rounds": 1, "chat.research_first": False}),
    )
    result = run(engine.run("?", FakeTools(lambda name, values: same)))
    assert result.stop_reason == "no_progress" and result.final_mode == "fallback"
    assert "the final request failed" in result.answer and "Ada Quill" in result.answer


def test_context_full_without_evidence_asks_the_final_with_the_question_alone() -> None:
    huge = "x" * 12_000  # arguments the model wrote that fill the context on their own

    def script(request: CompletionRequest) -> Step:
        if request.phase == "final":
            return Step("I could not find it in your documents.")
        return Step(calls=[("search_workspace", {"query": huge})])

    engine, tools, provider, _ = make(
        script,
        lambda name, values: ToolResult(name, "empty", "No results."),
        context_window=3500,
        settings={"chat.answer_without_evidence": True},
    )
    result = run(engine.run("Who kept the light?", tools))
    assert result.stop_reason == "context_full" and result.final_mode == "model"
    assert result.answer.endswith("\n\nI could not find it in your documents.")
    final = provider.requests[-1]
    assert final.phase == "final" and huge not in str(final.messages)
    assert final.messages[0].content == prompts.FINAL_WITHOUT_EVIDENCE
    assert final.messages[-1].content == "Question: Who kept the light?"


@pytest.mark.parametrize("research_first", [True, False])
def test_no_request_forces_a_tool_call(research_first: bool) -> None:
    """The model may answer at any step (DESIGN §1): the search before answering is the engine's
    own, never a forced first call."""

    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            worked = sum(1 for m in request.messages if m.role == "tool")
            return Step(calls=[search(f"w{worked}")]) if worked < 2 else Step("Section done.")
        rounds = sum(1 for m in request.messages if m.role == "tool" and m.name != "seeded")
        if not any(m.name == "research_sections" for m in request.messages):
            return Step(calls=[("research_sections", {"sections": ["one"]})])
        return Step(calls=[search("more")]) if rounds < 4 else Step("Answer.")

    engine, tools, provider, _ = make(
        script, new_passage_each_time(), settings={"chat.research_first": research_first}
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "answered"
    assert {r.tool_choice for r in provider.requests} == {"auto"}
    assert [r.phase for r in provider.requests][:2] == ["research", "worker"]


def test_an_ending_that_fails_after_its_stop_line_writes_no_second_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from imprint_desktop.core.research import ending

    engine, tools, _, recorder = make([Step("Ada Quill.")], lambda name, values: passage("x"))
    failures = iter([RuntimeError("broken after the stop line")])

    def without_repeats(answer: str) -> str:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return answer

    monkeypatch.setattr(ending.sources, "without_repeats", without_repeats)
    result = run(engine.run("?", tools))
    assert [e.reason for e in recorder.of(ev.ResearchStopped)] == ["answered"]
    assert len(recorder.of(ev.FinalFinished)) == 1
    assert result.stop_reason == "answered" and result.final_mode == "fallback"
    assert result.error is not None and "broken after the stop line" in result.error


# --- workers, progress, waits, sources and charges, case by case -----------------------------


def test_a_worker_stopped_by_time_hands_its_passages_to_the_final_request() -> None:
    now = [0.0]

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        now[0] += 0.6  # each search takes 0.6 s of a 1 s budget: the worker's second one ends it
        return passage(f"Ada Quill kept the light until 1971 ({values['query']}).", "keepers.md")

    def script(request: CompletionRequest) -> Step:
        if request.phase == "final":
            return Step("Ada Quill [1].")
        if request.phase == "worker":
            return Step(calls=[search("keeper"), search("keeper again")])
        return Step(calls=[("research_sections", {"sections": ["the keepers"]})])

    provider = ScriptedProvider(script)
    settings = research_settings({"chat.research_timeout_sec": 1.0, "chat.research_first": False})
    engine = ResearchEngine(provider, settings, clock=lambda: now[0])
    tools = FakeTools(respond)
    result = run(engine.run("Who kept the light?", tools))
    assert result.stop_reason == "time_budget"
    final = provider.requests[-1]
    assert final.phase == "final"
    # The final request reads the evidence itself, numbered, whoever found it.
    assert "[1] keepers.md, lines 1-3\nAda Quill kept the light until 1971" in (
        final.messages[-1].content
    )


def test_a_person_s_answer_in_a_batch_with_a_write_is_progress() -> None:
    note = ("write_note", {"title": "Plan", "content": "Ask about the light."})
    ask = ("ask_user", {"question": "Which light?"})
    # Three rounds of a note and a question, then an answer: no budget cuts a round short (a
    # research time ran out mid-batch on a busy machine, leaving the question not asked).
    script = [Step(calls=[note, ask])] * 3 + [Step("Done.")]

    async def person(call_id: str, question: str) -> str:
        return "Greyness Point"

    engine, tools, _, recorder = make(
        script,
        lambda n, v: passage("unused"),
        ask=person,
        settings={"chat.research_no_progress_rounds": 2},
    )
    result = run(engine.run("?", tools))
    assert result.stop_reason == "answered"
    ends = recorder.of(ev.RoundEnded)
    assert [e.round for e in ends] == [1, 2, 3]
    assert all(e.progress and not e.excluded for e in ends)
    assert all(e.no_progress_rounds == 0 for e in ends)


def test_a_cancelled_question_still_has_its_user_wait_line() -> None:
    cancel = CancelToken()

    async def person(call_id: str, question: str) -> str:
        cancel.cancel()
        raise asyncio.CancelledError

    script = [Step(calls=[("ask_user", {"question": "Which light?"})])]
    engine, tools, _, recorder = make(script, lambda n, v: passage("x"), ask=person, cancel=cancel)
    result = run(engine.run("?", tools))
    assert result.stop_reason == "cancelled"
    assert [trace_line(e)["type"] for e in recorder.of(ev.UserWait)] == ["user_wait"]  # type: ignore[index]


def test_a_cited_repeat_names_its_source() -> None:
    same = passage("The light was lit in 1862.", "harbour.md", "lines 4-5")
    script = research_then_final(lambda n: Step(calls=[search("lit")]), "Lit in 1862 [2].")
    engine, tools, _, _ = make(
        script, lambda n, v: same, settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("When?", tools))
    assert [item.id for item in result.evidence] == [1]  # [2] repeated [1]
    assert result.answer == "Lit in 1862 [2]."
    assert result.sources == (
        ev.SourceView(
            2, "harbour.md", "lines 4-5", "", cited=True, excerpt="The light was lit in 1862."
        ),
    )


def test_a_page_whose_only_change_is_a_counter_is_not_new_evidence() -> None:
    visits = iter(range(1000, 2000))

    def page(name: str, values: dict[str, Any]) -> ToolResult:
        text = f"Welcome to the harbour trust. You are visitor {next(visits)} today."
        item = EvidenceItem("https://harbour.example/", "part 1", text)
        return ToolResult(name, "ok", text, (item,))

    script = research_then_final(
        lambda n: Step(calls=[("fetch_url", {"url": "https://harbour.example/"})]), "Done [1]."
    )
    engine, tools, _, _ = make(script, page, settings={"chat.research_no_progress_rounds": 3})
    result = run(engine.run("?", tools))
    assert result.stop_reason == "no_progress" and result.rounds == 4
    assert len(result.evidence) == 1


def test_a_request_that_streamed_before_failing_is_charged() -> None:
    lost = ProviderUnavailableError("The connection was lost.")
    script = [Step("A long answer that was cut by the network " * 20, error=lost)]
    engine, tools, _, recorder = make(script, lambda n, v: passage("x"))
    result = run(engine.run("?", tools))
    assert result.stop_reason == "error"
    [line] = recorder.of(ev.RequestFinished)
    assert line.charged_prompt == line.prompt_tokens and line.output_tokens > 0
    assert result.tokens.charged == line.charged > 0


def test_an_answer_cut_as_a_loop_says_so_in_its_result() -> None:
    looping = "The light was first lit in 1862 [1].\n" + "The keeper trimmed the wick.\n" * 40
    script = [Step(calls=[search("light lit")]), Step(looping)]
    engine, tools, _provider, _ = make(script, new_passage_each_time())
    result = run(engine.run("When was the light first lit?", tools))
    assert result.runaway is not None and result.runaway.kind == "loop"
    assert result.answer.count("trimmed the wick") == 1
    assert result.to_json()["runaway"] == {"kind": "loop", "why": result.runaway.why}
    assert "repeating itself" in result.runaway.why


def test_an_answer_that_ran_to_its_end_has_no_runaway() -> None:
    script = [Step(calls=[search("light lit")]), Step("The light was first lit in 1862 [1].")]
    engine, tools, _provider, _ = make(script, new_passage_each_time())
    result = run(engine.run("When was the light first lit?", tools))
    assert result.runaway is None and result.to_json()["runaway"] is None
