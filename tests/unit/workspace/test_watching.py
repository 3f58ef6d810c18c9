"""The folders' watch (issue 44, item 2), on real folders with the real watcher: what is added,
changed in place, renamed and removed is told as the paths that changed, folder by folder; a
rename's two paths come in one batch; what the index never reads is left out."""

from __future__ import annotations

import os
import queue
from pathlib import Path

import pytest

from imprint_desktop.core.workspace.watching import WHOLE, FolderWatch
from tests.unit.workspace.conftest import write

WAIT_S = 10.0


class Seen:
    """The batches a watch told, in order."""

    def __init__(self) -> None:
        self.batches: queue.Queue[tuple[int, frozenset[str]]] = queue.Queue()

    def __call__(self, folder: int, paths: frozenset[str]) -> None:
        self.batches.put((folder, paths))

    def until(self, folder: int, wanted: set[str]) -> set[str]:
        """Every path told for ``folder`` until ``wanted`` have all been told."""
        told: set[str] = set()
        while not wanted <= told:
            number, paths = self.batches.get(timeout=WAIT_S)
            if number == folder:
                told |= paths
        return told

    def batch_with(self, folder: int, path: str) -> frozenset[str]:
        """The batch of ``folder`` that told ``path``."""
        while True:
            number, paths = self.batches.get(timeout=WAIT_S)
            if number == folder and path in paths:
                return paths


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, "notes/a.md", "alpha\n")
    write(second, "b.md", "beta\n")
    return first.resolve(), second.resolve()


def test_added_changed_renamed_and_removed_files_are_told_by_folder(
    two: tuple[Path, Path],
) -> None:
    first, second = two
    seen = Seen()
    watch = FolderWatch([first, second], seen)
    watch.start()
    try:
        assert watch.wait_ready(WAIT_S)
        # A new folder's files may come before it is watched itself: the folder is told, and an
        # update of a folder's path takes everything under it.
        write(first, "notes/new folder/c.md", "gamma\n")
        assert "notes/new folder" in seen.until(0, {"notes/new folder"})
        assert watch.wait_ready(WAIT_S)  # watching it too
        write(first, "notes/new folder/d.md", "delta\n")
        seen.until(0, {"notes/new folder/d.md"})
        with (second / "b.md").open("a", encoding="utf-8") as appended:  # changed in place
            appended.write("more\n")
        seen.until(1, {"b.md"})
        (first / "notes" / "a.md").rename(first / "notes" / "renamed.md")
        assert "notes/a.md" in seen.batch_with(0, "notes/renamed.md")
        (second / "b.md").unlink()
        seen.until(1, {"b.md"})
        # A hidden file, and one under a tooling folder, are never told; a later document is.
        write(first, ".draft.md", "hidden\n")
        write(first, "node_modules/x.md", "tooling\n")
        write(first, "last.md", "last\n")
        told = seen.until(0, {"last.md"})
        assert not any(path.startswith((".draft", "node_modules")) for path in told)
    finally:
        watch.stop()
    assert not watch.running


def test_a_name_that_is_not_utf8_has_the_whole_folder_looked_at_and_the_watch_goes_on(
    two: tuple[Path, Path],
) -> None:
    first, _ = two
    seen = Seen()
    watch = FolderWatch([first], seen)
    watch.start()
    try:
        assert watch.wait_ready(WAIT_S)
        (Path(os.fsdecode(bytes(first))) / os.fsdecode(b"caf\xe9.md")).write_text("x\n")
        assert seen.batches.get(timeout=WAIT_S) == (0, WHOLE)
        assert watch.wait_ready(WAIT_S)
        write(first, "after.md", "after\n")
        assert "after.md" in seen.until(0, {"after.md"})
    finally:
        watch.stop()


def test_a_folder_behind_a_link_is_not_watched(two: tuple[Path, Path], tmp_path: Path) -> None:
    first, _ = two
    outside = tmp_path / "outside"
    write(outside, "secret.md", "swordfish\n")
    (first / "linked").symlink_to(outside, target_is_directory=True)
    seen = Seen()
    watch = FolderWatch([first], seen)
    watch.start()
    try:
        assert watch.wait_ready(WAIT_S)
        write(outside, "more.md", "behind the link\n")
        write(first, "inside.md", "inside\n")
        told = seen.until(0, {"inside.md"})
        assert not any(path.startswith("linked") for path in told)
    finally:
        watch.stop()
