"""The jobs the bridge runs on the engine loop: a reply, and the history reads and writes.

Each job reports through ``emit`` with frozen payloads (:mod:`.payloads`). A reply job ends in
exactly one :class:`~imprint_desktop.engine.payloads.ReplyEnded` — finished, failed or cancelled —
whatever happens, and its history row is always closed (a row is left ``running`` only when the
process itself dies, which is what makes it reopen as interrupted).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import Cancelled
from imprint_desktop.core.research import events as ev
from imprint_desktop.engine import payloads as p
from imprint_desktop.engine.host import EngineHost
from imprint_desktop.engine.work import sentence

if TYPE_CHECKING:
    from imprint_desktop.core.history import ReplyRecorder, StoredReply

log = logging.getLogger(__name__)

Emit = Callable[[object], None]


def _closing_result(reason: ev.StopReason, message: str) -> ev.ReplyResult:
    return ev.ReplyResult(
        answer="",
        final_mode="fallback",
        stop_reason=reason,
        rounds=0,
        evidence=(),
        tokens=ev.TokenTotals(0, 0, 0, 0),
        research_seconds=0.0,
        user_wait_seconds=0.0,
        error=message or None,
    )


async def run_reply(
    host: EngineHost,
    emit: Emit,
    reply_id: int,
    *,
    conversation_id: int | None,
    question: str,
    settings: Mapping[str, Any],
    cancel: CancelToken,
) -> None:
    """One reply from question to saved answer; see the module docstring for its guarantees."""
    state: dict[str, Any] = {"conversation": conversation_id, "recorder": None}

    def ended(outcome: p.Outcome, result: ev.ReplyResult | None, message: str = "") -> None:
        recorder: ReplyRecorder | None = state["recorder"]
        emit(
            p.ReplyEnded(
                reply_id,
                outcome,
                result,
                message,
                state["conversation"],
                recorder.reply_id if recorder else None,
            )
        )

    def close_row(reason: ev.StopReason, message: str) -> None:
        recorder: ReplyRecorder | None = state["recorder"]
        if recorder is not None:
            recorder(ev.ReplyFinished(0.0, _closing_result(reason, message)))

    async def work() -> None:
        if cancel.cancelled:  # superseded before it could start
            ended(p.Outcome.CANCELLED, None)
            return
        try:
            result = await _research(
                host,
                emit,
                reply_id,
                question=question,
                settings=settings,
                cancel=cancel,
                state=state,
            )
        except (Cancelled, asyncio.CancelledError):
            close_row("cancelled", "")
            ended(p.Outcome.CANCELLED, None)
            return
        except Exception as error:
            message = sentence(error, settings)
            close_row("error", message)
            ended(p.Outcome.FAILED, None, message)
            return
        if result.stop_reason == "cancelled":
            ended(p.Outcome.CANCELLED, result)
        elif result.stop_reason == "error":
            detail = (result.error or "").strip()
            ended(
                p.Outcome.FAILED,
                result,
                f"The model failed: {detail or 'no reason given'}. The evidence found so far is "
                "kept below; try again, or choose another model in the toolbar.",
            )
        else:
            ended(p.Outcome.FINISHED, result)

    await host.locked_reply(work)


async def _research(
    host: EngineHost,
    emit: Emit,
    reply_id: int,
    *,
    question: str,
    settings: Mapping[str, Any],
    cancel: CancelToken,
    state: dict[str, Any],
) -> ev.ReplyResult:
    from imprint_desktop.core import assistant  # noqa: PLC0415 - engine thread, not startup
    from imprint_desktop.core.config import Config  # noqa: PLC0415 - likewise
    from imprint_desktop.core.history import conversation_title  # noqa: PLC0415 - likewise

    history = host.history
    created = state["conversation"] is None
    if created:
        state["conversation"] = history.create_conversation(conversation_title(question))
    conversation: int = state["conversation"]
    compact = history.chat_messages(conversation)
    # Only a conversation with saved replies is continued (a new one may reuse a deleted id).
    earlier = (host.conversation(conversation) if compact else ()) or compact
    recorder = history.start_reply(conversation, question)
    state["recorder"] = recorder
    emit(p.ReplyOpened(reply_id, conversation, recorder.reply_id, question, created))

    emit(p.ReplyPreparing(reply_id, "Getting the model ready…"))
    provider = await host.provider(settings, cancel)
    cancel.raise_if_cancelled()
    emit(p.ReplyPreparing(reply_id, "Updating the workspace index…"))
    await host.update_index(settings, emit, cancel)
    cancel.raise_if_cancelled()

    def sink(event: ev.Event) -> None:
        try:
            recorder(event)
        except Exception:  # the reply goes on; the log says why the history lacks a line
            log.exception("could not save %s", type(event).__name__)
        emit(p.ReplyEvent(reply_id, event))

    result = await assistant.research(
        question,
        provider=provider,
        config=Config.from_values(settings),
        workspace=host.workspace(settings),
        http=host.http(settings),
        cancel=cancel,
        ask=host.ask_person,
        consent=host.consent_for(reply_id, conversation),
        sink=sink,
        history=earlier,
        compact_history=compact,
    )
    host.keep_conversation(conversation, result.conversation)
    return result


# --- history ------------------------------------------------------------------------------------


def list_conversations(host: EngineHost, emit: Emit, search: str) -> None:
    emit(p.ConversationList(search, tuple(host.history.conversations(search))))


def load_conversation(host: EngineHost, emit: Emit, conversation_id: int, request: int) -> None:
    history = host.history
    title = next(
        (c.title for c in history.conversations() if c.id == conversation_id), "Conversation"
    )
    replies = tuple(history.replies(conversation_id))
    emit(p.ConversationRecord(conversation_id, title, replies, request))


async def save_trace(host: EngineHost, emit: Emit, stored_id: int, path: Path | None) -> None:
    lines = tuple(host.history.trace(stored_id))
    if path is None:
        emit(p.TraceRecord(stored_id, lines))
        return
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    emit(p.FileSaved(str(path), "trace"))


def conversation_markdown(title: str, replies: tuple[StoredReply, ...]) -> str:
    """A conversation as Markdown: each question, its answer, and the sources it cites."""
    parts = [f"# {title}\n"]
    for reply in replies:
        parts.append(f"## {reply.question}\n")
        if reply.interrupted:
            parts.append("*This reply was interrupted before it finished.*\n")
        parts.append((reply.answer or reply.error or "(no answer)").strip() + "\n")
        if reply.evidence:
            parts.append("**Sources**\n")
            parts += [
                f"{item.id}. {item.source} {item.location}".rstrip() for item in reply.evidence
            ]
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


async def export_conversation(
    host: EngineHost, emit: Emit, conversation_id: int, path: Path
) -> None:
    history = host.history
    title = next(
        (c.title for c in history.conversations() if c.id == conversation_id), "Conversation"
    )
    text = conversation_markdown(title, tuple(history.replies(conversation_id)))
    await asyncio.to_thread(path.write_text, text, encoding="utf-8")
    emit(p.FileSaved(str(path), "conversation"))
