"""A workspace of several folders (issue 44, item 2): each folder's documents named by the folder,
searched, listed and read through the tools as one workspace; a folder removed takes its passages
with it; an update of the paths that changed alone, which keeps a renamed file's passages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from imprint_desktop.core.errors import PathOutsideWorkspaceError
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Workspace
from imprint_desktop.core.workspace.folders import folder_lines, named_folders, source_file
from tests.support.settings import make_config
from tests.unit.workspace.conftest import run_tool, write


def _reports(tmp_path: Path) -> Path:
    root = tmp_path / "Reports"
    write(root, "q1.md", "# First quarter\n\nRevenue at the ferry terminal grew by nine percent.\n")
    write(root, "2026/plan.md", "# Plan\n\nThe ferry terminal gets a second ramp in 2027.\n")
    return root


def _passage_ids(index_db: Path, path: str) -> list[int]:
    with sqlite3.connect(index_db) as db:
        rows = db.execute(
            "SELECT passages.id FROM passages JOIN files ON files.id = passages.file_id "
            "WHERE files.path = ? ORDER BY passages.id",
            (path,),
        ).fetchall()
    return [row[0] for row in rows]


def test_every_folder_is_searched_listed_and_read_under_its_name(
    corpus: Path, tmp_path: Path
) -> None:
    reports = _reports(tmp_path)
    with Workspace(corpus, more_folders=[reports]) as workspace:
        for _, index in workspace.indexes:
            index.update()
        assert [folder.name for folder in workspace.folders] == ["", "Reports"]
        hits = workspace.search("ferry terminal revenue")
        assert hits[0].path == "Reports/q1.md"
        assert any(hit.path == "alpha.md" for hit in workspace.search("harbour granite"))
        toolbox = Toolbox(workspace, make_config().tools, None)
        found = run_tool(toolbox, "search_workspace", {"query": "second ramp"})
        assert "Reports/2026/plan.md" in found.content
        read = run_tool(toolbox, "read_document", {"path": "Reports/2026/plan.md"})
        assert read.status == "ok" and "second ramp" in read.content
        listed = run_tool(toolbox, "list_documents", {"folder": "Reports"})
        assert "Reports/q1.md" in listed.content and "alpha.md" not in listed.content
        everything = run_tool(toolbox, "list_documents", {})
        assert "deep/gamma.md" in everything.content and "Reports/q1.md" in everything.content
        assert "Reports/ (" in toolbox.scope
        # The first folder's paths are as they always were, and nothing leads out of a folder.
        assert workspace.read("deep/gamma.md")[0] == "deep/gamma.md"
        escape = run_tool(toolbox, "read_document", {"path": "Reports/../../corpus/alpha.md"})
        assert escape.status == "error"


def test_a_removed_folder_takes_its_passages_out_of_the_answers(
    corpus: Path, tmp_path: Path
) -> None:
    reports = _reports(tmp_path)
    with Workspace(corpus, more_folders=[reports]) as workspace:
        for _, index in workspace.indexes:
            index.update()
        assert workspace.search("ferry terminal")
    with Workspace(corpus, more_folders=[]) as workspace:
        workspace.index.update()
        assert workspace.search("ferry terminal") == []
        assert [document.path for document in workspace.documents()] == [
            "alpha.md",
            "beta.txt",
            "deep/gamma.md",
        ]


def test_a_folder_is_named_apart_from_the_first_folders_entries_and_the_others(
    tmp_path: Path,
) -> None:
    first = tmp_path / "first"
    write(first, "Reports/old.md", "old\n")
    one, two = tmp_path / "a" / "Reports", tmp_path / "b" / "Reports"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    folders, problems = named_folders(
        first, [one, two, first / "Reports", tmp_path / "missing", Path("relative/folder"), one]
    )
    assert [folder.name for folder in folders] == ["", "Reports 2", "Reports 3"]
    assert len(problems) == 4
    assert "is or holds part of the workspace folder" in problems[0]
    assert "is not a folder" in problems[1]
    assert "not a full path" in problems[2]
    assert "the folder Reports 2" in problems[3]


def test_the_setting_names_one_folder_a_line() -> None:
    assert folder_lines("/srv/a\n\n  /srv/b  \n/srv/a\n") == [Path("/srv/a"), Path("/srv/b")]


def test_an_update_of_the_changed_paths_alone_reads_only_them_and_keeps_a_renamed_files_passages(
    corpus: Path,
) -> None:
    with Workspace(corpus) as workspace:
        index = workspace.index
        index.update()
        before = _passage_ids(index.db_path, "deep/gamma.md")
        assert before
        (corpus / "deep" / "gamma.md").rename(corpus / "deep" / "quokka.md")
        write(corpus, "alpha.md", "# Alpha\n\nThe harbour wall was rebuilt in basalt.\n")
        report = index.update(paths={"deep/gamma.md", "deep/quokka.md"})
        assert (report.renamed, report.added, report.updated, report.removed) == (1, 0, 0, 0)
        assert _passage_ids(index.db_path, "deep/quokka.md") == before
        # alpha.md changed too, but was not named: it is left for its own update.
        assert workspace.search("basalt") == []
        assert index.update(paths={"alpha.md"}).updated == 1
        assert workspace.search("basalt")[0].path == "alpha.md"


def test_an_update_of_a_folders_path_takes_everything_under_it(corpus: Path) -> None:
    with Workspace(corpus) as workspace:
        index = workspace.index
        index.update()
        before = _passage_ids(index.db_path, "deep/gamma.md")
        (corpus / "deep").rename(corpus / "deeper")
        write(corpus, "deeper/new.md", "# New\n\nA gannet nested on the breakwater.\n")
        write(corpus, ".hidden/secret.md", "swordfish\n")
        report = index.update(paths={"deep", "deeper", ".hidden", ".hidden/secret.md"})
        assert (report.renamed, report.added, report.removed) == (1, 1, 0)
        assert _passage_ids(index.db_path, "deeper/gamma.md") == before
        assert workspace.search("swordfish") == []
        (corpus / "deeper" / "new.md").unlink()
        assert index.update(paths={"deeper/new.md"}).removed == 1
        assert workspace.search("gannet breakwater") == []


def test_a_cited_source_of_another_folder_opens_from_the_folder_it_was_researched_in(
    corpus: Path, tmp_path: Path
) -> None:
    reports = _reports(tmp_path)
    with Workspace(corpus, more_folders=[reports]):
        pass
    assert source_file(corpus.resolve(), "Reports/2026/plan.md") == (
        reports.resolve(),
        "2026/plan.md",
    )
    assert source_file(corpus.resolve(), "deep/gamma.md") == (corpus.resolve(), "deep/gamma.md")
    with pytest.raises(PathOutsideWorkspaceError):
        source_file(corpus.resolve(), "Reports/../../secret.md")


def test_an_update_of_a_changed_path_judges_its_siblings_again(corpus: Path) -> None:
    with Workspace(corpus) as workspace:
        write(corpus, "plans/budget-draft.md", "# Budget\n\nThe ferry costs 40,000.\n")
        workspace.index.update()
        assert "superseded" not in workspace.currency("plans/budget-draft.md")
        write(corpus, "plans/budget.md", "# Budget\n\nThe ferry costs 42,000.\n")
        assert workspace.index.update(paths={"plans/budget.md"}).added == 1
        assert "a draft; the final is plans/budget.md" in workspace.currency(
            "plans/budget-draft.md"
        )


def test_the_settings_more_folders_belong_to_the_chosen_workspace_alone(
    corpus: Path, tmp_path: Path
) -> None:
    reports = _reports(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    config = make_config(
        {"workspace.path": str(corpus), "workspace.more_folders": f"{reports}\n"}
    ).workspace
    with Workspace.from_config(corpus, config) as chosen:
        assert [folder.name for folder in chosen.folders] == ["", "Reports"]
    with Workspace.from_config(other, config) as named:  # imprint ask --workspace other
        assert [folder.name for folder in named.folders] == [""]
