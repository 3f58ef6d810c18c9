"""The runaway detector (:mod:`imprint_desktop.core.research.runaway`): loops and echoes are
caught while the answer streams, and ordinary answers — lists, tables, quotes of the question —
are not."""

from __future__ import annotations

import pytest

from imprint_desktop.core.providers.base import Message
from imprint_desktop.core.research import prompts, runaway
from imprint_desktop.core.research.runaway import Scaffolding, Watch

QUESTION = "Who completed Skerry Rock lighthouse after Elias Brandt died?"
PROMPT = prompts.with_passages(
    prompts.question_block(QUESTION),
    [
        prompts.Passage(
            1, "history/skerry-rock.md", "lines 3-9", "# Skerry Rock\nBuilt 1893.", "Skerry Rock"
        ),
        prompts.Passage(
            2,
            "incidents/great-frost.md",
            "lines 1-4",
            "The great frost of 1956.\nIce closed the harbour.",
            "The great frost of 1956",
        ),
    ],
)
SCAFFOLDING = Scaffolding.of([Message("system", "x"), Message("user", PROMPT)], QUESTION)


def streamed(text: str, *, piece: int = 7, scaffolding: Scaffolding = SCAFFOLDING) -> Watch:
    """``text`` fed to a watch in pieces of ``piece`` characters, as a stream comes, then ended."""
    watch = Watch(scaffolding)
    for at in range(0, len(text), piece):
        if watch.feed(text[at : at + piece]) is not None:
            return watch
    watch.finish()
    return watch


# --- loops ----------------------------------------------------------------------------------


def test_a_line_repeated_is_a_loop_kept_once() -> None:
    text = "Tomas Brandt completed the lighthouse in 1901 [1].\n" * 75
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert watch.kept == "Tomas Brandt completed the lighthouse in 1901 [1]."
    # Caught at the third copy: the rest of the stream is never read.
    assert len(watch.text) < 3 * len("Tomas Brandt completed the lighthouse in 1901 [1].\n") + 7


def test_a_sentence_loop_on_one_line_is_caught() -> None:
    text = "The lamp was lit in 1893. " * 40
    watch = streamed(text)
    assert watch.verdict is not None and watch.kept == "The lamp was lit in 1893."


def test_a_loop_of_two_sentences_keeps_both_once() -> None:
    text = "The keeper was Ada Quill. She kept the light for forty years. " * 10
    watch = streamed(text)
    assert watch.kept == "The keeper was Ada Quill. She kept the light for forty years."


def test_a_sentence_loop_with_small_variations_is_caught() -> None:
    text = (
        "The lighthouse was completed by Tomas Brandt in 1901 after his father died [1].\n"
        "The lighthouse was completed by Tomas Brandt in 1901 after his father had died [2].\n"
        "The lighthouse was completed by Tomas Brandt in 1901, after his father died [1][2].\n"
        "The lighthouse was completed by Tomas Brandt in 1901 after his father died.\n" * 20
    )
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert watch.kept == (
        "The lighthouse was completed by Tomas Brandt in 1901 after his father died [1]."
    )


def test_a_phrase_loop_without_any_line_or_sentence_end_is_caught() -> None:
    text = "Skerry Rock was finished by " + "the flood of 1912 and the son of the keeper " * 30
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert watch.kept == "Skerry Rock was finished by the flood of 1912 and the son of the keeper"


def test_one_word_over_and_over_is_a_loop() -> None:
    watch = streamed("Brandt " * 200)
    assert watch.verdict is not None and watch.kept == "Brandt"


def test_a_loop_is_caught_within_a_few_units_of_starting() -> None:
    """The verdict comes by the third copy however long the stream would have run."""
    unit = "Tomas Brandt, son of the keeper, finished the tower. "
    watch = Watch(SCAFFOLDING)
    fed = 0
    for _ in range(1000):
        fed += 1
        if watch.feed(unit) is not None:
            break
    assert fed == 3


# --- echoes ---------------------------------------------------------------------------------


def test_question_and_passage_heads_pasted_again_and_again_are_cut() -> None:
    paste = (
        f"Question: {QUESTION}\n"
        "Passages from the documents:\n"
        "[1] history/skerry-rock.md, lines 3-9 — Skerry Rock\n"
        "[2] incidents/great-frost.md, lines 1-4 — The great frost of 1956\n"
    )
    watch = streamed(paste * 30)
    assert watch.verdict is not None and watch.verdict.kind == "echo"
    assert watch.kept == ""
    assert len(watch.text) < 2 * len(paste)


