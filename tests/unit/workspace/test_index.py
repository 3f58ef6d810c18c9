"""The workspace index: ranking, passages, incremental updates, formats, and damaged files."""

from __future__ import annotations

import importlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace import SearchHit, Workspace, WorkspaceIndex, reader, update
from imprint_desktop.core.workspace.search import SearchMode, fts_query
from tests.unit.workspace.conftest import SAMPLE, write


def paths(hits: list[SearchHit]) -> list[str]:
    return [hit.path for hit in hits]


def test_the_only_document_with_a_rare_word_ranks_first(tmp_path: Path) -> None:
    root = tmp_path / "w"
    for number in range(30):
        write(root, f"common{number:02d}.md", "The harbour and the lamp and the keeper.\n" * 5)
    write(root, "odd.md", "The harbour keeper once met a narwhal by the lamp.\n")
    with WorkspaceIndex(root) as built:
        built.update()
        hits = built.search("harbour narwhal keeper", 5)
    assert hits[0].path == "odd.md"
    assert hits[0].score > hits[1].score


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_short_result_holds_three_documents_and_a_long_one_three_passages_of_one(
    tmp_path: Path, mode: SearchMode
) -> None:
    """The engine's three passages before a small model come from three documents, though the
    best document matches best in all its passages; a model's search of eight keeps at most
    three of one file."""
    root = tmp_path / "w"
    sections = [
        f"## Reservoir {number}\n\n" + "The reservoir storage capacity and its dam spillway.\n" * 3
        for number in range(6)
    ]
    write(root, "reservoirs.md", "# Reservoirs\n\n" + "\n".join(sections))
    write(
        root,
        "minutes.md",
        "# Minutes\n\nThe board noted the reservoir storage capacity and the spillway.\n",
    )
    write(root, "survey.md", "# Survey\n\nA survey of reservoir storage capacity.\n")
    with WorkspaceIndex(root) as built:
        built.update()
        short = [hit.path for hit in built.search("reservoir storage capacity spillway", 3, mode)]
        long = [hit.path for hit in built.search("reservoir storage capacity spillway", 8, mode)]
    assert sorted(short) == ["minutes.md", "reservoirs.md", "survey.md"]
    assert short[0] == "reservoirs.md"
    assert long.count("reservoirs.md") == 3


def test_passages_carry_their_line_ranges(tmp_path: Path) -> None:
    lines = ["# Report", ""]
    for number in range(1, 7):
        lines += [f"Paragraph {number} " + " ".join(f"word{number}x{k}" for k in range(60)), ""]
    write(tmp_path / "w", "report.md", "\n".join(lines))
    with WorkspaceIndex(tmp_path / "w") as built:
        built.update()
        hit = built.search("word4x17", 1)[0]
    document = (tmp_path / "w" / "report.md").read_text().split("\n")
    shown = "\n".join(document[hit.start_line - 1 : hit.end_line])
    assert "word4x17" in shown
    assert hit.text == shown.strip()
    assert hit.title == "Report"
    assert hit.location == f"lines {hit.start_line}-{hit.end_line}"


