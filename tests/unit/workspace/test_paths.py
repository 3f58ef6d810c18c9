"""Paths from the model: every way out of the workspace is refused, through every tool."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from imprint_desktop.core.errors import PathOutsideWorkspaceError
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Workspace, resolve_inside
from imprint_desktop.core.workspace import update as update_module
from imprint_desktop.core.workspace.files import FileEntry, is_link
from tests.support.settings import make_config
from tests.unit.workspace.conftest import run_tool, write

ESCAPES = [
    "../outside.txt",
    "deep/../../outside.txt",
    "..",
    "./../outside.txt",
    "/etc/passwd",
    "//etc/passwd",
    "~/.ssh/id_rsa",
    "~root/x",
    "..\\outside.txt",
    "deep\\..\\..\\outside.txt",
    "C:\\Windows\\win.ini",
    "C:/Windows/win.ini",
    "c:outside.txt",
    "\\\\server\\share\\file.txt",
    "\\etc\\passwd",
    ".env",
    ".git/config",
    "deep/.secret",
    "alpha.md\x00.txt",
    "alpha.md:secret",  # an NTFS alternate data stream of alpha.md
    "alpha.md::$DATA",
    "deep/gamma.md:zone.identifier",
    "deep:hidden/gamma.md",
    "",
    "   ",
    ".",
    "./",
]


@pytest.mark.parametrize("user_path", ESCAPES)
def test_resolve_refuses(corpus: Path, user_path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_inside(corpus.resolve(), user_path)


def test_resolve_accepts_paths_inside(corpus: Path) -> None:
    root = corpus.resolve()
    assert resolve_inside(root, "deep/gamma.md") == root / "deep/gamma.md"
    assert resolve_inside(root, "./deep//gamma.md") == root / "deep/gamma.md"
    assert resolve_inside(root, "deep\\gamma.md") == root / "deep/gamma.md"
    with pytest.raises(PathOutsideWorkspaceError):  # any "..", even one that stays inside
        resolve_inside(root, "deep/../alpha.md")


@pytest.fixture
def escape_links(corpus: Path, tmp_path: Path) -> Path:
    """Symlinks inside the workspace that lead out of it: a file, a folder, and a chain."""
    outside = tmp_path / "outside"
    write(outside, "secret.txt", "the password is swordfish\n")
    (corpus / "link.txt").symlink_to(outside / "secret.txt")
    (corpus / "linked-folder").symlink_to(outside)
    (corpus / "chain.txt").symlink_to(corpus / "link.txt")
    return outside


@pytest.mark.parametrize("user_path", ["link.txt", "linked-folder/secret.txt", "chain.txt"])
def test_symlinks_leading_out_are_refused(
    workspace: Workspace, escape_links: Path, user_path: str
) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        workspace.resolve(user_path)
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "read_document", {"path": user_path}
    )
    assert result.status == "error"
    assert "swordfish" not in result.content
    assert "outside the workspace" in result.content


def test_symlinks_are_not_indexed(workspace: Workspace, escape_links: Path) -> None:
    workspace.index.update()
    assert workspace.index.search("swordfish") == []


@pytest.mark.parametrize("user_path", ESCAPES)
def test_read_document_refuses(workspace: Workspace, user_path: str) -> None:
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "read_document", {"path": user_path}
    )
    assert result.status == "error"
    assert result.evidence == ()


@pytest.mark.parametrize("folder", ["../", "/etc", "C:\\", "..\\..", ".git"])
def test_list_documents_refuses_folders_outside(workspace: Workspace, folder: str) -> None:
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "list_documents", {"folder": folder}
    )
    assert result.status == "error"


@pytest.mark.parametrize("notes_folder", ["../escape", "/tmp/escape", "link-out"])
def test_write_note_never_escapes(corpus: Path, tmp_path: Path, notes_folder: str) -> None:
    outside = tmp_path / "outside-notes"
    outside.mkdir()
    (corpus / "link-out").symlink_to(outside)
    with Workspace(corpus, notes_folder=notes_folder) as opened:
        result = run_tool(
            Toolbox(opened, make_config().tools, None),
            "write_note",
            {"title": "Escape", "content": "x"},
        )
    assert result.status == "error"
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escape").exists()


def test_write_note_titles_cannot_traverse(workspace: Workspace, corpus: Path) -> None:
    toolbox = Toolbox(workspace, make_config().tools, None)
    for title in ["../../etc/passwd", "/etc/passwd", "..\\..\\x", "C:\\evil"]:
        result = run_tool(toolbox, "write_note", {"title": title, "content": "text"})
        assert result.status == "ok", result.content
    written = sorted(path.name for path in (corpus / "notes").iterdir())
    assert written == ["c-evil.md", "etc-passwd-2.md", "etc-passwd.md", "x.md"]
    assert all(path.parent == corpus / "notes" for path in (corpus / "notes").iterdir())


@pytest.mark.parametrize("user_path", ["alpha.md:secret", "deep\\gamma.md:x:$DATA"])
def test_stream_names_are_refused_with_a_clear_tool_error(
    workspace: Workspace, user_path: str
) -> None:
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "read_document", {"path": user_path}
    )
    assert result.status == "error"
    assert "has a ':' in a name" in result.content
    assert "alternate data stream" in result.content


def test_stream_names_are_refused_for_folders_and_notes(corpus: Path) -> None:
    with Workspace(corpus, notes_folder="notes:hidden") as opened:
        toolbox = Toolbox(opened, make_config().tools, None)
        listed = run_tool(toolbox, "list_documents", {"folder": "deep:x"})
        note = run_tool(toolbox, "write_note", {"title": "Plan", "content": "x"})
    assert listed.status == "error" and "':'" in listed.content
    assert note.status == "error" and "':'" in note.content
    assert not (corpus / "notes:hidden").exists()


def test_files_named_with_a_colon_are_not_indexed(corpus: Path) -> None:
    write(corpus, "meeting 10:30.md", "# Meeting\n\nThe albatross agenda.\n")
    with Workspace(corpus) as opened:
        opened.index.update()
        assert opened.index.search("albatross") == []


# --- links: never followed, however they got there ------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    write(folder, "secret.md", "# Secret\n\nthe password is swordfish\n")
    write(folder, "deep/gamma.md", "# Gamma\n\nswordfish in a swapped folder\n")
    return folder


def test_links_to_files_and_folders_outside_are_not_indexed_or_searchable(
    workspace: Workspace, corpus: Path, outside: Path
) -> None:
    (corpus / "secret-link.md").symlink_to(outside / "secret.md")
    (corpus / "folder-link").symlink_to(outside)
    (corpus / "loop").symlink_to(corpus)  # a link back up: walking it would never end
    report = workspace.index.update()
    assert report.documents == 3
    assert workspace.index.search("swordfish") == []
    assert all("outside" not in document.path for document in workspace.index.documents())


def test_a_hard_link_to_a_file_outside_is_not_indexed_or_read(
    workspace: Workspace, corpus: Path, outside: Path
) -> None:
    """A hard link is a second name of the same file: nothing in the workspace tells it from a
    document, so any file with more than one name is refused, with the reason."""
    os.link(outside / "secret.md", corpus / "innocent.md")
    report = workspace.index.update()
    problems = {problem.path: problem.reason for problem in report.problems}
    assert "hard links" in problems["innocent.md"]
    assert report.documents == 3
    assert workspace.index.search("swordfish") == []
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "read_document", {"path": "innocent.md"}
    )
    assert result.status == "error"
    assert "swordfish" not in result.content
    assert "hard links" in result.content


def swap_after_scan(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once the index has listed the folder, before it reads any file."""
    original = update_module.scan

    def scan_then_swap(*args: Any, **kwargs: Any) -> Iterator[FileEntry]:
        entries = list(original(*args, **kwargs))
        swap()
        return iter(entries)

    monkeypatch.setattr(update_module, "scan", scan_then_swap)


