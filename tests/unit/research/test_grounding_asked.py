"""Grounding reads an answer as an answer to its question (issue 40, items 2 and 4).

Each claim can stand on a passage sentence and the answer still not answer: it gives no value of
the kind asked for, only repeats the question, gives a value its sentence says of something else,
or answers a narrower question than anything found ("a *senior* fare"). And when nothing found
holds any of the question's names and key terms, the reply is "not found" before any answer.
"""

from __future__ import annotations

import asyncio

import pytest

from imprint_desktop.core.research import sources
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.grounding import PassageText, ground, unmentioned
from imprint_desktop.core.research.grounding.words import stem_of
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from tests.support.fake_tools import FakeTools
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

TIMETABLE = PassageText(
    1,
    "# Timetable 2024\n\nIn summer the first train leaves Tarnmouth at 09:40 and the last train "
    "leaves Crag Quarry at 17:15. The journey takes 42 minutes.\n",
    "operations/timetable-2024.md",
    "Timetable 2024",
)
HALT = PassageText(
    2,
    "# Crag Halt\n\nThe halt closed in 1947, when the quarry company built a road to the village. "
    "Volunteers rebuilt the platform, and the halt reopened in 1989.\n",
    "stations/crag-halt.md",
    "Crag Halt",
)
FARES = PassageText(
    3,
    "Ticket,Price\nAdult return,18.50\nChild return,9.25\nFamily return,46.00\n",
    "finance/fares.csv",
)
VIADUCT = PassageText(
    4,
    "# Beck Viaduct\n\nThe flood of 1912 swept away two spans of Beck Viaduct. Rebuilding it cost "
    "£2,340, paid by the quarry company.\n\nThe original viaduct of 1878 was a timber trestle "
    "that cost £1,120.\n",
    "incidents/1912-flood.md",
    "Beck Viaduct",
)
SOCIETY = PassageText(
    5,
    "# The preservation society\n\nThe society was founded in 1962 by Tom Ashworth, a "
    "schoolteacher.\n\nThe society now has about 340 members.\n",
    "people/volunteers.md",
    "The preservation society",
)
REPORT = PassageText(
    6,
    "Passenger journeys: 61,200 (2022: 55,800).\nTicket revenue: 412,000 pounds.\n",
    "finance/annual-report-2023.txt",
    "Annual report",
)
RESERVOIR = PassageText(
    7,
    "# Cullerby Reservoir\n\n| Item | Value |\n|---|---|\n| Storage capacity | 6.85 million "
    "cubic metres |\n| Dam height | 18.2 m |\n",
    "assets/reservoirs/cullerby.md",
    "Cullerby Reservoir",
)
ALL = (TIMETABLE, HALT, FARES, VIADUCT, SOCIETY, REPORT, RESERVOIR)


def notes(question: str, answer: str) -> list[str]:
    return [claim.note for claim in ground(question, answer, ALL).grounding.flagged]


# --- what the answer gives ------------------------------------------------------------------------


def test_an_answer_without_the_kind_of_value_asked_for_is_flagged() -> None:
    grounding = ground(
        "What time does the last train leave Crag Quarry in summer?",
        "The last train leaves Crag Quarry in summer, after the journey from Tarnmouth [1].",
        ALL,
    ).grounding
    assert grounding.verdict in ("partly", "unsupported")
    assert "the answer gives no time, which the question asks for" in grounding.flagged[0].note
    # What does answer it is offered.
    assert "17:15" in grounding.offered


def test_an_answer_to_which_that_names_nothing_is_flagged() -> None:
    valves = PassageText(
        8,
        "# Valve operations\n\nEvery valve opened or shut on the network is written up on form "
        "OP-17, which is handed in at the end of the shift.\n",
        "operations/procedures-manual.md",
    )
    question = "Which form is filled in after a valve on the network is shut?"
    said = ground(question, "The one that is handed in at the end of the shift.", (valves,))
    assert [c.note for c in said.grounding.flagged] == [
        "the answer gives no name, code or number, which the question asks for"
    ]
    assert ground(question, "It is form OP-17.", (valves,)).grounding.verdict == "supported"
    # The sentence's first word, capitalised, is no part of the name the passage gives.
    assert ground(question, "Form OP-17.", (valves,)).grounding.verdict == "supported"


def test_an_answer_that_only_repeats_the_question_is_flagged() -> None:
    assert notes(
        "What time does the last train leave Crag Quarry in winter?",
        "The last train leaves Crag Quarry in winter [1].",
    ) == ["the answer only repeats the question"]


def test_a_number_written_as_a_word_is_a_number_given() -> None:
    question = "How many trains leave Crag Quarry in summer?"
    assert notes(question, "Two trains leave Crag Quarry.") == []
    assert notes(question, "Trains leave Crag Quarry.") == [
        "the answer gives no number, which the question asks for"
    ]


def test_the_same_answer_giving_the_time_is_supported() -> None:
    grounding = ground(
        "What time does the last train leave Crag Quarry in summer?",
        "The last train leaves Crag Quarry at 17:15.",
        ALL,
    ).grounding
    assert grounding.verdict == "supported", grounding


def test_a_true_year_said_of_something_else_is_no_answer_to_when() -> None:
    grounding = ground("When did Crag Halt reopen?", "The halt closed in 1947.", ALL).grounding
    assert [c.note for c in grounding.flagged] == [
        "the date or year the answer gives is said of something else, not of “reopen”"
    ]
    assert grounding.offered == ("Volunteers rebuilt the platform, and the halt reopened in 1989.")
    assert ground("When did Crag Halt reopen?", "It reopened in 1989.", ALL).grounding.verdict == (
        "supported"
    )