def test_an_answer_then_the_prompt_pasted_keeps_the_answer() -> None:
    text = f"Tomas Brandt completed it in 1901 [1].\n\nQuestion: {QUESTION}\n" + "more " * 100
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "echo"
    assert watch.kept == "Tomas Brandt completed it in 1901 [1]."


def test_a_passage_head_pasted_after_the_answer_is_cut_whatever_its_number() -> None:
    text = "Ice closed the harbour in 1956 [2].\n[7] incidents/great-frost.md, lines 1-4\nIce"
    assert streamed(text).kept == "Ice closed the harbour in 1956 [2]."


def test_a_head_without_its_number_is_an_echo_too() -> None:
    text = "It was built in 1893 [1].\nhistory/skerry-rock.md, lines 3-9 — Skerry Rock\nmore"
    assert streamed(text).kept == "It was built in 1893 [1]."


def test_a_made_up_passage_head_ends_the_reply_at_once() -> None:
    # Lines 1-6 were shown; the model "cited" lines 7-10 of the same file, then went on listing.
    question = "What is the mileage rate for motorcycles?"
    shown = prompts.Passage(
        1, "finance/expense-claims-faq.md", "lines 1-6", "Mileage is paid at 0.30 euros.", "FAQ"
    )
    prompt = prompts.with_passages(prompts.question_block(question), [shown])
    scaffolding = Scaffolding.of([Message("user", prompt)], question)
    text = (
        "2. Finance/expense-claims-faq.md, lines 7-10 — Expense claims: questions and answers\n"
        "3. Finance/expense-claims-faq.md, lines 11-14 — Expense claims\n" * 5
    )
    watch = streamed(text, scaffolding=scaffolding)
    assert watch.verdict is not None and watch.verdict.kind == "echo"
    assert watch.kept == ""
    assert len(watch.text) < 120  # cut at the first line, not after four of them


def test_a_shown_passage_head_before_the_answer_is_let_pass() -> None:
    text = "[1] history/skerry-rock.md, lines 3-9 — Skerry Rock\nIt was built in 1893 [1]."
    watch = streamed(text)
    assert watch.verdict is None
    assert runaway.sound_answer(watch.kept, SCAFFOLDING) == "It was built in 1893 [1]."


def test_the_question_pasted_after_the_answer_is_an_echo() -> None:
    text = f"Tomas Brandt [1].\n{QUESTION}\nTomas Brandt [1].\n"
    watch = streamed(text)
    assert watch.verdict is not None and watch.kept == "Tomas Brandt [1]."


def test_the_searched_line_of_an_empty_search_is_an_echo() -> None:
    scaffolding = Scaffolding(question="what is the capital of australia")
    assert scaffolding.echoes("The document was searched for “capital australia”: nothing matched.")


def test_the_question_restated_before_the_answer_is_let_pass() -> None:
    text = f"{QUESTION}\nTomas Brandt completed it in 1901 [1]."
    watch = streamed(text)
    assert watch.verdict is None
    assert runaway.sound_answer(watch.kept, SCAFFOLDING) == "Tomas Brandt completed it in 1901 [1]."


# --- what is not runaway --------------------------------------------------------------------


def test_a_list_whose_items_share_their_opening_is_not_a_loop() -> None:
    text = (
        "The railway's stations:\n"
        "- The station at Tarnmouth opened in 1879 and closed in 1962 [1].\n"
        "- The station at Lakeside opened in 1880 and has an 84 m platform [2].\n"
        "- The station at Crag Halt opened in 1881 and reopened in 1989 [3].\n"
        "- The station at Beck Bridge opened in 1883 and was rebuilt after 1912 [4].\n"
        "- The station at Crag Quarry opened in 1885 and is the terminus [5].\n"
    )
    watch = streamed(text)
    assert watch.verdict is None and watch.kept == text


def test_a_list_of_similar_facts_is_not_a_loop() -> None:
    text = "".join(
        f"- {name} was built by Brindley in {year} [1].\n"
        for name, year in [("Curlew", 1878), ("Kestrel", 1881), ("Merlin", 1890), ("Osprey", 1893)]
    )
    assert streamed(text).verdict is None


