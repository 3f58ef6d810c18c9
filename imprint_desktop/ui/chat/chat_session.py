"""The chat session: wires the bridge's signals to the transcript, the panel and the composer.

It holds what the window needs to remember between events — the open conversation, the reply in
flight, which transcript message is which saved reply and which workspace it researched — and
nothing the engine owns. Choosing another conversation while a reply runs stops that reply first
(it is saved, stopped, with its evidence), so the transcript on screen is always the conversation
the reply belongs to.

What the transcript's links and the panel's evidence rows open is :mod:`.evidence_opener`'s; the
session tells it when a question is sent and which reply's evidence the panel lists. It also says
when the starter model has answered and when the conversation on screen changes, for the offer of a
better model (:mod:`.starter_offer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from imprint_desktop.background import payloads as p
from imprint_desktop.background.bridge import Bridge
from imprint_desktop.core.consent import DECISION_WORDS, Decision
from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.wording import phase_words
from imprint_desktop.ui.chat.composer import Composer
from imprint_desktop.ui.chat.consent_card import ConsentCard
from imprint_desktop.ui.chat.conversations import ConversationsPane
from imprint_desktop.ui.chat.evidence_opener import EvidenceOpener
from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.chat.question_card import QuestionCard
from imprint_desktop.ui.chat.starter_offer import uses_starter
from imprint_desktop.ui.chat.view import ChatView
from imprint_desktop.ui.research_panel.panel import ResearchPanel

if TYPE_CHECKING:
    from imprint_desktop.core.history import StoredReply
    from imprint_desktop.core.research import events as ev

INTERRUPTED_NOTE = (
    "This reply was interrupted before it finished (Imprint was closed or stopped). The evidence "
    "it had found is kept in its research record."
)


def messages_for(replies: tuple[StoredReply, ...]) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for reply in replies:
        messages.append(ChatMessage("you", reply.question))
        if reply.interrupted:
            text = (reply.answer or "").strip() or INTERRUPTED_NOTE
        else:
            text = (reply.answer or "").strip() or (reply.error or "").strip()
        messages.append(
            ChatMessage(
                "assistant",
                text,
                reply.id,
                reply.stop_reason,
                reply.evidence,
                interrupted=reply.interrupted,
                workspace=reply.workspace,
                sources=reply.sources,
                grounding=reply.grounding,
            )
        )
    return messages


class ChatSession(QObject, EventHandler):
    """Controller of one window's chat (GUI thread only)."""

    sig_problem = Signal(str)  # a sentence the person should read
    #: int — the conversation in which the starter model has just written an answer.
    sig_starter_answered = Signal(int)
    #: None — another conversation (or a new one) is on screen.
    sig_conversation_left = Signal()

    def __init__(
        self,
        bridge: Bridge,
        *,
        view: ChatView,
        panel: ResearchPanel,
        composer: Composer,
        card: QuestionCard,
        consent_card: ConsentCard,
        conversations: ConversationsPane,
        opener: EvidenceOpener,
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.bridge, self.view, self.panel = bridge, view, panel
        self.composer, self.card, self.conversations = composer, card, conversations
        self.consent_card, self.opener = consent_card, opener
        self.conversation_id: int | None = None
        self._request = 0
        self._asked = (0, "")  # the reply and ask_user call the question card answers
        self._consent_reply = 0  # the reply whose fetch_url call the consent card decides
        self._live_workspace: str | None = None  # the folder the reply being written researches
        self._on_starter = False  # whether the reply being written runs on the starter model

        composer.sig_question_sent.connect(self.send)
        composer.sig_stop_requested.connect(self.stop)
        card.sig_answered.connect(self._answered)
        consent_card.sig_decided.connect(self._consent_decided)
        conversations.sig_conversation_chosen.connect(self.open_conversation)
        conversations.sig_new_requested.connect(self.new_conversation)
        conversations.sig_rename_requested.connect(bridge.rename_conversation)
        conversations.sig_delete_requested.connect(self._delete)
        conversations.sig_search_changed.connect(bridge.list_conversations)
        bridge.sig_conversations_listed.connect(conversations.show_list)
        bridge.sig_conversation_loaded.connect(self._loaded)
        bridge.sig_reply_opened.connect(self._opened)
        bridge.sig_reply_preparing.connect(self._preparing)
        bridge.sig_reply_event.connect(self._event)
        bridge.sig_consent_requested.connect(self._consent_requested)
        bridge.sig_reply_ended.connect(self._ended)

    # --- asking -------------------------------------------------------------------------------

    @Slot(str)
    def send(self, question: str) -> None:
        """Start a reply; one still running is superseded (latest wins)."""
        if self.view.live:
            self.view.end_live(ChatMessage("notice", "Stopped: a new question was asked."))
        self.card.hide()
        self.consent_card.hide()
        self.view.add_message(ChatMessage("you", question))
        self.view.begin_live("Starting…")
        self.panel.begin("Starting…")
        self.composer.set_running(True)
        self._live_workspace = None
        self._on_starter = False
        self.opener.reply_begun()
        self.bridge.start_reply(self.conversation_id, question)

    @Slot()
    def stop(self) -> None:
        """Stop the reply; the composer is usable at once, the record arrives when it ends."""
        if not self.bridge.reply_running:
            return
        self.bridge.cancel_reply()
        self.composer.set_running(False)
        self.card.hide()
        self.consent_card.hide()
        self.panel.set_now("Stopping…")
        self.view.set_live_status("Stopping…")
        self.composer.edit.setFocus()

    @Slot(str)
    def _answered(self, text: str) -> None:
        reply_id, call_id = self._asked
        self.bridge.answer_question(reply_id, call_id, text)
        self.view.set_live_status(f"You answered: {text}")
        self.composer.edit.setFocus()

    @Slot(object)
    def _consent_requested(self, request: p.ConsentRequest) -> None:
        waiting = "Waiting for you to allow or deny a web page (research time is paused)…"
        self.panel.set_now(waiting)
        self.view.set_live_status(waiting)
        self._consent_reply = request.reply_id
        self.consent_card.ask(request.call_id, request.url, request.site, request.redirected_from)

    @Slot(str, str)
    def _consent_decided(self, call_id: str, decision: str) -> None:
        chosen = Decision(decision)
        self.bridge.answer_consent(self._consent_reply, call_id, chosen)
        self.panel.set_now("Fetching the page…" if chosen.allowed else "Thinking…")
        self.view.set_live_status(f"The web page: {DECISION_WORDS[chosen]}.")
        self.composer.edit.setFocus()

    # --- the reply's payloads ---------------------------------------------------------------

    @Slot(object)
    def _opened(self, opened: p.ReplyOpened) -> None:
        self._live_workspace = opened.workspace
        self.opener.reply_opened(opened.stored_id, opened.workspace)
        if self.conversation_id != opened.conversation_id:
            self.conversation_id = opened.conversation_id
            self.conversations.select(opened.conversation_id)
        if opened.conversation_created:
            self.bridge.list_conversations(self.conversations.search.text())

    @Slot(object)
    def _preparing(self, preparing: p.ReplyPreparing) -> None:
        self.panel.set_now(preparing.what)
        self.view.set_live_status(preparing.what)

    @Slot(object)
    def _event(self, payload: p.ReplyEvent) -> None:
        from imprint_desktop.core.research import events as ev  # noqa: PLC0415 - after startup

        event = payload.event
        if not isinstance(event, ev.TextDelta):
            self.panel.apply(event)
        ev.dispatch(event, self)

    def on_reply_started(self, event: ev.ReplyStarted) -> None:
        self._on_starter = uses_starter(event.config)

    def on_text_delta(self, event: ev.TextDelta) -> None:
        self.view.append_text(event.text)

    def on_request_started(self, event: ev.RequestStarted) -> None:
        self.view.clear_live_text()
        self.view.set_live_status(phase_words(event.phase).now)

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        self.view.set_live_status(f"{event.summary}…")

    def on_tool_finished(self, event: ev.ToolFinished) -> None:
        self.opener.evidence_found(event.evidence)

    def on_final_started(self, event: ev.FinalStarted) -> None:
        self.view.clear_live_text()
        self.view.set_live_status(phase_words("final").now)

    def on_question_asked(self, event: ev.QuestionAsked) -> None:
        # The bridge passes on only the current reply's events, so this is the reply that asks.
        self._asked = (self.bridge.current_reply_id, event.call_id)
        self.view.set_live_status(f"Imprint asks: {event.question}")
        self.card.ask(event.question)

    @Slot(object)
    def _ended(self, ended: p.ReplyEnded) -> None:
        self.card.hide()
        self.consent_card.hide()
        self.composer.set_running(False)
        result = ended.result
        if result is not None:
            text = result.answer.strip() or (
                ended.message if ended.outcome is p.Outcome.FAILED else ""
            )
            message = ChatMessage(
                "assistant",
                text or "Stopped before an answer was written.",
                ended.stored_id,
                result.stop_reason,
                result.evidence,
                result,
                workspace=self._live_workspace,
                sources=result.sources,
                grounding=result.grounding,
            )
            self.panel.finish(result.stop_reason, result.evidence)
        else:
            reason = "cancelled" if ended.outcome is p.Outcome.CANCELLED else "error"
            message = ChatMessage(
                "assistant",
                ended.message or "Stopped before research began.",
                ended.stored_id,
                reason,
            )
            self.panel.finish(reason, ())
        self.view.end_live(message)
        if ended.outcome is p.Outcome.FAILED and ended.message:
            self.sig_problem.emit(ended.message)
        written = result is not None and result.final_mode == "model" and result.answer.strip()
        if written and self._on_starter and self.conversation_id is not None:
            self.sig_starter_answered.emit(self.conversation_id)
        self.bridge.list_conversations(self.conversations.search.text())

    # --- conversations ------------------------------------------------------------------------

    @Slot()
    def new_conversation(self) -> None:
        self._leave_reply()
        self.conversation_id = None
        self.sig_conversation_left.emit()
        self.conversations.select(None)
        self.view.show_messages([])
        self.panel.reset()
        self.opener.panel_lists(None)
        self.panel.set_now("Ask a question to start research.")
        self.composer.edit.setFocus()

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id and self.view.messages:
            return
        self._leave_reply()
        if conversation_id != self.conversation_id:
            self.sig_conversation_left.emit()
        self.conversation_id = conversation_id
        self._request = self.bridge.load_conversation(conversation_id)

    def _leave_reply(self) -> None:
        if self.bridge.reply_running:
            self.bridge.cancel_reply()
            self.composer.set_running(False)
            self.card.hide()
            self.consent_card.hide()

    @Slot(object)
    def _loaded(self, record: p.ConversationRecord) -> None:
        if record.request != self._request or record.conversation_id != self.conversation_id:
            return
        messages = messages_for(record.replies)
        self.view.show_messages(messages)
        if record.replies:
            last = record.replies[-1]
            note = "This reply was interrupted." if last.interrupted else "The last reply."
            self.panel.show_record(last.stop_reason, last.evidence, note)
            self.opener.panel_lists(last.workspace)
        else:
            self.panel.reset()

    @Slot(int)
    def _delete(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_conversation()
        self.bridge.delete_conversation(conversation_id)

    def last_answer_index(self) -> int:
        for index in range(len(self.view.messages) - 1, -1, -1):
            if self.view.messages[index].role == "assistant":
                return index
        return -1
