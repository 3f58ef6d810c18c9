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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, assert_never

from PySide6.QtCore import QByteArray, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
)
from PySide6.QtWidgets import QTextBrowser, QWidget

from imprint_desktop.ui.inert import AppLinks, escape_markdown, make_inert

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev


RENDER_DELAY_MS = 30
RECENT_MESSAGES = 120  # shown at once when a conversation opens; earlier ones on request
Role = Literal["you", "assistant", "asked", "answered", "notice"]

_CITATION = re.compile(r"(?<![\\\w\]])\[(\d{1,3})\](?![(\[])")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: GitHub's dialect (tables, strikethrough, task lists, autolinks) without raw HTML, which is then
#: shown as the text it is.
MARKDOWN = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the transcript; assistant messages carry what their record needs."""

    role: Role
    text: str
    stored_id: int | None = None
    stop_reason: str | None = None
    evidence: tuple[ev.EvidenceItemView, ...] = field(default=(), compare=False)
    result: ev.ReplyResult | None = field(default=None, compare=False)
    interrupted: bool = False
    workspace: str | None = field(default=None, compare=False)  # the folder it researched


@dataclass(frozen=True, slots=True)
class Citation:
    message: int
    number: int


def link_citations(text: str, message: int, links: AppLinks) -> str:
    """``[n]`` outside code becomes a link to evidence n of ``message``."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        pieces = line.split("`")
        for index in range(0, len(pieces), 2):  # even pieces are outside inline code
            pieces[index] = _CITATION.sub(
                lambda m: f"[\\[{m.group(1)}\\]]({links.href('cite', message, int(m.group(1)))})",
                pieces[index],
            )
        out.append("`".join(pieces))
    return "\n".join(out)


def assistant_header(
    index: int, links: AppLinks, *, record: bool, interrupted: bool = False
) -> str:
    label = " · *interrupted*" if interrupted else ""
    more = f" · [Research record]({links.href('record', index)})" if record else ""
    return f"**Imprint**{label} · [Copy]({links.href('copy', index)}){more}"


def settle_point(text: str) -> int:
    """Where the streamed text's finished paragraphs end: after the last blank line that is not
    inside a code fence (0 when there is none). What comes before never changes again."""
    cut = 0
    in_fence = False
    position = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        position += len(line)
        if not in_fence and not line.strip() and position < len(text):
            cut = position
    return cut


def message_markdown(message: ChatMessage, index: int, links: AppLinks) -> str:
    """One message as Markdown: the app's own links around text that is rendered inert."""
    copy = f"[Copy]({links.href('copy', index)})"
    if message.role == "you":
        return f"**You** · {copy}\n\n{message.text}\n"
    if message.role == "asked":
        return f"**Imprint asks:** {message.text}\n"
    if message.role == "answered":
        return f"**You answered:** {message.text}\n"
    if message.role == "notice":  # a status line: may quote tool arguments, so literal
        return f"*{escape_markdown(message.text)}*\n"
    header = assistant_header(
        index, links, record=message.stored_id is not None, interrupted=message.interrupted
    )
    body = link_citations(message.text, index, links) if message.text else "*(no answer)*"
    return f"{header}\n\n{body}\n"