def test_a_table_is_not_a_loop() -> None:
    rows = "".join(
        f"| {h:02d}:40 | Tarnmouth | Lakeside | Crag Halt | {h + 1:02d}:22 | daily |\n"
        for h in range(9, 18)
    )
    text = "| Departs | From | Via | To | Arrives | Runs |\n| --- | --- | --- | --- | --- | --- |\n"
    assert streamed(text + rows).verdict is None


def test_an_answer_quoting_a_short_phrase_of_the_question_is_not_an_echo() -> None:
    text = (
        "After Elias Brandt died, Skerry Rock lighthouse was completed by his son Tomas [1].\n"
        "The phrase “completed Skerry Rock lighthouse” appears in the 1901 report [1].\n"
    )
    watch = streamed(text)
    assert watch.verdict is None
    assert runaway.sound_answer(text, SCAFFOLDING) == text.strip()


def test_a_sentence_said_twice_is_not_a_loop() -> None:
    text = "Brandt died in 1899. His son finished the tower. Brandt died in 1899."
    assert streamed(text).verdict is None


@pytest.mark.parametrize("piece", [1, 3, 64, 10_000])
def test_the_verdict_does_not_depend_on_how_the_stream_is_cut(piece: int) -> None:
    text = "Intro line here.\n" + "The keeper rowed out at dawn every day.\n" * 8
    watch = streamed(text, piece=piece)
    assert watch.kept == "Intro line here.\nThe keeper rowed out at dawn every day."


# --- the answer's end -----------------------------------------------------------------------


def test_a_dangling_lead_in_is_left_out() -> None:
    text = "The documents were searched: nothing matched.\n\nThe answer is:"
    assert runaway.without_dangling_lead_in(text) == "The documents were searched: nothing matched."
    assert runaway.without_dangling_lead_in("The answer is:") == ""
    assert runaway.without_dangling_lead_in("Stations: Lakeside and Crag Halt.") == (
        "Stations: Lakeside and Crag Halt."
    )


def test_an_answer_cut_at_its_length_ends_with_its_last_whole_sentence() -> None:
    assert runaway.whole_sentences("It opened in 1879 [1]. The fare is £18.50 for an") == (
        "It opened in 1879 [1]."
    )
    assert runaway.whole_sentences("Holloway") == "Holloway"  # no sentence ends: kept
    assert runaway.whole_sentences("It cost £2,340.") == "It cost £2,340."


def test_an_answer_of_only_a_passage_title_is_not_sound() -> None:
    assert runaway.sound_answer("The great frost of 1956.", SCAFFOLDING) == ""
    assert runaway.sound_answer("The great frost of 1956 closed the harbour [2].", SCAFFOLDING)


def test_an_answer_of_only_passage_heads_is_not_sound() -> None:
    heads = (
        "1. [1] history/skerry-rock.md, lines 3-9 — Skerry Rock\n"
        "2. [2] incidents/great-frost.md, lines 1-4 — The great frost of 1956\n"
    )
    assert runaway.sound_answer(heads, SCAFFOLDING) == ""


def test_a_phrase_written_a_third_time_between_other_words_is_a_loop() -> None:
    text = (
        "1. The Chair of the Audit and Risk Committee (CRC) was the Chair of the Audit and Risk "
        "Committee (CRC) and the Chair of the Audit and Risk Committee (CRC) was the Chair of "
        "the Audit and Risk Committee (CRC) [1]"
    )
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert watch.kept == "1. The Chair of the Audit and Risk Committee (CRC) was"


def test_a_long_phrase_said_twice_is_not_a_loop() -> None:
    text = (
        "The Chair of the Audit and Risk Committee reported in March [1]. In June the Chair of "
        "the Audit and Risk Committee reported again, on the new plan [2]."
    )
    assert streamed(text).verdict is None


REPORT_PROMPT = prompts.with_passages(
    prompts.question_block("When did the Tarn Valley Railway open to passengers?"),
    [
        prompts.Passage(
            3,
            "finance/annual-report-2023.txt",
            "lines 1-8",
            "TARN VALLEY RAILWAY - ANNUAL REPORT 2023\n\nPassenger journeys in 2023: 61,200.",
            "annual-report-2023",
        )
    ],
)
REPORT = Scaffolding.of(
    [Message("user", REPORT_PROMPT)], "When did the Tarn Valley Railway open to passengers?"
)


