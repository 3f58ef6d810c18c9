"""Each tool line says how far past the research deadline its call returned (issue 42, item 3;
ADR 0102's third condition: a blocking tool may return after the deadline, a write always runs to
its end). The engine runs on a scripted model and scripted tools under a clock the tools move."""

from __future__ import annotations

from typing import Any

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.trace import trace_line
from imprint_desktop.core.tools.tool import ToolResult
from tests.support.fake_tools import FakeTools, passage
from tests.support.research_run import Recorder, run, search
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import research_settings


def test_a_write_that_ends_after_the_deadline_says_by_how_much() -> None:
    now = [0.0]

    def respond(name: str, values: dict[str, Any]) -> ToolResult:
        if name == "write_note":
            now[0] += 12.25  # written slowly: it ends at 13.75 s of the 10 s of research
            return ToolResult("write_note", "ok", "Note saved as notes/a.md.")
        now[0] += 1.5
        return passage("The light was first lit in 1862.")

    script = [
        Step(calls=[search("first lit")]),
        Step(calls=[("write_note", {"title": "a", "content": "b"}), search("lit")]),
        Step("Lit in 1862 [1]."),
    ]
    settings = research_settings({"chat.research_timeout_sec": 10, "chat.research_first": False})
    recorder = Recorder()
    engine = ResearchEngine(ScriptedProvider(script), settings, sink=recorder, clock=lambda: now[0])
    result = run(engine.run("When was it first lit?", FakeTools(respond)))
    assert result.stop_reason == "time_budget"
    finished = recorder.of(ev.ToolFinished)
    assert [(e.name, e.status) for e in finished] == [
        ("search_workspace", "ok"),
        ("write_note", "ok"),
        ("search_workspace", "not_executed"),
    ]
    assert [e.past_deadline for e in finished] == [0.0, 3.75, 3.75]
    lines = [trace_line(event) for event in finished]
    assert [line["past_deadline"] for line in lines if line] == [0.0, 3.75, 3.75]
