"""Research the engine drives when the model does not call tools (issue 43), on a scripted model
and scripted tools: what it searches and reads, how its rounds show and are traced, the budgets
that stop them, and the question a first search answers going straight to the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from imprint_desktop.core.research import driven
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from tests.support.fake_tools import FakeTools
from tests.support.research_run import Recorder
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

SMALL = 135_000_000  # the starter model: not offered the tools first

SCAB = EvidenceItem(
    "orchards/survey.md",
    "lines 5-8",
    "Apple scab was found on the Bramley trees in Long Meadow.",
    "Orchard survey",
)
PRESS = EvidenceItem(
    "press/purchase.md",
    "lines 1-4",
    "The new press will cost £14,800, including fitting.",
    "New press: purchase decision",
)
LOG = EvidenceItem(
    "lights/incidents-1961.md",
    "lines 1-4",
    "A storm damaged the lantern at Curlew Rock. The damage was inspected; see Inspection Note 14.",
    "Incident log, 1961",
)
NOTE = EvidenceItem(
    "engineering/inspection-note-14.md",
    "lines 1-3",
    "Inspected by Daniel Penhallow, district engineer, on 10 March 1961.",
    "Inspection Note 14",
)
ROW = EvidenceItem(
    "lights/roster.md", "lines 6-6", "| Ruth Brook | Skerry Head |", "Roster of keepers"
)
TABLE = EvidenceItem(
    "lights/roster.md",
    "lines 1-8",
    "| Keeper | Station |\n|---|---|\n"
    "| Thomas Alder | Gannet Point |\n| Ruth Brook | Skerry Head |",
    "Roster",
)
GANNET = EvidenceItem(
    "stations/gannet-point.md", "lines 7-9", "Lit: 1 November 1857.", "Gannet Point lighthouse"
)

TWO_PARTS = "Which orchard has apple scab and how much will the new press cost?"


def found(*items: EvidenceItem, name: str = "search_workspace") -> ToolResult:
    body = "\n".join(f"[n] {item.source}: {item.text}" for item in items)
    return ToolResult(name, "ok", body, items)


class Clock:
    """The monotonic clock of the engine, moved on by the tools of a test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(
    script: Any,
    respond: Callable[[str, dict[str, Any]], ToolResult],
    *,
    settings: Mapping[str, object] | None = None,
    clock: Clock | None = None,
) -> tuple[ResearchEngine, FakeTools, ScriptedProvider, Recorder]:
    chosen = research_settings({"chat.research_timeout_sec": 60, **(settings or {})})
    provider = ScriptedProvider(script)
    provider.parameters = SMALL
    recorder = Recorder()
    engine = ResearchEngine(
        provider, chosen, sink=recorder, **({"clock": clock} if clock is not None else {})
    )
    return engine, FakeTools(respond), provider, recorder


def by_query(results: Mapping[str, ToolResult], *, otherwise: ToolResult) -> Any:
    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return results.get(values.get("query", values.get("path", "")), otherwise)

    return respond


def engine_rounds(recorder: Recorder) -> list[ev.RoundEnded]:
    return [event for event in recorder.of(ev.RoundEnded) if event.origin == "engine"]


def two_part_tools() -> Any:
    return by_query(
        {"orchard apple scab": found(SCAB), "new press cost": found(PRESS)},
        otherwise=found(SCAB),  # the first search, for the whole question, finds one half
    )


def test_each_part_is_searched_in_an_engine_round_that_shows_and_is_traced() -> None:
    engine, tools, _provider, recorder = make([Step("Long Meadow [1]."), Step("£14,800.")],
                                              two_part_tools())  # fmt: skip
    result = asyncio.run(engine.run(TWO_PARTS, tools))

    assert result.stop_reason == "answered" and result.rounds == 1
    assert [values["query"] for _name, values in tools.calls] == [
        TWO_PARTS,
        "orchard apple scab",
        "new press cost",
    ]
    # The round shows like a model's: started, its calls (Imprint's own), ended with progress.
    assert [e.worker for e in recorder.of(ev.RoundStarted) if e.round == 1] == [None]
    calls = [e for e in recorder.of(ev.ToolFinished) if e.round == 1]
    assert [call.origin for call in calls] == ["engine", "engine"]
    assert [call.new_evidence for call in calls] == [0, 1]
    [ended] = engine_rounds(recorder)
    assert ended.round == 1 and ended.progress
    assert recorder.of(ev.BudgetUpdate)[-1].rounds == 1
    # The trace marks the round as the engine's.
    lines = [trace_line(event) for event in recorder.events]
    [round_end] = [line for line in lines if line and line["type"] == "round_end" and line["round"]]
    assert round_end["origin"] == "engine" and round_end["progress"] is True
    assert {line["origin"] for line in lines if line and line["type"] == "tool"} == {"engine"}


