"""Grounded answers by default (DESIGN §1): search before answering, "not found", Sources."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from imprint_desktop.core.providers.base import CompletionRequest, Message
from imprint_desktop.core.providers.estimate import chars_for_tokens
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import seed, sources
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult
from imprint_desktop.core.workspace.search import fts_terms
from tests.support.fake_tools import FakeTools
from tests.support.research_run import Recorder, assert_protocol_complete, research_then_final
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings

GANNET = EvidenceItem(
    "stations/gannet-point.md", "lines 7-9", "Lit: 1 November 1857.", "Gannet Point lighthouse"
)
ROSTER = EvidenceItem("people/keepers-roster.md", "lines 3-4", "Keepers: Alder, Brook.", "Roster")


def found(*items: EvidenceItem) -> ToolResult:
    body = "\n".join(f"[n] {item.source}: {item.text}" for item in items)
    return ToolResult("search_workspace", "ok", body, items)


def nothing(name: str = "search_workspace") -> ToolResult:
    return ToolResult(name, "empty", "No passages in the workspace match.")


def make(
    script: Any,
    respond: Any,
    *,
    context_window: int = 32_768,
    settings: Mapping[str, object] | None = None,
    parameters: int | None = None,
) -> tuple[ResearchEngine, FakeTools, ScriptedProvider, Recorder]:
    chosen = research_settings({"chat.research_timeout_sec": 60, **(settings or {})})
    provider = ScriptedProvider(script, context_window=context_window)
    provider.parameters = parameters
    recorder = Recorder()
    engine = ResearchEngine(provider, chosen, sink=recorder)
    tools = FakeTools(respond)
    return engine, tools, provider, recorder


# --- the query --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("When was the harbour light first lit?", ["harbour", "light", "first", "lit"]),
        (
            "What does the keeper's log say about the 1936 grounding?",
            ["keeper's", "log", "1936", "grounding"],
        ),
        (
            "Wann wurde der Leuchtturm von Gannet Point gebaut?",
            ["leuchtturm", "gannet", "point", "gebaut"],
        ),
        ("Quand le phare a-t-il été automatisé ?", ["phare", "a-t-il", "été", "automatisé"]),
        ("what is the", ["what", "is", "the"]),  # nothing but function words: keep them all
    ],
)
def test_the_seed_query_keeps_the_content_words(question: str, words: list[str]) -> None:
    assert seed.content_words(question) == words


def test_a_question_is_searched_as_written_and_its_function_words_never_reach_the_words() -> None:
    question = "What does the report say about what the board did?"
    assert seed.seed_query(question) == question
    assert fts_terms(question) == ['"report"', '"board"']
    assert seed.seed_words(question) == "report board"
    # A German question: its own language's function words are left out.
    assert fts_terms("Wann wurde der Leuchtturm gebaut?") == ['"leuchtturm"', '"gebaut"']


def test_the_seed_takes_a_share_of_the_room_left_and_never_more_than_the_cap() -> None:
    def chars(window: int, prompt: int, output: int, question: str = "When was it lit?") -> int:
        return seed.seed_chars(
            context_window=window, prompt_tokens=prompt, output_tokens=output, cap=6000,
            question=question,
        )  # fmt: skip

    assert chars(32_768, 800, 1024) == seed.MAX_SEED_CHARS
    tight = chars(2048, 900, 512)
    assert seed.MIN_SEED_CHARS < tight < seed.MAX_SEED_CHARS
    assert tight == chars_for_tokens((2048 - 900 - 512) // 2, "When was it lit?")
    assert chars(2048, 2000, 512) == seed.MIN_SEED_CHARS
    # The same room holds fewer characters of a script that takes more tokens a character.
    assert chars(2048, 900, 512, "灯塔是什么时候第一次点亮的？") < tight


def test_the_seed_grows_with_the_model() -> None:
    """A 135M model gets three passages; billions of parameters, or a server's model, more."""
    assert seed.seed_limit(135_000_000) == seed.SEED_LIMIT == 3
    assert seed.seed_limit(1_700_000_000) == seed.MID_SEED_LIMIT
    assert seed.seed_limit(8_000_000_000) == seed.seed_limit(None) == seed.LARGE_SEED_LIMIT
    assert seed.SEED_LIMIT < seed.MID_SEED_LIMIT < seed.LARGE_SEED_LIMIT

    def chars(limit: int) -> int:
        return seed.seed_chars(
            context_window=32_768, prompt_tokens=800, output_tokens=1024, cap=20_000,
            question="When was it lit?", limit=limit,
        )  # fmt: skip

    assert chars(seed.SEED_LIMIT) == seed.MAX_SEED_CHARS
    assert chars(seed.LARGE_SEED_LIMIT) == seed.LARGE_SEED_LIMIT * seed.PASSAGE_CHARS
    # However many passages, never past the room left nor the tool's cap.
    tight = seed.seed_chars(
        context_window=4096, prompt_tokens=900, output_tokens=512, cap=20_000,
        question="When was it lit?", limit=seed.LARGE_SEED_LIMIT,
    )  # fmt: skip
    assert tight == chars_for_tokens((4096 - 900 - 512) // 2, "When was it lit?")


# --- the engine's own search ----------------------------------------------------------------------


def test_the_first_request_holds_the_seeded_passages_and_may_answer_at_once() -> None:
    engine, tools, provider, recorder = make(
        [Step("Gannet Point was first lit on 1 November 1857 [1].")], lambda n, v: found(GANNET)
    )
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))

    assert tools.calls == [
        # A model of unknown size (a server's) is seeded with the most passages.
        (
            "search_workspace",
            {"query": "When was Gannet Point first lit?", "limit": seed.LARGE_SEED_LIMIT},
        )
    ]
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert len(provider.requests) == 1  # answered at once: no further request
    first = provider.requests[0]
    assert first.tool_choice == "auto" and first.offers_tools  # nothing forces a tool call
    assert_protocol_complete(first)
    # Answer first: a short system prompt, then one user turn with the numbered passages, their
    # sources, and the question last; no tool transcript for a small model to dig through.
    assert [m.role for m in first.messages] == ["system", "user"]
    turn = first.messages[1].content
    assert turn.startswith("Passages from the documents:")
    assert f"[1] {GANNET.source}, {GANNET.location} — {GANNET.title}\n{GANNET.text}" in turn
    assert turn.endswith("\n\nQuestion: When was Gannet Point first lit?")
    assert len(first.messages[0].content) < 600
    assert [item.source for item in result.evidence] == [GANNET.source]

    tool_lines = [trace_line(e) for e in recorder.of(ev.ToolFinished)]
    assert tool_lines == [
        {
            "t": tool_lines[0]["t"] if tool_lines[0] else 0,
            "type": "tool",
            "round": 0,
            "call_id": seed.SEED_CALL_ID,
            "name": "search_workspace",
            "kind": "read",
            "status": "ok",
            "new_evidence": 1,
            "repeated_evidence": 0,
            "seconds": tool_lines[0]["seconds"] if tool_lines[0] else 0,
            "past_deadline": 0.0,
            "origin": "engine",
        }
    ]
    started = recorder.of(ev.ToolStarted)
    assert (
        started[0].origin == "engine"
        and started[0].summary == "Searching 'When was Gannet Point first lit?'"
    )
    assert recorder.of(ev.RoundEnded)[0].round == 0 and recorder.of(ev.RoundEnded)[0].progress


