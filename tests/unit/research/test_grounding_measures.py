"""What a question asks its answer to be measured in, and which sentences hold such a value
(issue 40): a sentence without one is neither offered as the documents' answer nor asked again
from ("What did a box seat cost?" offered "The average house was 138, or 82 per cent of the 168
seats.", and asked again from it)."""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.grounding import PassageText, ground, worth_a_second_look
from imprint_desktop.core.research.grounding.measures import (
    holds_measure,
    measures_asked,
    units_asked,
)


@pytest.mark.parametrize(
    ("question", "measures"),
    [
        ("How long does the Kestrel battery last?", {"time"}),
        ("How long is the platform at Lakeside?", {"length", "time"}),
        ("How tall is the fly tower?", {"length"}),
        ("How heavy is each follow spot?", {"mass"}),
        ("How much does the cyclorama cloth weigh?", {"mass"}),
        ("What did a box seat cost in the 2024-25 season?", {"money"}),
        ("How much per hour does a community group pay to hire the room?", {"money"}),
        ("What is the research and development budget?", {"money"}),
        ("How many people came to the open day?", set()),
        ("When did the theatre open?", set()),
    ],
)
def test_the_measures_a_question_asks_for(question: str, measures: set[str]) -> None:
    assert measures_asked(question) == measures


@pytest.mark.parametrize(
    ("text", "measure", "holds"),
    [
        ("It cost £14,800.", "money", True),
        ("season: 2023-24; gallery_pounds: 12.50; under_18_pounds: 8.00", "money", True),
        ("Item: Spotlight; Cost each (pounds): 2650", "money", True),
        ("The average house was 138, or 82 per cent of the 168 seats.", "money", False),
        ("Pantomime seats cost more in every band.", "money", False),  # no value at all
        ("Item: Follow spot; Weight each (kg): 18.4", "mass", True),
        ("Item: Cyclorama cloth; Cost each (pounds): 2650; Notes: 11 m wide", "mass", False),
        ("The battery lasted 11 hours at 5 °C.", "time", True),
        ("The production Kestrel weighs 4.2 kg with its battery.", "time", False),
    ],
)
def test_a_sentence_holds_a_value_of_the_measure_by_its_unit_or_its_column(
    text: str, measure: str, holds: bool
) -> None:
    assert holds_measure(text, frozenset((measure,))) is holds


HOUSE = PassageText(
    1,
    "# The season in numbers\n\nThe average house was 138, or 82 per cent of the 168 seats. "
    "Box seats were added to the gallery in 2019.\n",
    "governance/annual-report.md",
    "Annual report",
)
REGISTER = PassageText(
    2,
    "Ref: STG-03; Item: Cyclorama cloth; Department: Stage; Quantity: 1; Year bought: 2018; "
    "Cost each (pounds): 2650; Notes: 11 m wide by 6.5 m drop",
    "productions/register.xlsx",
    "Stage and wardrobe register",
)


@pytest.mark.parametrize(
    ("question", "answer", "passage"),
    [
        ("What did a box seat cost?", "A box seat cost 2 pounds more.", HOUSE),
        ("How much does the cyclorama cloth weigh?", "It weighs 40 kg.", REGISTER),
    ],
)
def test_a_sentence_without_the_measure_asked_is_not_offered_nor_asked_from(
    question: str, answer: str, passage: PassageText
) -> None:
    result = ground(question, answer, [passage])
    assert result.grounding.verdict in ("partly", "unsupported")
    assert result.grounding.offered == ""
    assert worth_a_second_look(question, answer, [passage]) is None


def test_a_row_that_names_the_measure_in_its_column_is_offered() -> None:
    prices = PassageText(
        3,
        "season: 2023-24; stalls_pounds: 16.00; gallery_pounds: 12.50; concession_pounds: 12.00",
        "productions/ticket-prices.csv",
        "ticket-prices",
    )
    question = "What did a seat in the gallery cost in the 2023-24 season?"
    result = ground(question, "A gallery seat cost 18.50.", [prices])
    assert "gallery_pounds: 12.50" in result.grounding.offered


def test_a_word_joined_to_another_asks_for_no_measure() -> None:
    assert measures_asked("When did it switch from acetylene to solar-charged batteries?") == set()


ACCOUNTS = PassageText(
    4,
    "# Accounts for the year to September 2025\n\nWater: 3,215 pounds. Insurance: 1,140 pounds.\n"
    "The Tanner's Croft budget is lower in 2025-26 because its water main was laid in 2024-25.\n",
    "governance/annual-report.pdf",
    "Annual report 2024-25",
)


