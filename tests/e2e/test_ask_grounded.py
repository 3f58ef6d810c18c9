"""Grounded answers by default, black-box through `imprint ask` and a scripted server (DESIGN §1).

The engine searches the workspace itself before the first model request (``chat.research_first``,
on by default), says "nothing was found" instead of asking the model to invent an answer, and
ends every answer with its sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.research import sources
from imprint_desktop.core.research.trace import read_trace
from tests.e2e.conftest import Imprint
from tests.support import ask_command
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

pytestmark = pytest.mark.e2e

QUESTION = "Who was the last keeper of Greyness Point?"


def ask(
    imprint: Imprint,
    server: OpenAIServer,
    workspace: Path,
    tmp_path: Path,
    *extra: str,
    question: str = QUESTION,
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    trace = tmp_path / "trace.jsonl"
    result = ask_command.ask(
        imprint, server, workspace, "--trace", str(trace), *extra,
        question=question, json_mode=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads(result.stdout) if "--json" in extra else {"text": result.stdout}
    return payload, read_trace(trace), result.stdout


def seeded(request: RecordedRequest, question: str = QUESTION) -> str:
    """What the engine's own search put before the question in ``request``'s user turn: the
    numbered passages it found, or the words it searched for when nothing matched."""
    [user] = [m for m in request.messages if m["role"] == "user"]
    content = user["content"]
    ask = f"Question: {question}"
    assert content.endswith(ask), content
    return content.removesuffix(ask).strip()


def test_the_first_request_holds_the_seeded_passages_and_forces_no_tool_call(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text("The last keeper was Ada Quill [1]."))
    payload, trace, _ = ask(imprint, openai_server, workspace, tmp_path, "--json")

    [first] = openai_server.chat_requests()  # a model that answers at once: one request
    assert first.json.get("tool_choice", "auto") == "auto"
    assert first.tools, "the tools are offered; the model may still use them"
    # The engine's passages come in the question's own turn, before the question; nothing
    # else is in the request (no tool call the model did not make).
    roles = [m["role"] for m in first.messages]
    assert roles == ["system", "user"]
    passages = seeded(first)
    assert passages.startswith(
        "Passages from the documents:\n\n[1] keepers.md, lines 1-5 — Keepers"
    )
    assert "Ada Quill" in passages
    # The words it searched for are named only when nothing matched: the last test here.

    assert (payload["stop_reason"], payload["final_mode"], payload["rounds"]) == (
        "answered",
        "model",
        0,
    )
    # The answer's text alone; its sources are a field of their own.
    assert payload["answer"] == "The last keeper was Ada Quill [1]."
    assert payload["sources"] == [
        {"id": 1, "source": "keepers.md", "location": "lines 1-5", "title": "Keepers",
         "cited": True,
         "excerpt": "The last keeper of Greyness Point was Ada Quill, who left in 1971."},
    ]  # fmt: skip
    tools = [line for line in trace if line["type"] == "tool"]
    assert tools[0]["origin"] == "engine" and tools[0]["round"] == 0
    assert tools[0]["new_evidence"] >= 1
    assert [line["mode"] for line in trace if line["type"] == "final"] == ["model"]


def test_a_search_that_finds_nothing_ends_in_no_evidence_naming_the_query(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    def zeppelin(n: int) -> Reply:
        return Reply.tool_calls(
            ToolCall(f"z{n}", "search_workspace", json.dumps({"query": f"zeppelin hangar {n}"}))
        )

    openai_server.script(zeppelin(1), zeppelin(2))
    payload, trace, _ = ask(
        imprint, openai_server, workspace, tmp_path, "--json",
        "--set", "chat.research_no_progress_rounds=3",
        question="Where was the airship hangar built?",
    )  # fmt: skip
    assert payload["stop_reason"] == "no_progress" and payload["final_mode"] == "no_evidence"
    assert payload["evidence"] == [] and payload["tokens"]["final_charged"] == 0
    answer = payload["answer"]
    assert answer.startswith(f"{sources.NOT_FOUND_LABEL} in the workspace “docs”")
    assert (
        "Searched for: “Where was the airship hangar built?”, “zeppelin hangar 1”, "
        "“zeppelin hangar 2”." in answer
    )
    # No model request was made for the reply: only the two research requests were sent.
    assert len(openai_server.chat_requests()) == 2
    assert [line["mode"] for line in trace if line["type"] == "final"] == ["no_evidence"]


def test_no_evidence_names_the_seed_query_when_the_workspace_has_nothing(
    imprint: Imprint, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "bread.md").write_text("# Bread\n\nFlour, water, salt and time.\n", "utf-8")
    keeper = ToolCall("k1", "search_workspace", json.dumps({"query": "keeper"}))
    openai_server.script(Reply.tool_calls(keeper), Reply.tool_calls(keeper))
    payload, trace, _ = ask(
        imprint, openai_server, recipes, tmp_path, "--json",
        "--set", "chat.research_no_progress_rounds=3",
    )  # fmt: skip
    assert (payload["stop_reason"], payload["final_mode"]) == ("no_progress", "no_evidence")
    assert "in the workspace “recipes”" in payload["answer"]
    assert f"“{QUESTION}”, “keeper”" in payload["answer"]
    searched = seeded(openai_server.chat_requests()[0])
    assert (
        searched == "The documents were searched for “last keeper greyness point”: nothing matched."
    )
    engine_tools = [line for line in trace if line["type"] == "tool" and "origin" in line]
    assert [(line["status"], line["round"]) for line in engine_tools] == [("empty", 0)]


def test_the_text_output_ends_with_the_sources(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text("It was Ada Quill."))  # cites nothing
    _payload, _trace, stdout = ask(imprint, openai_server, workspace, tmp_path)
    body, block = stdout.rstrip().split(f"\n\n{sources.SOURCES_HEADING}\n")
    # The passage that holds the name is cited inline and quoted, though the model cited none.
    assert body == "It was Ada Quill [1]."
    assert block == (
        "- [1] keepers.md, lines 1-5 — Keepers: "
        "“The last keeper of Greyness Point was Ada Quill, who left in 1971.”"
    )


def test_with_research_first_off_the_first_request_is_the_question_alone(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text("I do not know."))
    payload, _trace, _ = ask(
        imprint, openai_server, workspace, tmp_path, "--json", "--set", "chat.research_first=false"
    )
    [first] = openai_server.chat_requests()
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert payload["answer"] == "I do not know." and payload["evidence"] == []


# --- every claim tied to its passage, what nothing supports flagged (DESIGN §6) -------------------


def test_json_carries_the_grounding_and_flags_a_number_said_of_something_else(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    # 1968 is in the documents, but of the fog days in her logbook, not of when she left.
    question = "When did Ada Quill leave Greyness Point?"
    openai_server.script(Reply.text("She left in 1968."))
    payload, _trace, _ = ask(
        imprint, openai_server, workspace, tmp_path, "--json", question=question
    )
    assert payload["answer"] == "She left in 1968."  # nothing cited: nothing supports it
    grounding = payload["grounding"]
    assert grounding["verdict"] == "unsupported"
    assert grounding["claims"] == [
        {
            "text": "She left in 1968.",
            "supported_by": [],
            "note": "“1968”: the passage [1] says this of "
            "“Her logbook recorded 212 fog days in 1968.”",
        }
    ]
    # What the documents do say about the question is offered first.
    assert grounding["offered"] == {
        "text": "The last keeper of Greyness Point was Ada Quill, who left in 1971.",
        "source": 1,
    }


def test_text_output_marks_what_no_passage_holds(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    said = "The last keeper was Ada Quill. She left in 1975."
    openai_server.script(Reply.text(said), Reply.text(said))
    _payload, _trace, stdout = ask(imprint, openai_server, workspace, tmp_path)
    answer, check = stdout.split("\n\n")[:2]
    assert answer == "The last keeper was Ada Quill [1]. She left in 1975."
    assert check.splitlines() == [
        sources.CHECK_HEADING,
        "- “1975” is not in your documents.",
    ]
    payload, _trace, _ = ask(imprint, openai_server, workspace, tmp_path, "--json")
    assert payload["grounding"]["verdict"] == "partly"
    assert [c["supported_by"] for c in payload["grounding"]["claims"]] == [[1], []]


def test_a_right_answer_the_model_did_not_cite_is_supported_and_cited(
    imprint: Imprint, openai_server: OpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    openai_server.script(Reply.text("Ada Quill, who left in 1971."))
    payload, _trace, _ = ask(imprint, openai_server, workspace, tmp_path, "--json")
    assert payload["answer"] == "Ada Quill, who left in 1971 [1]."
    assert payload["grounding"] == {
        "verdict": "supported",
        "claims": [{"text": "Ada Quill, who left in 1971.", "supported_by": [1], "note": ""}],
        "offered": None,
    }
    assert [(s["id"], s["cited"]) for s in payload["sources"]] == [(1, True)]