def test_a_follow_up_keeps_its_subject_without_replaying_the_earlier_answer() -> None:
    engine, tools, provider, _ = make([Step("Alder and Brook [1].")], lambda n, v: found(ROSTER))
    history = [
        Message("user", "When was Gannet Point first lit?"),
        Message("assistant", "On 1 November 1857."),
    ]
    asyncio.run(engine.run("Who were its keepers?", tools, history))
    # "its" is Gannet Point: the search looks for the earlier question's subject too.
    assert tools.calls == [
        ("search_workspace", {"query": "keepers gannet point", "limit": seed.LARGE_SEED_LIMIT})
    ]
    messages = provider.requests[0].messages
    assert [m.role for m in messages] == ["system", "user"]
    turn = messages[1].content
    # The subject "its" refers to is named in the question; neither the earlier question (a small
    # model answered it again) nor the earlier answer (copied) is shown.
    assert turn.endswith("\n\nQuestion: Who were the keepers of Gannet Point?")
    assert "1857" not in turn and "first lit" not in turn


@pytest.mark.parametrize(
    ("question", "earlier", "resolved"),
    [
        ("When was it automated?", "What is the range of the Gannet Point light?",
         "When was the Gannet Point light automated?"),
        ("When was it automated?", "When was Gannet Point first lit?",
         "When was Gannet Point automated?"),
        ("How long is the platform there?", "When did Lakeside station open?",
         "How long is the platform at Lakeside station?"),
        ("How long is the platform there?", "When did Lakeside first open?",
         "How long is the platform at Lakeside?"),
        ("Is there a car park?", "Where is Crag Halt?", "Is there (Crag Halt) a car park?"),
        ("What did rebuilding it cost?", "What happened to Beck Viaduct in 1912?",
         "What did rebuilding Beck Viaduct cost?"),
        ("Wann wurde es automatisiert?", "Wie weit reicht das Licht von Gannet Point?",
         "Wann wurde es (Gannet Point) automatisiert?"),
        ("When was it automated?", "when was the light lit?", "When was it automated?"),
        ("Which engine was that built by?", "Who drove Curlew?",
         "Which engine was that (Curlew) built by?"),
        ("How many properties did it affect?",
         "What caused the turbidity incident at Marl Lane in August 2024?",
         "How many properties did the turbidity incident at Marl Lane in August 2024 affect?"),
        ("How many properties did it affect?", "What caused the flood at Marl Lane in 1912?",
         "How many properties did the flood at Marl Lane in 1912 affect?"),
        ("What is its maximum output?",
         "What process does Thornbeck water treatment works use to remove the floc?",
         "What is the maximum output of Thornbeck water treatment works?"),
        ("When did its line close?", "Where is Crag Halt?", "When did Crag Halt's line close?"),
        ("In which year was it restored?", "Which company built the locomotive Curlew?",
         "In which year was the locomotive Curlew restored?"),
        ("How much water does it hold?", "Who is the supervising engineer for Askridge Reservoir?",
         "How much water does Askridge Reservoir hold?"),
        ("How long is it?", "When was the platform at Lakeside built?",
         "How long is the platform at Lakeside?"),
        ("When did it open?", "Which engine ran at Crag Halt?", "When did Crag Halt open?"),
        ("How many meters did they fit?", "Who led the smart metering pilot?",
         "How many meters did the smart metering pilot fit?"),
        ("And what was leakage that year?", "How many homes did Corvenham Water supply in 2022?",
         "And what was leakage in 2022 (Corvenham Water)?"),
        ("What was leakage in that year?", "What happened in 1912?",
         "What was leakage in 1912?"),
        ("What did they cost?", "Who built the new reservoir of the town?",
         "What did they cost?"),
    ],
)  # fmt: skip
def test_a_follow_up_is_written_out_with_its_subject(
    question: str, earlier: str, resolved: str
) -> None:
    assert seed.resolved_question(question, [earlier]) == resolved


