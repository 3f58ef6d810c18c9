"""Chat history: conversations, messages and each reply's record, in SQLite (WAL).

A reply is written *as it happens*: the question and a ``running`` reply row first, then every trace
line and every piece of new evidence the moment the engine reports it, then the answer (or the
labelled fallback) and the stop reason. A process killed mid-reply therefore leaves a reply that
:meth:`HistoryStore.mark_interrupted` turns into ``interrupted`` on the next start, with the
evidence found up to the kill.

Each thread gets its own connection (SQLite connections are not shared across threads); WAL lets
the window read while the loop thread writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imprint_desktop.core import paths
from imprint_desktop.core.chosen import researched_folder, sample_workspace
from imprint_desktop.core.config import Config
from imprint_desktop.core.providers.base import Message
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.sources import SOURCES_HEADING, UNCITED_HEADING
from imprint_desktop.core.research.trace import trace_json, trace_line

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    workspace TEXT                 -- the folder its latest reply researched ('' the sample)
);
CREATE TABLE IF NOT EXISTS replies (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    question TEXT NOT NULL,
    status TEXT NOT NULL,          -- running | finished | interrupted
    stop_reason TEXT,
    final_mode TEXT,
    answer TEXT,                   -- the answer's text; its sources are in result
    error TEXT,
    result TEXT,                   -- the ReplyResult as JSON
    started REAL NOT NULL,
    finished REAL,
    workspace TEXT                 -- the folder researched (citations open from it)
);
CREATE TABLE IF NOT EXISTS reply_trace (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (reply_id, seq)
);
CREATE TABLE IF NOT EXISTS evidence (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    id INTEGER NOT NULL,
    source TEXT NOT NULL,
    location TEXT NOT NULL,
    excerpt TEXT NOT NULL,
    PRIMARY KEY (reply_id, id)
);
CREATE INDEX IF NOT EXISTS replies_by_conversation ON replies(conversation_id, id);
"""
#: 2: answers are kept without their Sources block (the sources are the result's own field).
#: 3: conversations keep the folder they research (taken from their latest reply's, when kept).
SCHEMA_VERSION = 3


@dataclass(frozen=True)
class ConversationSummary:
    id: int
    title: str
    updated: float
    replies: int
    #: The folder it researches: a path, "" for the sample workspace, None when not known (a
    #: conversation without replies, or whose replies are older than the folders they kept).
    workspace: str | None = None

    @property
    def sample_workspace(self) -> bool:
        return self.workspace == ""


@dataclass(frozen=True)
class StoredReply:
    id: int
    conversation_id: int
    question: str
    status: str
    stop_reason: str | None
    final_mode: str | None
    answer: str | None
    error: str | None
    started: float
    finished: float | None
    evidence: tuple[ev.EvidenceItemView, ...]
    workspace: str | None = None  # the folder researched; None in older histories
    sources: tuple[ev.SourceView, ...] = ()  # what the answer rests on, shown under it
    grounding: ev.GroundingView | None = None  # what of the answer to check, shown under it

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"


TITLE_LENGTH = 60


