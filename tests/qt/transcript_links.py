"""Finding and clicking links in the transcript as a person does: by their text, with the mouse."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextBrowser
from pytestqt.qtbot import QtBot


@dataclass(frozen=True)
class Anchor:
    text: str
    href: str
    position: int
    length: int
    tooltip: str


def anchors(document: QTextDocument) -> list[Anchor]:
    """Every link in ``document``, in reading order."""
    found: list[Anchor] = []
    block = document.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            char_format = fragment.charFormat()
            if char_format.isAnchor():
                found.append(
                    Anchor(
                        fragment.text(),
                        char_format.anchorHref(),
                        fragment.position(),
                        fragment.length(),
                        char_format.toolTip(),
                    )
                )
            fragments += 1
        block = block.next()
    return found


def tooltips(document: QTextDocument) -> list[str]:
    """Every tooltip the text of ``document`` carries."""
    shown: list[str] = []
    block = document.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            tip = fragments.fragment().charFormat().toolTip()
            if tip:
                shown.append(tip)
            fragments += 1
        block = block.next()
    return shown


def click_link(
    qtbot: QtBot,
    view: QTextBrowser,
    text: str,
    *,
    href: str | None = None,
    occurrence: int = 0,
) -> Anchor:
    """Scroll the link reading ``text`` (to ``href``, when given) into view and click it."""
    matching = [
        anchor
        for anchor in anchors(view.document())
        if anchor.text == text and (href is None or anchor.href == href)
    ]
    assert matching, f"no link {text!r} in {[a.text for a in anchors(view.document())]}"
    anchor = matching[occurrence]
    cursor = QTextCursor(view.document())
    cursor.setPosition(anchor.position + max(1, anchor.length // 2))
    view.setTextCursor(cursor)
    view.ensureCursorVisible()
    rect = view.cursorRect(cursor)
    point = QPoint(rect.left(), rect.center().y())
    assert view.anchorAt(point) == anchor.href, "the link is not under the mouse"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    return anchor
