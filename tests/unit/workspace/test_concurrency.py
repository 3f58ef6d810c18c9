"""One index, several writers (issue 38): a busy index is never taken for a corrupt one, and
updates and embeddings in other processes wait for each other instead of colliding.

The processes are real (``spawn``), and every wait is on something the other side does: a lock
this test holds until the others say they are waiting, a barrier, a queue."""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.errors import WorkspaceIndexError
from imprint_desktop.core.workspace import WorkspaceIndex, database, update
from imprint_desktop.core.workspace.database import Connections
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.core.workspace.update import IndexProgress
from imprint_desktop.core.workspace.vectors import EmbedProgress
from tests.unit.workspace.conftest import write

FILES = 40
SPAWN = multiprocessing.get_context("spawn")


def folder(root: Path, count: int = FILES) -> Path:
    for number in range(count):
        write(root, f"notes/n{number:03}.md", f"# Note {number}\n\nlantern{number} and harbour\n")
    return root


def inode(path: Path) -> int:
    return path.stat().st_ino


@contextlib.contextmanager
def holding_the_write_lock(db_path: Path) -> Iterator[sqlite3.Connection]:
    """Another program's write transaction on the index, held until the block ends."""
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "BUSY_SECONDS", 0.2)


# --- busy is not corrupt ------------------------------------------------------------------------


@pytest.mark.usefixtures("short_busy_timeout")
def test_a_locked_index_is_opened_searched_and_never_deleted(corpus: Path) -> None:
    with WorkspaceIndex(corpus) as index:
        index.update()
        db_path = index.db_path
    before = inode(db_path)
    with holding_the_write_lock(db_path) as holder:
        with WorkspaceIndex(corpus) as index:  # opening an index that is up to date writes nothing
            report = index.update()  # nothing changed: nothing written, no write lock wanted
            assert (report.documents, report.added, report.unchanged) == (3, 0, 3)
            assert [hit.path for hit in index.search("quokka")] == ["deep/gamma.md"]
            write(corpus, "delta.md", "# Delta\n\nA new note about the harbour.\n")
            with pytest.raises(WorkspaceIndexError, match="another program has held it"):
                index.update()
        # The holder's work is kept: it writes into the index as it is on disk, and commits.
        holder.execute("INSERT INTO meta (key, value) VALUES ('holder', 'kept')")
        holder.execute("COMMIT")
    assert inode(db_path) == before
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'holder'").fetchone() == ("kept",)
    with WorkspaceIndex(corpus) as index:
        assert index.update().added == 1  # once the holder is done, the update goes on
    assert inode(db_path) == before


@pytest.mark.usefixtures("short_busy_timeout")
def test_an_index_to_migrate_while_another_program_writes_it_is_an_error_not_a_deletion(
    corpus: Path,
) -> None:
    with WorkspaceIndex(corpus) as index:
        index.update()
        db_path = index.db_path
    with contextlib.closing(sqlite3.connect(db_path)) as db, db:
        db.execute("UPDATE meta SET value = 'an older one' WHERE key = 'version'")
    before = inode(db_path)
    with (
        holding_the_write_lock(db_path),
        pytest.raises(WorkspaceIndexError, match="another program has held it"),
    ):
        WorkspaceIndex(corpus)
    assert inode(db_path) == before
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("SELECT count(*) FROM files").fetchone() == (3,)


@pytest.mark.usefixtures("short_busy_timeout")
def test_an_index_another_program_holds_exclusively_is_an_error_not_a_deletion(
    corpus: Path,
) -> None:
    with WorkspaceIndex(corpus) as index:
        index.update()
        db_path = index.db_path
    before = inode(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE meta SET value = value WHERE key = 'root'")
        with pytest.raises(WorkspaceIndexError, match="another program has held it"):
            WorkspaceIndex(corpus)
        holder.execute("COMMIT")
    finally:
        holder.close()
    assert inode(db_path) == before
    with WorkspaceIndex(corpus) as index:
        assert index.update().unchanged == 3


# --- corrupt is rebuilt --------------------------------------------------------------------------


def built(corpus: Path) -> Path:
    with WorkspaceIndex(corpus) as index:
        index.update()
        return index.db_path


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b"\x8f\x00garbage" * 512, id="garbage"),
        pytest.param(lambda data: data[:50], id="truncated header"),
        pytest.param(lambda data: b"SQLite format 3\x00" + b"\xff" * 84, id="header only"),
    ],
)
def test_a_file_that_is_no_database_is_built_again(
    corpus: Path, damage: Callable[[bytes], bytes]
) -> None:
    db_path = built(corpus)
    db_path.write_bytes(damage(db_path.read_bytes()))
    with WorkspaceIndex(corpus) as index:
        assert index.update().added == 3
        assert [hit.path for hit in index.search("quokka")] == ["deep/gamma.md"]


