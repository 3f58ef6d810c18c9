"""Grounding knows which place a value is said of, which document is current, and what a
reason given in words stands on (issue 40, item 2).

Three ways a wrong answer still looked right: a value the passages say of another place than the
one asked about ("How tall is the dam at Fellgate?" answered with Brantwater's), a value only an
older version of a document holds (last year's charge, from the archive), and a reason given in
words that no passage gives ("because of the design of the light"). Each is flagged, and a right
answer beside it is not.
"""

from __future__ import annotations

import pytest

from imprint_desktop.core.research.grounding import PassageText, ground
from imprint_desktop.core.research.grounding.anchors import anchors_in, year_like
from imprint_desktop.core.research.grounding.passages import units_of
from imprint_desktop.core.research.grounding.question import Question
from imprint_desktop.core.research.sources import check_block

BRANTWATER = PassageText(
    1,
    "# Brantwater Reservoir\n\nThe dam at Brantwater is 41 metres high and holds back "
    "9,200 megalitres.\n",
    "reservoirs/brantwater.md",
    "Brantwater Reservoir",
)
FELLGATE = PassageText(
    2,
    "# Fellgate Reservoir\n\nThe reservoir supplies the north of the town. The last inspection "
    "(2024) found it in good condition.\n",
    "reservoirs/fellgate.md",
    "Fellgate Reservoir",
)
FELLGATE_DAM = PassageText(
    3,
    "# Fellgate Reservoir\n\nIts dam is 28 metres high.\n",
    "reservoirs/fellgate-dam.md",
    "Fellgate Reservoir",
)


def test_a_value_said_of_another_place_is_flagged_with_the_place_it_is_said_of() -> None:
    result = ground(
        "How tall is the dam at Fellgate?", "The dam is 41 metres high.", [BRANTWATER, FELLGATE]
    )
    [claim] = result.grounding.claims
    assert result.grounding.verdict == "unsupported"
    assert "the passage [1] says this of Brantwater" in claim.note


def test_a_value_under_another_place_s_heading_is_flagged_with_that_place() -> None:
    access = PassageText(
        4,
        "## Public access\n\nThe road over the dam is a public highway with a 7.5 tonne limit.\n",
        "reservoirs/brantwater.md",
        "Brantwater Reservoir",
    )
    question = "What is the weight limit on the road over Fellgate dam?"
    answer = "The weight limit on the road over Fellgate dam is 7.5 tonnes."
    result = ground(question, answer, [access, FELLGATE])
    assert result.grounding.verdict == "unsupported"
    assert "the passage [4] says this of Brantwater Reservoir" in result.grounding.claims[0].note


def test_a_value_of_the_place_asked_about_stands() -> None:
    passages = [BRANTWATER, FELLGATE, FELLGATE_DAM]
    result = ground("How tall is the dam at Fellgate?", "The dam is 28 metres high.", passages)
    assert result.grounding.verdict == "supported", result.grounding
    assert result.grounding.claims[0].supported_by == (3,)


def test_a_value_for_a_place_no_passage_names_is_flagged() -> None:
    result = ground("How tall is the dam at Skelwith?", "The dam is 41 metres high.", [BRANTWATER])
    [claim] = result.grounding.claims
    assert result.grounding.verdict != "supported"
    assert "nothing found mentions “Skelwith”" in claim.note


def test_a_possessive_name_is_the_name() -> None:
    result = ground("How high is Brantwater's dam?", "It is 41 metres high.", [BRANTWATER])
    assert result.grounding.verdict == "supported", result.grounding


CURRENT = PassageText(
    1,
    "# Charges scheme 2025-26\n\n| Charge | Amount |\n|---|---|\n| Standing charge (per year) | "
    "£58.40 |\n",
    "finance/tariffs-2025-26.md",
    "Charges scheme 2025-26",
)
ARCHIVED = PassageText(
    2,
    "# Charges scheme 2024-25\n\n| Charge | Amount |\n|---|---|\n| Standing charge (per year) | "
    "£54.10 |\n",
    "archive/tariffs-2024-25.md",
    "Charges scheme 2024-25",
    superseded='its folder says "archive"',
)


def test_a_value_only_a_superseded_document_holds_is_flagged_and_the_current_one_offered() -> None:
    question = "What is the yearly standing charge?"
    result = ground(question, "The yearly standing charge is £54.10.", [CURRENT, ARCHIVED])
    [claim] = result.grounding.claims
    assert result.grounding.verdict != "supported"
    assert "the passage [2] is from a document that looks superseded" in claim.note
    assert "archive" in claim.note
    assert "£58.40" in result.grounding.offered


def test_the_current_value_stands() -> None:
    question = "What is the yearly standing charge?"
    result = ground(question, "The yearly standing charge is £58.40.", [CURRENT, ARCHIVED])
    assert result.grounding.verdict == "supported", result.grounding


@pytest.mark.parametrize(
    "question",
    ["What was the standing charge in 2024?", "What was the previous standing charge?"],
)
def test_a_question_about_an_earlier_version_may_be_answered_from_it(question: str) -> None:
    result = ground(question, "The standing charge was £54.10.", [CURRENT, ARCHIVED])
    assert "superseded" not in result.grounding.claims[0].note


CARRICK = PassageText(
    1,
    "# Carrick Spit light\n\n## A light on legs\n\nBecause the sand could not carry masonry, the "
    "light stood on a screw-pile structure: nine cast-iron piles screwed into the sand.\n",
    "stations/carrick-spit.md",
    "Carrick Spit light",
)
LIGHTS = PassageText(
    2,
    "station,lit,colour,power\nCarrick Spit,1863,white,acetylene\nGannet Point,1857,white,mains "
    "with diesel standby\n",
    "operations/lights.csv",
)
WHY = "Why does the Carrick Spit light stand on piles?"


def test_a_reason_no_passage_gives_is_flagged_and_the_passage_reason_offered() -> None:
    answer = "The Carrick Spit light stands on piles because of the design of the light."
    result = ground(WHY, answer, [CARRICK, LIGHTS])
    [claim] = result.grounding.claims
    assert result.grounding.verdict == "unsupported"
    assert claim.note == "“design” is not in your documents"
    # The sentence that gives the reason is offered, not the table's lines run together.
    assert result.grounding.offered.startswith("Because the sand could not carry masonry")