def test_a_new_question_in_a_conversation_stands_on_its_own() -> None:
    engine, tools, provider, _ = make([Step("In 1857 [1].")], lambda n, v: found(GANNET))
    history = [
        Message("user", "Who were the keepers at Skerry Rock?"),
        Message("assistant", "Alder and Brook."),
    ]
    asyncio.run(engine.run("When was Gannet Point first lit?", tools, history))
    assert tools.calls[0][1]["query"] == "When was Gannet Point first lit?"
    turn = provider.requests[0].messages[-1].content
    assert "Earlier question" not in turn and "Skerry" not in turn


@pytest.mark.parametrize(
    ("questions", "earlier"),
    [
        ([], ()),
        (["What is the range of the Gannet Point light?"],
         ("What is the range of the Gannet Point light?",)),
        (["What is the range of the Gannet Point light?", "When was it automated?"],
         ("What is the range of the Gannet Point light?", "When was it automated?")),
        (["When was it automated?"], ("When was it automated?",)),
    ],
)  # fmt: skip
def test_a_follow_up_follows_the_last_question_that_names_a_subject(
    questions: list[str], earlier: tuple[str, ...]
) -> None:
    assert seed.earlier_questions(questions) == earlier


@pytest.mark.parametrize(
    ("question", "earlier", "query"),
    [
        ("When was it automated?", ("What is the range of the Gannet Point light?",),
         "gannet point light automated"),
        ("How long is the platform there?", ("When did Lakeside station open?",),
         "long platform lakeside station"),
        ("What did rebuilding it cost?", ("What happened to Beck Viaduct in the 1912 flood?",),
         "rebuilding beck viaduct cost 1912"),
        # No proper names: every content word of the earlier question.
        ("And why?", ("why did the harbour light fail",), "harbour light fail"),
        # A question that names its own subject does not borrow one.
        ("When was Skerry Rock lit?", ("What is the range of the Gannet Point light?",),
         "When was Skerry Rock lit?"),
    ],
)  # fmt: skip
def test_a_follow_up_searches_for_the_subject_it_refers_to(
    question: str, earlier: tuple[str, ...], query: str
) -> None:
    assert seed.seed_query(question, earlier) == query