def _new_block(cursor: QTextCursor) -> None:
    """A plain new block: not a continuation of the list, code block or heading before it."""
    cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    current = cursor.currentList()
    if current is not None:
        current.remove(cursor.block())


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
        self.document().setDocumentMargin(12)
        self.links = AppLinks()
        self._scratch = QTextDocument(self)  # where Markdown is parsed and made inert
        self.messages: list[ChatMessage] = []
        self._document: QTextDocument | None = None
        self._live_start: int | None = None
        self._first_shown = 0
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

    # --- whole conversations ----------------------------------------------------------------

    def show_messages(self, messages: Sequence[ChatMessage], recent: int = RECENT_MESSAGES) -> None:
        """Replace the transcript with the latest ``recent`` messages (earlier ones on request).

        The document is built detached and handed to the view whole: one parse, one layout, and
        the code-block shading does not relay out the view once per block. Laying out only the
        recent messages keeps opening a long conversation fast; a link at the top brings the
        earlier ones (message indices, and so every link, stay the same).
        """
        self._render_timer.stop()
        self._live_start = None
        self.messages = list(messages)
        self._first_shown = max(0, len(self.messages) - recent)
        parts = [
            message_markdown(self.messages[index], index, self.links)
            for index in range(self._first_shown, len(self.messages))
        ]
        if self._first_shown:
            earlier = self.links.href("earlier", 0)
            parts.insert(0, f"[Show {self._first_shown} earlier messages]({earlier})\n")
        text = "\n\n---\n\n".join(parts)
        document = QTextDocument(self)
        document.setDefaultFont(self.font())
        document.setDocumentMargin(12)
        document.setMarkdown(text, MARKDOWN)
        make_inert(document, self.links)  # before the view ever lays it out
        self._shade_code(0, document)
        previous, self._document = self._document, document
        self.setDocument(document)
        if previous is not None:
            previous.deleteLater()  # ours; the first, built-in document is the control's own
        self.moveCursor(QTextCursor.MoveOperation.End)
        self.ensureCursorVisible()

    def add_message(self, message: ChatMessage) -> int:
        """Append a finished message (before the live one, if any, would be wrong: call it idle)."""
        index = len(self.messages)
        self.messages.append(message)
        self._insert_at_end(message_markdown(message, index, self.links))
        return index

    # --- the live message ---------------------------------------------------------------------

    def show_earlier(self) -> None:
        """Render more of the conversation above what is shown."""
        if self._first_shown and not self.live:
            self.show_messages(self.messages, len(self.messages) - self._first_shown + 200)
            self.verticalScrollBar().setValue(0)

    def begin_live(self, status: str) -> None:
        """Start the reply being written; ``status`` shows until text arrives.

        The live region is drawn as the finished message will be (header, citation links), and
        streamed text is laid out incrementally: paragraphs that are finished (a blank line
        follows) are rendered once, and each coalesced render redoes only the paragraph still being
        written. Ending a reply whose streamed text is the answer is then only bookkeeping.
        """
        cursor = self._end_cursor()
        self._live_start = cursor.position()
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
                and message.text.strip() == self._live_text.strip()
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
            self._tail_start = self._end_cursor().position()
            self._settled, self._tail_rendered = 0, ""
        text = self._live_text
        cut = settle_point(text)
        if cut > self._settled:
            chunk = text[self._settled : cut].rstrip()
            self._replace_from(self._tail_start, link_citations(chunk, index, self.links))
            self._tail_start = self._end_cursor().position()
            self._settled, self._tail_rendered = cut, ""
        tail = text[self._settled :]
        if tail != self._tail_rendered:
            self._replace_from(
                self._tail_start, link_citations(tail, index, self.links) if tail.strip() else ""
            )
            self._tail_rendered = tail
        self.renders += 1

    def _replace_from(self, start: int, markdown: str) -> None:
        """Replace the document from ``start`` to its end with ``markdown`` in a new block."""
        bar = self.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        if markdown:
            _new_block(cursor)
            first = cursor.block()
            fragment, first_format = self._inert_fragment(markdown)
            cursor.insertFragment(fragment)
            if first.length() == 1 and first.next().isValid() and first.position() > 0:
                # Markdown that opens with a list or table leaves the new block empty above it.
                gap = QTextCursor(self.document())
                gap.setPosition(first.position() - 1)
                gap.setPosition(first.position(), QTextCursor.MoveMode.KeepAnchor)
                gap.removeSelectedText()
            else:
                # The first paragraph went into the plain block made for it: give it the block
                # format Markdown gives it (a code block, a heading).
                QTextCursor(first).setBlockFormat(first_format)
        cursor.endEditBlock()
        self._shade_code(start)
        if at_bottom:
            bar.setValue(bar.maximum())

    def _replace_live(self, markdown: str) -> None:
        assert self._live_start is not None
        bar = self.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._live_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        if markdown:
            if self._live_start > 0:
                _new_block(cursor)
            cursor.insertFragment(self._inert_fragment(markdown)[0])
        cursor.endEditBlock()
        self._live_rendered = markdown
        self._shade_code(self._live_start)
        if at_bottom:
            bar.setValue(bar.maximum())

    # --- helpers ------------------------------------------------------------------------------

    def _inert_fragment(self, markdown: str) -> tuple[QTextDocumentFragment, QTextBlockFormat]:
        """``markdown`` parsed and made inert, and the block format of its first paragraph."""
        scratch = self._scratch
        scratch.setMarkdown(markdown, MARKDOWN)
        make_inert(scratch, self.links)
        return QTextDocumentFragment(scratch), scratch.begin().blockFormat()

    def loadResource(self, kind: int, name: QUrl | str, /) -> object:
        """Nothing: the transcript shows no images or style sheets, so no name is loaded.

        An empty value, not None: with None, QTextDocument would read a local file itself.
        """
        del kind, name
        return QByteArray()

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _insert_at_end(self, markdown: str) -> None:
        cursor = self._end_cursor()
        start = cursor.position()
        cursor.beginEditBlock()
        if not self.document().isEmpty():
            _new_block(cursor)
            markdown = f"---\n\n{markdown}"
        cursor.insertFragment(self._inert_fragment(markdown)[0])
        cursor.endEditBlock()
        self._shade_code(start)
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _shade_code(self, start: int, document: QTextDocument | None = None) -> None:
        """Give code blocks a background: Markdown import marks them but does not paint them."""
        shade = QColor(self.palette().color(QPalette.ColorRole.AlternateBase))
        if shade == self.palette().color(QPalette.ColorRole.Base):
            shade = shade.darker(106)
        document = document or self.document()
        edit = QTextCursor(document)
        edit.beginEditBlock()  # one relayout for all the blocks, not one per block
        block = document.findBlock(start)
        while block.isValid():
            block_format = block.blockFormat()
            if block_format.hasProperty(QTextFormat.Property.BlockCodeFence) or (
                block_format.nonBreakableLines()
            ):
                cursor = QTextCursor(block)
                block_format.setBackground(shade)
                cursor.setBlockFormat(block_format)
            block = block.next()
        edit.endEditBlock()

    def message_text(self, index: int) -> str:
        return self.messages[index].text if 0 <= index < len(self.messages) else ""

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
        else:
            assert_never(link.action)
