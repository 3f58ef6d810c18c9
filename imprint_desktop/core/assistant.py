"""Putting a reply together: the one reply runner, and the research it runs.

:func:`run_reply` runs every reply, the window's (on its loop thread) and ``imprint ask``'s: its
history row (a new conversation, or the one it continues), the model and the workspace index made
ready, the engine researching the question with the toolbox, every event recorded and passed on,
and the row closed however the reply ends. What differs between the front ends is handed to it:
where the model, the client and the workspace come from
(:class:`~.reply_services.ReplyServices`: kept between replies in the window, opened for one run on
the terminal) and how the person is asked and told (:class:`ReplyFront`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import researched_folder
from imprint_desktop.core.config import Config
from imprint_desktop.core.consent import Consent
from imprint_desktop.core.errors import Cancelled
from imprint_desktop.core.providers.base import Message, Provider
from imprint_desktop.core.reply_services import ReplyServices
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import (
    AskPerson,
    EventSink,
    ResearchEngine,
    ResearchSettings,
)
from imprint_desktop.core.research.events import ReplyResult
from imprint_desktop.core.tools.toolbox import Toolbox
from imprint_desktop.core.workspace import Workspace

if TYPE_CHECKING:
    from imprint_desktop.core.history import HistoryStore, ReplyRecorder

log = logging.getLogger(__name__)


async def research(
    question: str,
    *,
    provider: Provider,
    config: Config,
    workspace: Workspace,
    http: httpx.AsyncClient | None,
    cancel: CancelToken,
    ask: AskPerson | None = None,
    consent: Consent | None = None,
    sink: EventSink | None = None,
    history: Sequence[Message] = (),
) -> ReplyResult:
    """Run one reply on the current loop; research time starts here, after the provider is ready.

    ``consent`` decides each ``fetch_url`` while ``tools.fetch_url_confirm`` is on; without it
    nobody can be asked, and fetches are denied.
    """
    engine = ResearchEngine(
        provider,
        ResearchSettings.from_config(config),
        cancel=cancel,
        ask=ask,
        consent=consent,
        sink=sink,
    )
    toolbox = Toolbox(workspace, config.tools, http)
    return await engine.run(question, toolbox, history)


def _nothing(*_: object) -> None:
    return None


@dataclass(frozen=True)
class ReplyKept:
    """A reply kept in the history has its row."""

    conversation: int
    stored_id: int
    conversation_created: bool
    workspace: str | None  # the folder it researches, resolved once (None: not a folder)


@dataclass(frozen=True)
class ReplyFront:
    """What the front end (the window, the terminal) does for a reply."""

    sink: EventSink  # every event of the reply, after the history has it
    ask: AskPerson | None = None  # the person's answer to ``ask_user``
    # Who decides a ``fetch_url`` in the conversation (None: a reply kept out of the history).
    consent: Callable[[int | None], Consent | None] = _nothing
    opened: Callable[[ReplyKept], None] = _nothing  # the reply has its history row
    preparing: Callable[[str], None] = _nothing  # what the reply does before research begins
    # A failure before or around research, in the words its history row keeps.
    failure_words: Callable[[Exception], str] = str


async def run_reply(
    question: str,
    *,
    config: Config,
    cancel: CancelToken,
    services: ReplyServices,
    front: ReplyFront,
    history: HistoryStore | None = None,
    conversation: int | None = None,
) -> ReplyResult:
    """One reply, from the question to the saved answer (see the module docstring).

    With ``history`` the reply is kept as it happens — in ``conversation``, or a new one named
    after the question — and the questions and answers before it are its context. A failure
    (the model cannot be loaded, Stop before research began) is raised, after the reply's row
    says so; research itself never raises (its result says how it ended).
    """
    recorder: ReplyRecorder | None = None
    earlier: Sequence[Message] = ()
    if history is not None:
        from imprint_desktop.core.history import conversation_title  # noqa: PLC0415

        created = conversation is None
        if conversation is None:
            conversation = history.create_conversation(conversation_title(question))
        earlier = history.chat_messages(conversation)
        folder = researched_folder(config)  # resolved once: the history and the window keep it
        recorder = history.start_reply(conversation, question, folder)
        front.opened(
            ReplyKept(conversation, recorder.stored_id, created, str(folder) if folder else None)
        )

    def sink(event: ev.Event) -> None:
        if recorder is not None:
            try:
                recorder(event)
            except Exception:  # the reply goes on; the log says why the history lacks a line
                log.exception("could not save %s", type(event).__name__)
        front.sink(event)

    try:
        front.preparing("Getting the model ready…")
        provider = await services.provider(config, cancel)
        cancel.raise_if_cancelled()
        front.preparing("Updating the workspace index…")
        workspace = await services.ready_workspace(config, cancel)
        cancel.raise_if_cancelled()
        return await research(
            question,
            provider=provider,
            config=config,
            workspace=workspace,
            http=services.http(config),
            cancel=cancel,
            ask=front.ask,
            consent=front.consent(conversation),
            sink=sink,
            history=earlier,
        )
    except (Cancelled, asyncio.CancelledError):
        _close_row(recorder, "cancelled", "")
        raise
    except Exception as error:
        _close_row(recorder, "error", front.failure_words(error))
        raise


def _close_row(recorder: ReplyRecorder | None, reason: ev.StopReason, message: str) -> None:
    """End the history row of a reply that raised before research (research records its own
    end)."""
    if recorder is None:
        return
    closing = ev.ReplyResult(
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
    try:
        recorder(ev.ReplyFinished(0.0, closing))
    except Exception:  # the reply still ends; the row reopens as interrupted
        log.exception("could not close the reply's history row")