def test_section_workers_seed_with_their_section() -> None:
    def script(request: CompletionRequest) -> Step:
        if request.phase == "worker":
            return Step("Section summary [2].")
        if not any(m.role == "tool" and m.name == "research_sections" for m in request.messages):
            return Step(calls=[("research_sections", {"sections": ["keepers of Gannet Point"]})])
        return Step("Answer [1][2].")

    engine, tools, _provider, recorder = make(
        script, lambda n, v: found(GANNET if "lit" in v["query"] else ROSTER)
    )
    result = asyncio.run(engine.run("When was Gannet Point lit?", tools))
    queries = [values["query"] for name, values in tools.calls if name == "search_workspace"]
    assert queries == ["When was Gannet Point lit?", "keepers of Gannet Point"]
    origins = [(e.name, e.origin) for e in recorder.of(ev.ToolFinished)]
    assert origins == [
        ("search_workspace", "engine"),
        ("search_workspace", "engine"),  # the worker's own first search
        ("research_sections", "model"),
    ]
    assert result.stop_reason == "answered" and len(result.evidence) == 2


def test_with_research_first_off_the_engine_does_not_search() -> None:
    engine, tools, provider, recorder = make(
        [Step("Answer.")], lambda n, v: found(GANNET), settings={"chat.research_first": False}
    )
    asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert tools.calls == [] and not recorder.of(ev.ToolFinished)
    assert [m.role for m in provider.requests[0].messages] == ["system", "user"]


def test_a_question_too_long_to_search_for_is_still_answered() -> None:
    """The search tool refuses a query past its length limit (a pasted log as the question):
    the reply goes on, and the question's turn claims no search it did not make."""
    question = "Summarise this log. " + " ".join(
        f"Entry {n}: the lamp was trimmed and the log signed." for n in range(250)
    )
    assert len(seed.seed_query(question)) > 500  # past search_workspace's query limit
    engine, tools, provider, _recorder = make(
        [Step("The lamp was trimmed every night.")],
        lambda n, v: ToolResult.error("search_workspace", "query is too long"),
    )
    result = asyncio.run(engine.run(question, tools))
    assert result.stop_reason == "answered" and result.final_mode == "model", result.error
    [_system, user] = provider.requests[0].messages
    assert user.content == f"Question: {question}"


def test_the_seed_fits_a_small_context_window() -> None:
    sizes: list[int | None] = []

    class Sized(FakeTools):
        async def execute(self, name: str, arguments: Any, **kwargs: Any) -> ToolResult:
            sizes.append(kwargs.get("max_chars"))
            return await super().execute(name, arguments, **kwargs)

    provider = ScriptedProvider([Step("Answer [1].")], context_window=2048)
    engine = ResearchEngine(
        provider,
        research_settings(
            {"chat.research_timeout_sec": 60, "chat.research_max_output_tokens": 512}
        ),
    )
    tools = Sized(lambda n, v: found(GANNET))
    asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert sizes and sizes[0] is not None and sizes[0] < 6000


# --- nothing found ------------------------------------------------------------------------------


def test_no_evidence_on_a_budget_stop_is_said_without_asking_the_model() -> None:
    def script(request: CompletionRequest) -> Step:
        assert request.phase != "final", "no final request when nothing was found"
        return Step(calls=[("list_documents", {}), ("search_workspace", {"query": "lamp oil"})])

    engine, tools, provider, recorder = make(
        script, lambda name, values: nothing(name), settings={"chat.research_no_progress_rounds": 3}
    )
    result = asyncio.run(engine.run("When was the harbour light first lit?", tools))

    assert result.stop_reason == "no_progress" and result.final_mode == "no_evidence"
    assert result.answer.startswith(f"{sources.NOT_FOUND_LABEL} in the test workspace")
    assert "“When was the harbour light first lit?”" in result.answer
    assert "“lamp oil”" in result.answer
    assert "other words" in result.answer and "larger model" in result.answer
    assert all(request.phase == "research" for request in provider.requests)
    finals = [trace_line(e) for e in recorder.of(ev.FinalFinished)]
    assert [line["mode"] for line in finals if line] == ["no_evidence"]
    assert result.to_json()["final_mode"] == "no_evidence"


