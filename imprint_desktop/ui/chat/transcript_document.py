"""The transcript's document, written from Markdown that is made inert before it is laid out.

Every edit of the transcript goes through here: a whole conversation (built detached and handed to
the view whole, so it is one parse and one layout), a finished message appended, and the document
from some position to its end replaced (how the reply being written is redrawn). Each piece of
Markdown is parsed in a scratch document without raw HTML and passed through
:func:`~imprint_desktop.ui.inert.make_inert` before it reaches the view; code blocks get the
background Markdown import marks but does not paint; a view scrolled to the bottom stays there.
Markdown import writes the palette's link colour into every link, so when the theme changes
:meth:`TranscriptDocument.follow_palette` gives the text already shown the new colours.

:mod:`.view` decides what to write and when; this knows how to write it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtGui import (
    QColor,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
)
from PySide6.QtWidgets import QTextBrowser

from imprint_desktop.ui.inert import AppLinks, make_inert

#: GitHub's dialect (tables, strikethrough, task lists, autolinks) without raw HTML, which is then
#: shown as the text it is.
MARKDOWN = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)
MARGIN = 12


def _new_block(cursor: QTextCursor) -> None:
    """A plain new block: not a continuation of the list, code block or heading before it."""
    cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    current = cursor.currentList()
    if current is not None:
        current.remove(cursor.block())


#: How near the end of its scroll range (pixels) the view counts as at the bottom.
_AT_BOTTOM = 4


class TranscriptDocument:
    """Writes inert Markdown into ``view``'s document; the links in it are ``links``'."""

    def __init__(self, view: QTextBrowser, links: AppLinks) -> None:
        self._view = view
        self._links = links
        self._scratch = QTextDocument(view)  # where Markdown is parsed and made inert
        self._document: QTextDocument | None = None
        view.document().setDocumentMargin(MARGIN)
        # A view at the bottom stays there as the document grows: Qt lays a document out in
        # steps after an edit, so the scroll range keeps growing after the edit has returned.
        # Whether the view was at the bottom is noted before an edit and held through it: text
        # taken out while it is replaced must not clamp a reader a few lines up to the bottom.
        self._following = True
        self._editing = False
        bar = view.verticalScrollBar()
        bar.valueChanged.connect(self._note_position)
        bar.rangeChanged.connect(self._keep_following)

    def _note_position(self, value: int) -> None:
        if not self._editing:
            self._following = value >= self._view.verticalScrollBar().maximum() - _AT_BOTTOM

    @contextmanager
    def _holding_position(self) -> Iterator[None]:
        """An edit of the document, after which a view that was at the bottom is still there."""
        self._editing = True
        try:
            yield
        finally:
            self._editing = False
        if self._following:
            bar = self._view.verticalScrollBar()
            bar.setValue(bar.maximum())

    def _keep_following(self, _minimum: int, maximum: int) -> None:
        if self._following:
            self._view.verticalScrollBar().setValue(maximum)

    def show(self, markdown: str) -> None:
        """Replace the whole document with ``markdown`` and scroll to its end.

        The document is built detached and handed to the view whole: one parse, one layout, and
        the code-block shading does not relay out the view once per block.
        """
        view = self._view
        document = QTextDocument(view)
        document.setDefaultFont(view.font())
        document.setDocumentMargin(MARGIN)
        document.setMarkdown(markdown, MARKDOWN)
        make_inert(document, self._links)  # before the view ever lays it out
        self._shade_code(0, document)
        previous, self._document = self._document, document
        view.setDocument(document)
        if previous is not None:
            previous.deleteLater()  # ours; the first, built-in document is the control's own
        self._following = True
        view.moveCursor(QTextCursor.MoveOperation.End)
        view.ensureCursorVisible()

    def end(self) -> int:
        """The position at the end of the document."""
        return self._end_cursor().position()

    def append(self, markdown: str) -> None:
        """Add a finished message at the end, below a rule when something is above it, and scroll
        to it."""
        cursor = self._end_cursor()
        start = cursor.position()
        cursor.beginEditBlock()
        if not self._view.document().isEmpty():
            _new_block(cursor)
            markdown = f"---\n\n{markdown}"
        cursor.insertFragment(self._inert_fragment(markdown)[0])
        cursor.endEditBlock()
        self._shade_code(start)
        self._following = True
        bar = self._view.verticalScrollBar()
        bar.setValue(bar.maximum())

    def replace_from(self, start: int, markdown: str) -> None:
        """Replace the document from ``start`` to its end with ``markdown`` (nothing when empty),
        in a block of its own unless it starts the document."""
        with self._holding_position():
            cursor = QTextCursor(self._view.document())
            cursor.setPosition(start)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.beginEditBlock()
            cursor.removeSelectedText()
            if markdown:
                if start > 0:
                    _new_block(cursor)
                cursor.insertFragment(self._inert_fragment(markdown)[0])
            cursor.endEditBlock()
            self._shade_code(start)

    def replace_paragraphs_from(self, start: int, markdown: str) -> None:
        """Replace the document from ``start`` to its end with ``markdown`` in a new block, which
        takes the format Markdown gives its first paragraph (a code block, a heading) or gives way
        to the list or table it opens with."""
        with self._holding_position():
            document = self._view.document()
            cursor = QTextCursor(document)
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
                    gap = QTextCursor(document)
                    gap.setPosition(first.position() - 1)
                    gap.setPosition(first.position(), QTextCursor.MoveMode.KeepAnchor)
                    gap.removeSelectedText()
                else:
                    # The first paragraph went into the plain block made for it: give it the block
                    # format Markdown gives it (a code block, a heading).
                    QTextCursor(first).setBlockFormat(first_format)
            cursor.endEditBlock()
            self._shade_code(start)

    def _inert_fragment(self, markdown: str) -> tuple[QTextDocumentFragment, QTextBlockFormat]:
        """``markdown`` parsed and made inert, and the block format of its first paragraph."""
        scratch = self._scratch
        scratch.setMarkdown(markdown, MARKDOWN)
        make_inert(scratch, self._links)
        return QTextDocumentFragment(scratch), scratch.begin().blockFormat()

    def follow_palette(self) -> None:
        """Give the links and code blocks already shown the view's palette (after a theme change):
        the links are given its link colour, the code blocks its shade, in one edit."""
        document = self._view.document()
        link = self._view.palette().brush(QPalette.ColorRole.Link)
        recolour = QTextCharFormat()
        recolour.setForeground(link)
        stale: list[tuple[int, int]] = []
        block = document.begin()
        while block.isValid():
            fragments = block.begin()
            while not fragments.atEnd():
                fragment = fragments.fragment()
                char_format = fragment.charFormat()
                if char_format.isAnchor() and char_format.foreground() != link:
                    stale.append((fragment.position(), fragment.length()))
                fragments += 1
            block = block.next()
        cursor = QTextCursor(document)
        cursor.beginEditBlock()
        for position, length in stale:
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(recolour)
        cursor.endEditBlock()
        self._shade_code(0)

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self._view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _shade_code(self, start: int, document: QTextDocument | None = None) -> None:
        """Give code blocks a background: Markdown import marks them but does not paint them."""
        palette = self._view.palette()
        shade = QColor(palette.color(QPalette.ColorRole.AlternateBase))
        if shade == palette.color(QPalette.ColorRole.Base):
            shade = shade.darker(106)
        document = document or self._view.document()
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