@pytest.mark.parametrize(
    "answer",
    [
        "The Carrick Spit light stands on piles because the sand could not carry masonry.",
        "Because the sand could not carry masonry. I hope this helps.",
    ],
)
def test_a_reason_the_passage_gives_stands(answer: str) -> None:
    result = ground(WHY, answer, [CARRICK, LIGHTS])
    assert result.grounding.verdict == "supported", result.grounding
    assert all(not claim.note for claim in result.grounding.claims)


def test_words_of_an_answer_to_a_question_for_a_value_are_not_judged_so() -> None:
    # "How many …?" is judged by its number; the words around it are the answer's own.
    result = ground(
        "How many piles carry the Carrick Spit light?",
        "Nine sturdy piles carry it [1].",
        [CARRICK],
    )
    assert "not in your documents" not in result.grounding.claims[0].note


MINUTES = PassageText(
    1,
    "# Board minutes, March 2022\n\nCordelia Pashley was appointed Chair of the Audit and Risk "
    "Committee. The Chair reported that the external audit for 2021 was complete.\n",
    "governance/board-minutes-2022-03.md",
    "Board minutes, March 2022",
)


def test_what_the_question_asks_about_named_as_the_documents_name_it_is_not_a_value() -> None:
    question = "Who was made chair of the audit committee in 2022?"
    answer = "Cordelia Pashley was made the Chair of the Audit and Risk Committee."
    result = ground(question, answer, [MINUTES])
    assert result.grounding.verdict == "supported", result.grounding


def test_a_name_the_documents_do_not_hold_is_flagged_beside_them() -> None:
    question = "Who was made chair of the audit committee in 2022?"
    answer = "Edwin Marsh was made the Chair of the Audit and Risk Committee."
    result = ground(question, answer, [MINUTES])
    assert result.grounding.verdict != "supported"
    assert "“Edwin Marsh” is not in your documents" in result.grounding.claims[0].note


TEST_REPORT = PassageText(
    1,
    "# Kestrel test report\n\n## Battery\n\nIn field trials the production battery lasted "
    "11 hours at 5 °C.\n",
    "engineering/kestrel-test-report.md",
    "Kestrel test report",
)


def test_a_value_said_under_another_condition_than_the_question_names_is_flagged() -> None:
    question = "How many hours does the Kestrel battery last at 25 °C?"
    result = ground(question, "It lasts 11 hours at 25 °C.", [TEST_REPORT])
    assert result.grounding.verdict != "supported"
    assert "the passage [1] says this of 5 °C" in result.grounding.claims[0].note


def test_a_value_under_the_condition_the_question_names_stands() -> None:
    question = "How many hours does the Kestrel battery last at 5 °C?"
    result = ground(question, "It lasts 11 hours at 5 °C.", [TEST_REPORT])
    assert result.grounding.verdict == "supported", result.grounding


TIMETABLE = PassageText(
    1,
    "# Timetable 2024\n\nIn summer the last train leaves Crag Quarry at 17:15.\n",
    "operations/timetable-2024.md",
    "Timetable 2024",
)
OPENING = PassageText(
    2,
    "# The opening of the line\n\nBefore the railway a wet winter could close the road for weeks."
    "\n",
    "history/opening.md",
    "The opening of the line",
)


def test_a_time_from_a_passage_that_never_mentions_the_season_asked_is_flagged() -> None:
    # "winter" is in the evidence, but not in the passage the time comes from.
    question = "What time does the last train leave Crag Quarry in winter?"
    result = ground(question, "The last train leaves at 17:15.", [TIMETABLE, OPENING])
    assert result.grounding.verdict != "supported"
    assert "the passage [1] does not mention “winter”" in result.grounding.claims[0].note


def test_a_time_from_the_passage_of_the_season_asked_stands() -> None:
    question = "What time does the last train leave Crag Quarry in summer?"
    result = ground(question, "The last train leaves at 17:15.", [TIMETABLE, OPENING])
    assert result.grounding.verdict == "supported", result.grounding


HALT = PassageText(
    1,
    "# Crag Halt\n\nThe halt closed in 1947, when the quarry company built a road. The platform "
    "was left to the brambles.\n",
    "stations/crag-halt.md",
    "Crag Halt",
)


def test_only_a_year_for_how_long_is_no_answer() -> None:
    question = "How long is the platform at Crag Halt?"
    result = ground(question, "The halt closed in 1947 [1].", [HALT])
    assert result.grounding.verdict != "supported"
    assert "the answer gives only 1947, a year, where the question asks how long" in (
        result.grounding.claims[0].note
    )


RESULTS = PassageText(
    1,
    "Quarterly results, second quarter 2026\nDate: 2026-07-21\nMargin\nThe gross margin was "
    "41.5 per cent.\n",
    "finance/q2-2026-results.pdf",
    "Quarterly results, second quarter 2026",
)
DRAFT = PassageText(
    2,
    "# Margin\n\nThe gross margin was 39.8 per cent.\n",
    "finance/archive/q2-2026-results-draft.docx",
    "Quarterly results, second quarter 2026 (draft)",
    superseded='its folder says "archive"',
)


def test_a_draft_s_value_for_a_year_the_current_document_covers_is_flagged() -> None:
    result = ground(
        "What was the gross margin in Q2 2026?", "It was 39.8 per cent.", [RESULTS, DRAFT]
    )
    assert "looks superseded" in result.grounding.claims[0].note
    assert "41.5 per cent" in result.grounding.offered


def test_last_as_a_verb_asks_of_no_earlier_version() -> None:
    v1 = PassageText(
        3,
        "## Battery\n\nThe prototype battery lasted 8 hours.\n",
        "engineering/kestrel-test-report-v1.md",
        "Kestrel test report",
        superseded="engineering/kestrel-test-report.md is a newer version",
    )
    result = ground(
        "How long does the Kestrel battery last?", "It lasts 8 hours.", [TEST_REPORT, v1]
    )
    assert "looks superseded" in result.grounding.claims[0].note


