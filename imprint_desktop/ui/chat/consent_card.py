"""The card that asks the person before the model fetches a web page (DESIGN §2).

A page is the one way research reaches outside the workspace — and the one way workspace text can
be sent out in a URL — so nothing is fetched until the person has seen the address in full, its
host highlighted as :func:`~imprint_desktop.core.urls.host_span` finds it (a host hidden after
``user@`` or behind a look-alike name is the one that counts), and chosen: Allow once, Allow this
site for this conversation, or Deny. Deny has the focus, so a stray Enter sends nothing anywhere.
Research time is paused meanwhile.

The address is untrusted text: it is laid out with text formats, never parsed as HTML, and shown as
:func:`~imprint_desktop.core.shown_text.shown_address` writes it — a direction override or an
invisible character as the escape that is sent, a host mixing scripts in its ASCII ``xn--`` form —
drawn left to right in the order it is written, so no character in it can make it read like
another address.

A page that redirects to another site is asked about again
(:mod:`~imprint_desktop.core.tools.fetch`): the card then shows both addresses, the one allowed and
the one it leads to.
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
from imprint_desktop.core.shown_text import LEFT_TO_RIGHT, shown_address

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
        self.redirected_from = ""
        self.title = _plain_label("The model wants to fetch a web page.")
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.source = _plain_label("", "Address the page was asked at")
        self.source.setWordWrap(True)
        self.source.hide()
        self.site = _plain_label("", "Site")
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
        note = _plain_label(
            "Whatever the address contains is sent to that site. Research time is paused until "
            "you choose."
        )
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
        for widget in (self.title, self.source, self.site, self.address, note):
            layout.addWidget(widget)
        layout.addLayout(row)
        self.hide()

    def ask(self, call_id: str, url: str, site: str, redirected_from: str = "") -> None:
        """Show ``url`` (fetch call ``call_id``) and wait for a choice; ``site`` is what "this
        site" would allow, its host in ASCII form. ``redirected_from``: the address the person
        allowed, which redirects to ``url`` on another site."""
        self.call_id, self.url, self.redirected_from = call_id, url, redirected_from
        if redirected_from:
            self.title.setText("The page you allowed redirects to another site.")
            self.source.setText(f"Allowed: {shown_address(redirected_from).text}")
        else:
            self.title.setText("The model wants to fetch a web page.")
        self.source.setVisible(bool(redirected_from))
        self.site.setText(f"Site: {site}")
        self._show_address(url)
        self.show()
        self.deny.setFocus()

    def address_text(self) -> str:
        """The address as shown (without the marks that keep it left to right)."""
        return self.address.toPlainText().strip("".join(LEFT_TO_RIGHT))

    def highlighted(self) -> str:
        """The part of the address shown highlighted (the host)."""
        document = self.address.document()
        cursor = QTextCursor(document)
        found = []
        text = document.toPlainText()
        for position, character in enumerate(text):
            cursor.setPosition(position + 1)
            if cursor.charFormat().fontWeight() == QFont.Weight.Bold:
                found.append(character)
        return "".join(found)

    def _show_address(self, url: str) -> None:
        self.address.clear()
        cursor = QTextCursor(self.address.document())
        shown = shown_address(url)
        text, start, end = shown.text, shown.host_start, shown.host_end
        plain = QTextCharFormat()
        host = QTextCharFormat()
        host.setFontWeight(QFont.Weight.Bold)
        host.setBackground(self.palette().color(QPalette.ColorRole.Highlight))
        host.setForeground(self.palette().color(QPalette.ColorRole.HighlightedText))
        cursor.insertText(LEFT_TO_RIGHT[0] + text[:start], plain)
        cursor.insertText(text[start:end], host)
        cursor.insertText(text[end:] + LEFT_TO_RIGHT[1], plain)
        self.address.moveCursor(QTextCursor.MoveOperation.Start)

    @Slot()
    def _decide(self, decision: Decision) -> None:
        if not self.isVisible():
            return
        self.hide()
        self.sig_decided.emit(self.call_id, decision.value)


def _plain_label(text: str, name: str = "") -> QLabel:
    """A label of plain text (an address is untrusted), selectable with the mouse."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if name:
        label.setAccessibleName(name)
    return label
