"""The transcript: a conversation rendered as Markdown in one read-only document.

One :class:`QTextBrowser` holds the whole conversation, so opening 500 messages is one Markdown
parse and one layout rather than hundreds of widgets. The reply being written lives at the end of
the document as a *live region*; streamed text only accumulates in a string, and a single-shot
30 ms timer re-renders just that region — the GUI repaints at most ~33 times a second however
fast tokens arrive, and never re-lays out the finished messages above.

Everything in it is untrusted: answers, the model's questions, quoted passages. It is rendered
inert (DESIGN §2): Markdown is read without raw HTML (shown as the text it is), every image becomes
its alt text before anything is laid out, link titles never become tooltips, and
:meth:`ChatView.loadResource` hands out nothing — the transcript loads no resource, ever.

Links drive the actions of each message: a citation ``[n]`` (its evidence), *Copy*, *Research
record*. They are made by :class:`~imprint_desktop.ui.inert.AppLinks` and act only when they carry
this transcript's token; any other link — whatever the model wrote — is passed on as
``sig_link_requested`` and acts on nothing here. Links are reachable with Tab and followed with
Enter, like every link in a text browser.

No message can freeze it: what of a message reaches the layout is bounded
(:mod:`.transcript_bounds`: its length, its tables, its unbroken runs), a conversation opens with as
many recent messages as :data:`SHOWN_CHARS` allows, and a reply being written is laid out up to the
same bound as a finished one. *Show all* opens the whole message in
:class:`~.full_message.FullMessage`, which lays out only what is in view.

This view keeps the messages, decides what to write and when, and acts on its links; what a message
is as Markdown is :mod:`.markdown`'s, and writing Markdown into the document, inert, is
:mod:`.transcript_document`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from PySide6.QtCore import QByteArray, QEvent, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QTextBrowser, QWidget

from imprint_desktop.ui.chat.full_message import FullMessage
from imprint_desktop.ui.chat.markdown import (
    ChatMessage,
    assistant_header,
    link_citations,
    message_markdown,
    settle_point,
    shown_text,
)
from imprint_desktop.ui.chat.transcript_bounds import MESSAGE_CHARS, bounded
from imprint_desktop.ui.chat.transcript_document import TranscriptDocument
from imprint_desktop.ui.inert import AppLinks

RENDER_DELAY_MS = 30
RECENT_MESSAGES = 120  # shown at once when a conversation opens; earlier ones on request
#: Of the messages shown when a conversation opens (each bounded to MESSAGE_CHARS), at most this
#: much text; each "Show earlier messages" allows as much again.
SHOWN_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class Citation:
    message: int
    number: int


class ChatView(QTextBrowser):
    """The conversation, with one live (streaming) message at the end while a reply runs."""

    sig_citation_activated = Signal(object)  # Citation
    sig_record_requested = Signal(int)  # message index
    #: A link the app did not make (the model wrote it): nothing here acts on it.
    sig_link_requested = Signal(QUrl)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setAccessibleName("Transcript")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._follow)
        self.links = AppLinks()
        self._written = TranscriptDocument(self, self.links)
        self.messages: list[ChatMessage] = []
        self._live_start: int | None = None
        self._first_shown = 0
        self._shown_chars = 0
        self.full_message: FullMessage | None = None
        self._live_text = ""
        self._status = ""
        self._live_rendered = ""
        self._tail_start: int | None = None
        self._settled = 0
        self._tail_rendered = ""
        self.renders = 0  # live renders so far (the tests and the benchmark count them)
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(RENDER_DELAY_MS)
        self._render_timer.timeout.connect(self._render_live)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # another theme: the links' colour too
            self._written.follow_palette()

    # --- whole conversations ----------------------------------------------------------------------

    def show_messages(
        self,
        messages: Sequence[ChatMessage],
        recent: int = RECENT_MESSAGES,
        budget: int = SHOWN_CHARS,
    ) -> None:
        """Replace the transcript with the latest ``recent`` messages (earlier ones on request),
        as many of them as ``budget`` characters allow (the newest always).

        Laying out only the recent messages keeps opening a long conversation fast; a link at the
        top brings the earlier ones (message indices, and so every link, stay the same).
        """
        self._render_timer.stop()
        self._live_start = None
        self.messages = list(messages)
        first = max(0, len(self.messages) - recent)
        shown = 0
        for index in range(len(self.messages) - 1, first - 1, -1):
            size = min(len(self.messages[index].shown), MESSAGE_CHARS)
            if shown + size > budget and index < len(self.messages) - 1:
                first = index + 1
                break
            shown += size
        self._first_shown, self._shown_chars = first, shown
        parts = [
            message_markdown(self.messages[index], index, self.links)
            for index in range(self._first_shown, len(self.messages))
        ]
        if self._first_shown:
            earlier = self.links.href("earlier", 0)
            parts.insert(0, f"[Show {self._first_shown} earlier messages]({earlier})\n")
        self._written.show("\n\n---\n\n".join(parts))

    def add_message(self, message: ChatMessage) -> int:
        """Append a finished message (before the live one, if any, would be wrong: call it idle)."""
        index = len(self.messages)
        self.messages.append(message)
        self._written.append(message_markdown(message, index, self.links))
        return index

    def show_earlier(self) -> None:
        """Render more of the conversation above what is shown."""
        if self._first_shown and not self.live:
            self.show_messages(
                self.messages,
                len(self.messages) - self._first_shown + 200,
                self._shown_chars + SHOWN_CHARS,
            )
            self.verticalScrollBar().setValue(0)

    # --- the live message -------------------------------------------------------------------------

    def begin_live(self, status: str) -> None:
        """Start the reply being written; ``status`` shows until text arrives.

        The live region is drawn as the finished message will be (header, citation links), and
        streamed text is laid out incrementally: paragraphs that are finished (a blank line
        follows) are rendered once, and each coalesced render redoes only the paragraph still being
        written. Ending a reply whose streamed text is the answer is then only bookkeeping.
        """
        self._live_start = self._written.end()
        self._live_text = ""
        self._live_rendered = ""
        self._tail_start = None
        self._settled = 0
        self._tail_rendered = ""
        self.set_live_status(status)

    def set_live_status(self, status: str) -> None:
        if self._live_start is None:
            return
        self._status = status
        self._schedule()

    def append_text(self, text: str) -> None:
        """Streamed text: accumulated now, painted on the next coalesced render."""
        self._live_text += text
        self._schedule()

    def clear_live_text(self) -> None:
        """A new model request starts: what the previous one wrote was not the answer."""
        if self._live_text:
            self._live_text = ""
            self._schedule()

    @property
    def live(self) -> bool:
        return self._live_start is not None

    def end_live(self, message: ChatMessage | None) -> int | None:
        """Replace the live region with the finished message (or remove it)."""
        self._render_timer.stop()
        if self._live_start is None:
            return None
        index = len(self.messages)
        if message is not None and message.role == "assistant":
            streamed = (
                self._tail_start is not None
                and message.stored_id is not None
                and not message.interrupted
                and not message.sources  # drawn under the answer, which streamed without them
                and message.shown == message.text  # nor what to check in it
                and message.text.strip() == self._live_text.strip()
                and not bounded(message.text, "").cut  # else drawn bounded, with "Show all"
            )
            if streamed:
                self._render_live()  # whatever the timer had not painted yet
            else:
                self._replace_live(self._live_markdown(message))
            self._live_start = None
            self.messages.append(message)
            return index
        self._replace_live("")
        self._live_start = None
        return self.add_message(message) if message is not None else None

    def _live_markdown(self, message: ChatMessage) -> str:
        markdown = message_markdown(message, len(self.messages), self.links)
        return f"---\n\n{markdown}" if self._live_start else markdown

    def _schedule(self) -> None:
        if not self._render_timer.isActive():
            self._render_timer.start()

    @Slot()
    def _render_live(self) -> None:
        if self._live_start is None:
            return
        if not self._live_text.strip():
            self._tail_start = None
            markdown = self._live_markdown(ChatMessage("notice", self._status))
            if markdown != self._live_rendered:
                self._replace_live(markdown)
                self.renders += 1
            return
        index = len(self.messages)
        if self._tail_start is None:  # the first text: the header, then paragraphs below it
            separator = "---\n\n" if self._live_start else ""
            header = assistant_header(index, self.links, record=True)
            self._replace_live(f"{separator}{header}\n")
            self._tail_start = self._written.end()
            self._settled, self._tail_rendered = 0, ""
        text = self._live_text[:MESSAGE_CHARS]  # the rest is laid out as the finished message is
        cut = settle_point(text)
        if cut > self._settled:
            chunk = shown_text(text[self._settled : cut].rstrip(), index, self.links)
            self._written.replace_paragraphs_from(
                self._tail_start, link_citations(chunk, index, self.links)
            )
            self._tail_start = self._written.end()
            self._settled, self._tail_rendered = cut, ""
        tail = text[self._settled :]
        if tail != self._tail_rendered:
            shown = shown_text(tail, index, self.links) if tail.strip() else ""
            self._written.replace_paragraphs_from(
                self._tail_start, link_citations(shown, index, self.links)
            )
            self._tail_rendered = tail
        self.renders += 1

    def _replace_live(self, markdown: str) -> None:
        assert self._live_start is not None
        self._written.replace_from(self._live_start, markdown)
        self._live_rendered = markdown

    # --- resources and links ----------------------------------------------------------------------

    def loadResource(self, kind: int, name: QUrl | str, /) -> object:
        """Nothing: the transcript shows no images or style sheets, so no name is loaded.

        An empty value, not None: with None, QTextDocument would read a local file itself.
        """
        del kind, name
        return QByteArray()

    def message_text(self, index: int) -> str:
        """The whole text of message ``index`` (the reply being written: what it wrote so far)."""
        if self.live and index == len(self.messages):
            return self._live_text
        return self.messages[index].shown if 0 <= index < len(self.messages) else ""

    def show_full(self, index: int) -> FullMessage:
        """Open the whole of message ``index`` in its own window (one at a time)."""
        if self.full_message is not None:
            self.full_message.close()
            self.full_message.deleteLater()
        self.full_message = FullMessage(f"Message {index + 1}", self.message_text(index), self)
        self.full_message.show()
        return self.full_message

    def copy_message(self, index: int) -> None:
        QGuiApplication.clipboard().setText(self.message_text(index))

    @Slot(QUrl)
    def _follow(self, url: QUrl) -> None:
        link = self.links.parse(url)
        if link is None:
            self.sig_link_requested.emit(url)
        elif link.action == "cite":
            self.sig_citation_activated.emit(Citation(link.message, link.number))
        elif link.action == "copy":
            self.copy_message(link.message)
        elif link.action == "record":
            self.sig_record_requested.emit(link.message)
        elif link.action == "earlier":
            self.show_earlier()
        elif link.action == "full":
            self.show_full(link.message)
        else:
            assert_never(link.action)