def test_a_csv_row_is_quoted_with_its_header_and_judged_as_a_row() -> None:
    lights = PassageText(
        5,
        "station,lit,range_nm,automated\nOld Quay,1854,6,1965\nGannet Point,1857,24,1986\n",
        "operations/light-characteristics.csv",
        "light-characteristics",
    )
    question = "What is the range of the Gannet Point light?"
    result = ground(question, "The range of the Gannet Point light is 24 nautical miles.", [lights])
    assert result.grounding.verdict == "supported", result.grounding
    assert result.quotes[5] == "station: Gannet Point; lit: 1857; range_nm: 24; automated: 1986"
    # Old Quay's range, from the row above, is said of Old Quay.
    wrong = ground(question, "The range of the Gannet Point light is 6 nautical miles.", [lights])
    assert wrong.grounding.verdict != "supported"


def test_the_edition_of_a_series_for_the_year_asked_is_its_document() -> None:
    report = PassageText(
        2,
        "### Lead\n\nWe replaced 745 lead service pipes on the company side of the boundary.\n",
        "finance/annual-report-2023.md",
        "Annual Report and Accounts 2023",
        superseded="finance/annual-report-2024.md is a newer version (2025-03-01)",
    )
    question = "How many company-side lead pipes were replaced in 2023?"
    result = ground(question, "745 lead pipes were replaced on the company side.", [report])
    assert result.grounding.verdict == "supported", result.grounding


def test_a_sentence_that_says_the_documents_do_not_say_is_not_judged_by_its_words() -> None:
    crane = PassageText(
        1,
        "# Harbour\n\nThe harbour crane was painted teal in March.\n",
        "notes/crane.md",
        "Harbour",
    )
    question = "What colour was the harbour crane painted?"
    answer = "The harbour crane was painted in a colour that is not specified in the document."
    claims = ground(question, answer, [crane]).grounding.claims
    assert all("not in your documents" not in claim.note for claim in claims)


def test_a_table_row_is_read_with_its_header() -> None:
    programme = PassageText(
        1,
        "## Results\n\n| Year | Lead pipes replaced (company side) | Samples over 10 µg/l |\n"
        "|---|---|---|\n| 2023 | 745 | 11 |\n| 2024 | 980 | 8 |\n",
        "water-quality/lead-pipe-programme.md",
        "Lead pipe replacement programme",
    )
    report = PassageText(
        2,
        "### Lead\n\nWe replaced 980 lead service pipes on the company side, more than ever.\n",
        "finance/annual-report-2024.md",
        "Annual Report 2024",
    )
    question = "How many company-side lead pipes were replaced in 2023?"
    result = ground(question, "The answer is: 745 [1]", [programme, report])
    assert result.grounding.verdict == "supported", result.grounding


def test_a_table_s_header_row_is_never_offered_as_what_the_documents_say() -> None:
    # No row is for 2021, and the header holds a number ("over 10 µg/l"): offering it told the
    # person nothing, and asked again from it the model made up an answer.
    pipes = PassageText(
        1,
        "## Results\n\n| Year | Lead pipes replaced (company side) | Tap samples over 10 µg/l |\n"
        "|---|---|---|\n| 2022 | 612 | 14 |\n| 2023 | 745 | 11 |\n",
        "water-quality/lead-pipe-programme.md",
        "Lead pipe replacement programme",
    )
    result = ground(
        "How many lead pipes were replaced in 2021?",
        "612 lead pipes were replaced in 2021.",
        [pipes],
    )
    assert result.grounding.verdict in ("partly", "unsupported")
    assert "2022" in result.grounding.claims[0].note
    # Nor is 2022's row, which does not answer a question about 2021.
    assert result.grounding.offered == ""


CONSTRUCTION = PassageText(
    1,
    "# The opening of the line\n\n## Construction\n\nThe company obtained its act in 1876. The "
    "engineer chose the narrow gauge of 597 millimetres (1 ft 11½ in) so that the line could "
    "follow the river.\n",
    "history/opening.md",
    "The opening of the line",
)
TRACK = PassageText(
    2,
    "# Track and gradients\n\nThe line is 9.6 kilometres long from Tarnmouth wharf to the Crag "
    "Quarry terminus and climbs 178 metres.\n",
    "engineering/track.md",
    "Track and gradients",
)
REPORT = PassageText(
    3,
    "TARN VALLEY RAILWAY - ANNUAL REPORT 2023\n\nPassenger journeys in 2023: 61,200 "
    "(2022: 55,800).\n",
    "finance/annual-report-2023.txt",
    "annual-report-2023",
)


def test_a_report_s_year_is_no_date_of_the_event_asked_about() -> None:
    # 2023 is the year the journeys were counted in; nothing found says when the line opened.
    result = ground(
        "When did the Tarn Valley Railway open to passengers?",
        "The Tarn Valley Railway opened to passengers in 2023 [3].",
        [CONSTRUCTION, TRACK, REPORT],
    )
    assert result.grounding.verdict != "supported"
    assert "“open”" in result.grounding.claims[0].note


def test_a_date_its_sentence_says_of_the_event_stands() -> None:
    opened = PassageText(
        4, "The line opened to passengers on 14 June 1879.\n", "history/opening.md", "Opening"
    )
    result = ground(
        "When did the Tarn Valley Railway open to passengers?",
        "It opened to passengers on 14 June 1879 [4].",
        [CONSTRUCTION, REPORT, opened],
    )
    assert result.grounding.verdict == "supported"


def test_a_value_in_another_unit_than_the_one_asked_in_is_said_of_something_else() -> None:
    result = ground(
        "What is the track gauge of the line in millimetres?",
        "The track gauge of the line in millimetres is 9.6 kilometres [2].",
        [CONSTRUCTION, TRACK, REPORT],
    )
    assert result.grounding.verdict != "supported"
    assert (
        "the passage [2] gives 9.6 kilometres, not a value in millimetres (as 597 millimetres is)"
        in result.grounding.claims[0].note
    )
    # The right value stands, and so does the same measure in the sentence's other unit.
    for right in ("597 millimetres", "1 ft 11½ in"):
        answer = f"The track gauge of the line is {right} [1]."
        verdict = ground(
            "What is the track gauge of the line in millimetres?",
            answer,
            [CONSTRUCTION, TRACK, REPORT],
        ).grounding.verdict
        assert verdict == "supported", right


