"""Every claim of an answer tied to its passage sentence, and what nothing supports flagged.

The cases are the ones a 135M model gets wrong in the same voice as right answers: the number in
the next cell or row, another lighthouse's year, a construction cost given as a ticket price, a
unit or a date written another way — and right answers paraphrased, which must not be flagged.
"""

from __future__ import annotations

import json

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import sources
from imprint_desktop.core.research.grounding import NOT_IN_DOCUMENTS, PassageText, ground, quote

MARROW = PassageText(
    1,
    "MARROW HEAD LIGHTHOUSE - KEEPER'S LOG\n"
    "Principal keeper: Thomas Orrin. Assistants: W. Dale, J. Penhallow.\n\n"
    "Tower 14 metres, but standing on the cliff the focal plane is 71 metres above high water,\n"
    "the highest in the service.\n\n"
    "Note added by the archive: Marrow Head was automated in 1991.\n",
    "stations/marrow-head.txt",
)
GANNET = PassageText(
    2,
    "# Gannet Point\n\nGannet Point was automated in **1986** and the last keepers left on\n"
    "3 March 1986. The tower is 23 metres tall.\n",
    "stations/gannet-point.md",
    "Gannet Point",
)
FOUNDING = PassageText(
    3,
    "## Money\n\nThe light dues raised about 4,100 pounds a year in the 1860s. Skerry Rock alone\n"
    "cost 38,600 pounds, which the board borrowed against future dues.\n",
    "history/founding-1852.md",
    "Founding",
)
RESERVOIRS = PassageText(
    4,
    "Reservoir: Askridge; Capacity used: 44%; Depth: 31 m\n"
    "Reservoir: Hollin; Capacity used: 61%; Depth: 18 m\n"
    "Reservoir: Tarn Moss; Capacity used: 71%; Depth: 12 m\n",
    "operations/reservoirs.xlsx",
)
SALES = PassageText(
    5,
    "Region: North; Q1: 1200; Q2: 1350; Q3: 1410\nRegion: South; Q1: 980; Q2: 1010; Q3: 1105\n",
    "finance/sales.csv",
)
WASTE = PassageText(
    6,
    "Site: Harwick depot; Year: 2023; Material: mixed plastics from the harbour clean-up "
    "programme run with the volunteers of the coastal trust; Tonnes collected: 14.1 t\n",
    "environment/waste.xlsx",
)
ALL = (MARROW, GANNET, FOUNDING, RESERVOIRS, SALES, WASTE)


def checked(question: str, answer: str) -> ev.GroundingView:
    return ground(question, answer, ALL).grounding


def flags(question: str, answer: str) -> list[str]:
    return [claim.note for claim in checked(question, answer).flagged]


# --- right answers, however written, are not flagged ---------------------------------------------


@pytest.mark.parametrize(
    ("question", "answer", "by"),
    [
        ("When was Marrow Head automated?", "Marrow Head was automated in 1991.", 1),
        ("When was Marrow Head automated?", "It was automated in 1991.", 1),
        ("When was Marrow Head automated?", "In 1991, the archive notes.", 1),
        ("How much did Skerry Rock cost?", "It cost £38,600.", 3),
        ("How much did Skerry Rock cost?", "Skerry Rock cost 38600 pounds to build.", 3),
        ("When did the last keepers leave Gannet Point?", "They left on 1986-03-03.", 2),
        ("When did the last keepers leave Gannet Point?", "On March 3, 1986.", 2),
        ("How high is the focal plane of Marrow Head?", "It is 71 m above high water.", 1),
        ("How high is the focal plane of Marrow Head?", "Seventy-one, or 71 metres.", 1),
        ("How full is Askridge reservoir?", "Askridge is 44% full.", 4),
        ("How full is Askridge reservoir?", "44 per cent of its capacity is used.", 4),
        ("What were North's Q2 sales?", "North sold 1,350 in Q2.", 5),
        ("How many tonnes were collected at Harwick depot?", "14.1 tonnes.", 6),
        ("Who was the principal keeper at Marrow Head?", "Thomas Orrin.", 1),
        ("Who was the principal keeper at Marrow Head?", "The principal keeper was Orrin.", 1),
    ],
)
def test_a_right_answer_is_supported_and_cited(question: str, answer: str, by: int) -> None:
    result = ground(question, answer, ALL)
    assert result.grounding.verdict == "supported", result.grounding
    assert [claim.supported_by for claim in result.grounding.claims] == [(by,)]
    assert f"[{by}]" in result.answer  # cited inline, though the model cited nothing


