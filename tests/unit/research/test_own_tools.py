"""The engine's own tools: ``ask_user`` and ``research_sections`` (DESIGN §2), which the engine
carries out itself (the toolbox only runs the workspace and web tools)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from tests.support.fake_tools import FakeTools, passage
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings


def offered(request: CompletionRequest) -> list[str]:
    return [schema["function"]["name"] for schema in request.tools]


def reply_to(
    calls: list[tuple[str, Any]], *, answer: str | None = None
) -> tuple[ScriptedProvider, list[ev.Event]]:
    """A reply whose model makes ``calls`` in its first round and then answers; ``answer`` is
    what the person says when asked (None: nobody can be asked)."""
    events: list[ev.Event] = []
    provider = ScriptedProvider([Step(calls=calls), Step("Done.")])

    async def person(call_id: str, question: str) -> str:
        assert answer is not None
        return answer

    engine = ResearchEngine(
        provider,
        research_settings({"chat.research_first": False}),
        ask=person if answer is not None else None,
        sink=events.append,
    )
    asyncio.run(engine.run("?", FakeTools(lambda name, values: passage("x"))))
    return provider, events


def tool_result(provider: ScriptedProvider, name: str) -> str:
    [content] = [m.content for m in provider.requests[1].messages if m.name == name]
    return content


def test_the_engine_offers_its_own_tools_after_the_toolbox_s() -> None:
    provider, _ = reply_to([], answer="yes")
    assert offered(provider.requests[0]) == [
        "search_workspace",
        "read_document",
        "list_documents",
        "fetch_url",
        "write_note",
        "ask_user",
        "research_sections",
    ]


def test_the_person_s_answer_is_evidence_from_the_person() -> None:
    provider, events = reply_to([("ask_user", {"question": "Which year?"})], answer=" 1862 \n")
    content = tool_result(provider, "ask_user")
    assert content.startswith("The person answered:")
    assert "[1] the person\n1862\n" in content
    [finished] = [e for e in events if isinstance(e, ev.ToolFinished)]
    assert (finished.status, finished.kind) == ("ok", "ask")
    assert [(item.source, item.excerpt) for item in finished.evidence] == [("user", "1862")]


def test_a_blank_answer_is_no_answer() -> None:
    provider, events = reply_to([("ask_user", {"question": "Which year?"})], answer="  ")
    assert tool_result(provider, "ask_user") == "The person gave no answer.\n"
    [finished] = [e for e in events if isinstance(e, ev.ToolFinished)]
    assert finished.status == "empty" and finished.new_evidence == 0


def test_with_nobody_to_ask_ask_user_is_not_offered_and_a_call_of_it_is_refused() -> None:
    provider, events = reply_to([("ask_user", {"question": "Which year?"})])
    assert "ask_user" not in offered(provider.requests[0])
    content = tool_result(provider, "ask_user")
    assert content.startswith("Error: There is no tool named 'ask_user'. The tools are: ")
    assert content.endswith("write_note, research_sections.")
    assert not any(isinstance(e, ev.QuestionAsked) for e in events)


def test_an_unknown_tool_is_refused_naming_every_tool_offered() -> None:
    provider, _ = reply_to([("rm_rf", {})], answer="yes")
    assert tool_result(provider, "rm_rf") == (
        "Error: There is no tool named 'rm_rf'. The tools are: search_workspace, read_document, "
        "list_documents, fetch_url, write_note, ask_user, research_sections."
    )


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("ask_user", {}, "missing required argument(s) question"),
        ("ask_user", {"question": ["why"]}, "question must be a string"),
        ("ask_user", {"question": {"nested": "object"}}, "question must be a string"),
        ("research_sections", {"sections": "a, b"}, "sections must be a list of strings"),
        ("research_sections", {"sections": []}, "sections must not be empty"),
        ("research_sections", {"sections": ["a", 2]}, "list of strings"),
        ("research_sections", {"sections": ["x"] * 9}, "too long"),
        ("research_sections", {"sections": ["ok", " "]}, "each item of sections must not be empty"),
        ("research_sections", {"sections": {"nested": "object"}}, "sections must be a list"),
    ],
)
def test_bad_calls_of_the_engine_s_tools_return_readable_errors(
    name: str, arguments: dict[str, Any], message: str
) -> None:
    provider, events = reply_to([(name, arguments)], answer="unused")
    content = tool_result(provider, name)
    assert content.startswith("Error: ") and message in content
    assert not any(isinstance(e, ev.QuestionAsked) for e in events), "the person was asked"
    workers = [e for e in events if isinstance(e, ev.RoundStarted) and e.worker is not None]
    assert workers == [], "a section was researched"
