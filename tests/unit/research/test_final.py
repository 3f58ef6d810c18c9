"""The final stage on its own: its answer, and what its request through the one door charged."""

from __future__ import annotations

import asyncio
import time

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.final import FinalAnswer, FinalStage
from imprint_desktop.core.research.reply import Reply
from imprint_desktop.core.research.requests import Requests
from imprint_desktop.core.tools.base import EvidenceItem
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