def test_an_answer_that_restates_the_question_checks_only_what_it_adds() -> None:
    # "Marrow Head" and "2023" come from the question; only 1991 is a claim.
    grounding = checked(
        "In the notes kept up to 2023, when was Marrow Head automated?",
        "In the notes kept up to 2023, Marrow Head was automated in 1991.",
    )
    assert grounding.verdict == "supported"


def test_a_cited_right_answer_keeps_its_citation_and_gets_no_other() -> None:
    result = ground("When was Marrow Head automated?", "It was automated in 1991 [1].", ALL)
    assert result.answer == "It was automated in 1991 [1]."
    assert result.grounding.claims[0].supported_by == (1,)


def test_the_citation_goes_before_the_sentences_stop() -> None:
    result = ground(
        "When was Marrow Head automated?",
        "Marrow Head was automated in 1991. The tower is 14 metres.\nThat is all.",
        ALL,
    )
    assert result.answer.startswith("Marrow Head was automated in 1991 [1]. The tower is 14 ")


# --- wrong answers are flagged, with why ----------------------------------------------------------


def test_another_lighthouses_year_is_said_to_be_of_that_lighthouse() -> None:
    grounding = checked("When was Marrow Head automated?", "Marrow Head was automated in 1986.")
    assert grounding.verdict == "unsupported"
    assert grounding.flagged[0].note == "“1986”: the passage [2] says this of Gannet Point"
    assert grounding.flagged[0].supported_by == ()
    # What the documents do say is offered first.
    assert grounding.offered == "Note added by the archive: Marrow Head was automated in 1991."
    assert grounding.offered_from == 1


def test_a_construction_cost_is_no_ticket_price() -> None:
    (note,) = flags(
        "How much did a ticket to visit Skerry Rock lighthouse cost for tourists?",
        "The ticket cost 38,600 pounds.",
    )
    assert note.startswith("“38,600 pounds”: the passage [3] says this of “")
    assert note.endswith("your documents do not mention ticket, visit or tourists")
    # Nothing answers the question's terms, so nothing is offered in its place.
    assert not checked(
        "How much did a ticket to visit Skerry Rock lighthouse cost for tourists?",
        "The ticket cost 38,600 pounds.",
    ).offered


def test_the_number_in_the_neighbouring_row_is_said_to_be_of_that_row() -> None:
    (note,) = flags("How full is Askridge reservoir?", "Askridge reservoir is 61% full.")
    assert note == "“61%”: the passage [4] says this of Hollin"
    (note,) = flags("How full is Askridge reservoir?", "It is at 71%.")
    assert note == "“71%”: the passage [4] says this of Tarn Moss"


def test_the_number_in_the_neighbouring_cell_is_said_to_be_of_that_cell() -> None:
    (note,) = flags("What were North's Q2 sales?", "North sold 1,410 in Q2.")
    assert note == "“1,410”: the passage [5] says this of “Q3: 1410”"


def test_the_number_beside_the_right_one_in_a_sentence_is_said_to_be_of_its_clause() -> None:
    (note,) = flags("How high is the focal plane of Marrow Head?", "The focal plane is 14 metres.")
    assert note == "“14 metres”: the passage [1] says this of “Tower 14 metres”"