def test_an_answer_that_gives_only_seasons_for_a_sum_of_money_is_flagged() -> None:
    question = "What was the society's water bill for the year to September 2025?"
    answer = (
        "The Tanner's Croft budget is lower in 2025-26 because its water main was laid in 2024-25."
    )
    [claim] = ground(question, answer, [ACCOUNTS]).grounding.claims
    assert "a year, where the question asks for a sum of money" in claim.note
    # The sum itself stands.
    right = ground(question, "The water bill was 3,215 pounds.", [ACCOUNTS])
    assert right.grounding.verdict == "supported"


@pytest.mark.parametrize(
    ("question", "units"),
    [
        ("How many nautical miles can the light be seen from?", {"nmi", "mi"}),
        ("What percentage of callouts involved a helicopter?", {"%"}),
        ("Over what distance in kilometres was he carried?", {"km"}),
        ("How many minutes does the journey take?", {"min"}),
        ("How much per hour does a group pay?", set()),  # what the sum is of
        ("How many people came to the open day?", set()),
        ("In what year was it built?", set()),  # a date
    ],
)
def test_the_units_a_question_asks_its_answer_in(question: str, units: set[str]) -> None:
    assert units_asked(question) == units


RESCUE = PassageText(
    5,
    "# Wennick Crags, July 2023\n\nThe casualty was lowered 60 metres on ropes in two stages and "
    "then carried in the stretcher to the road end. The carry-out covered 4.8 kilometres and took "
    "3 hours. A helicopter took part in 34 of the callouts, or 26 per cent of the total.\n",
    "operations/incident.md",
    "Wennick Crags, July 2023",
)


def test_a_value_not_in_the_unit_asked_is_flagged_however_well_its_sentence_is_restated() -> None:
    question = "Over what distance in kilometres was the casualty carried out in 2023?"
    answer = (
        "The casualty was carried out 60 metres in two stages and then carried to the road end."
    )
    [claim] = ground(question, answer, [RESCUE]).grounding.claims
    assert "gives 60 metres, not a value in kilometres (as 4.8 kilometres is)" in claim.note
    assert ground(question, "It covered 4.8 kilometres.", [RESCUE]).grounding.verdict == "supported"


def test_a_count_given_for_a_percentage_is_flagged_unless_the_percentage_is_given_too() -> None:
    question = "What percentage of the 2023 callouts involved a helicopter?"
    [claim] = ground(question, "The helicopter took part in 34.", [RESCUE]).grounding.claims
    assert "gives 34, not a percentage (as 26 per cent is)" in claim.note
    both = ground(question, "It took part in 34 callouts, 26 per cent of them.", [RESCUE])
    assert both.grounding.verdict == "supported"


def test_a_period_before_what_is_asked_narrows_it() -> None:
    backups = PassageText(
        6, "# Backups\n\nThe nightly backups run at 02:30 and are kept for 35 days.\n", "b.md", "B"
    )
    question = "At what time do the weekly backups run?"
    result = ground(
        question, "The weekly backups run at 02:30 and are kept for 35 days.", [backups]
    )
    assert "nothing found mentions “weekly”" in result.grounding.claims[0].note
    assert result.grounding.offered == ""  # the nightly sentence does not answer it
    # A year is no such period: "£58.40 a year" answers "the yearly standing charge".
    charge = PassageText(7, "The standing charge is £58.40 a year.\n", "c.md", "Charges")
    yearly = ground("What is the yearly standing charge?", "It is £58.40.", [charge])
    assert yearly.grounding.verdict == "supported"


def test_a_count_answered_with_a_year_only_is_flagged() -> None:
    pilot = PassageText(
        8,
        "# Smart metering pilot\n\nFrom 2025 all new meters are smart. The pilot team fitted "
        "6,250 meters in two areas.\n",
        "projects/pilot.md",
        "Smart metering pilot",
    )
    question = "How many smart meters did the smart metering pilot fit?"
    wrong = ground(question, "It was a pilot project in 2025.", [pilot])
    assert "the answer gives only 2025, a year, where the question asks how many" in (
        wrong.grounding.claims[0].note
    )
    assert "6,250" in wrong.grounding.offered  # not the sentence of 2025 alone
    assert ground(question, "It fitted 6,250 meters.", [pilot]).grounding.verdict == "supported"
    # A count that could be a year is a count when not written as one.
    members = PassageText(9, "The society has 1500 members.\n", "m.md", "Members")
    counted = ground("How many members does the society have?", "It has 1500 members.", [members])
    assert counted.grounding.verdict == "supported"


def test_no_sentence_is_offered_that_holds_none_of_what_is_asked_about() -> None:
    # "rotavators" is in nothing found; the heaviest marrow's weight is a weight, of a marrow.
    marrow = PassageText(
        10,
        "## The heavyweights\n\nThe heaviest marrow weighed 34.7 kilograms, grown by Owain "
        "Lewis-Hart.\n",
        "show/report.md",
        "Show report",
    )
    result = ground("How heavy is each of the society's rotavators?", "They are 3.67 kg.", [marrow])
    assert result.grounding.verdict == "unsupported"
    assert result.grounding.offered == ""