def test_a_file_swapped_for_a_link_after_the_scan_is_not_read(
    workspace: Workspace, corpus: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        (corpus / "alpha.md").unlink()
        (corpus / "alpha.md").symlink_to(outside / "secret.md")

    swap_after_scan(monkeypatch, swap)
    report = workspace.index.update()
    problems = {problem.path: problem.reason for problem in report.problems}
    assert "alpha.md is a link, and links are not followed" in problems["alpha.md"]
    assert workspace.index.search("swordfish") == []


def test_a_folder_swapped_for_a_link_after_the_scan_is_not_walked(
    workspace: Workspace, corpus: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        shutil.rmtree(corpus / "deep")
        (corpus / "deep").symlink_to(outside / "deep")

    swap_after_scan(monkeypatch, swap)
    report = workspace.index.update()
    problems = {problem.path: problem.reason for problem in report.problems}
    assert "deep is a link" in problems["deep/gamma.md"]
    assert workspace.index.search("swordfish") == []


def test_a_fifo_swapped_in_after_the_scan_does_not_block_the_index(
    workspace: Workspace, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        (corpus / "beta.txt").unlink()
        os.mkfifo(corpus / "beta.txt")  # opening it for reading would wait for a writer

    swap_after_scan(monkeypatch, swap)
    report = workspace.index.update()
    problems = {problem.path: problem.reason for problem in report.problems}
    assert "not a regular file" in problems["beta.txt"]


def test_read_document_does_not_follow_a_link_swapped_in_after_the_path_check(
    workspace: Workspace, corpus: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = workspace.resolve

    def resolve_then_swap(user_path: str) -> Path:
        path = checked(user_path)
        (corpus / "alpha.md").unlink()
        (corpus / "alpha.md").symlink_to(outside / "secret.md")
        return path

    monkeypatch.setattr(workspace, "resolve", resolve_then_swap)
    result = run_tool(
        Toolbox(workspace, make_config().tools, None), "read_document", {"path": "alpha.md"}
    )
    assert result.status == "error"
    assert "swordfish" not in result.content
    assert "link" in result.content


@pytest.mark.parametrize(
    ("tag", "link"),
    [
        (0xA000000C, True),  # IO_REPARSE_TAG_SYMLINK
        (0xA0000003, True),  # IO_REPARSE_TAG_MOUNT_POINT: a directory junction
        (0x9000001A, False),  # a OneDrive placeholder: an ordinary file that is not here yet
        (0, False),
    ],
)
def test_windows_junctions_count_as_links(tag: int, link: bool) -> None:
    """On Windows ``lstat`` reports a junction as a folder, with its reparse tag beside it."""
    info = SimpleNamespace(st_mode=stat.S_IFDIR | 0o755, st_reparse_tag=tag)
    assert is_link(cast(os.stat_result, info)) is link