def test_the_model_answers_part_by_part_each_from_its_own_passages() -> None:
    engine, tools, provider, _recorder = make(
        [Step("Long Meadow has apple scab [1]."), Step("It will cost £14,800 [3].")],
        two_part_tools(),
    )
    result = asyncio.run(engine.run(TWO_PARTS, tools))
    assert result.answer == "Long Meadow has apple scab [1].\n\nIt will cost £14,800 [3]."
    first, second = provider.requests
    assert first.tools == () and second.tools == ()
    assert SCAB.text in first.messages[-1].content and PRESS.text not in first.messages[-1].content
    assert first.messages[-1].content.endswith("Question: Which orchard has apple scab?")
    assert (
        PRESS.text in second.messages[-1].content and SCAB.text not in second.messages[-1].content
    )
    assert second.messages[-1].content.endswith("Question: How much will the new press cost?")


def test_in_one_request_the_passages_are_laid_out_per_part_with_the_question_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(driven, "PART_BY_PART", False)
    engine, tools, provider, _recorder = make([Step("Long Meadow [1]; £14,800 [3].")],
                                              two_part_tools())  # fmt: skip
    result = asyncio.run(engine.run(TWO_PARTS, tools))
    assert result.stop_reason == "answered" and result.rounds == 1
    [answer] = provider.requests
    assert answer.tools == ()
    turn = answer.messages[-1].content
    assert turn.index("For “Which orchard has apple scab?”") < turn.index(SCAB.text)
    assert turn.index(SCAB.text) < turn.index("For “How much will the new press cost?”")
    assert turn.index("For “How much will the new press cost?”") < turn.index(PRESS.text)
    assert turn.rstrip().endswith(f"Question: {TWO_PARTS}")
    assert turn.count(SCAB.text) == 1  # found twice, shown once


def test_a_question_the_first_search_answers_goes_straight_to_the_answer() -> None:
    engine, tools, provider, recorder = make(
        [Step("Lit in 1857 [1].")], lambda name, values: found(GANNET)
    )
    result = asyncio.run(engine.run("When was Gannet Point lit?", tools))
    assert result.stop_reason == "answered" and result.rounds == 0
    assert len(tools.calls) == 1 and not engine_rounds(recorder)
    [answer] = provider.requests
    assert "Lit: 1 November 1857." in answer.messages[-1].content
    assert "For “" not in answer.messages[-1].content


def test_a_document_a_passage_names_is_searched_for() -> None:
    respond = by_query({"Inspection Note 14": found(NOTE)}, otherwise=found(LOG))
    engine, tools, provider, recorder = make([Step("Daniel Penhallow [2].")], respond)
    result = asyncio.run(engine.run("Who inspected the storm damage at Curlew Rock?", tools))
    assert tools.calls[1] == ("search_workspace", {"query": "Inspection Note 14", "limit": 2})
    assert result.rounds == 1 and engine_rounds(recorder)[0].progress
    assert NOTE.text in provider.requests[0].messages[-1].content


def test_a_list_is_read_around_its_hit_and_shown_whole() -> None:
    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return found(TABLE, name=name) if name == "read_document" else found(ROW)

    engine, tools, provider, _recorder = make([Step("Alder, Brook.")], respond)
    asyncio.run(engine.run("List every keeper.", tools))
    assert tools.calls[1] == (
        "read_document",
        {"path": "lights/roster.md", "start_line": 1, "end_line": 18},
    )
    assert "| Thomas Alder | Gannet Point |" in provider.requests[0].messages[-1].content


def test_rounds_that_add_nothing_run_out_of_patience_and_the_final_request_answers() -> None:
    # The first search finds both halves, each naming a document to look in; every later call
    # finds them again: the parts' searches, then the documents named, add nothing.
    scab = EvidenceItem(SCAB.source, SCAB.location, SCAB.text + " See the spray diary.", "Survey")
    press = EvidenceItem(PRESS.source, PRESS.location, PRESS.text + " See the quotes.", "Press")

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        return found(scab, press, name=name)

    script = [Step("Final: Long Meadow [1], £14,800 [2].")]
    engine, tools, provider, recorder = make(
        script, respond, settings={"chat.research_no_progress_rounds": 2}
    )
    result = asyncio.run(engine.run(TWO_PARTS, tools))
    assert result.stop_reason == "no_progress"
    assert [(e.round, e.progress, e.no_progress_rounds) for e in engine_rounds(recorder)] == [
        (1, False, 1),
        (2, False, 2),
    ]
    assert [values["query"] for _name, values in tools.calls[-2:]] == ["spray diary", "quotes"]
    [final] = provider.requests
    assert final.phase == "final" and result.final_mode == "model"