@pytest.mark.parametrize(
    ("question", "answer", "missing"),
    [
        (
            "How many tonnes were collected at Harwick depot?",
            "4.8 tonnes were collected.",
            "4.8 tonnes",
        ),
        ("When did the last keepers leave Gannet Point?", "On 4 March 1986.", "4 March 1986"),
        ("When did the last keepers leave Gannet Point?", "On 1986-04-03.", "1986-04-03"),
        ("How high is the focal plane of Marrow Head?", "It is 71 feet above the sea.", "71 feet"),
        ("How much did Skerry Rock cost?", "It cost 36,800 pounds.", "36,800 pounds"),
        ("Who was the principal keeper at Marrow Head?", "It was John Smith.", "John Smith"),
    ],
)
def test_what_no_passage_holds_is_not_in_your_documents(
    question: str, answer: str, missing: str
) -> None:
    grounding = checked(question, answer)
    assert grounding.verdict == "unsupported"
    assert [c.note for c in grounding.flagged] == [f"“{missing}” is {NOT_IN_DOCUMENTS}"]


def test_an_answer_right_in_one_claim_and_wrong_in_another_is_partly_supported() -> None:
    grounding = checked(
        "When was Marrow Head automated?",
        "Marrow Head was automated in 1991. Its tower is 23 metres tall.",
    )
    assert grounding.verdict == "partly"
    first, second = grounding.claims
    assert (first.supported_by, first.note) == ((1,), "")
    assert second.note.startswith("“23 metres”: the passage [2] says this of ")


def test_a_reply_that_says_the_documents_do_not_answer_is_not_found() -> None:
    grounding = checked(
        "How much did a ticket to visit Skerry Rock cost?",
        "The documents do not mention a ticket price for Skerry Rock.",
    )
    assert grounding.verdict == "not_found"


def test_with_no_passage_a_stated_number_is_flagged_and_a_plain_reply_is_not_found() -> None:
    made_up = ground("When was Marrow Head automated?", "In 1991.", ()).grounding
    assert made_up.verdict == "unsupported"
    assert made_up.flagged[0].note == f"“1991” is {NOT_IN_DOCUMENTS}"
    hello = ground("Hello?", "Hello! How can I help?", ()).grounding
    assert hello.verdict == "not_found" and not hello.claims


def test_a_link_in_an_answer_is_no_claim() -> None:
    grounding = checked(
        "When was Marrow Head automated?",
        "It was automated in 1991. See [Marrow Head Archive](https://example.org/A1).",
    )
    assert not grounding.flagged


# --- quotes ---------------------------------------------------------------------------------------


def test_sources_quote_the_supporting_row_whole_with_its_value() -> None:
    result = ground("How many tonnes were collected at Harwick depot?", "14.1 tonnes.", ALL)
    assert result.quotes[6].endswith("Tonnes collected: 14.1 t")
    assert result.quotes[6].startswith("Site: Harwick depot")


def test_a_long_quote_is_cut_around_its_value_never_before_it() -> None:
    text = "Preface words. " * 40 + "The figure was 14.1 tonnes in total. " + "Tail. " * 40
    quoted = quote(text, ["14.1 tonnes"], 120)
    assert "14.1 tonnes" in quoted and len(quoted) <= 122
    assert quoted.startswith("…") and quoted.endswith("…")


def test_an_uncited_table_passage_is_quoted_by_its_whole_row() -> None:
    found = (ev.SourceView(6, "environment/waste.xlsx", "sheet 1, rows 1-2", "", cited=False),)
    quoted = sources.snippets(found, {6: WASTE.text}, "How many tonnes were collected in 2023?")
    assert quoted[6].endswith("Tonnes collected: 14.1 t")


# --- what every view shows ------------------------------------------------------------------------