def test_the_office_a_who_question_asks_about_is_no_name_given_for_it() -> None:
    board = PassageText(
        1,
        "There were changes on the board. Our Audit and Risk Committee has a new chair, "
        "Dr Malcolm Tyas, who joined us in April.\n",
        "finance/annual-report-2022.md",
        "Annual report 2022",
    )
    question = "Who was made chair of the audit committee in 2022?"
    wrong = ground(question, "The Chair of the Audit and Risk Committee [1].", [board])
    assert wrong.grounding.verdict != "supported"
    assert "gives no name" in wrong.grounding.claims[0].note
    right = ground(question, "Dr Malcolm Tyas was made chair in 2022 [1].", [board])
    assert right.grounding.verdict == "supported"


def test_a_date_whose_sentence_says_the_question_in_other_words_stands() -> None:
    """Found in the held-out sample set: "switch" is in another passage ("photoelectric
    switch"), but the sentence that holds most of the question says "converted"."""
    spit = PassageText(
        1,
        "## Replacement\n\nIt was converted from acetylene to solar-charged batteries in 1989.\n",
        "stations/carrick-spit.md",
        "Carrick Spit light",
    )
    programme = PassageText(
        2,
        "Old Quay (photoelectric switch since 1965) was outside the programme.\n",
        "operations/automation-programme.md",
        "The automation programme",
    )
    result = ground(
        "When did Carrick Spit switch from acetylene to solar-charged batteries?",
        "The light was switched from acetylene to solar-charged batteries in 1989.",
        [spit, programme],
    )
    assert result.grounding.verdict == "supported"


ROSTER = PassageText(
    1,
    "| keeper | station | years | note |\n|---|---|---|---|\n"
    "| Thomas Orrin | Marrow Head | 1896-1911 | kept the 1903 gale log |\n"
    "| Margaret Penhallow | Marrow Head | 1962-1991 | last principal keeper of Marrow Head |\n",
    "people/keepers-roster.md",
    "Principal keepers of the Harwick service",
)


def test_one_of_several_is_not_the_last_one_another_row_names() -> None:
    """Found in the held-out sample set: "last" is a stop word, so only the row that says it
    tells the last keeper from the others."""
    question = "Who was the last principal keeper at Marrow Head?"
    wrong = ground(question, "The last principal keeper at Marrow Head was Thomas Orrin.", [ROSTER])
    assert wrong.grounding.verdict != "supported"
    assert "Margaret Penhallow" in wrong.grounding.offered  # the row that says "last"
    right = ground(question, "It was Margaret Penhallow [1].", [ROSTER])
    assert right.grounding.verdict == "supported"
    # "last year" picks no one among several.
    assert Question.read("What was the charge last year?").order == {}


def test_a_name_after_an_initial_is_checked_as_a_name() -> None:
    """Found in the held-out sample set: "W. Dale" read as a sentence ending at "W." and a
    word "Dale", so the made-up engineer was never checked."""
    log = PassageText(
        1,
        "Principal keeper: Thomas Orrin. Assistants: W. Dale, J. Penhallow.\n",
        "stations/marrow-head.txt",
        "marrow-head",
    )
    founding = PassageText(
        2,
        "His assistant Ruth Calloway completed Skerry Rock and served as engineer until 1902.\n",
        "history/founding-1852.md",
        "Founding",
    )
    result = ground(
        "Who was the engineer of Marrow Head lighthouse?",
        "The engineer of Marrow Head lighthouse was W. Dale [1].",
        [log, founding],
    )
    assert result.grounding.verdict != "supported"
    assert "“Dale”: the passage [1] does not mention “engineer”" in result.grounding.claims[0].note


def test_a_value_the_answer_denies_is_no_claim_of_it() -> None:
    skerry = PassageText(
        1, "- Tower: 36 metres, dovetailed granite.\n", "stations/skerry-rock.rst", "Skerry Rock"
    )
    gannet = PassageText(
        2, "- Tower: round granite tower, 31 metres tall.\n", "stations/gannet-point.md", "Gannet"
    )
    result = ground(
        "How tall is the tower at Skerry Rock?",
        "The tower at Skerry Rock is 36 metres tall, not 31 [1].",
        [skerry, gannet],
    )
    assert result.grounding.verdict == "supported"


def test_table_rows_a_search_ran_onto_one_line_without_their_header_are_rows() -> None:
    flat = PassageText(
        1,
        "…| Thomas Orrin | Marrow Head | 1896-1911 | kept the 1903 gale log | | Agnes Ferris | "
        "Gannet Point | 1879-1880 | kept the light | | Margaret Penhallow | Marrow Head | "
        "1962-1991 | last principal keeper of Marrow Head |",
        "people/keepers-roster.md",
        "Principal keepers of the Harwick service",
    )
    result = ground(
        "Who was the last principal keeper at Marrow Head?",
        "The last principal keeper at Marrow Head was Thomas Orrin.",
        [flat],
    )
    assert result.grounding.verdict != "supported"
    assert result.grounding.offered.startswith("Margaret Penhallow")


def test_a_name_only_a_title_holds_is_not_said_to_be_missing_from_the_documents() -> None:
    founding = PassageText(
        2,
        "| year | work |\n|---|---|\n| 1863 | Carrick Spit light, a screw-pile structure |\n",
        "history/founding-1852.md",
        "Founding of the Harwick Coast Light Service (1852)",
    )
    result = ground(
        "Why does the Carrick Spit light stand on piles?",
        "It stands on piles because of the construction of the Harwick Coast Light Service.",
        [founding],
    )
    assert result.grounding.verdict != "supported"
    note = result.grounding.claims[0].note
    assert "not in your documents" not in note
    assert "“Harwick Coast Light Service”: the passage [2] names it only in its title" in note


# Found by the held-out "fresh" set (a mountain rescue team's documents, session 15).
OFFICERS = PassageText(
    1,
    "The officers are: team leader, Priya Venn; secretary, Gwen Rigg; equipment officer, "
    "Dan Ellwood; training officer, Sue Marr.\n",
    "about/team-structure.docx",
    "Team structure and officers",
)
YEAR_IN_NUMBERS = PassageText(
    2,
    "The team was called out 131 times in 2024 and helped 148 people. Members gave 7,589 "
    "volunteer hours on callouts, training and fundraising.\n",
    "operations/annual-report-2024.pdf",
    "Annual Report 2024",
)
MEMBERS = PassageText(
    3,
    "At the start of 2025 the team had 46 operational members, who carry pagers, and 7 trainees.\n",
    "about/faq.txt",
    "faq",
)