def test_answer_without_evidence_asks_the_model_and_labels_its_answer() -> None:
    script = research_then_final(
        lambda n: Step(calls=[("search_workspace", {"query": "lamp"})]), "Probably in the 1850s."
    )

    engine, tools, provider, _ = make(
        script,
        lambda n, v: nothing(),
        settings={"chat.research_no_progress_rounds": 2, "chat.answer_without_evidence": True},
    )
    result = asyncio.run(engine.run("When was the harbour light first lit?", tools))
    assert result.final_mode == "model" and provider.requests[-1].phase == "final"
    assert result.answer.startswith(f"{sources.WITHOUT_EVIDENCE_LABEL}: nothing was found")
    assert result.answer.endswith("Probably in the 1850s.")


def test_an_answer_given_at_once_without_evidence_is_unchanged() -> None:
    engine, tools, _provider, _ = make(
        [Step("Hello! Ask me about your documents.")], lambda n, v: nothing()
    )
    result = asyncio.run(engine.run("hello there", tools))
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert result.answer == "Hello! Ask me about your documents."


def test_a_token_budget_too_small_for_one_request_is_said_so() -> None:
    engine, tools, provider, _ = make(
        [Step("never")],
        lambda n, v: nothing(),
        settings={"chat.research_token_budget": 1024, "chat.research_max_output_tokens": 1024},
    )
    result = asyncio.run(engine.run("When was the harbour light first lit?", tools))
    assert result.stop_reason == "token_budget" and result.final_mode == "no_evidence"
    assert "too small for even one request" in result.answer
    assert provider.requests == []


# --- sources under the answer -----------------------------------------------------------------


def shown(result: ev.ReplyResult) -> str:
    """The answer as every view shows it: its text, what to check in it, then its sources."""
    return sources.with_sources(result.answer, result.sources, result.grounding)


def test_an_answer_that_cites_ends_with_its_sources() -> None:
    engine, tools, _p, _r = make([Step("Lit in 1857 [1].")], lambda n, v: found(GANNET, ROSTER))
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    body, block = shown(result).split(f"\n\n{sources.SOURCES_HEADING}\n")
    assert body == result.answer == "Lit in 1857 [1]."
    # A cited source quotes the sentence that supports the answer.
    assert block == (
        "- [1] stations/gannet-point.md, lines 7-9 — Gannet Point lighthouse: "
        "“Lit: 1 November 1857.”"
    )
    assert [(s.id, s.cited) for s in result.sources] == [(1, True)]
    assert json.loads(json.dumps(result.to_json()))["sources"][0]["title"] == GANNET.title


def test_an_answer_the_model_left_uncited_is_cited_where_a_passage_supports_it() -> None:
    engine, tools, _p, _r = make([Step("It was 1857.")], lambda n, v: found(GANNET, ROSTER))
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    body, block = shown(result).split(f"\n\n{sources.SOURCES_HEADING}\n")
    assert body == result.answer == "It was 1857 [1]."
    assert block == (
        "- [1] stations/gannet-point.md, lines 7-9 — Gannet Point lighthouse: "
        "“Lit: 1 November 1857.”"
    )
    assert result.grounding is not None and result.grounding.verdict == "supported"


