"""A question's parts (issue 43): what the engine searches for on a small model's behalf."""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.parts import MAX_PARTS, parts_of


def texts(question: str) -> list[str]:
    return [part.text for part in parts_of(question)]


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Which orchard has apple scab and how much will the new press cost?",
            ["Which orchard has apple scab?", "How much will the new press cost?"],
        ),
        (
            "When was the dam built? Who designed it?",
            ["When was the dam built?", "Who designed the dam?"],
        ),
        (
            "What did the repair cost; when was it done?",
            ["What did the repair cost?", "When was the repair done?"],
        ),
    ],
)
def test_clauses_that_ask_a_question_of_their_own_are_parts(
    question: str, parts: list[str]
) -> None:
    assert texts(question) == parts
    assert {part.kind for part in parts_of(question)} == {"clause"}


def test_a_later_clause_names_what_its_it_refers_to() -> None:
    first, second = parts_of("When did Gannet Point become automatic and who was its last keeper?")
    assert first.text == "When did Gannet Point become automatic?"
    assert second.text == "Who was Gannet Point's last keeper?"
    assert "gannet" in second.query.split()


def test_a_clause_that_names_nothing_is_searched_with_the_question_s_names() -> None:
    _first, second = parts_of(
        "What did repairing the 1974 lamp at Skerry Head cost and what caused the failure?"
    )
    assert second.text == "What caused the failure?"
    assert second.query.split() == ["caused", "failure", "1974", "skerry", "head"]


def test_a_clause_that_leaves_out_what_it_counts_takes_it_from_the_first() -> None:
    assert texts("How many trees does Long Meadow have and how many does Hill Field have?") == [
        "How many trees does Long Meadow have?",
        "How many trees does Hill Field have?",
    ]


@pytest.mark.parametrize(
    ("question", "sides"),
    [
        (
            "Compare the estimated with the actual saving of automation.",
            ["The estimated saving of automation?", "The actual saving of automation?"],
        ),
        (
            "What is the difference between the 2023 and the 2024 apple harvest?",
            ["The 2023 apple harvest?", "The 2024 apple harvest?"],
        ),
        (
            "How does the 2023 harvest compare with the 2024 harvest?",
            ["The 2023 harvest?", "The 2024 harvest?"],
        ),
        (
            "Bramley versus Cox for a wet orchard",
            ["Bramley for a wet orchard?", "Cox for a wet orchard?"],
        ),
    ],
)
def test_the_sides_of_a_comparison_are_parts_completed_by_each_other(
    question: str, sides: list[str]
) -> None:
    assert texts(question) == sides
    assert {part.kind for part in parts_of(question)} == {"side"}


@pytest.mark.parametrize(
    ("question", "items"),
    [
        (
            "What are the range and the height of the Gannet Point light?",
            [
                "What are the range of the Gannet Point light?",
                "What are the height of the Gannet Point light?",
            ],
        ),
        (
            "What is the cost of the north wing and the south wing?",
            ["What is the cost of the north wing?", "What is the cost of the south wing?"],
        ),
        ("List every keeper and station.", ["List every keeper?", "List every station?"]),
    ],
)
def test_the_items_of_a_list_are_parts_completed_by_what_they_share(
    question: str, items: list[str]
) -> None:
    assert texts(question) == items
    assert {part.kind for part in parts_of(question)} == {"item"}


def test_a_part_that_asks_for_every_item_is_a_list_part() -> None:
    assert all(part.listing for part in parts_of("List every keeper and station."))
    [whole] = parts_of("Which variety is grown in each orchard?")
    assert whole.kind == "whole" and whole.listing
    [plain] = parts_of("Which variety is grown at Long Meadow?")
    assert not plain.listing


@pytest.mark.parametrize(
    "question",
    [
        "Who founded Hartley and Stowe?",  # a name with "and" in it
        "How much money does the current asset plan set aside for dam and reservoir safety work?",
        "When did the Tarn Valley Railway open to passengers?",
        "What is the capital of Australia?",
        "and?",
        "",
    ],
)
def test_a_question_that_asks_one_thing_is_one_part(question: str) -> None:
    [part] = parts_of(question)
    assert part.kind == "whole" and part.text == question.strip()


def test_a_question_of_too_many_parts_is_asked_as_a_whole() -> None:
    question = "Who built it, and when was it lit, and who kept it, and why, and how tall is it?"
    assert len(parts_of(question)) == 1 < MAX_PARTS


def test_what_a_part_asks_leaves_out_how_to_answer() -> None:
    [part] = parts_of("List every principal keeper.")
    assert part.terms == frozenset({"princ", "keepe"})