def test_an_officer_the_documents_never_name_is_not_another_officer() -> None:
    """ "the team's *press* officer": the word after an owner's "'s" narrows what is asked, so
    the equipment officer is no answer when nothing found mentions a press officer."""
    wrong = ground(
        "Who is the team's press officer?",
        "The team's press officer is the equipment officer, Dan Ellwood [1].",
        [OFFICERS],
    )
    assert wrong.grounding.verdict == "unsupported"
    assert "nothing found mentions “press”" in wrong.grounding.claims[0].note
    right = ground("Who is the team's equipment officer?", "It is Dan Ellwood [1].", [OFFICERS])
    assert right.grounding.verdict == "supported"


def test_a_word_after_an_owner_that_ends_the_question_s_noun_is_not_narrowing() -> None:
    """The team's *headquarters* is what is asked about, which the documents may call its base:
    no flag for a word they do not use."""
    base = PassageText(
        1,
        "The new base at Beckfoot stands 163 metres above sea level.\n",
        "base/new-base-project.md",
        "New base",
    )
    result = ground(
        "How high above sea level is the team's headquarters at Beckfoot?",
        "The team's headquarters at Beckfoot is 163 metres above sea level [1].",
        [base],
    )
    assert result.grounding.verdict == "supported"
    assert Question.read("Who is the team's press officer?").qualifiers == {"press": "press"}


def test_hours_given_as_a_count_of_people_are_flagged() -> None:
    """ "7,589 volunteer hours" answered as "7,589 volunteers": a measure is no count."""
    question = "How many of the team's volunteers can be sent out on callouts?"
    wrong = ground(
        question,
        "7,589 volunteers can be sent out on callouts [2].",
        [YEAR_IN_NUMBERS, MEMBERS],
    )
    assert wrong.grounding.verdict == "unsupported"
    note = wrong.grounding.claims[0].note
    assert "the passage [2] gives 7,589 volunteer hours, not a number of volunteers" in note
    hours = ground(
        "How many volunteer hours did members give in 2024?",
        "Members gave 7,589 volunteer hours [2].",
        [YEAR_IN_NUMBERS],
    )
    assert hours.grounding.verdict == "supported"


def test_an_answer_that_gives_only_a_measure_for_a_count_is_flagged() -> None:
    question = "How many callouts did the team have in 2024?"
    wrong = ground(question, "Members gave 7,589 volunteer hours in 2024 [2].", [YEAR_IN_NUMBERS])
    assert wrong.grounding.verdict != "supported"
    notes = " ".join(claim.note for claim in wrong.grounding.claims)
    assert (
        "the answer gives 7,589 volunteer hours, a time, where the question asks how many callouts"
        in notes
    )
    right = ground(question, "It had 131 callouts in 2024 [2].", [YEAR_IN_NUMBERS])
    assert right.grounding.verdict == "supported"


def test_a_question_for_a_percentage_wants_a_number() -> None:
    report = PassageText(
        1,
        "A helicopter took part in 34 of the callouts, or 26 per cent of the total.\n",
        "operations/annual-report-2024.pdf",
        "Annual Report 2024",
    )
    question = "What percentage of the team's 2024 callouts involved a helicopter?"
    wrong = ground(question, "The team's 2024 callouts involved a helicopter [1].", [report])
    assert wrong.grounding.verdict != "supported"
    right = ground(question, "A helicopter took part in 26 per cent of them [1].", [report])
    assert right.grounding.verdict == "supported"
    assert Question.read(question).wants == "number"


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("Members gave 7,589 volunteer hours", "h"),
        ("after 12 working days", "day"),
        ("the team had 46 operational members", ""),
        ("a reservoir of 5.08 million cubic metres", ""),  # a volume, no length
        ("in 1986 two months later", ""),  # a year is not counted in months
    ],
)
def test_a_unit_one_word_after_a_number_is_its_unit(text: str, unit: str) -> None:
    [number] = [a for a in anchors_in(text, names=False) if a.kind == "number"]
    assert number.unit == unit


def test_to_when_the_sentence_with_the_year_is_offered_not_a_table_row_of_counts() -> None:
    """A Word table read as a header line and "Section: …; …" rows: the header is no
    sentence to offer, a count of 1,212 is no year, and the sentence the answer took only a
    name from ("a collie called Fly") still holds the year it should have given."""
    sections = PassageText(
        1,
        "Section | Operational members | Search dog teams | Training hours 2024\n"
        "Section: Northern; Operational members: 15; Search dog teams: 1; "
        "Training hours 2024: 1,212\n"
        "Section: Central; Operational members: 18; Search dog teams: 2; "
        "Training hours 2024: 1,486\n",
        "about/team-structure.docx",
        "Team structure",
    )
    history = PassageText(
        2,
        "It bought its first Land Rover in 1966, and in 1968 it moved into a hut on Mill Lane. "
        "The team's first search dog, a collie called Fly, passed her assessment in 1974.\n",
        "about/history.md",
        "A short history",
    )
    result = ground(
        "When did the team first have a qualified search dog?",
        "The team first had a qualified search dog, a collie named Fly, in 1968.",
        [sections, history],
    )
    assert result.grounding.verdict == "unsupported"
    assert result.grounding.offered.endswith("passed her assessment in 1974.")
    assert result.grounding.offered_from == 2
    [header] = [
        unit for unit in units_of(sections, 0) if unit.text.startswith("Section | Operational")
    ]
    assert header.header
    assert not year_like(anchors_in("1,212 hours", names=False)[0])
    assert year_like(anchors_in("in 1974", names=False)[0])


BY_YEAR = PassageText(
    1,
    "year,callouts,people_assisted,volunteer_hours\n"
    "2021,127,139,7265\n"
    "2022,119,134,6918\n"
    "2023,123,142,7034\n",
    "operations/callouts-by-year.csv",
    "callouts-by-year",
)
REPORT_2024 = PassageText(
    2,
    "The team was called out 131 times in 2024, against 123 times in 2023, and helped 148 "
    "people.\n",
    "operations/annual-report-2024.pdf",
    "Annual Report 2024",
)