def test_an_answer_that_cites_nothing_shows_the_passages_found() -> None:
    engine, tools, _p, _r = make([Step("It was long ago.")], lambda n, v: found(GANNET, ROSTER))
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    body, block = shown(result).split(f"\n\n{sources.UNCITED_HEADING}\n")
    # Nothing in it could be tied to a passage: the passage sentence that answers the question
    # is offered first, above the passages found.
    assert body == (
        f"It was long ago.\n\n{sources.CHECK_HEADING}\n"
        "- the answer gives no date or year, which the question asks for.\n"
        f"{sources.OFFERED_LABEL} “Lit: 1 November 1857.” [1]"
    )
    assert block.splitlines() == [
        "- [1] stations/gannet-point.md, lines 7-9 — Gannet Point lighthouse: "
        "“Lit: 1 November 1857.”",
        "- [2] people/keepers-roster.md, lines 3-4 — Roster: “Keepers: Alder, Brook.”",
    ]
    assert all(not s.cited for s in result.sources)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("a [1] b [3, 2] c [1]", [1, 3, 2]),
        ("see [4–6]", [4, 5, 6]),
        ("[7][8]", [7, 8]),
        ("no [citation] here [x]", []),
    ],
)
def test_citations_are_read_from_the_answer(text: str, ids: list[int]) -> None:
    assert sources.cited_ids(text) == ids


def test_passages_shown_uncited_show_the_part_that_matches_the_question() -> None:
    long = EvidenceItem(
        "history/opening.md",
        "lines 7-14",
        "## Construction\n\nThe company obtained its act in 1876 after a long fight in the courts "
        "about the wharf. The engineer was Margaret Holloway, who had surveyed mineral lines in "
        "the north. Work started at the Tarnmouth end in the spring of 1877, and the hardest part "
        "was the rock cutting below Crag Halt, blasted by forty men over two winters.",
        "The opening of the line",
    )
    engine, tools, _p, _r = make([Step("It was someone.")], lambda n, v: found(long))
    result = asyncio.run(engine.run("Who was the engineer of the line?", tools))
    block = shown(result).split(f"\n\n{sources.UNCITED_HEADING}\n")[1]
    assert "The engineer was Margaret Holloway" in block
    assert block.startswith("- [1] history/opening.md, lines 7-14 — The opening of the line: “…")


def test_the_quote_is_the_sentence_holding_the_rare_word_of_the_question() -> None:
    # Every sentence names the light; only one holds "range". Counting matched words alone
    # quoted the first sentence (it names "Gannet Point" and "light" too).
    light = EvidenceItem(
        "stations/gannet-point.md",
        "lines 15-19",
        "The Gannet Point light was first a fixed white light from a four-wick oil burner, "
        "the light that ships knew for forty years. In 1902 the Gannet Point light was given "
        "two white flashes every fifteen seconds, so that the light could not be confused with "
        "Skerry Rock. The nominal range is 24 nautical miles.",
        "Gannet Point lighthouse",
    )
    other = EvidenceItem(
        "stations/skerry-rock.rst", "lines 3-4", "Skerry Rock light: a single white flash.", ""
    )
    engine, tools, _p, _r = make([Step("It is far.")], lambda n, v: found(light, other))
    result = asyncio.run(engine.run("What is the range of the Gannet Point light?", tools))
    block = shown(result).split(f"\n\n{sources.UNCITED_HEADING}\n")[1]
    first_line = block.splitlines()[0]
    assert "The nominal range is 24 nautical miles." in first_line


@pytest.mark.parametrize(
    ("text", "tidy"),
    [
        (
            "Theft of the bridge.\n\nTheft of the bridge.\n\nTheft of the bridge.",
            "Theft of the bridge.",
        ),
        ("The answer is: The answer is: The answer is: 1857 [1].", "The answer is: 1857 [1]."),
        ("Lit in 1857 [1]. Built by Brandt [2].", "Lit in 1857 [1]. Built by Brandt [2]."),
        ("- Yes.\n- Yes.\n- No.", "- Yes.\n- Yes.\n- No."),  # short units stay as written
    ],
)
def test_an_answer_that_loops_is_read_once(text: str, tidy: str) -> None:
    assert sources.without_repeats(text) == tidy


