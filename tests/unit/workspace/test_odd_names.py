"""Odd file names: one never stops a folder, and each is indexed under a name that reaches it.

A POSIX name that is not UTF-8 (``caf\\xe9.md``, from an old ZIP archive or a Windows share)
reaches Python with lone surrogates that SQLite, a terminal and the model cannot take: it is kept
in the workspace's text form (``caf:E9.md``) everywhere, and that form leads back to the file.
Names that are text already (a line break in them, names that differ only in Unicode
normalisation, long ones) are kept as they are. A file over the size limit is reported as skipped,
with the setting that decides it.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from imprint_desktop.core.errors import PathOutsideWorkspaceError
from imprint_desktop.core.tools.workspace_tools import list_documents, read_document
from imprint_desktop.core.workspace import Workspace, WorkspaceIndex, clean_relative
from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES
from imprint_desktop.core.workspace.files import (
    disk_name,
    name_text,
    read_inside,
    resolve_inside,
    scan,
)
from tests.unit.workspace.conftest import write

posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX names are bytes; NTFS's are UTF-16")


def write_bytes_name(folder: Path, name: bytes, text: str) -> None:
    """A file whose name is exactly the bytes ``name`` (POSIX: what is not UTF-8 reaches Python
    as lone surrogates, and goes back to the OS as the same bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / os.fsdecode(name)).write_bytes(text.encode("utf-8"))


def test_the_text_form_maps_each_lone_surrogate_back() -> None:
    undecodable = b"caf\xe9 \xff\xfe.md".decode("utf-8", "surrogateescape")  # as POSIX gives it
    assert name_text(undecodable) == "caf:E9 :FF:FE.md"
    assert disk_name("caf:E9 :FF:FE.md") == undecodable
    assert name_text("a\ud800b\udfff") == "a:uD800b:uDFFF"  # a Windows name's lone UTF-16 units
    assert disk_name("a:uD800b:uDFFF") == "a\ud800b\udfff"
    for text in ("plain.md", "café.md", "line\nbreak.md", "C:x", "a:zz", ":7F"):
        assert name_text(text) == text
    assert disk_name("a:zz:7F") == "a:zz:7F"  # no escape: left for clean_relative to refuse


@posix_only
def test_a_name_that_is_not_utf8_is_indexed_searched_and_read_by_its_text_form(
    tmp_path: Path,
) -> None:
    root = tmp_path / "w"
    write(root, "normal.md", "# Normal\n\nThe espresso machine is in the hall.\n")
    write_bytes_name(root, b"caf\xe9.md", "# Cafe\n\nThe espresso here is strong.\n")
    write_bytes_name(root, b"caf\xe9 untitled.txt", "Espresso without a heading.\n")
    with Workspace(root) as workspace:
        report = workspace.index.update()
        assert report.problems == ()
        assert report.documents == 3
        hits = workspace.index.search("espresso", 8)
        assert sorted(hit.path for hit in hits) == [
            "caf:E9 untitled.txt",
            "caf:E9.md",
            "normal.md",
        ]
        listed = list_documents(workspace, "")
        assert sorted(item.source for item in listed.items) == [
            "caf:E9 untitled.txt",
            "caf:E9.md",
            "normal.md",
        ]
        read = read_document(workspace, "caf:E9.md", 1, None, 4000)
        assert "espresso here is strong" in read.items[0].text
        untitled = read_document(workspace, "caf:e9 untitled.txt", 1, None, 4000)
        assert untitled.items[0].source == "caf:E9 untitled.txt"
        # A model that sends the lone surrogate itself (JSON "\udce9") reaches the same file.
        assert workspace.read("caf\udce9.md")[0] == "caf:E9.md"
        assert workspace.index.update().unchanged == 3  # the second run finds nothing new


@posix_only
def test_a_document_without_a_heading_is_titled_by_its_name_in_the_text_form(
    tmp_path: Path,
) -> None:
    """The stem is the title of a file without a heading, as the index and a read give it: text
    a model, a window and SQLite can take."""
    root = tmp_path / "w"
    write_bytes_name(root, b"caf\xe9 untitled.txt", "Espresso without a heading.\n")
    with Workspace(root) as workspace:
        workspace.index.update()
        assert [hit.title for hit in workspace.index.search("espresso", 8)] == ["caf:E9 untitled"]
        read = read_document(workspace, "caf:E9 untitled.txt", 1, None, 4000)
        assert read.items[0].title == "caf:E9 untitled"