def test_the_row_of_the_year_asked_is_offered_and_its_other_cells_are_not_the_answer() -> None:
    """A CSV row names what it holds in its columns ("people_assisted"), not in the question's
    words ("came to the aid of"): the row of the year asked is offered for a value of another
    year, and a value from its other cells ("callouts: 119") is flagged."""
    question = "How many people did the team come to the aid of in 2022?"
    other_year = ground(
        question, "It came to the aid of 148 people in 2022.", [BY_YEAR, REPORT_2024]
    )
    assert other_year.grounding.verdict == "unsupported"
    assert other_year.grounding.offered.startswith(
        "year: 2022; callouts: 119; people_assisted: 134"
    )
    other_cell = ground(
        question, "It came to the aid of 119 people in 2022.", [BY_YEAR, REPORT_2024]
    )
    assert other_cell.grounding.verdict == "unsupported"
    assert "says this of “callouts: 119”" in other_cell.grounding.claims[0].note
    assert Question.read(question).counts == "people"
    assert "come" not in Question.read(question).key  # a verb that says nothing of its own


def test_a_word_the_documents_say_another_way_does_not_narrow_to_nothing() -> None:
    """ "a *qualified* search dog": the passages write "search dog" only after "first" and
    "one", so "qualified" picks none of several kinds of search dog; it is said another way
    ("passed her assessment"). A senior fare beside the adult and child fares still does."""
    history = PassageText(
        1,
        "The team's first search dog, a collie called Fly, passed her assessment in 1974. "
        "In 2023 one search dog team stood by at base.\n",
        "about/history.md",
        "A short history",
    )
    result = ground(
        "When did the team first have a qualified search dog?",
        "Its first search dog passed her assessment in 1974 [1].",
        [history],
    )
    assert result.grounding.verdict == "supported"
    fares = PassageText(2, "adult return,18.50\nchild return,9.25\n", "finance/fares.csv", "fares")
    senior = ground("How much is a senior return ticket?", "It costs £18.50.", [fares])
    assert "nothing found mentions “senior”" in senior.grounding.claims[0].note
    # Said another way only where the sentence writes what it narrows: a sum the open day
    # raised is no admission charge, though the passages say "in charge" elsewhere.
    open_day = PassageText(
        3,
        "In 2024 the Beckfoot open day raised 6,240 pounds for the team. Sue Marr is in charge "
        "of it.\n",
        "base/new-base-project.md",
        "New base",
    )
    charge = ground(
        "What is the admission charge for the Beckfoot open day?",
        "The admission charge is 6,240 pounds [3].",
        [open_day],
    )
    assert "nothing found mentions “admission”" in charge.grounding.claims[0].note


def test_an_outline_s_numbers_are_labels_not_claims() -> None:
    """Seen in the window: "1.1.1: The document contains several notes on costs." was flagged
    "“1.1” is not in your documents"."""
    sheet = PassageText(
        1, "Region: north; Item: pumps; Amount: 66253\n", "formats/doc0015.xlsx", "doc0015"
    )
    result = ground(
        "What is the amount for pumps?",
        "The notes on costs:\n1.1.1: The amount for pumps is 66253 [1].\n1.2: It is for pumps.",
        [sheet],
    )
    notes = " ".join(claim.note for claim in result.grounding.claims)
    assert "1.1" not in notes and "1.2" not in notes
    assert result.grounding.verdict == "supported"


def test_a_request_for_an_account_asks_for_no_kind_of_value() -> None:
    """Seen in the window: "Summarize the notes on costs." answered in words was flagged "the
    answer gives no number, which the question asks for" ("costs" read as asking a price)."""
    assert Question.read("Summarize the notes on costs.").wants == ""
    assert Question.read("Describe what the board decided.").wants == ""
    assert Question.read("What did the new press cost?").wants == "number"


def test_the_same_note_of_a_repeated_sentence_is_shown_once() -> None:
    """Seen in the window: an answer that said its sentence twice listed the same two flags
    twice under "Check against your documents"."""
    ferry = PassageText(
        1, "Revenue at the ferry terminal grew by nine percent in 2026.\n", "Reports/ferry.md", ""
    )
    sentence = "The revenue at the ferry terminal grew by 9.6% from 2025 to 2026 [1]."
    result = ground(
        "How much did revenue at the ferry terminal grow?", f"{sentence}\n{sentence}", [ferry]
    )
    block = check_block(result.grounding)
    assert block.count("“9.6%” is not in your documents") == 1, block


ORCHARDS = PassageText(
    3,
    "| Orchard | Main variety | Trees | Planted |\n|---|---|---|---|\n"
    "| Long Meadow | Bramley | 460 | 1988 |\n| Hill Field | Cox's Orange Pippin | 380 | 1996 |\n",
    "orchards/orchards.md",
    "The cooperative's orchards",
)
SURVEY = PassageText(
    1,
    "## Long Meadow\n\nScab was found on the Bramley trees in May.\n",
    "orchards/disease-survey-2025.md",
    "Disease survey 2025",
)


def test_a_name_a_table_gives_in_another_column_is_not_the_kind_which_asks_for() -> None:
    """The multi-part set's last confidently wrong answer: "Which orchard has apple scab?"
    answered "the one with the Bramley trees", a variety. The orchards' table has an Orchard
    column and gives Bramley in its Main variety column."""
    question = "Which orchard has apple scab?"
    wrong = ground(question, "It is the one with the Bramley trees [3].", [SURVEY, ORCHARDS])
    assert wrong.grounding.verdict == "unsupported"
    assert (
        "“Bramley”: the passage [3] gives it as the main variety, not the orchard"
        in wrong.grounding.claims[0].note
    )
    # Said under a heading that names it, the scab is Long Meadow's: no flag.
    right = ground(question, "Long Meadow has apple scab [1].", [SURVEY, ORCHARDS])
    assert right.grounding.verdict == "supported"
    assert Question.read(question).kind == "orchard"


def test_not_found_is_flagged_where_a_sentence_holds_everything_the_question_asks() -> None:
    """Seen in the window: "The harbour crane was painted in a colour that is not specified in
    the document." just above the passage that says "teal". A "not found" that may well be
    right (another condition, another place) is left alone."""
    crane = PassageText(
        1, "# Harbour\n\nThe harbour crane was painted teal in March.\n", "notes/crane.md", ""
    )
    result = ground(
        "What colour was the harbour crane painted?",
        "The harbour crane was painted in a colour that is not specified in the document.",
        [crane],
    )
    assert result.grounding.verdict == "unsupported"
    assert "yet the passage [1] speaks of “harbour”, “crane” and “painted”" in (
        result.grounding.claims[0].note
    )
    assert result.grounding.offered == "The harbour crane was painted teal in March."
    battery = PassageText(2, "The Kestrel battery lasts 11 hours at 5 °C.\n", "kestrel.md", "")
    cold = ground(
        "How many hours does the Kestrel battery last at 25 °C?",
        "The documents do not say.",
        [battery],
    )
    assert cold.grounding.verdict == "not_found"
    japan = PassageText(
        3, "Kaito Optics distributes Halvard products in Japan.\n", "partners.md", ""
    )
    brazil = ground(
        "Who distributes Halvard products in Brazil?", "That is not mentioned.", [japan]
    )
    assert brazil.grounding.verdict == "not_found"


