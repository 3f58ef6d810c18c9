"""A note the model wrote and reads back is no new evidence, not even the first time (issue 42,
item 6; ADR 0102): the engine wraps the note in front matter and a footer of its own, and those
lines are no evidence of anything.

The engine runs on a scripted model with the real toolbox over a real workspace folder, so the
note is written to disk and read back from it as a model would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.ledger import EvidenceLedger
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.tools.notes import MODEL_WRITTEN, engine_lines_dropped, write_note
from imprint_desktop.core.tools.tool import EvidenceItem
from imprint_desktop.core.workspace import Workspace
from tests.support.research_run import Recorder, run
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config, research_settings

NOTE = "Ada Quill kept the Greyness Point light until 1971; her log counts 212 fog days in 1968."


def saved_path(request: CompletionRequest) -> str:
    found = re.search(r"Note saved as (\S+)\.", request.messages[-1].content)
    assert found is not None, request.messages[-1].content
    return found.group(1)


def reads_back(request: CompletionRequest, reads: list[str]) -> Step:
    """Search, write a note, then read the note back for as long as research goes on."""
    if request.phase == "final":
        return Step("Ada Quill [1].")
    step = sum(message.role == "assistant" for message in request.messages)
    if step == 0:
        return Step(calls=[("search_workspace", {"query": "last keeper Greyness Point"})])
    if step == 1:
        return Step(calls=[("write_note", {"title": "Last keeper", "content": NOTE})])
    if not reads:
        reads.append(saved_path(request))
    return Step(calls=[("read_document", {"path": reads[0]})])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "keepers.md").write_text(
        "# Keepers\n\nThe last keeper of Greyness Point was Ada Quill, who left in 1971.\n",
        encoding="utf-8",
    )
    return root


def test_search_write_and_two_read_backs_stop_on_patience_two(folder: Path) -> None:
    reads: list[str] = []
    provider = ScriptedProvider(lambda request: reads_back(request, reads))
    overrides = {"chat.research_no_progress_rounds": 2, "chat.research_first": False}
    recorder = Recorder()
    engine = ResearchEngine(provider, research_settings(overrides), sink=recorder)
    with Workspace(folder) as workspace:
        workspace.index.update()
        toolbox = Toolbox(workspace, make_config(overrides).tools, None)
        result = run(engine.run("Who was the last keeper?", toolbox))
    assert result.stop_reason == "no_progress"
    # search (new), write (left out of the count), read back (none new), read back (none new):
    # four research requests, then the final one.
    assert [request.phase for request in provider.requests] == ["research"] * 4 + ["final"]
    finished = recorder.of(ev.ToolFinished)
    assert [event.name for event in finished] == [
        "search_workspace",
        "write_note",
        "read_document",
        "read_document",
    ]
    read_backs = finished[2:]
    assert all(event.status == "ok" and event.repeated_evidence > 0 for event in read_backs)
    assert [event.new_evidence for event in read_backs] == [0, 0]


def test_the_wrapping_is_dropped_wherever_a_read_cuts_the_note(folder: Path) -> None:
    with Workspace(folder) as workspace:
        path = write_note(workspace, "Last keeper", NOTE)
    lines = (folder / path).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "---" and lines[-1].startswith("*Written by Imprint's model, ")
    for start in range(len(lines)):
        part = "\n".join(lines[start : start + 4])
        kept = engine_lines_dropped(part)
        assert "imprint" not in kept.lower() and "written" not in kept.lower(), (part, kept)


def test_only_a_model_written_note_loses_such_lines() -> None:
    """A person's document holding the same lines is judged whole."""
    text = '---\ntitle: "Plan"\nwritten: 2026-01-02 10:00\n---\n\nThe plan is new.'
    ledger = EvidenceLedger()
    person = EvidenceItem("plan.md", "lines 1-6", text)
    note = EvidenceItem("notes/plan.md", f"{MODEL_WRITTEN}, lines 1-6", text)
    assert len(ledger.record([note]).new) == 1  # the plan sentence is new
    assert len(ledger.record([person]).new) == 1, "the front matter of a person's file counts"