def test_the_check_block_names_each_flag_and_offers_what_the_documents_say() -> None:
    evidence = tuple(
        ev.EvidenceItemView(p.id, p.source, "lines 1-5", p.text[:80], p.title) for p in ALL
    )
    answer, shown, grounding = sources.grounded(
        "When was Marrow Head automated?",
        "Marrow Head was automated in 1986.",
        evidence,
        {item.id: item for item in evidence},
        {p.id: p.text for p in ALL},
    )
    text = sources.with_sources(answer, shown, grounding)
    assert text.startswith(
        "Marrow Head was automated in 1986.\n\n"
        f"{sources.CHECK_HEADING}\n"
        "- “1986”: the passage [2] says this of Gannet Point.\n"
        f"{sources.OFFERED_LABEL} “Note added by the archive: Marrow Head was automated in 1991.” "
        "[1]\n\n"
        f"{sources.UNCITED_HEADING}\n"
    )


def test_a_supported_answer_shows_no_check_block() -> None:
    grounding = checked("When was Marrow Head automated?", "It was automated in 1991.")
    assert sources.check_block(grounding) == ""
    assert sources.with_sources("It was automated in 1991 [1].", (), grounding) == (
        "It was automated in 1991 [1]."
    )


def test_the_grounding_goes_through_json_and_back_unchanged() -> None:
    grounding = checked("When was Marrow Head automated?", "Marrow Head was automated in 1986.")
    kept = json.loads(json.dumps(grounding.to_json()))
    assert kept["verdict"] == "unsupported"
    assert kept["claims"] == [
        {
            "text": "Marrow Head was automated in 1986.",
            "supported_by": [],
            "note": "“1986”: the passage [2] says this of Gannet Point",
        }
    ]
    assert ev.GroundingView.from_json(kept) == grounding
    assert ev.GroundingView.from_json({"verdict": "maybe"}) is None
    assert ev.GroundingView.from_json(None) is None


# --- what a small model adds beside its answer ----------------------------------------------------

CURLEW = PassageText(
    7,
    "## Curlew\n\nCurlew was delivered by Brindley & Sons of Leeds in December 1878.\n"
    "She was worn out by 1931 and withdrawn. The society restored her to working order in 1972.\n"
    "\nThe halt closed in 1947.\n\nSick pay: 26 weeks at full pay, then 13 weeks at statutory pay."
    "\n\nMileage: staff driving their own car are paid 45p a mile.\n",
    "rolling-stock/locomotives.md",
)


def test_a_true_sentence_copied_beside_the_answer_is_not_flagged() -> None:
    grounding = ground(
        "In which year was Curlew restored to working order?",
        "Curlew was delivered by Brindley & Sons of Leeds in December 1878. She was worn out by "
        "1931. The society restored her in 1972.",
        (CURLEW,),
    ).grounding
    assert grounding.verdict == "supported", grounding


def test_a_copied_value_given_as_the_answer_is_flagged() -> None:
    # The words beside 26 weeks are copied, but the sentence gives it as the mileage rate.
    grounding = ground(
        "What mileage rate is paid to staff who drive their own car?",
        "The mileage rate is 26 weeks at full pay.",
        (CURLEW,),
    ).grounding
    assert grounding.verdict == "unsupported", grounding


def test_a_year_is_no_measure_and_a_long_decimal_is_not_its_integer() -> None:
    minutes = ground("How long does the journey take?", "It takes 1947 minutes.", (CURLEW,))
    assert minutes.grounding.flagged[0].note == f"“1947 minutes” is {NOT_IN_DOCUMENTS}"
    odd = ground("How much is the fare?", "It is 1.0000000000000011.", (CURLEW,))
    assert odd.grounding.flagged[0].note == f"“1.0000000000000011” is {NOT_IN_DOCUMENTS}"
    same = ground("How much is the dog fare?", "It is 0.00 pounds.", (FARES,))
    assert same.grounding.verdict == "supported"


FARES = PassageText(8, "ticket: dog; price_gbp: 0.0; notes: dogs travel free\n", "fares.csv")