def test_a_count_is_of_what_its_part_of_the_sentence_says() -> None:
    """ "How many of the team's volunteers can be sent out on callouts?": 46 is the count whose
    part of the sentence says they can be sent out; 19 and 7 count others; "131 callouts"
    and "83 of the 131 callouts" count callouts, so the 46 sentence is offered for them."""
    members = PassageText(
        3,
        "At the start of 2025 the team had 46 operational members, who carry pagers and can be "
        "sent out on a rescue, 19 supporting members, who run fundraising, and 7 trainees.\n",
        "about/faq.txt",
        "faq",
    )
    phones = PassageText(
        1,
        "SARLOC, a link sent by text, worked on 83 of the 131 callouts in 2024.\n",
        "base/radio-and-comms.txt",
        "radio",
    )
    question = "How many of the team's volunteers can be sent out on callouts?"
    right = ground(question, "The answer: 46 [3].", [phones, members])
    assert right.grounding.verdict == "supported"
    other = ground(question, "The answer is 19 [3].", [phones, members])
    assert "the passage [3] says this of “19 supporting members" in other.grounding.claims[0].note
    callouts = ground(question, "131 volunteers can be sent out on callouts.", [phones, members])
    assert "the passage [1] counts callouts with it, not volunteers" in (
        callouts.grounding.claims[0].note
    )
    assert callouts.grounding.offered.startswith("At the start of 2025 the team had 46")


# --- a current document's value, asked for in other words (session 16) --------------------------

PASSWORDS = PassageText(
    1,
    "# Password policy\n\nDate: 2026-01-12\n\n# Length\n\nPasswords must be at least 14 "
    "characters long.\n",
    "it/password-policy.md",
    "Password policy",
)
OLD_PASSWORDS = PassageText(
    2,
    "# Password policy (2022)\n\nLength: passwords must be at least 10 characters long.\n",
    "it/archive/password-policy-2022.md",
    "Password policy (2022)",
    superseded='its folder says "archive"',
)


@pytest.mark.parametrize(
    "question",
    [
        "What was the gross margin in Q2 2026?",
        "What is the research and development budget?",
        "What is the minimum password length?",
    ],
)
def test_what_a_quantity_is_called_asks_for_a_number(question: str) -> None:
    assert Question.read(question).wants == "number"


@pytest.mark.parametrize(
    "question", ["What was the cause of the delay?", "What is the history of the policy?"]
)
def test_a_question_for_no_quantity_asks_for_no_number(question: str) -> None:
    assert Question.read(question).wants == ""


def test_a_minimum_the_documents_write_as_at_least_is_no_missing_word() -> None:
    question = "What is the minimum password length?"
    right = ground(question, "It is 14 characters.", [PASSWORDS, OLD_PASSWORDS])
    assert right.grounding.verdict == "supported"
    # The archive's value is flagged for what it is, and the current sentence offered.
    stale = ground(question, "It is 10 characters.", [PASSWORDS, OLD_PASSWORDS])
    [claim] = stale.grounding.claims
    assert "looks superseded" in claim.note and "minimum" not in claim.note
    assert stale.grounding.offered == "Passwords must be at least 14 characters long."
    # Where nothing writes a least, and fees of several kinds are named, "minimum" is still
    # what nothing found mentions.
    fees = PassageText(
        3,
        "# Fees\n\nThe standard fee is 20 euros. The reduced fee is 12 euros.\n",
        "fees.md",
        "Fees",
    )
    [claim] = ground("What is the minimum fee?", "It is 12 euros.", [fees]).grounding.claims
    assert "nothing found mentions “minimum”" in claim.note


BATTERY_NOW = PassageText(
    1,
    "Kestrel test report Date: 2026-05-30 Battery In field trials the production battery lasted "
    "11 hours at 5 °C.",
    "engineering/kestrel-test-report.pdf",
    "Kestrel test report",
)
BRIEF = PassageText(
    2,
    "# Hardware\n\nThe production Kestrel weighs 4.2 kg with its battery.\n",
    "product/kestrel-brief.md",
    "Kestrel product brief",
)
BATTERY_THEN = PassageText(
    3,
    "# Kestrel test report (prototype)\n\n## Battery\n\nIn field trials the prototype battery "
    "lasted 8 hours at 5 °C.\n",
    "engineering/kestrel-test-report-v1.md",
    "Kestrel test report (prototype)",
    superseded="engineering/kestrel-test-report.pdf is a newer version (2026-05-30)",
)


def test_the_offer_is_the_current_sentence_of_the_measure_asked() -> None:
    question = "How long does the Kestrel battery last?"
    # The answer took the old report's 8 hours and the current report's condition (5 °C): the
    # current sentence is still offered, not the weight, which holds no time, nor the old one.
    result = ground(
        question, "The Kestrel battery lasts 8 hours at 5 °C.", [BATTERY_NOW, BRIEF, BATTERY_THEN]
    )
    assert result.grounding.verdict in ("partly", "unsupported")
    assert "looks superseded" in result.grounding.claims[0].note
    assert "11 hours" in result.grounding.offered and result.grounding.offered_from == 1


# --- seasons, and rows alike (the civic set's first run, session 16) ----------------------------


def test_a_season_is_one_year_s_span_not_a_year_and_a_number() -> None:
    values = [a.text for a in anchors_in("Budget 2025-26: 4,350 pounds; in 2019/20 it was 26.")]
    assert values == ["2025", "4,350 pounds", "2019", "26"]
    # A range of years that is no season keeps both ends.
    assert [a.text for a in anchors_in("It ran from 1994-2008.")] == ["1994", "2008"]


