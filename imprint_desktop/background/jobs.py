"""The loop-thread jobs outside a reply — history reads and writes, exports — and the words for
each kind of job's failure.

Each job takes exactly what it uses (the history store, a path) and reports through ``emit`` with
frozen payloads (:mod:`.payloads`). The loop thread runs every job under one error policy: an
exception becomes the payload the job's ``*_failed`` function words, so each job ends in a payload
either way.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from imprint_desktop.background import payloads as p
from imprint_desktop.background.error_words import sentence
from imprint_desktop.core.research.sources import with_sources

if TYPE_CHECKING:
    from imprint_desktop.background.reply_job import ConversationMemory
    from imprint_desktop.core.config import Config
    from imprint_desktop.core.history import HistoryStore, StoredReply

log = logging.getLogger(__name__)

Failed = Callable[[Exception], p.Payload]
"""What a job's failure tells the person, as the payload the bridge shows."""


# --- history ------------------------------------------------------------------------------------


async def list_conversations(history: HistoryStore, emit: p.Emit, search: str) -> None:
    emit(p.ConversationList(search, tuple(history.conversations(search))))


async def load_conversation(
    history: HistoryStore, emit: p.Emit, conversation_id: int, request: int
) -> None:
    replies = tuple(history.replies(conversation_id))
    emit(p.ConversationRecord(conversation_id, replies, request))


async def rename_conversation(
    history: HistoryStore, emit: p.Emit, conversation_id: int, title: str, search: str
) -> None:
    history.rename(conversation_id, title)
    await list_conversations(history, emit, search)


async def delete_conversation(
    history: HistoryStore,
    memory: ConversationMemory,
    emit: p.Emit,
    conversation_id: int,
    search: str,
) -> None:
    history.delete(conversation_id)
    memory.forget(conversation_id)
    await list_conversations(history, emit, search)


def history_failed(error: Exception) -> p.JobProblem:
    log.exception("history job failed")
    return p.JobProblem(f"The chat history could not be read or saved: {error}")


# --- files ----------------------------------------------------------------------------------------


async def save_trace(
    history: HistoryStore, emit: p.Emit, stored_id: int, path: Path | None
) -> None:
    """The reply's trace on ``TraceRecord``, or written to ``path`` (JSON Lines)."""
    lines = tuple(history.trace(stored_id))
    if path is None:
        emit(p.TraceRecord(stored_id, lines))
        return
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    emit(p.FileSaved(str(path), "trace"))


def trace_failed(error: Exception) -> p.JobProblem:
    return p.JobProblem(f"The trace could not be saved: {sentence(error)}")


def conversation_markdown(title: str, replies: tuple[StoredReply, ...]) -> str:
    """A conversation as Markdown: each question, its answer, and the sources it cites."""
    parts = [f"# {title}\n"]
    for reply in replies:
        parts.append(f"## {reply.question}\n")
        if reply.interrupted:
            parts.append("*This reply was interrupted before it finished.*\n")
        answer = (reply.answer or reply.error or "(no answer)").strip()
        parts.append(with_sources(answer, reply.sources, reply.grounding, strong="**") + "\n")
    return "\n".join(parts).rstrip() + "\n"


async def export_conversation(
    history: HistoryStore, emit: p.Emit, conversation_id: int, path: Path
) -> None:
    replies = tuple(history.replies(conversation_id))
    text = conversation_markdown(_title(history, conversation_id), replies)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    emit(p.FileSaved(str(path), "conversation"))


def export_failed(path: Path) -> Failed:
    def failed(error: Exception) -> p.JobProblem:
        if not isinstance(error, OSError):  # reading the conversation failed, not the file
            return history_failed(error)
        return p.JobProblem(
            f"The conversation could not be saved to {path}: {error.strerror}. "
            "Choose another folder."
        )

    return failed


def _title(history: HistoryStore, conversation_id: int) -> str:
    return next(
        (c.title for c in history.conversations() if c.id == conversation_id), "Conversation"
    )


# --- model and workspace --------------------------------------------------------------------------


def model_failed(config: Config) -> Failed:
    # ModelStatus(FAILED) already went out; this is the sentence to show.
    return lambda error: p.JobProblem(sentence(error, config))


def index_failed(config: Config) -> Failed:
    root = config.workspace.path
    return lambda error: p.IndexStatus(
        root, 0, 0, outcome=p.Outcome.FAILED, message=sentence(error)
    )


def connection_failed(config: Config) -> Failed:
    return lambda error: p.ConnectionTest(False, sentence(error, config))
