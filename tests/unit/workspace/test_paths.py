"""Paths from the model: every way out of the workspace is refused, through every tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core.errors import PathOutsideWorkspaceError
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Workspace, resolve_inside
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
    result = run_tool(Toolbox(workspace, {}, None), "read_document", {"path": user_path})
    assert result.status == "error"
    assert "swordfish" not in result.content
    assert "outside the workspace" in result.content


def test_symlinks_are_not_indexed(workspace: Workspace, escape_links: Path) -> None:
    workspace.index.update()
    assert workspace.index.search("swordfish") == []


@pytest.mark.parametrize("user_path", ESCAPES)
def test_read_document_refuses(workspace: Workspace, user_path: str) -> None:
    result = run_tool(Toolbox(workspace, {}, None), "read_document", {"path": user_path})
    assert result.status == "error"
    assert result.evidence == ()


@pytest.mark.parametrize("folder", ["../", "/etc", "C:\\", "..\\..", ".git"])
def test_list_documents_refuses_folders_outside(workspace: Workspace, folder: str) -> None:
    result = run_tool(Toolbox(workspace, {}, None), "list_documents", {"folder": folder})
    assert result.status == "error"


@pytest.mark.parametrize("notes_folder", ["../escape", "/tmp/escape", "link-out"])
def test_write_note_never_escapes(corpus: Path, tmp_path: Path, notes_folder: str) -> None:
    outside = tmp_path / "outside-notes"
    outside.mkdir()
    (corpus / "link-out").symlink_to(outside)
    with Workspace(corpus, notes_folder=notes_folder) as opened:
        result = run_tool(
            Toolbox(opened, {}, None), "write_note", {"title": "Escape", "content": "x"}
        )
    assert result.status == "error"
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escape").exists()


def test_write_note_titles_cannot_traverse(workspace: Workspace, corpus: Path) -> None:
    toolbox = Toolbox(workspace, {}, None)
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
    result = run_tool(Toolbox(workspace, {}, None), "read_document", {"path": user_path})
    assert result.status == "error"
    assert "has a ':' in a name" in result.content
    assert "alternate data stream" in result.content


def test_stream_names_are_refused_for_folders_and_notes(corpus: Path) -> None:
    with Workspace(corpus, notes_folder="notes:hidden") as opened:
        toolbox = Toolbox(opened, {}, None)
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
