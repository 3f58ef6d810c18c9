"""The GUI thread's one door to the research engine.

:class:`Bridge` lives on the GUI thread. Its methods are the whole API the window uses; each
returns at once and queues work on the loop thread (:class:`~.loop_thread.LoopThread`). Results
come back as frozen payloads (:mod:`.payloads`) on these signals, each declared with its payload's
type and always delivered on the GUI thread:

=============================  =================================================================
signal                         payload
=============================  =================================================================
``sig_reply_opened``           :class:`ReplyOpened` — question saved, conversation id known
``sig_reply_preparing``        :class:`ReplyPreparing` — loading the model, updating the index
``sig_reply_event``            :class:`ReplyEvent` — one research event (budgets, text, tools…;
                               answer a ``QuestionAsked`` with :meth:`Bridge.answer_question`)
``sig_consent_requested``      :class:`ConsentRequest` — may the model fetch this URL? (answer
                               with :meth:`Bridge.answer_consent`)
``sig_reply_ended``            :class:`ReplyEnded` — one per reply: finished/failed/cancelled
``sig_model_status``           :class:`ModelStatus` — loading / ready / failed
``sig_index_progress``         :class:`IndexStatus` — workspace indexing progress and its end
``sig_index_standing``         :class:`IndexStanding` — a question is answered from the index as
                               it stands, while the background indexing is behind
``sig_conversations_listed``   :class:`ConversationList`
``sig_conversation_loaded``    :class:`ConversationRecord`
``sig_trace_loaded``           :class:`TraceRecord`
``sig_file_saved``             :class:`FileSaved` — an export or a saved trace was written
``sig_connection_tested``      :class:`ConnectionTest`
``sig_job_problem``         :class:`JobProblem` — a failure outside a reply, in words
=============================  =================================================================

"Latest wins": every reply gets a new id; starting a reply cancels the one before, and payloads of
a superseded reply are dropped here, so a slow old reply can never paint over the new one. The
person's answers go back the same way: :meth:`Bridge.answer_question` and
:meth:`Bridge.answer_consent` name the reply and the tool call they answer, and one for a
call that no longer waits is dropped.

The bridge only numbers replies, takes the settings snapshot each job starts from and routes
payloads; the work itself is the loop thread's (:mod:`.loop_thread`), which runs each job with what
it needs.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from PySide6.QtCore import QObject, Signal, SignalInstance, Slot

from imprint_desktop.background import payloads as p
from imprint_desktop.background.loop_thread import LoopThread
from imprint_desktop.background.relay import Relay
from imprint_desktop.background.services import ProviderFactory
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import Config
from imprint_desktop.core.consent import Decision

log = logging.getLogger(__name__)


class Bridge(QObject):
    sig_reply_opened = Signal(p.ReplyOpened)
    sig_reply_preparing = Signal(p.ReplyPreparing)
    sig_reply_event = Signal(p.ReplyEvent)
    sig_consent_requested = Signal(p.ConsentRequest)
    sig_reply_ended = Signal(p.ReplyEnded)
    sig_model_status = Signal(p.ModelStatus)
    sig_index_progress = Signal(p.IndexStatus)
    sig_index_standing = Signal(p.IndexStanding)
    sig_conversations_listed = Signal(p.ConversationList)
    sig_conversation_loaded = Signal(p.ConversationRecord)
    sig_trace_loaded = Signal(p.TraceRecord)
    sig_file_saved = Signal(p.FileSaved)
    sig_connection_tested = Signal(p.ConnectionTest)
    sig_job_problem = Signal(p.JobProblem)

    def __init__(
        self,
        settings: Callable[[], Config],
        *,
        api_key: Callable[[], str | None] = lambda: None,
        provider_factory: ProviderFactory | None = None,
        history_path: Path | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings
        self._relay = Relay()
        self._relay.sig_payload.connect(self._dispatch)
        self._thread = LoopThread(
            self._relay.sig_payload.emit,
            provider_factory=provider_factory,
            history_path=history_path,
            api_key=api_key,
        )
        self._ids = itertools.count(1)
        self._requests = itertools.count(1)
        self._reply_id = 0
        self._cancel: CancelToken | None = None  # the running reply's Stop; None when none runs
        self._search = ""
        self._closed = False
        self._thread.start()

    # --- replies ------------------------------------------------------------------------------

    @property
    def reply_running(self) -> bool:
        return self._cancel is not None

    @property
    def current_reply_id(self) -> int:
        return self._reply_id

    def start_reply(self, conversation_id: int | None, question: str) -> int:
        """Research ``question`` in the conversation (a new one when None); returns the reply id.

        A reply still running is cancelled and superseded: its later payloads are dropped.
        """
        if self._cancel is not None:
            self._cancel.cancel()
        reply_id = next(self._ids)
        cancel = CancelToken()
        self._reply_id, self._cancel = reply_id, cancel
        self._thread.start_reply(
            reply_id,
            conversation_id=conversation_id,
            question=question,
            config=self._settings(),
            cancel=cancel,
        )
        return reply_id

    def cancel_reply(self) -> None:
        """Stop the running reply; it still ends with one ``sig_reply_ended`` (cancelled)."""
        if self._cancel is not None:
            self._cancel.cancel()

    def answer_question(self, reply_id: int, call_id: str, text: str) -> None:
        """Answer ``ask_user`` call ``call_id`` of reply ``reply_id`` (both from its
        ``QuestionAsked`` event); research time resumes. An answer for a call that no longer
        waits — the reply was stopped or superseded — is dropped."""
        self._thread.answer_question(reply_id, call_id, text)

    def answer_consent(self, reply_id: int, call_id: str, decision: Decision) -> None:
        """Decide ``fetch_url`` call ``call_id`` of reply ``reply_id`` (both from its
        :class:`ConsentRequest`); research time resumes. A late decision is dropped."""
        self._thread.answer_consent(reply_id, call_id, decision)

    def shutdown(self, timeout_ms: int = 15_000) -> bool:
        """Cancel everything, close the loop thread's resources on it and join it.

        Returns False only when the thread did not end in time (it is never terminated).
        """
        if self._closed:
            return not self._thread.isRunning()
        self._closed = True
        if self._cancel is not None:
            self._cancel.cancel()
        self._thread.stop()
        finished = self._thread.wait(timeout_ms)
        if not finished:
            log.error("the loop thread did not stop within %d ms", timeout_ms)
        return bool(finished)

    # --- model, workspace, connection ------------------------------------------------------

    def load_model(self) -> None:
        """Load (or reload) the model the settings choose, outside any reply's research time."""
        self._thread.load_model(self._settings())

    def index_workspace(self) -> None:
        """Bring the chosen workspace's index up to date, reporting progress and its end."""
        self._thread.index_workspace(self._settings())

    def test_connection(self) -> None:
        self._thread.test_connection(self._settings())

    # --- history --------------------------------------------------------------------------------

    def list_conversations(self, search: str = "") -> None:
        self._search = search
        self._thread.list_conversations(search)

    def load_conversation(self, conversation_id: int) -> int:
        """Read one conversation; returns the request number its ConversationRecord carries."""
        request = next(self._requests)
        self._thread.load_conversation(conversation_id, request)
        return request

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self._thread.rename_conversation(conversation_id, title, self._search)

    def delete_conversation(self, conversation_id: int) -> None:
        self._thread.delete_conversation(conversation_id, self._search)

    def load_trace(self, stored_id: int, save_to: Path | None = None) -> None:
        """The reply's trace on ``sig_trace_loaded``, or written to ``save_to`` (JSON Lines)."""
        self._thread.load_trace(stored_id, save_to)

    def export_conversation(self, conversation_id: int, path: Path) -> None:
        self._thread.export_conversation(conversation_id, path)

    # --- delivery on the GUI thread --------------------------------------------------------

    @Slot(object)
    def _dispatch(self, payload: p.Payload) -> None:
        if isinstance(payload, p.ReplyPayload):
            if payload.reply_id != self._reply_id:
                return  # a superseded reply: latest wins
            if isinstance(payload, p.ReplyEnded):
                self._cancel = None
        self._signal_for(payload).emit(payload)

    def _signal_for(self, payload: p.Payload) -> SignalInstance:  # noqa: PLR0911, PLR0912 - one per kind
        match payload:
            case p.ReplyOpened():
                return self.sig_reply_opened
            case p.ReplyPreparing():
                return self.sig_reply_preparing
            case p.ReplyEvent():
                return self.sig_reply_event
            case p.ConsentRequest():
                return self.sig_consent_requested
            case p.ReplyEnded():
                return self.sig_reply_ended
            case p.ModelStatus():
                return self.sig_model_status
            case p.IndexStatus():
                return self.sig_index_progress
            case p.IndexStanding():
                return self.sig_index_standing
            case p.ConversationList():
                return self.sig_conversations_listed
            case p.ConversationRecord():
                return self.sig_conversation_loaded
            case p.TraceRecord():
                return self.sig_trace_loaded
            case p.FileSaved():
                return self.sig_file_saved
            case p.ConnectionTest():
                return self.sig_connection_tested
            case p.JobProblem():
                return self.sig_job_problem
            case _:
                assert_never(payload)