@posix_only
def test_everything_below_a_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_bytes_name(root / os.fsdecode(b"d\xe9j\xe0"), b"inner.md", "# Inner\n\nbaguette\n")
    write_bytes_name(root / os.fsdecode(b"d\xe9j\xe0/sub\xff"), b"deep\xfe.md", "baguette deep\n")
    entries = list(scan(root.resolve(), max_file_bytes=1 << 20, skip_suffixes=BINARY_SUFFIXES))
    assert [entry.path for entry in entries] == ["d:E9j:E0/inner.md", "d:E9j:E0/sub:FF/deep:FE.md"]
    data, _ = read_inside(root.resolve(), "d:E9j:E0/sub:FF/deep:FE.md", max_bytes=1 << 20)
    assert data == b"baguette deep\n"
    with WorkspaceIndex(root) as index:
        index.update()
        assert sorted(hit.path for hit in index.search("baguette", 8)) == [
            "d:E9j:E0/inner.md",
            "d:E9j:E0/sub:FF/deep:FE.md",
        ]
        assert [document.path for document in index.documents("d:E9j:E0/sub:FF")] == [
            "d:E9j:E0/sub:FF/deep:FE.md"
        ]


@posix_only
def test_a_workspace_folder_whose_own_name_is_not_utf8(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"r\xe9sum\xe9s")
    write_bytes_name(root, b"cv.md", "# CV\n\nlighthouse keeper\n")
    with WorkspaceIndex(root) as index:
        assert index.update().documents == 1
        assert [hit.path for hit in index.search("lighthouse", 8)] == ["cv.md"]


def test_paths_a_model_sends_in_the_text_form_are_checked_as_before(tmp_path: Path) -> None:
    assert clean_relative("caf:e9.md") == "caf:E9.md"  # one spelling: the index's key
    assert clean_relative("a:E9.md") == "a:E9.md"  # a name, not the drive a:
    assert clean_relative("notes\\caf\udce9.md") == "notes/caf:E9.md"
    for refused in ("C:x", "C:\\x", "a:zz.md", "x:7F.md", "notes.md:hidden", "../caf:E9.md"):
        with pytest.raises(PathOutsideWorkspaceError):
            clean_relative(refused)
    if os.name != "nt":  # a lone UTF-16 unit names no POSIX file
        with pytest.raises(PathOutsideWorkspaceError, match="not valid text"):
            clean_relative("caf:uD800.md")
    root = tmp_path.resolve()
    assert resolve_inside(root, "sub/caf:E9.md") == root / "sub" / disk_name("caf:E9.md")


def test_names_that_are_text_are_kept_as_they_are(tmp_path: Path) -> None:
    root = tmp_path / "w"
    composed = unicodedata.normalize("NFC", "café.md")
    decomposed = unicodedata.normalize("NFD", "café.md")
    long_name = "é" * 124 + ".md"  # 248 bytes + 3: near the 255 bytes a name may have
    write(root, composed, "The composed one speaks of tide tables.\n")
    if os.name != "nt":  # NTFS keeps both forms too, but a newline is no name there
        write(root, decomposed, "The decomposed one speaks of tide gauges.\n")
        write(root, "two\nlines.md", "A tide clock with a line break in its name.\n")
    write(root, long_name, "A tide chart under a long name.\n")
    with Workspace(root) as workspace:
        report = workspace.index.update()
        assert report.problems == ()
        found = {hit.path for hit in workspace.index.search("tide", 8)}
        expected = {composed, long_name}
        if os.name != "nt":
            expected |= {decomposed, "two\nlines.md"}
        assert found == expected
        for path in expected:
            relative, document = workspace.read(path)
            assert relative == path
            assert "tide" in "\n".join(document.lines)
        if os.name != "nt":
            assert "decomposed" in "\n".join(workspace.read(decomposed)[1].lines)
            assert "composed one" in "\n".join(workspace.read(composed)[1].lines)


def test_a_file_over_the_size_limit_is_reported_with_the_setting(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write(root, "small.md", "zebra crossing\n")
    write(root, "grows.md", "zebra grows\n")
    write(root, "big.md", "zebra " * 200_000)  # 1.2 MB
    (root / "film.mp4").write_bytes(b"\0" * 2_000_000)  # binary: not a document, not reported
    with WorkspaceIndex(root, max_file_bytes=2**20) as index:
        report = index.update()
        assert [(p.path, p.reason, p.kind) for p in report.problems] == [
            ("big.md", "larger than the 1 MB limit (workspace.max_file_mb)", "skipped")
        ]
        assert report.documents == 2
        # A file that grows past the limit leaves the index and is reported the same way.
        write(root, "grows.md", "zebra " * 200_000)
        again = index.update()
        assert again.removed == 1
        assert {p.path for p in again.problems} == {"big.md", "grows.md"}
        assert [hit.path for hit in index.search("zebra", 8)] == ["small.md"]
    with WorkspaceIndex(root, max_file_bytes=1_000_000) as index:  # a limit of no whole MB
        reasons = {p.reason for p in index.update().problems}
        assert reasons == {"larger than the 1,000,000 bytes limit (workspace.max_file_mb)"}