def test_a_looping_answer_reaches_the_person_once() -> None:
    loop = "The final answer to the person's question is: " * 5 + "1857 [1]."
    engine, tools, _p, _r = make([Step(loop)], lambda n, v: found(GANNET))
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert result.answer == "The final answer to the person's question is: 1857 [1]."


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Question: When was Gannet Point first lit?\n\nThe answer: in 1857 [1].",
         "The answer: in 1857 [1]."),
        ("[4] stations/gannet-point.md, lines 7-9 — Gannet Point lighthouse\nLit: 1 November 1857.",
         "Lit: 1 November 1857."),
        ("Passages from the documents:\n\n[1] people/keepers-roster.md, lines 3-4\nKeepers: Alder.",
         "Keepers: Alder."),
        # Only the request's own lines go: a cited number, or a passage of another source, stays.
        ("[1] 1857\n[2] stations/skerry-rock.md, lines 1-2",
         "[1] 1857\n[2] stations/skerry-rock.md, lines 1-2"),
        # Nothing but scaffolding: kept, so the person sees what the model wrote.
        ("Question: When was it lit?", "Question: When was it lit?"),
    ],
)  # fmt: skip
def test_lines_copied_from_the_request_are_left_out_of_the_answer(text: str, answer: str) -> None:
    shown = sources.without_prompt_echo(text, [GANNET.source, ROSTER.source])
    assert shown == answer


def test_an_answer_that_copies_its_request_reaches_the_person_without_the_copy() -> None:
    echo = (
        "Question: When was Gannet Point first lit?\n\n"
        "[2] stations/gannet-point.md, lines 7-9 — Gannet Point lighthouse\n"
        "It was first lit on 1 November 1857 [1]."
    )
    engine, tools, _p, _r = make([Step(echo)], lambda n, v: found(GANNET))
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert result.answer == "It was first lit on 1 November 1857 [1]."
    assert [source.id for source in result.sources] == [1]


def test_a_quoted_passage_leaves_out_heading_marks() -> None:
    heading = EvidenceItem(
        "history/founding-1852.md", "lines 16-21",
        "## The first engineer\n\nThe commissioners appointed Elias Brandt as engineer in 1852.",
        "Founding",
    )  # fmt: skip
    engine, tools, _p, _r = make([Step("Nobody knows.")], lambda n, v: found(heading))
    result = asyncio.run(engine.run("Who was the first engineer?", tools))
    assert "“The first engineer The commissioners appointed Elias Brandt" in shown(result)
    assert "##" not in shown(result)


# --- answering first: small models read the passages without the tools ------------------------

SMALL, LARGE = 135_000_000, 7_000_000_000


@pytest.mark.parametrize(
    ("setting", "parameters", "offered"),
    [
        ("auto", SMALL, False),
        ("auto", LARGE, True),
        ("auto", None, True),  # a server: it does not say, and is told about the tools
        ("offered", SMALL, True),
        ("withheld", LARGE, False),
    ],
)
def test_who_is_told_about_the_tools_first(
    setting: str, parameters: int | None, offered: bool
) -> None:
    assert seed.first_request_offers_tools(setting, parameters) is offered


def test_a_small_model_answers_from_the_passages_in_a_tools_free_request() -> None:
    engine, tools, provider, _ = make(
        [Step("Gannet Point was first lit on 1 November 1857 [1].")],
        lambda n, v: found(GANNET),
        settings={"chat.max_tokens": 300, "chat.research_max_output_tokens": 1024},
        parameters=SMALL,
    )
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert result.stop_reason == "answered" and result.rounds == 0
    assert tools.calls[0][1]["limit"] == seed.SEED_LIMIT  # a small model's few passages
    [first] = provider.requests
    assert first.tools == () and first.max_tokens == 300  # an answer's request
    assert "Lit: 1 November 1857." in first.messages[-1].content
    assert "tool" not in first.messages[0].content.lower()  # nothing said of tools at all
    opening = engine.opening(tools)  # the warm-up evaluates the same opening
    assert opening.tools == () and opening.messages[0] == first.messages[0]


def test_a_small_model_s_empty_answer_is_followed_by_a_request_with_the_tools() -> None:
    script = [Step(""), Step(calls=[("read_document", {"path": "stations/gannet-point.md"})]),
              Step("Lit in 1857 [1].")]  # fmt: skip
    engine, tools, provider, _ = make(script, lambda n, v: found(GANNET), parameters=SMALL)
    result = asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert result.stop_reason == "answered"
    assert provider.requests[0].tools == ()
    assert provider.requests[1].tools and provider.requests[2].tools


def test_a_small_model_is_offered_the_tools_when_the_search_found_nothing() -> None:
    script = [Step(calls=[("search_workspace", {"query": "lamp"})]), Step("Nothing about it.")]
    engine, tools, provider, _ = make(script, lambda n, v: nothing(n), parameters=SMALL)
    asyncio.run(engine.run("When was Gannet Point first lit?", tools))
    assert provider.requests[0].tools