def conversation_title(question: str) -> str:
    """A new conversation is named after its first question."""
    line = " ".join(question.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


class HistoryStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else paths.data_dir() / "history.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._db().executescript(SCHEMA)  # executescript manages its own transaction
        columns = {row[1] for row in self._db().execute("PRAGMA table_info(replies)")}
        if "workspace" not in columns:  # a history written before replies kept their folder
            try:
                self._db().execute("ALTER TABLE replies ADD COLUMN workspace TEXT")
            except sqlite3.OperationalError as error:  # another process added it just now
                if "duplicate column" not in str(error):
                    raise
        self._upgrade()

    def _upgrade(self) -> None:
        """Bring a history written by an older Imprint to :data:`SCHEMA_VERSION`: answers kept
        with their Sources block written in lose it (their result keeps the sources), and
        conversations gain the folder they research, their latest reply's where one was kept."""
        with self.transaction() as db:
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version >= SCHEMA_VERSION:
                return
            if version < 2:
                rows = db.execute(
                    "SELECT id, answer FROM replies WHERE answer IS NOT NULL"
                ).fetchall()
                for stored_id, answer in rows:
                    kept = _without_sources_block(answer)
                    if kept != answer:
                        db.execute("UPDATE replies SET answer = ? WHERE id = ?", (kept, stored_id))
            columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
            if "workspace" not in columns:
                db.execute("ALTER TABLE conversations ADD COLUMN workspace TEXT")
            latest = db.execute(
                """SELECT r.conversation_id, r.workspace FROM replies r WHERE r.id = (
                       SELECT MAX(q.id) FROM replies q
                       WHERE q.conversation_id = r.conversation_id AND q.workspace IS NOT NULL)"""
            ).fetchall()
            db.executemany(
                "UPDATE conversations SET workspace = ? WHERE id = ? AND workspace IS NULL",
                [(kept_folder(Path(folder)), conversation) for conversation, folder in latest],
            )
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- connections ----------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this store opened (call once, when no thread uses it)."""
        with self._lock:
            connections, self._all = self._all, []
        for db in connections:
            db.close()
        self._local = threading.local()

    # --- conversations ----------------------------------------------------------------------

    def create_conversation(self, title: str) -> int:
        now = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO conversations (title, created, updated) VALUES (?, ?, ?)",
                (title.strip() or "New conversation", now, now),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def conversations(self, search: str = "") -> list[ConversationSummary]:
        """Newest first; ``search`` matches titles and questions."""
        pattern = f"%{search.strip()}%"
        rows = (
            self._db()
            .execute(
                """SELECT c.id, c.title, c.updated, COUNT(r.id), c.workspace FROM conversations c
               LEFT JOIN replies r ON r.conversation_id = c.id
               WHERE ? = '%%' OR c.title LIKE ? OR EXISTS (
                   SELECT 1 FROM replies q WHERE q.conversation_id = c.id AND q.question LIKE ?)
               GROUP BY c.id ORDER BY c.updated DESC, c.id DESC""",
                (pattern, pattern, pattern),
            )
            .fetchall()
        )
        return [ConversationSummary(*row) for row in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?",
                (title.strip() or "Untitled", conversation_id),
            )

    def delete(self, conversation_id: int) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # --- replies ----------------------------------------------------------------------------

    def replies(self, conversation_id: int) -> list[StoredReply]:
        rows = (
            self._db()
            .execute(
                """SELECT id, conversation_id, question, status, stop_reason, final_mode, answer,
                      error, started, finished, workspace, result
               FROM replies WHERE conversation_id = ? ORDER BY id""",
                (conversation_id,),
            )
            .fetchall()
        )
        return [_reply(row, self._evidence(row[0])) for row in rows]

    def reply(self, stored_id: int) -> StoredReply:
        row = (
            self._db()
            .execute(
                """SELECT id, conversation_id, question, status, stop_reason, final_mode, answer,
                      error, started, finished, workspace, result FROM replies WHERE id = ?""",
                (stored_id,),
            )
            .fetchone()
        )
        if row is None:
            raise KeyError(stored_id)
        return _reply(row, self._evidence(stored_id))

    def trace(self, stored_id: int) -> list[dict[str, object]]:
        rows = (
            self._db()
            .execute("SELECT line FROM reply_trace WHERE reply_id = ? ORDER BY seq", (stored_id,))
            .fetchall()
        )
        return [json.loads(line) for (line,) in rows]

    def chat_messages(self, conversation_id: int) -> list[Message]:
        """Earlier questions and answers, for the next reply's prompt."""
        messages: list[Message] = []
        for reply in self.replies(conversation_id):
            if reply.answer:
                messages += [Message("user", reply.question), Message("assistant", reply.answer)]
        return messages

    def mark_interrupted(self) -> int:
        """Replies left ``running`` by a process that died are ``interrupted``; returns how many."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE replies SET status = 'interrupted', finished = ? WHERE status = 'running'",
                (time.time(),),
            )
        return cursor.rowcount

    def start_reply(
        self, conversation_id: int, question: str, workspace: Path | None = None
    ) -> ReplyRecorder:
        """A new ``running`` reply; ``workspace`` is the folder it researches (when not given,
        the recorder takes it from the settings the reply starts with)."""
        now = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO replies (conversation_id, question, status, started, workspace) "
                "VALUES (?, ?, 'running', ?, ?)",
                (conversation_id, question, now, str(workspace) if workspace else None),
            )
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))
            if workspace:
                _keep_conversation_folder(db, conversation_id, workspace)
        assert cursor.lastrowid is not None
        return ReplyRecorder(self, cursor.lastrowid)

    def _evidence(self, stored_id: int) -> tuple[ev.EvidenceItemView, ...]:
        rows = (
            self._db()
            .execute(
                "SELECT id, source, location, excerpt FROM evidence WHERE reply_id = ? ORDER BY id",
                (stored_id,),
            )
            .fetchall()
        )
        return tuple(ev.EvidenceItemView(*row) for row in rows)


def kept_folder(folder: Path) -> str:
    """How a conversation keeps the folder it researches: its path, or "" for the sample
    workspace, whose path changes with every installation."""
    try:
        sample = folder.resolve() == sample_workspace().resolve()
    except OSError:
        sample = False
    return "" if sample else str(folder)


def _keep_conversation_folder(db: sqlite3.Connection, conversation: int, folder: Path) -> None:
    db.execute(
        "UPDATE conversations SET workspace = ? WHERE id = ?", (kept_folder(folder), conversation)
    )


def _reply(row: tuple[Any, ...], evidence: tuple[ev.EvidenceItemView, ...]) -> StoredReply:
    stored_id, conversation_id, question, status, stop, mode, answer, error, started, ended = row[
        :10
    ]
    return StoredReply(
        stored_id,
        conversation_id,
        question,
        status,
        stop,
        mode,
        answer,
        error,
        started,
        ended,
        evidence,
        row[10],
        _sources(row[11]),
        _grounding(row[11]),
    )


def _sources(result: str | None) -> tuple[ev.SourceView, ...]:
    """The sources kept in a reply's result JSON (none for a reply that never finished)."""
    try:
        kept = json.loads(result) if result else {}
    except ValueError:
        return ()
    listed = kept.get("sources") if isinstance(kept, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(
        ev.SourceView(
            int(entry.get("id", 0)),
            str(entry.get("source", "")),
            str(entry.get("location", "")),
            str(entry.get("title", "")),
            bool(entry.get("cited", False)),
            str(entry.get("excerpt", "")),
        )
        for entry in listed
        if isinstance(entry, dict)
    )


def _grounding(result: str | None) -> ev.GroundingView | None:
    """The grounding kept in a reply's result JSON (None for older replies and unfinished ones)."""
    try:
        kept = json.loads(result) if result else None
    except ValueError:
        return None
    return ev.GroundingView.from_json(kept.get("grounding") if isinstance(kept, dict) else None)


def _without_sources_block(answer: str) -> str:
    """An answer an older Imprint kept with its Sources block written in, without it."""
    for heading in (SOURCES_HEADING, UNCITED_HEADING):
        answer = answer.split(f"\n\n{heading}\n", 1)[0]
    return answer


class ReplyRecorder(EventHandler):
    """An event sink that writes one reply into the history as it happens: every trace line, the
    evidence as it is found, and the result at the end."""

    def __init__(self, store: HistoryStore, stored_id: int) -> None:
        self.store = store
        self.stored_id = stored_id  # the reply's row
        self._seq = 0

    def __call__(self, event: ev.Event) -> None:
        ev.dispatch(event, self)

    def on_event(self, event: ev.Event) -> None:
        self._record(event)

    def on_reply_started(self, event: ev.ReplyStarted) -> None:
        self._keep_workspace(event.config)
        self._record(event)

    def on_tool_finished(self, event: ev.ToolFinished) -> None:
        self._record(event, event.evidence)

    def on_reply_finished(self, event: ev.ReplyFinished) -> None:
        self._record(event, result=event.result)

    def _record(
        self,
        event: ev.Event,
        evidence: tuple[ev.EvidenceItemView, ...] = (),
        result: ev.ReplyResult | None = None,
    ) -> None:
        """The event's trace line, ``evidence`` and ``result``, in one transaction (none at all for
        an event that leaves nothing to keep)."""
        line = trace_line(event)
        if line is None and not evidence and result is None:
            return
        with self.store.transaction() as db:
            if line is not None:
                self._seq += 1
                db.execute(
                    "INSERT INTO reply_trace (reply_id, seq, line) VALUES (?, ?, ?)",
                    (self.stored_id, self._seq, trace_json(line)),
                )
            db.executemany(
                "INSERT OR REPLACE INTO evidence (reply_id, id, source, location, excerpt) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (self.stored_id, item.id, item.source, item.location, item.excerpt)
                    for item in evidence
                ],
            )
            if result is not None:
                db.execute(
                    """UPDATE replies SET status = 'finished', stop_reason = ?, final_mode = ?,
                       answer = ?, error = ?, result = ?, finished = ? WHERE id = ?""",
                    (
                        result.stop_reason,
                        result.final_mode,
                        result.answer,
                        result.error,
                        json.dumps(result.to_json(), ensure_ascii=False),
                        time.time(),
                        self.stored_id,
                    ),
                )

    def _keep_workspace(self, config: Config) -> None:
        """Note the folder the reply researches, unless :meth:`HistoryStore.start_reply` did."""
        folder = researched_folder(config)
        if folder is None:
            return
        with self.store.transaction() as db:
            cursor = db.execute(
                "UPDATE replies SET workspace = ? WHERE id = ? AND workspace IS NULL",
                (str(folder), self.stored_id),
            )
            if cursor.rowcount:
                (conversation,) = db.execute(
                    "SELECT conversation_id FROM replies WHERE id = ?", (self.stored_id,)
                ).fetchone()
                _keep_conversation_folder(db, conversation, folder)