def test_unchanged_reindex_reads_no_file(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = workspace.index.update()
    assert (first.added, first.documents) == (3, 3)
    reads: list[str] = []
    original = update.read_inside

    def counted(root: Path, relative: str, *, max_bytes: int) -> tuple[bytes, os.stat_result]:
        reads.append(relative)
        return original(root, relative, max_bytes=max_bytes)

    monkeypatch.setattr(update, "read_inside", counted)
    second = workspace.index.update()
    assert reads == []
    assert (second.added, second.updated, second.removed, second.unchanged) == (0, 0, 0, 3)


def test_edit_add_delete_and_rename_are_picked_up(workspace: Workspace, corpus: Path) -> None:
    workspace.index.update()
    edited = corpus / "alpha.md"
    edited.write_text("# Alpha\n\nThe wall is now made of basalt.\n", encoding="utf-8")
    os.utime(edited, ns=(1, 1))  # a different mtime even on coarse clocks
    write(corpus, "new/delta.md", "# Delta\n\nA wombat crossed the quay.\n")
    (corpus / "beta.txt").unlink()
    (corpus / "deep/gamma.md").rename(corpus / "moved-gamma.md")

    report = workspace.index.update()
    assert (report.added, report.updated, report.removed, report.renamed) == (1, 1, 1, 1)
    search = workspace.index.search
    assert paths(search("basalt")) == ["alpha.md"]
    assert search("granite") == []
    assert paths(search("wombat")) == ["new/delta.md"]
    assert search("ledger") == []
    assert paths(search("quokka")) == ["moved-gamma.md"]
    assert [doc.path for doc in workspace.index.documents()] == [
        "alpha.md",
        "moved-gamma.md",
        "new/delta.md",
    ]


def test_touched_file_with_same_content_is_not_extracted_again(
    workspace: Workspace, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.index.update()
    os.utime(corpus / "alpha.md", ns=(5, 5))
    calls: list[str] = []
    monkeypatch.setattr(reader, "extract", lambda name, data: calls.append(name))
    report = workspace.index.update()
    assert calls == []
    assert (report.updated, report.added) == (0, 0)


def test_pdf_and_html_are_searchable(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", root / "report.pdf")
    shutil.copy(SAMPLE / "operations/fog-signals.html", root / "fog.html")
    with WorkspaceIndex(root) as built:
        assert built.update().documents == 2
        pdf = built.search("generator fault batteries", 1)[0]
        html = built.search("diaphone blasts", 1)[0]
        script = built.search("console", 3)
    assert pdf.path == "report.pdf"
    assert pdf.page == 2
    assert pdf.location.startswith("page 2, lines ")
    assert pdf.title == "Harwick Coast Light Service - Annual Report 1998"
    assert html.path == "fog.html"
    assert html.title == "Fog signals of the Harwick Coast Light Service"
    assert "<strong>" not in html.text and "diaphone" in html.text
    assert script == []  # script text is not document text


def test_damaged_and_oddly_encoded_files_do_not_stop_indexing(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    good = (SAMPLE / "reports/annual-report-1998.pdf").read_bytes()
    (root / "broken.pdf").write_bytes(good[: len(good) // 3])
    (root / "garbage.pdf").write_bytes(b"%PDF-1.7\n\x00\xff not really a pdf")
    (root / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e recipe".encode("latin-1"))
    (root / "utf16.txt").write_text("Hedgehog diary", encoding="utf-16")
    (root / "blob.dat2").write_bytes(bytes(range(256)) * 10)
    write(root, "fine.md", "# Fine\n\nAn ordinary aardvark.\n")
    with WorkspaceIndex(root) as built:
        report = built.update()
        assert {problem.path for problem in report.problems} >= {"garbage.pdf"}
        assert all(problem.reason for problem in report.problems)
        assert paths(built.search("aardvark")) == ["fine.md"]
        assert paths(built.search("crème brûlée")) == ["latin1.txt"]
        assert paths(built.search("creme")) == ["latin1.txt"]  # diacritics folded
        assert paths(built.search("hedgehog")) == ["utf16.txt"]
        listed = [doc.path for doc in built.documents()]
        assert "blob.dat2" not in listed and "garbage.pdf" not in listed
        again = built.update()
        assert again.problems == report.problems  # still reported, not re-read
        assert again.unchanged == 6


def test_a_parser_failing_in_this_process_skips_only_that_file(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HTML nested 100,000 deep once made the walk recurse too deep; it no longer does (see
    # test_linear_text.py), so the parser's failure is played by a stand-in failing the same way.
    def too_deep(markup: str | bytes, *, main_only: bool = False) -> tuple[str | None, str]:
        raise RecursionError("maximum recursion depth exceeded")

    # The HTML reader is looked up when a page is read (extract imports it then).
    pages = importlib.import_module("imprint_desktop.core.workspace.html")
    monkeypatch.setattr(pages, "html_page", too_deep)
    nested = workspace.root / "nested.html"
    nested.write_bytes(b"<div>" * 100_000 + b"kelp")
    with pytest.raises(RecursionError):  # for a tool call: the tool failed (and it is logged)
        workspace.read("nested.html")
    report = workspace.index.update()
    assert [problem.path for problem in report.problems] == ["nested.html"]
    assert report.problems[0].reason.startswith("cannot be turned into text (RecursionError: ")
    assert report.documents == 3
    with pytest.raises(DocumentError, match=r"^nested\.html was skipped when the workspace was"):
        workspace.read("nested.html")  # not parsed again until it changes


def test_hidden_binary_and_oversized_files_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write(root, ".git/config", "secret zebra")
    write(root, ".env", "TOKEN=zebra")
    write(root, "node_modules/x/readme.md", "zebra")
    write(root, "big.md", "zebra " * 400_000)
    (root / "image.png").write_bytes(b"zebra" * 10)
    write(root, "ok.md", "one zebra")
    with WorkspaceIndex(root, max_file_bytes=1_000_000) as built:
        built.update()
        assert paths(built.search("zebra")) == ["ok.md"]


def test_queries_are_words_not_fts_syntax(workspace: Workspace) -> None:
    workspace.index.update()
    for query in ['"', "AND", "harbour NEAR(", "*", "col:harbour", "-harbour", "(", "", "   "]:
        workspace.index.search(query)  # must not raise
    assert fts_query("the of") == '"the" OR "of"'
    assert fts_query('the "harbour wall" granite') == '"harbour wall" OR "granite"'
    assert paths(workspace.index.search('"harbour wall"')) == ["alpha.md"]


def test_search_from_another_thread(workspace: Workspace) -> None:
    workspace.index.update()
    found: list[list[str]] = []
    thread = threading.Thread(target=lambda: found.append(paths(workspace.index.search("quokka"))))
    thread.start()
    thread.join(timeout=10)
    assert found == [["deep/gamma.md"]]


def test_index_lives_in_the_data_dir_and_a_corrupt_one_is_rebuilt(
    corpus: Path, isolated_dirs: Path
) -> None:
    with WorkspaceIndex(corpus) as built:
        built.update()
        db_path = built.db_path
    assert db_path.is_relative_to(isolated_dirs / "data")
    db_path.write_bytes(b"this is not a database" * 100)
    with WorkspaceIndex(corpus) as rebuilt:
        assert rebuilt.update().added == 3


def test_a_cancelled_update_keeps_its_work(workspace: Workspace) -> None:
    cancel = threading.Event()
    cancel.set()
    report = workspace.index.update(cancel=cancel)
    assert report.cancelled
    assert workspace.index.update().added == 3


def test_closing_waits_for_an_update_still_running_in_another_thread(tmp_path: Path) -> None:
    for number in range(3):
        write(tmp_path / "w", f"doc{number}.md", f"Document {number} about the harbour.\n")
    index = WorkspaceIndex(tmp_path / "w")
    inside, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def progress(_event: object) -> None:  # holds the update in the middle of its work
        inside.set()
        release.wait(10)

    def run_update() -> None:
        index.update(progress=progress)
        ended.append("update")

    def close() -> None:
        index.close()
        ended.append("close")

    updating = threading.Thread(target=run_update)
    updating.start()
    assert inside.wait(10)
    closing = threading.Thread(target=close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive(), "the database was closed under a running update"
    release.set()
    updating.join(10)
    closing.join(10)
    assert ended == ["update", "close"]
