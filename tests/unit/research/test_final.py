"""The final stage: its answer and its charge through the one door, and the final request within a
reply (no tools, no call markup, its own request line, a cut answer completed)."""

from __future__ import annotations

import asyncio
import time

import pytest

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderDeadlineError,
)
from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.final import FinalAnswer, FinalStage, without_call_markup
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.tools.tool import EvidenceItem
from tests.support.fake_tools import passage
from tests.support.growth import growth
from tests.support.research_run import (
    make,
    research_then_final,
    run,
    search,
)
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings


def final_answer(step: Step) -> tuple[FinalAnswer, Reply, list[ev.Event], Requests]:
    events: list[ev.Event] = []
    reply = Reply(
        ScriptedProvider([step]),
        research_settings(),
        cancel=CancelToken(),
        sink=events.append,
        clock=time.monotonic,
    )
    reply.ledger.record([EvidenceItem("h.md", "lines 1-2", "Lit in 1862.")], judge=True)
    reply.question = "When was it lit?"
    requests = Requests(reply)
    answer = asyncio.run(FinalStage(reply, requests).run("no_progress"))
    return answer, reply, events, requests


def test_the_final_answer_comes_back_with_its_charge_outside_the_research_budget() -> None:
    answer, reply, events, requests = final_answer(Step("Lit in 1862 [1]."))
    [line] = [e for e in events if isinstance(e, ev.RequestFinished)]
    assert (answer.text, answer.mode, answer.error) == ("Lit in 1862 [1].", "model", None)
    assert requests.final_charged == line.charged > 0
    assert line.refunded == line.reserved - line.charged
    assert line.budget_left == reply.tokens.left
    assert reply.tokens.charged == 0, "the final request was charged to the research budget"
    assert [e.mode for e in events if isinstance(e, ev.FinalFinished)] == ["model"]


def test_a_fallback_after_a_completed_request_still_says_what_it_charged() -> None:
    answer, _, events, requests = final_answer(Step("   "))
    [line] = [e for e in events if isinstance(e, ev.RequestFinished)]
    assert answer.mode == "fallback" and answer.error == "the model wrote an empty final answer"
    assert requests.final_charged == line.charged > 0
    assert "Lit in 1862." in answer.text


def test_a_failed_final_request_charges_nothing() -> None:
    answer, _, events, requests = final_answer(Step(fail=True))
    [line] = [e for e in events if isinstance(e, ev.RequestFinished)]
    assert answer.mode == "fallback" and requests.final_charged == 0 == line.charged
    assert line.stop == "error"


def test_a_continuation_never_shows_the_instruction_it_was_given() -> None:
    from imprint_desktop.core.providers.base import Message
    from imprint_desktop.core.research import prompts
    from imprint_desktop.core.research.final import without_echo

    asked = [
        Message("assistant", "The light stands on piles"),
        Message("user", prompts.CONTINUE_ANSWER),
    ]
    echoed = f"because the sand could not carry masonry. {prompts.CONTINUE_ANSWER}"
    assert without_echo(echoed, asked) == "because the sand could not carry masonry."
    # Only a continuation is cleaned: an answer may quote anything.
    assert without_echo(echoed, [Message("user", "Q?")]) == echoed


# --- the final request within a reply: no tools, no call markup, its line, cut answers ---------


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