def test_a_damaged_page_fails_one_update_and_the_index_is_built_again(corpus: Path) -> None:
    db_path = built(corpus)
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'files'").fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    data = bytearray(db_path.read_bytes())
    data[(root - 1) * size : root * size] = b"\xff" * size  # the files table's root page
    db_path.write_bytes(bytes(data))
    with WorkspaceIndex(corpus) as index:  # its first page and meta still read well
        with pytest.raises(WorkspaceIndexError, match=r"malformed.*built again"):
            index.update()
        assert index.update().added == 3  # quick_check failed: built again, then filled
        assert [hit.path for hit in index.search("quokka")] == ["deep/gamma.md"]


# --- one writer at a time, across processes ------------------------------------------------------


def _update_in_child(
    root: str, events: Any, start: Barrier | None, embed: bool
) -> None:  # pragma: no cover - runs in the spawned process
    def files(event: IndexProgress) -> None:
        if event.waiting:
            events.put(("waiting", "files"))

    def embedding(event: EmbedProgress) -> None:
        if event.waiting:
            events.put(("waiting", "embedding"))

    try:
        if start is not None:
            start.wait(60)
        with WorkspaceIndex(Path(root)) as index:
            report = index.update(progress=files, embed=embed, embed_progress=embedding)
            events.put(("done", report.documents, report.embedded, report.cancelled))
    except BaseException as error:
        events.put(("failed", repr(error)))


def run_children(
    root: Path, count: int, *, start: Barrier | None = None, embed: bool = True
) -> tuple[list[Any], Any, list[Any]]:
    events = SPAWN.Queue()
    children = [
        SPAWN.Process(target=_update_in_child, args=(str(root), events, start, embed))
        for _ in range(count)
    ]
    for child in children:
        child.start()
    return children, events, []


def collect(events: Any, kind: tuple[str, ...], count: int, seen: list[Any]) -> list[Any]:
    """The next ``count`` events that start with ``kind`` (others are kept in ``seen``); a child
    that failed fails the test at once."""
    found: list[Any] = []
    while len(found) < count:
        try:
            event = events.get(timeout=90)
        except queue.Empty:
            pytest.fail(f"waited for {count} {kind!r} events; had {found} and {seen}")
        assert event[0] != "failed", event
        (found if event[: len(kind)] == kind else seen).append(event)
    return found


def join(children: list[Any]) -> None:
    for child in children:
        child.join(60)
        assert child.exitcode == 0


def index_holds_every_file_once(db_path: Path, count: int = FILES) -> None:
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        paths = [row[0] for row in db.execute("SELECT path FROM files")]
        assert sorted(paths) == [f"notes/n{number:03}.md" for number in range(count)]
        passages = db.execute("SELECT file_id, count(*) FROM passages GROUP BY file_id").fetchall()
        assert len(passages) == count and all(rows == 1 for _, rows in passages)
        vectors = db.execute(
            "SELECT count(*) FROM passages p JOIN passage_vectors v ON v.passage_id = p.id"
        ).fetchone()
        assert vectors == (count,)


def test_updates_in_two_processes_wait_for_each_other(tmp_path: Path) -> None:
    """Two processes update an index a third is updating: both say they wait, both finish once
    it is done, and the index holds every file once."""
    root = folder(tmp_path / "w")
    with WorkspaceIndex(root) as index:  # the schema, and nothing indexed yet
        connections: Connections = index._connections
        db_path = index.db_path
        with connections.updates.held():
            children, events, seen = run_children(root, 2)
            collect(events, ("waiting", "files"), 2, seen)
        done = collect(events, ("done",), 2, seen)
    join(children)
    assert sorted(done) == [("done", FILES, FILES, False)] * 2
    index_holds_every_file_once(db_path)


