"""A second look (issue 40): a small model's flagged answer is asked again from the one passage
sentence that answers the question, and the new answer replaces it only when it stands."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.grounding import (
    PassageText,
    SecondLook,
    confirms,
    what_stands,
    worth_a_second_look,
)
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from tests.support.fake_tools import FakeTools
from tests.support.research_run import Recorder
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

STATION = PassageText(
    1,
    "# Lakeside station\n\nLakeside has a passing loop, added in 1903. Platform: a single stone "
    "platform 84 metres long, long enough for a six-coach train. The tea room opened in 1921.\n",
    "stations/lakeside.md",
    "Lakeside station",
)
DAM = PassageText(
    2,
    "# Fellgate dam\n\nThe last section 10 inspection (2024) found the dam in good condition.\n",
    "reservoirs/fellgate.md",
    "Fellgate dam",
)
PLATFORM = "How long is the platform at Lakeside station?"


def test_a_flagged_answer_is_worth_a_second_look_from_the_sentence_that_answers() -> None:
    look = worth_a_second_look(PLATFORM, "The platform is 1903 metres long.", [STATION])
    assert look is not None and look.passage == 1
    assert "84 metres long" in look.sentence


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (PLATFORM, "The platform at Lakeside station is 84 metres long."),  # it stands
        ("Which company built the platform?", "Brindley & Co built it."),  # no checkable kind
        ("How long is the platform, and when did the tea room open?", "It is 3 metres."),
    ],
)
def test_no_second_look_for_an_answer_that_stands_or_a_question_it_cannot_check(
    question: str, answer: str
) -> None:
    assert worth_a_second_look(question, answer, [STATION]) is None


def test_the_answer_asked_again_stands_when_it_gives_the_sentence_s_value() -> None:
    look = SecondLook(1, "Platform: a single stone platform 84 metres long.")
    assert confirms(PLATFORM, "The platform is 84 metres long.", [STATION], look)
    # Another value of the sentence's passage, or none at all, does not stand.
    assert not confirms(PLATFORM, "The platform is 1903 metres long.", [STATION], look)
    assert not confirms(PLATFORM, "The platform is long enough for six coaches.", [STATION], look)
    assert not confirms(PLATFORM, "", [STATION], look)


def test_a_label_in_the_sentence_is_no_value_to_answer_with() -> None:
    look = SecondLook(2, "The last section 10 inspection (2024) found the dam in good condition.")
    assert not confirms("How tall is the Fellgate dam?", "It is 10.", [DAM], look)


# --- through the engine ------------------------------------------------------------------------

SMALL = 135_000_000
ITEM = EvidenceItem(STATION.source, "lines 1-4", STATION.text, STATION.title)


def make(
    script: Any, parameters: int | None = SMALL, settings: Mapping[str, object] | None = None
) -> tuple[ResearchEngine, FakeTools, ScriptedProvider, Recorder]:
    chosen = research_settings({"chat.research_timeout_sec": 60, **(settings or {})})
    provider = ScriptedProvider(script, context_window=32_768)
    provider.parameters = parameters
    recorder = Recorder()
    engine = ResearchEngine(provider, chosen, sink=recorder)
    tools = FakeTools(lambda n, v: ToolResult("search_workspace", "ok", ITEM.text, (ITEM,)))
    return engine, tools, provider, recorder


def finals(recorder: Recorder) -> list[dict[str, Any]]:
    lines = [trace_line(event) for event in recorder.events]
    return [line for line in lines if line and line["type"] == "final"]


def test_a_small_model_s_flagged_answer_is_replaced_by_the_answer_from_the_sentence() -> None:
    script = [Step("The platform is 1903 metres long."), Step("It is 84 metres long [1].")]
    engine, tools, provider, recorder = make(script)
    result = asyncio.run(engine.run(PLATFORM, tools))
    assert result.final_mode == "model" and result.stop_reason == "answered"
    assert "84 metres" in result.answer and "1903" not in result.answer
    assert result.grounding is not None and result.grounding.verdict == "supported"
    # The second request held the one sentence, not the passage, and was a final request.
    first, second = provider.requests
    assert first.phase == "research" and first.tools == ()
    assert second.phase == "final" and second.tools == ()
    assert "84 metres long" in second.messages[-1].content
    assert "tea room" not in second.messages[-1].content
    assert second.messages[-1].content.rstrip().endswith(PLATFORM)
    assert len(finals(recorder)) == 1  # one final line, as every reply has


def test_an_answer_asked_again_that_does_not_stand_leaves_the_first_flagged() -> None:
    script = [Step("The platform is 1903 metres long."), Step("It opened in 1921.")]
    engine, tools, provider, recorder = make(script)
    result = asyncio.run(engine.run(PLATFORM, tools))
    assert len(provider.requests) == 2
    assert "1903" in result.answer and result.grounding is not None
    assert result.grounding.verdict != "supported"
    assert len(finals(recorder)) == 1


def test_a_model_that_drives_its_own_research_gets_no_second_look() -> None:
    script = [Step("The platform is 1903 metres long.")]
    engine, tools, provider, _ = make(script, parameters=7_000_000_000)
    result = asyncio.run(engine.run(PLATFORM, tools))
    assert len(provider.requests) == 1 and "1903" in result.answer


def test_stop_during_the_second_look_keeps_the_first_answer() -> None:
    holder: dict[str, ResearchEngine] = {}

    def script(request: Any) -> Step:
        if request.phase == "final":
            holder["engine"].reply.cancel.cancel()
            return Step("It is 84 metres long.")
        return Step("The platform is 1903 metres long.")

    engine, tools, _provider, recorder = make(script)
    holder["engine"] = engine
    result = asyncio.run(engine.run(PLATFORM, tools))
    assert "1903" in result.answer
    assert sum(isinstance(event, ev.FinalFinished) for event in recorder.events) == 1


def test_a_table_a_search_cut_onto_one_line_is_looked_at_row_by_row() -> None:
    plan = PassageText(
        3,
        "### Pumping stations | Scheme | £m | |---|---| | Wath End pumps | 3.9 | | Rudd Lane "
        "booster: variable-speed pumps | 0.7 | | **Total** | **4.6** | The future of Wath End was "
        "considered by the board in 2023.",
        "assets/plan.md",
        "Asset plan",
    )
    question = "In what year was Rudd Lane booster pumping station built?"
    look = worth_a_second_look(question, "It was built in 1812.", [plan])
    # The row that names Rudd Lane, not the table and the prose after it run together.
    assert look is not None and look.sentence == "Rudd Lane booster: variable-speed pumps | 0.7"
    # Its cost is no year, and the year of the prose after the table is not in the row.
    assert not confirms(question, "It was built in 0.7.", [plan], look)
    assert not confirms(question, "It was built in 2023.", [plan], look)


@pytest.mark.parametrize(
    "question",
    ["How long is the platform at Skelwith station?", "How long is the senior platform?"],
)
def test_no_second_look_when_what_the_question_asks_about_is_in_nothing_found(
    question: str,
) -> None:
    assert worth_a_second_look(question, "It is 1903 metres long.", [STATION]) is None


def test_no_second_look_from_a_sentence_that_holds_none_of_the_question_s_terms() -> None:
    village = PassageText(
        4,
        "# Brantwater Reservoir\n\nA navvy village of some 600 people stood at Brant Foot.\n",
        "reservoirs/brantwater.md",
        "Brantwater Reservoir",
    )
    question = "What volume of water does Brantwater store when full?"
    assert worth_a_second_look(question, "It stores 91.5 Ml/d.", [village]) is None


PRICES = PassageText(
    5,
    "# Kestrel: questions and answers\n\nThe list price of the Kestrel is $56,000 per "
    "instrument.\n",
    "product/kestrel-faq.md",
    "Kestrel: questions and answers",
)


def test_a_sentence_naming_the_subject_with_what_is_asked_of_it_is_worth_a_second_look() -> None:
    # "spectrometer", the question's one key term, is in no sentence; "the list price of the
    # Kestrel" names its subject and what it asks of it.
    question = "What is the list price of the Kestrel spectrometer?"
    look = worth_a_second_look(question, "The Kestrel costs $52,000.", [PRICES])
    assert look is not None and "$56,000" in look.sentence
    # The subject's name alone is not enough.
    weight = PassageText(6, "# Hardware\n\nThe Kestrel weighs 4.2 kg.\n", "hw.md", "Hardware")
    assert worth_a_second_look(question, "The Kestrel costs $52,000.", [weight]) is None


def test_what_stands_of_an_answer_asked_again_is_its_sound_opening() -> None:
    look = SecondLook(1, "Platform: a single stone platform 84 metres long.")
    again = "The platform is 84 metres long [1]. So it is 168 metres both ways."
    assert what_stands(PLATFORM, again, [STATION], look) == "The platform is 84 metres long [1]."
    # All of it when all of it stands; nothing when its opening does not.
    whole = "The platform is 84 metres long. It is a single stone platform."
    assert what_stands(PLATFORM, whole, [STATION], look) == whole
    assert what_stands(PLATFORM, "It is 168 metres. It is 84 metres long.", [STATION], look) == ""


def test_an_answer_asked_again_is_kept_to_the_part_of_it_that_stands() -> None:
    script = [
        Step("The platform is 1903 metres long."),
        Step("It is 84 metres long [1]. So, 84 × 2 = 168 metres of platform."),
    ]
    engine, tools, _provider, _recorder = make(script)
    result = asyncio.run(engine.run(PLATFORM, tools))
    assert "84 metres" in result.answer and "168" not in result.answer
    assert result.grounding is not None and result.grounding.verdict == "supported"


def test_an_answer_asked_again_is_cut_before_a_clause_of_its_own_that_does_not_stand() -> None:
    look = SecondLook(1, "Platform: a single stone platform 84 metres long.")
    again = "The platform is 84 metres long, which makes it 300 metres longer than the quay."
    assert what_stands(PLATFORM, again, [STATION], look) == "The platform is 84 metres long."
    # A clause that stands is kept.
    kept = "The platform is 84 metres long, long enough for a six-coach train."
    assert what_stands(PLATFORM, kept, [STATION], look) == kept