def test_a_numbered_list_of_the_titles_words_on_one_line_is_no_answer() -> None:
    # A heading in capitals is a title too; a number in a title changed is still the title.
    text = "3. The annual report 2023 4. The annual report 2022 5. The Tarn Valley Railway 6."
    assert runaway.sound_answer(text, REPORT) == ""


@pytest.mark.parametrize(
    "text",
    [
        "1. Tarnmouth 2. Lakeside 3. Crag Halt",  # names a title holds: an answer's words
        "It opened in 1879. 2. The annual report 2023 says so.",
    ],
)
def test_a_numbered_answer_that_names_a_title_is_kept(text: str) -> None:
    assert runaway.sound_answer(text, REPORT) == text


def test_a_short_line_written_a_third_time_in_a_row_is_a_loop() -> None:
    """ "[3] 2026-02-24" line after line, the number counting up, is caught at its third line
    (it ran 249 tokens, three seconds, before the phrase check saw it)."""
    text = "".join(f"[{n}] 2026-02-24\n" for n in range(3, 60))
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert watch.kept == "[3] 2026-02-24"
    assert len(watch.text) < 3 * len("[3] 2026-02-24\n") + 7


@pytest.mark.parametrize(
    "text",
    [
        "- 02:30\n- 02:30 on Sundays\n- 02:30\n",  # not three alike in a row
        "| 2022 | 612 |\n| 2023 | 612 |\n| 2024 | 612 |\n",  # table rows differ
        "Yes.\nYes.\n",  # twice
    ],
)
def test_short_lines_alike_but_not_three_in_a_row_are_not_a_loop(text: str) -> None:
    assert streamed(text).verdict is None


def test_a_loop_whose_citation_numbers_count_up_is_a_loop() -> None:
    text = "".join(f"[{n}] 2026-02-24 " for n in range(3, 60))
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "loop"
    assert len(watch.kept) < 40


def test_a_passage_head_with_its_path_written_otherwise_is_an_echo() -> None:
    # The head showed hr/archive/leave-policy-2023.md; the model dropped a folder.
    line = "[4] hr/leave-policy-2023.md, lines 1-2 — Leave policy Effective: 2023-09-01"
    assert Scaffolding().echoes(line)
    assert not Scaffolding().echoes("[4] The leave policy gives 27 days, lines up with 2025.")


def test_an_answer_of_only_the_titles_words_a_line_an_item_is_no_answer() -> None:
    text = (
        "3. The annual report 2023 [3]\n4. The annual report 2022 [3]\n"
        "5. The Tarn Valley Railway\n6 [1]."
    )
    assert runaway.sound_answer(text, REPORT) == ""


def test_titles_listed_for_a_question_that_asks_which_report_are_its_answer() -> None:
    question = "Which reports give passenger numbers?"
    asked = Scaffolding.of(
        [
            Message(
                "user",
                REPORT_PROMPT.replace(
                    "When did the Tarn Valley Railway open to passengers?", question
                ),
            )
        ],
        question,
    )
    text = "1. The annual report 2023\n2. The annual report 2022"
    assert runaway.sound_answer(text, asked) == text


def test_a_source_written_before_the_value_it_gives_is_no_echo() -> None:
    line = "1. Finance/annual-report-2023.txt, lines 1-8 — 61,200 (2022: 55,800) [1]."
    assert not Scaffolding().echoes(line)
    assert Scaffolding().echoes("1. Finance/annual-report-2023.txt, lines 1-8 — Annual report")


def test_a_passage_head_pasted_inside_a_later_sentence_is_cut_as_it_is_written() -> None:
    answer = "The daily allowance for business travel is 65 euros [1]."
    text = (
        f"{answer}\n\nThe passage is from the document "
        '"Finance/Travel-Expense-Policy.docx, lines 5-7 — Business travel allowance". ' * 3
    )
    watch = streamed(text)
    assert watch.verdict is not None and watch.verdict.kind == "echo"
    assert watch.kept == answer
    assert len(watch.text) < len(answer) + 100  # stopped at the head, not at the line's end


def test_an_answer_citing_its_source_by_path_in_its_first_sentence_is_kept() -> None:
    text = "The allowance is 65 euros (finance/travel.docx, lines 5-7)."
    watch = streamed(text)
    assert watch.verdict is None
    assert runaway.sound_answer(watch.kept, SCAFFOLDING) == text