def test_millions_and_values_between_commas_are_read_as_written() -> None:
    accounts = PassageText(
        9,
        "Operating profit was £15.7m in 2023. Depreciation was £15.4m.\n"
        "adult return,18.50,Tarnmouth to Crag Quarry and back\n",
        "finance/accounts.md",
    )
    right = ground(
        "What was the operating profit in 2023?", "It was £15,700,000.", (accounts,)
    ).grounding
    assert right.verdict == "supported"
    fare = ground("How much is an adult return?", "It is 18.50.", (accounts,)).grounding
    assert fare.verdict == "supported"
    wrong = ground(
        "What was the operating profit in 2023?", "It was £15.4m.", (accounts,)
    ).grounding
    assert wrong.flagged[0].note.startswith("“£15.4m”: the passage [9] says this of ")


def test_a_passage_copied_with_its_wrapped_lines_is_checked_and_cited_by_sentence() -> None:
    result = ground(
        "When was Marrow Head automated?",
        "The archive notes that Marrow Head was\n**automated in 1991**. The focal plane is\n"
        "71 metres above high water.\n\n- Tower: 14 metres",
        ALL,
    )
    assert result.answer == (
        "The archive notes that Marrow Head was\n**automated in 1991** [1]. The focal plane is\n"
        "71 metres above high water [1].\n\n- Tower: 14 metres [1]"
    )
    assert [c.text for c in result.grounding.claims] == [
        "The archive notes that Marrow Head was **automated in 1991**.",
        "The focal plane is 71 metres above high water.",
        "- Tower: 14 metres",
    ]
    assert result.grounding.verdict == "supported"


PIKESTONE = PassageText(
    1,
    "# Pikestone Booster Pumping Station\n\nPikestone lifts treated water from the low-level zone "
    "to Harl Knott Service Reservoir.\n",
    "assets/pumping-stations/pikestone.md",
    "Pikestone Booster Pumping Station",
)
RUDD_LANE = PassageText(
    2,
    "## Notes\n\nThe asset management plan proposes replacing the pumps with variable-speed sets "
    "in 2027.\n",
    "assets/pumping-stations/rudd-lane.md",
    "Rudd Lane Booster Pumping Station",
)


def test_words_of_one_place_said_of_another_are_flagged() -> None:
    """A sentence with no value to check, in words of one station's note, said of another
    station that the note never names (a follow-up's "there" taken for Pikestone)."""
    grounded = ground(
        "What pumps are installed there?",
        "The asset management plan is to replace the pumps with variable-speed sets, which will "
        "be installed at Pikestone pumping station.",
        [PIKESTONE, RUDD_LANE],
    )
    claim = grounded.grounding.claims[0]
    assert grounded.grounding.verdict == "partly"
    assert claim.note == (
        "the passage [2] says this of Rudd Lane Booster Pumping Station, not of Pikestone"
    )
    # The follow-up as the engine reads it, "there" named: the same words, the same flag,
    # whether the answer names the station or not.
    for said in (
        "The pumps will be replaced with variable-speed sets at Pikestone.",
        "The asset management plan proposes replacing the pumps with variable-speed sets.",
    ):
        named = ground(
            "What pumps are installed at Pikestone pumping station?", said, [PIKESTONE, RUDD_LANE]
        )
        assert named.grounding.verdict == "partly"
        assert named.grounding.claims[0].note == (
            "the passage [2] says this of Rudd Lane Booster Pumping Station, not of Pikestone"
        )
    # The same words said of the station the note is about stand on it.
    right = ground(
        "What will be done with the pumps at Rudd Lane?",
        "The asset management plan proposes replacing the pumps with variable-speed sets.",
        [PIKESTONE, RUDD_LANE],
    )
    assert right.grounding.verdict == "supported"
    assert right.grounding.claims[0].supported_by == (2,)