def test_embeddings_in_two_processes_wait_for_each_other(tmp_path: Path) -> None:
    root = folder(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update(embed=False)
        connections: Connections = index._connections
        db_path = index.db_path
        with connections.embedding.held():
            children, events, seen = run_children(root, 2)
            collect(events, ("waiting", "embedding"), 2, seen)
        done = collect(events, ("done",), 2, seen)
    join(children)
    assert sorted(done) == [("done", FILES, FILES, False)] * 2
    index_holds_every_file_once(db_path)


def test_three_processes_indexing_a_new_folder_together_all_succeed(tmp_path: Path) -> None:
    root = folder(tmp_path / "w")
    start = SPAWN.Barrier(3)
    children, events, seen = run_children(root, 3, start=start)
    done = collect(events, ("done",), 3, seen)
    join(children)
    assert sorted(done) == [("done", FILES, FILES, False)] * 3
    with WorkspaceIndex(root) as index:
        db_path = index.db_path
    index_holds_every_file_once(db_path)


# --- in one process: waiting is shown, can be stopped, or is left out ---------------------------


def test_an_update_waiting_for_another_says_so_and_stop_ends_the_wait(corpus: Path) -> None:
    with WorkspaceIndex(corpus) as other, WorkspaceIndex(corpus) as index:
        stop = threading.Event()
        shown: list[IndexProgress] = []

        def progress(event: IndexProgress) -> None:
            shown.append(event)
            stop.set()  # the person presses Stop once they see it wait

        with other._connections.updates.held():
            report = index.update(progress=progress, cancel=stop)
        assert shown == [IndexProgress(0, 0, "", waiting=True)]
        assert report.cancelled and not report.busy
        assert index.update().added == 3


def test_an_update_told_not_to_wait_leaves_the_work_to_the_other(corpus: Path) -> None:
    with WorkspaceIndex(corpus) as other, WorkspaceIndex(corpus) as index:
        other.update()
        write(corpus, "delta.md", "# Delta\n\nA quokka again.\n")
        with other._connections.updates.held():
            report = index.update(wait=False, progress=lambda event: pytest.fail("waited"))
            assert report.busy and not report.cancelled
            assert (report.documents, report.added) == (3, 0)
            assert [hit.path for hit in index.search("quokka")] == ["deep/gamma.md"]
        assert index.update(wait=False).added == 1


def test_a_large_file_is_read_with_no_transaction_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small files share a transaction; a large one is read and parsed outside any."""
    root = tmp_path / "w"
    write(root, "a.md", "# A\n\nsmall\n")
    write(root, "b.md", "# B\n\nsmall too\n")
    write(root, "c.md", "# C\n\n" + "large enough " * 100)
    monkeypatch.setattr(update, "_QUICK_BYTES", 1000)
    monkeypatch.setattr(update, "_GROUP_SECONDS", 60.0)  # the small files' group stays open
    read = DocumentReader.read
    open_while_read: dict[str, bool] = {}
    with WorkspaceIndex(root) as index:

        def reading(self: DocumentReader, name: str, *args: Any, **kwargs: Any) -> Any:
            open_while_read[name] = index._connections.get().in_transaction
            return read(self, name, *args, **kwargs)

        monkeypatch.setattr(DocumentReader, "read", reading)
        assert index.update().added == 3
    assert open_while_read == {"a.md": False, "b.md": True, "c.md": False}


@pytest.mark.skipif(sys.platform == "win32", reason="filelock removes its file there on release")
def test_building_a_damaged_index_again_keeps_its_lock_files(corpus: Path) -> None:
    """Rebuilding deletes the database and its WAL files only: the lock files stay (a process
    waiting on one would otherwise be let in beside another holding the old one)."""
    db_path = built(corpus)
    locks = [db_path.with_name(f"{db_path.name}{suffix}") for suffix in (".lock", ".embed.lock")]
    identities = [lock.stat().st_ino for lock in locks]
    db_path.write_bytes(b"not a database" * 300)
    with WorkspaceIndex(corpus) as index:
        assert index.update().added == 3
    assert [lock.stat().st_ino for lock in locks] == identities