PROGRAMME = PassageText(
    1,
    "# The 2025-26 season\n\n## Young Players: Lanterns\n\n18 to 20 June 2026, 4 performances. "
    "Both youth groups take part, 41 members in all.\n",
    "productions/season-2025-26.md",
    "The 2025-26 season",
)


def test_a_claim_of_the_year_asked_restates_no_sentence_of_other_years() -> None:
    question = "How many people saw the Players' productions in the 2019-20 season?"
    result = ground(question, "The productions in the 2019-20 season were 41 members.", [PROGRAMME])
    [claim] = result.grounding.claims
    assert result.grounding.verdict == "unsupported"
    assert "the passage [1] says this of 2025" in claim.note


DEPARTMENTS = PassageText(
    2,
    "| Department | Head | Budget 2025-26 (pounds) |\n|---|---|---|\n"
    "| Stage and set | Dominic Foye | 10,200 |\n| Lighting and sound | Lewis Archer | 5,600 |\n"
    "| Wardrobe and props | Maureen Tulley | 4,350 |\n",
    "about/company-structure.docx",
    "Company structure",
)


def test_no_row_is_offered_where_rows_alike_answer_the_question_as_well() -> None:
    question = "How much may the costume department spend in the 2025-26 season?"
    result = ground(question, "The company spends money in 2025-26.", [DEPARTMENTS])
    assert result.grounding.verdict in ("partly", "unsupported")
    assert result.grounding.offered == ""
    # A row the question picks out by its words is offered.
    picked = ground(
        "How much is the budget of the lighting department in 2025-26?",
        "The company spends money in 2025-26.",
        [DEPARTMENTS],
    )
    assert "5,600" in picked.grounding.offered


TANKS = PassageText(
    5,
    "# Pennyfield Lane\n\nRainwater from the roofs of the pavilion and the shared shed runs into "
    "six storage tanks of 3,000 litres each, which hold 18,000 litres between them, and a seventh "
    "tank of 1,200 litres behind the trading hut catches the water from its roof.\n",
    "sites/pennyfield-lane.md",
    "Pennyfield Lane",
)


def test_a_value_of_another_clause_than_the_one_the_answer_says_it_of_is_flagged() -> None:
    question = (
        "How much rainwater can be stored in the tanks that collect from the pavilion and shared "
        "shed roofs at Pennyfield Lane?"
    )
    wrong = ground(question, "The tank of the shared shed roof holds 1,200 litres.", [TANKS])
    [claim] = wrong.grounding.claims
    assert wrong.grounding.verdict == "unsupported"
    assert "says this of “and a seventh tank of 1,200 litres behind the trading hut" in claim.note
    right = ground(question, "The pavilion and shared shed tanks hold 18,000 litres.", [TANKS])
    assert right.grounding.verdict == "supported"


def test_a_flagged_claim_is_not_cited_for_the_values_of_it_that_stand() -> None:
    question = "How long does the Kestrel battery last?"
    passages = [BATTERY_NOW, BATTERY_THEN]
    result = ground(question, "The Kestrel battery lasts 8 hours at 5 °C.", passages)
    [claim] = result.grounding.claims
    assert claim.note and 1 in claim.supported_by  # 5 °C is in the current report
    # No cite vouches for the sentence, whose 8 hours the current report does not give.
    assert result.answer == "The Kestrel battery lasts 8 hours at 5 °C."
    right = ground(question, "The Kestrel battery lasts 11 hours at 5 °C.", passages)
    assert right.answer == "The Kestrel battery lasts 11 hours at 5 °C [1]."


def test_a_pdf_s_lines_without_stops_are_headings_not_part_of_the_next_sentence() -> None:
    units = units_of(BATTERY_NOW_LINES, 0)
    texts = [unit.text for unit in units]
    assert "In field trials the production battery lasted 11 hours at 5 °C." in texts
    assert "Date: 2026-05-30" in texts
    sentence = next(unit for unit in units if unit.text.startswith("In field trials"))
    assert "Battery" in sentence.context
    # A sentence wrapped over lines is still one sentence.
    wrapped = PassageText(9, "The first train ran\non 14 June 1879 to Crag Quarry.\n", "a.txt", "A")
    assert [unit.text for unit in units_of(wrapped, 0)] == [
        "The first train ran on 14 June 1879 to Crag Quarry."
    ]


BATTERY_NOW_LINES = PassageText(
    6,
    "Kestrel test report\nDate: 2026-05-30\nBattery\nIn field trials the production battery "
    "lasted 11 hours at 5 °C.\nDrop test\nThe production unit survived drops from 1.5 m onto "
    "concrete.\n",
    "engineering/kestrel-test-report.pdf",
    "Kestrel test report",
)


SURVEY = PassageText(
    7,
    "# Disease survey 2025\n\n## Long Meadow\n\nApple scab was found on the leaves and fruitlets "
    "of the Bramley trees in Long Meadow, worst in the lower rows.\n",
    "orchards/disease-survey-2025.md",
    "Disease survey 2025",
)


@pytest.mark.parametrize(
    "question",
    [
        "Which orchard has apple scab?",
        "Which orchard has apple scab and how much will the new press cost?",
    ],
)
def test_a_name_the_answer_gives_as_another_kind_of_thing_answers_no_which(question: str) -> None:
    answer = "The orchard with apple scab is the one with the Bramley trees."
    [claim] = ground(question, answer, [SURVEY]).grounding.claims
    assert "the answer names Bramley trees, not which orchard" in claim.note
    # The orchard's own name answers it.
    right = ground(question, "Apple scab was found in Long Meadow.", [SURVEY])
    assert "not which orchard" not in right.grounding.claims[0].note


def test_a_value_the_rest_of_its_sentence_says_more_of_the_question_beside_is_flagged() -> None:
    question = (
        "How much rainwater can be stored in the tanks that collect from the pavilion and shared "
        "shed roofs at Pennyfield Lane?"
    )
    # The 1,200 litres are the trading hut's tank; the pavilion and shed fill the six others.
    [claim] = ground(question, "The tanks hold 1,200 litres.", [TANKS]).grounding.claims
    assert "says this of “and a seventh tank of 1,200 litres behind the trading hut" in claim.note
    # The total, in a clause of no term of its own ("which hold 18,000 litres between them").
    assert ground(question, "The tanks hold 18,000 litres.", [TANKS]).grounding.verdict == (
        "supported"
    )
