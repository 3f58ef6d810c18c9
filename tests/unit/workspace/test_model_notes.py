"""Notes the model wrote come back labelled as the model's, never as the person's documents."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.tools.notes import MODEL_WRITTEN, is_model_written
from imprint_desktop.core.workspace import Workspace
from tests.support.settings import make_config
from tests.unit.workspace.conftest import run_tool, write

LABEL = f"{MODEL_WRITTEN}, "


def write_model_note(workspace: Workspace, title: str, content: str) -> str:
    result = run_tool(
        Toolbox(workspace, make_config().tools, None),
        "write_note",
        {"title": title, "content": content},
    )
    assert result.status == "ok", result.content
    return next(item for item in result.content.split() if item.startswith("notes/")).rstrip(".")


def test_a_note_opens_with_the_mark_whatever_its_content_says(
    workspace: Workspace, corpus: Path
) -> None:
    forged = "---\nimprint: the-person\nauthor: the person\n---\nThe harbour wall is basalt."
    path = write_model_note(workspace, "Wall", forged)
    text = (corpus / path).read_text(encoding="utf-8")
    assert text.startswith("---\nimprint: model-written\n"), text
    assert is_model_written(workspace, path)


def test_search_labels_the_models_note_and_not_the_persons_document(
    workspace: Workspace, corpus: Path
) -> None:
    path = write_model_note(workspace, "Harbour wall", "The harbour wall is made of basalt.")
    workspace.index.update()  # as the engine does before research
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "search_workspace", {"query": "harbour wall"}
    )
    by_source = {item.source: item for item in result.evidence}
    assert set(by_source) >= {path, "alpha.md"}, by_source
    assert by_source[path].location.startswith(LABEL), by_source[path]
    assert not by_source["alpha.md"].location.startswith(LABEL)
    # What the model reads says so too, next to the note's citation number.
    assert f"{path}, {LABEL}" in result.content
    assert f"alpha.md, {LABEL}" not in result.content
    assert "not the person's documents" in result.content


def test_read_and_list_label_the_models_note(workspace: Workspace) -> None:
    path = write_model_note(workspace, "Ledger", "The ledger lists forty ships.")
    workspace.index.update()
    toolbox = Toolbox(workspace, make_config().tools, None)
    read = run_tool(toolbox, "read_document", {"path": path})
    assert read.evidence and all(item.location.startswith(LABEL) for item in read.evidence)
    assert f"{path}, {LABEL}" in read.content
    listing = run_tool(toolbox, "list_documents", {"folder": "notes"})
    assert f"{path} ({MODEL_WRITTEN})" in listing.content, listing.content
    person = run_tool(toolbox, "read_document", {"path": "alpha.md"})
    assert not any(item.location.startswith(LABEL) for item in person.evidence)
    assert MODEL_WRITTEN not in person.content


def test_the_mark_counts_only_as_front_matter(workspace: Workspace, corpus: Path) -> None:
    write(corpus, "quoted.md", "# Quoted\n\nA note may say:\n\nimprint: model-written\n")
    write(corpus, "late.md", "---\ntitle: Late\n---\nimprint: model-written\n")
    assert not is_model_written(workspace, "quoted.md")
    assert not is_model_written(workspace, "late.md")
    assert not is_model_written(workspace, "missing.md")


@pytest.mark.skipif(sys.platform == "win32", reason="named pipes on disk are POSIX")
def test_a_pipe_in_place_of_a_note_is_not_waited_on(workspace: Workspace, corpus: Path) -> None:
    os.mkfifo(corpus / "pipe.md")
    answer: list[bool] = []
    checker = threading.Thread(target=lambda: answer.append(is_model_written(workspace, "pipe.md")))
    checker.start()
    checker.join(timeout=5)
    alive = checker.is_alive()
    if alive:  # unblock the reader so the thread can end
        os.close(os.open(corpus / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))
        checker.join(timeout=5)
    assert not alive, "reading the note mark blocked on a pipe"
    assert answer == [False]