def test_the_research_time_stops_the_engine_s_rounds() -> None:
    clock = Clock()

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if values.get("query") == "orchard apple scab":
            clock.now += 120  # past the research time
        return found(PRESS) if values.get("query") == "new press cost" else found(SCAB)

    engine, tools, provider, recorder = make([Step("Long Meadow [1].")], respond, clock=clock)
    result = asyncio.run(engine.run(TWO_PARTS, tools))
    assert result.stop_reason == "time_budget"
    # The second search of the round never ran; the round still ended, with what it found.
    assert [values.get("query") for _n, values in tools.calls] == [TWO_PARTS, "orchard apple scab"]
    assert [e.round for e in engine_rounds(recorder)] == [1]
    assert provider.requests[-1].phase == "final"


@pytest.mark.parametrize("part_by_part", [True, False])
def test_the_tokens_of_the_growing_answer_stop_the_engine_s_research(
    monkeypatch: pytest.MonkeyPatch, part_by_part: bool
) -> None:
    monkeypatch.setattr(driven, "PART_BY_PART", part_by_part)
    scab_more = " ".join(f"Row {n} of the Bramley block was sprayed." for n in range(12))
    press_more = " ".join(f"Belt {n} of the press takes a tonne an hour." for n in range(12))
    scab = EvidenceItem(SCAB.source, SCAB.location, f"{SCAB.text} {scab_more}", SCAB.title)
    press = EvidenceItem(PRESS.source, PRESS.location, f"{PRESS.text} {press_more}", PRESS.title)
    respond = by_query({"new press cost": found(press)}, otherwise=found(scab))
    # Enough for the answer from the first search's passage, not for both parts' passages.
    settings = {"chat.research_token_budget": 600, "chat.max_tokens": 256}
    engine, tools, provider, recorder = make([Step("Long Meadow [1].")], respond, settings=settings)
    result = asyncio.run(engine.run(TWO_PARTS, tools))
    assert result.stop_reason == "token_budget"
    assert engine_rounds(recorder)[0].progress  # the round that found the second part's passage
    # The answer's request (part by part: the second part's) did not fit: the final answers.
    assert [request.phase for request in provider.requests][-1] == "final"
    assert len(provider.requests) == (2 if part_by_part else 1)
    assert recorder.of(ev.ResearchStopped)[0].reason == "token_budget"


def test_the_engine_stops_researching_before_a_round_when_the_answer_would_not_fit() -> None:
    filler = " The figures were agreed at the members' meeting and recorded in the minutes." * 12
    log = EvidenceItem(LOG.source, LOG.location, LOG.text + filler, LOG.title)
    respond = by_query({"Inspection Note 14": found(NOTE)}, otherwise=found(log))
    # The answer from the first search's passage alone does not fit what is left.
    settings = {"chat.research_token_budget": 400, "chat.max_tokens": 256}
    engine, tools, provider, recorder = make([Step("A.")], respond, settings=settings)
    result = asyncio.run(engine.run("Who inspected the storm damage at Curlew Rock?", tools))
    assert result.stop_reason == "token_budget"
    assert len(tools.calls) == 1 and not engine_rounds(recorder)  # no round was begun
    assert [request.phase for request in provider.requests] == ["final"]


def test_a_part_no_passage_answers_is_read_around_its_hit_and_at_its_document_s_opening() -> None:
    dam = EvidenceItem(
        "reservoirs/fellgate.md",
        "lines 30-34",
        "The dam at Fellgate was inspected in 2024.",
        "Fell",
    )
    figures = EvidenceItem(
        "reservoirs/fellgate.md", "lines 10-14", "| Dam height | 31.4 m |", "Fellgate Reservoir"
    )

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if name == "read_document":
            return found(figures, name=name) if values["start_line"] == 1 else found(dam, name=name)
        return found(dam) if values["query"] == "tall dam fellgate" else found(SCAB)

    engine, tools, provider, recorder = make([Step("Long Meadow."), Step("31.4 m.")], respond)
    question = "Which orchard has apple scab, and how tall is the dam at Fellgate?"
    asyncio.run(engine.run(question, tools))
    reads = [values for name, values in tools.calls if name == "read_document"]
    assert reads == [
        {"path": "reservoirs/fellgate.md", "start_line": 18, "end_line": 46},
        {"path": "reservoirs/fellgate.md", "start_line": 1, "end_line": 24},
    ]
    # One call for the part in each round: its search, the lines around its hit, the opening.
    assert [e.round for e in engine_rounds(recorder)] == [1, 2, 3]
    assert "| Dam height | 31.4 m |" in provider.requests[-1].messages[-1].content