def test_a_name_given_for_a_question_about_another_role_is_flagged() -> None:
    # The question asks who chaired it; the only name found is its founder's, from a sentence
    # holding none of what it asks, so nothing found says who chaired it.
    (note,) = notes(
        "Who was the first chairman of the preservation society?",
        "The first chairman of the preservation society was Tom Ashworth.",
    )
    assert note == "“Tom Ashworth”: nothing found mentions “chairman”"


# --- narrower than anything found -----------------------------------------------------------------


def test_a_value_for_a_narrower_thing_than_anything_found_is_flagged() -> None:
    # Adult and child fares are found; nothing mentions a senior fare.
    assert notes(
        "How much does a senior return ticket cost?", "A senior return ticket costs £18.50."
    ) == ["“£18.50”: nothing found mentions “senior”"]
    assert not notes(
        "How much does an adult return ticket cost?", "An adult return ticket costs £18.50."
    )


def test_a_value_whose_sentence_lacks_a_narrowing_word_another_holds_is_flagged() -> None:
    (note,) = notes("What did building the original Beck Viaduct cost?", "It cost £2,340 to build.")
    assert note.startswith("“£2,340”: the passage [4] says this of ")
    assert not notes("What did building the original Beck Viaduct cost?", "It cost £1,120.")


def test_a_value_from_a_sentence_of_no_year_is_not_one_of_the_year_asked() -> None:
    assert notes(
        "How many members did the preservation society have in 1962?",
        "The society had about 340 members.",
    ) == ["“340”: the passage [5] does not say this of 1962"]
    # The year stands in what the sentence stands under (its file name): it is of that year.
    assert not notes(
        "How many passenger journeys were made in 2023?", "There were 61,200 journeys."
    )


# --- right answers stay unflagged -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # A verb the documents do not use is a paraphrase, not a narrower question.
        ("How much can Cullerby Reservoir hold?", "It holds 6.85 million cubic metres."),
        ("How tall is the dam at Cullerby?", "The dam is 18.2 m high."),
        # The owner of what is asked about is named otherwise in the documents.
        ("What was the company's ticket revenue in 2023?", "It was 412,000 pounds."),
        ("How many minutes does the journey take?", "The journey takes 42 minutes."),
        # A verb after "that" does not narrow what is asked about.
        (
            "How long is the journey that carries people from Tarnmouth to Crag Quarry?",
            "The journey takes 42 minutes.",
        ),
    ],
)
def test_a_right_answer_in_other_words_is_not_flagged(question: str, answer: str) -> None:
    grounding = ground(question, answer, ALL).grounding
    assert grounding.verdict == "supported", grounding


def test_words_are_compared_by_what_they_are_a_form_of() -> None:
    assert stem_of("notes") == stem_of("note")
    assert stem_of("kept") == stem_of("keepers") == stem_of("keep")
    assert stem_of("boxes") == stem_of("box")
    assert stem_of("drove") == stem_of("drive")


# --- nothing found about the question -------------------------------------------------------------


def test_passages_holding_none_of_the_questions_words_leave_it_unmentioned() -> None:
    assert unmentioned("What is the capital of Australia?", ALL) == ("capital", "Australia")
    assert unmentioned("zqxjkv", ALL) == ("zqxjkv",)
    assert unmentioned("When did Crag Halt reopen?", ALL) == ()
    assert unmentioned("Tell me everything.", ALL) == ()  # nothing to look for
    assert unmentioned("What is the capital of Australia?", ()) == ()  # nothing found at all


def test_evidence_about_something_else_ends_the_reply_as_not_found() -> None:
    halt = EvidenceItem("stations/crag-halt.md", "lines 1-4", HALT.text, "Crag Halt")
    provider = ScriptedProvider([Step("The capital of Australia is Canberra.")])
    engine = ResearchEngine(provider, research_settings({"chat.research_timeout_sec": 60}))
    tools = FakeTools(lambda name, values: ToolResult(name, "ok", "Passages.", (halt,)))
    result = asyncio.run(engine.run("What is the capital of Australia?", tools))
    assert (result.stop_reason, result.final_mode) == ("answered", "no_evidence")
    assert result.grounding is not None and result.grounding.verdict == "not_found"
    assert result.answer.startswith(sources.NOT_FOUND_LABEL)
    assert "nothing found mentions “capital” or “Australia”" in result.answer
    assert "Canberra" not in result.answer


GANNET = PassageText(
    4,
    "# Gannet Point\n\nGannet Point was automated in 1986. The last principal keeper was Owen "
    "Carew, who left on 3 March 1986.\n",
    "stations/gannet-point.md",
    "Gannet Point",
)


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (
            "Gannet Point became automatic in 1986 [4]. The answer is: the person who was "
            "Gannet Point's last keeper [4].",
            "the answer gives no name for “who was its last keeper”",
        ),
        ("Gannet Point became automatic in 1986, and its last keeper was Owen Carew [4].", ""),
        ("It became automatic in 1986 [4]. Its last keeper was Owen Carew.", ""),
    ],
)
def test_each_ask_of_a_question_wants_its_own_answer(answer: str, note: str) -> None:
    """A question that asks two things is not answered by an answer to its first alone: the
    second ask's kind of value (a name) must be given too, and the question's own names (Gannet
    Point) do not count for it."""
    grounded = ground(
        "When did Gannet Point become automatic and who was its last keeper?", answer, [GANNET]
    )
    notes = [claim.note for claim in grounded.grounding.claims if claim.note]
    assert notes == ([note] if note else [])
    assert grounded.grounding.verdict == ("partly" if note else "supported")
