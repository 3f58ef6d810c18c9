"""The card that asks the person before the model fetches a web page (DESIGN §2).

A page is the one way research reaches outside the workspace — and the one way workspace text can
be sent out in a URL — so nothing is fetched until the person has seen the address in full, its
host highlighted as :func:`~imprint_desktop.core.urls.host_span` finds it (a host hidden after
``user@`` or behind a look-alike name is the one that counts), and chosen: Allow once, Allow this
site for this conversation, or Deny. Deny has the focus, so a stray Enter sends nothing anywhere.
Research time is paused meanwhile.

The address is untrusted text: it is laid out with text formats, never parsed as HTML.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFont, QPalette, QTextCharFormat, QTextCursor, QTextOption
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
)

from imprint_desktop.core.consent import Decision
from imprint_desktop.core.urls import host_span

_ADDRESS_LINES = 4  # the address box grows to this many lines, then scrolls


class ConsentCard(QFrame):
    """Shows one fetch to decide; emits ``sig_decided(call_id, decision value)`` and hides."""

    sig_decided = Signal(str, str)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("consentCard")
        self.setAccessibleName("Allow fetching a web page?")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "#consentCard { border: 1px solid palette(highlight); border-radius: 6px; }"
        )
        self.call_id = ""
        self.url = ""
        title = QLabel("<b>The model wants to fetch a web page.</b>")
        title.setTextFormat(Qt.TextFormat.RichText)  # the app's own words only
        self.site = QLabel()
        self.site.setTextFormat(Qt.TextFormat.PlainText)
        self.site.setAccessibleName("Site")
        self.site.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.address = QTextEdit()
        self.address.setReadOnly(True)
        self.address.setAcceptRichText(False)
        self.address.setUndoRedoEnabled(False)
        self.address.setAccessibleName("Address to fetch")
        self.address.setWordWrapMode(QTextOption.WrapMode.WrapAnywhere)
        self.address.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.address.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        lines = self.address.fontMetrics().lineSpacing() * _ADDRESS_LINES
        self.address.setMaximumHeight(lines + 2 * self.address.frameWidth() + 8)
        note = QLabel(
            "Whatever the address contains is sent to that site. Research time is paused until "
            "you choose."
        )
        note.setTextFormat(Qt.TextFormat.PlainText)
        note.setWordWrap(True)
        self.allow_once = QPushButton("Allow &once")
        self.allow_once.setAccessibleName("Allow this page once")
        self.allow_site = QPushButton("Allow this &site for this conversation")
        self.allow_site.setAccessibleName("Allow this site for this conversation")
        self.deny = QPushButton("&Deny")
        self.deny.setAccessibleName("Do not fetch this page")
        self.deny.setDefault(True)
        self.allow_once.clicked.connect(lambda: self._decide(Decision.ALLOW_ONCE))
        self.allow_site.clicked.connect(lambda: self._decide(Decision.ALLOW_SITE))
        self.deny.clicked.connect(lambda: self._decide(Decision.DENY))
        row = QHBoxLayout()
        row.addWidget(self.allow_once)
        row.addWidget(self.allow_site)
        row.addStretch(1)
        row.addWidget(self.deny)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.site)
        layout.addWidget(self.address)
        layout.addWidget(note)
        layout.addLayout(row)
        self.hide()

    def ask(self, call_id: str, url: str, site: str) -> None:
        """Show ``url`` (fetch call ``call_id``) and wait for a choice; ``site`` is what "this
        site" would allow, its host in ASCII form."""
        self.call_id, self.url = call_id, url
        self.site.setText(f"Site: {site}")
        self._show_address(url)
        self.show()
        self.deny.setFocus()

    def address_text(self) -> str:
        return self.address.toPlainText()

    def highlighted(self) -> str:
        """The part of the address shown highlighted (the host)."""
        cursor = QTextCursor(self.address.document())
        found = []
        for position in range(len(self.url)):
            cursor.setPosition(position + 1)
            if cursor.charFormat().fontWeight() == QFont.Weight.Bold:
                found.append(self.url[position])
        return "".join(found)

    def _show_address(self, url: str) -> None:
        self.address.clear()
        cursor = QTextCursor(self.address.document())
        start, end = host_span(url) or (0, 0)  # no host read: nothing highlighted
        plain = QTextCharFormat()
        host = QTextCharFormat()
        host.setFontWeight(QFont.Weight.Bold)
        host.setBackground(self.palette().color(QPalette.ColorRole.Highlight))
        host.setForeground(self.palette().color(QPalette.ColorRole.HighlightedText))
        cursor.insertText(url[:start], plain)
        cursor.insertText(url[start:end], host)
        cursor.insertText(url[end:], plain)
        self.address.moveCursor(QTextCursor.MoveOperation.Start)

    @Slot()
    def _decide(self, decision: Decision) -> None:
        if not self.isVisible():
            return
        self.hide()
        self.sig_decided.emit(self.call_id, decision.value)
