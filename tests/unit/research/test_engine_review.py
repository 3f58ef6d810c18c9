"""The research engine against ADR 0102/0157/0159 case by case: the gaps a review found.

Each test here failed before its fix. Scripted provider and tools: exact control of every request
and every result.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderDeadlineError,
    ProviderUnavailableError,
)
from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.final import without_call_markup
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.base import EvidenceItem, ToolResult
from tests.support.fake_tools import FakeTools, passage
from tests.support.growth import growth
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings
from tests.unit.research.test_engine import (
    make,
    research_then_final,
    run,
    search,
)


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


def test_the_final_request_offers_no_tool_and_its_call_markup_never_reaches_the_person() -> None:
    same = passage("The light was lit in 1862.")
    script = research_then_final(
        lambda n: Step(calls=[search("lit")]),
        'Lit in 1862 [1].<tool_call>{"name": "search_workspace"}</tool_call>',
    )
    engine, tools, provider, _ = make(
        script, lambda n, v: same, settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("When was it lit?", tools))
    final = provider.requests[-1]
    assert final.phase == "final" and final.tools == () and not final.offers_tools
    assert result.answer == "Lit in 1862 [1]."  # the call markup never reaches the person


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ('A [1].<tool_call>{"name": "x"}</tool_call>', "A [1]."),
        ("<tool_call>\n{}\n", ""),
        ('B.\n<function=search_workspace>{"query": "x"}</function>', "B."),
        ('C.[TOOL_CALLS][{"name": "x"}]', "C."),
        ("Plain answer.", "Plain answer."),
    ],
)
def test_call_markup_is_taken_out_of_a_final_answer(text: str, clean: str) -> None:
    assert without_call_markup(text) == clean


@pytest.mark.parametrize(
    "piece",
    ["<function=", "<function=x>", "<|python_tag|>a<|eom_id|>", "[TOOL_CALLS]a\n", "<tool_call>"],
)
def test_call_markup_is_taken_out_in_linear_time(piece: str) -> None:
    """A model (or a page it quoted) can repeat an opening mark a million times: the answer is
    read once, not once per mark."""
    assert growth(lambda size: without_call_markup("A." + piece * size), 1000, 4) < 8


def test_a_failed_final_has_its_request_line() -> None:
    same = passage("Same.")

    def script(request: CompletionRequest) -> Step:
        return Step(fail=True) if request.phase == "final" else Step(calls=[search("a")])

    engine, tools, _, recorder = make(
        script, lambda n, v: same, settings={"chat.research_no_progress_rounds": 2}
    )
    result = run(engine.run("?", tools))
    assert result.final_mode == "fallback"
    finals = [e for e in recorder.of(ev.RequestFinished) if e.phase == "final"]
    assert len(finals) == 1 and finals[0].stop == "error" and finals[0].charged == 0


def test_the_final_request_line_counts_its_prompt_like_every_other() -> None:
    same = passage("Same.")
    script = research_then_final(lambda n: Step(calls=[search("a")]), "Answer [1].")
    engine, tools, _, recorder = make(
        script, lambda n, v: same, settings={"chat.research_no_progress_rounds": 2}
    )
    run(engine.run("?", tools))
    started = {e.phase: e.prompt_tokens for e in recorder.of(ev.RequestStarted)}
    finished = {e.phase: e.prompt_tokens for e in recorder.of(ev.RequestFinished)}
    assert finished["final"] == started["final"]


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
    assert result.sources == (ev.SourceView(2, "harbour.md", "lines 4-5", "", cited=True),)


def test_an_answer_cut_at_its_length_is_completed_by_the_final_request() -> None:
    script = [
        Step("The light was first lit in", finish="length"),
        Step("1862, by the Harbour Board [1]."),
    ]
    engine, tools, provider, _ = make(
        script, lambda n, v: passage("Lit in 1862.", "h.md"), settings={"chat.research_first": True}
    )
    result = run(engine.run("When was the light first lit?", tools))
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert result.answer == "The light was first lit in 1862, by the Harbour Board [1]."
    final = provider.requests[-1]
    assert final.phase == "final" and final.max_tokens == engine.settings.max_tokens
    assert final.messages[-2].content == "The light was first lit in"


def test_an_answer_cut_at_the_answer_allowance_is_the_answer() -> None:
    """The research request asks for the person's answer allowance (chat.max_tokens) as the
    answer's: an answer that reaches it is as long as the person allows, not continued."""
    long_answer = "The light was first lit in 1862 [1]. " * 40  # 1,480 characters: 370 tokens
    script = [Step(long_answer.strip(), finish="length")]
    engine, tools, provider, _ = make(
        script,
        lambda n, v: passage("Lit in 1862.", "h.md"),
        settings={"chat.max_tokens": 256, "chat.research_max_output_tokens": 1024},
    )
    result = run(engine.run("When was the light first lit?", tools))
    assert result.stop_reason == "answered" and result.final_mode == "model"
    [request] = provider.requests  # no final request
    assert request.max_tokens == 1024 and request.answer_max_tokens == 256


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


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ContextOverflowError("This model's maximum context length is 4096 tokens."),
         "context_full"),
        (ProviderDeadlineError("The server asked to wait 60 s; research time ends first."),
         "time_budget"),
    ],
)  # fmt: skip
def test_a_server_s_own_limits_stop_research_and_the_final_is_written(
    error: Exception, reason: str
) -> None:
    script = [Step(calls=[search("lit")]), Step(error=error), Step("Lit in 1862 [1].")]
    engine, tools, provider, _ = make(script, lambda n, v: passage("The light was lit in 1862."))
    result = run(engine.run("When?", tools))
    assert result.stop_reason == reason and result.final_mode == "model"
    assert provider.requests[-1].phase == "final"
    assert result.answer == "Lit in 1862 [1]."
