"""The recommended models the welcome offers under "Download", laid out for a dialog of fixed width.

Each pick is a radio button titled with the model's name, size, fit and role, over two lines: what
the model is good at and how it fits this computer. The text is broken into lines here, for a
given width, rather than by word-wrapping labels: a wrapped label knows its height only for a given
width, which a dialog that grows after it is shown never asks, and rows would overlap. The offer
of a better model after the starter model answers (:mod:`imprint_desktop.ui.chat.starter_offer`)
names its pick in the same words (:func:`offer_words`).

The welcome is shown before the model store is loaded, so this module loads it only when a pick is
made (the store's types are for the type checker only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QLabel, QRadioButton, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from imprint_desktop.core.models import Recommendation

#: Pixels the text under a pick's radio button is indented by, to line up with the title.
TEXT_INDENT = 22


def pick_title(entry: Recommendation) -> str:
    """One line: name, size, how it fits, and why it is offered."""
    from imprint_desktop.core.models import human_size  # noqa: PLC0415 - loaded with the picks

    parts = [entry.model.name, human_size(entry.model.size), entry.fit.verdict.words]
    if entry.role is not None:
        parts.append(entry.role.words.lower())
    if entry.installed is not None:
        parts.append("already on this computer")
    return "  ·  ".join(parts)


def offer_words(entry: Recommendation) -> str:
    """The model in a few words for an offer to get it: "Qwen3 4B (2.3 GiB, runs well on this
    computer)", or "Qwen3 4B (already on this computer)"."""
    from imprint_desktop.core.models import human_size  # noqa: PLC0415 - loaded with the picks

    if entry.installed is not None:
        return f"{entry.model.name} (already on this computer)"
    fit = entry.fit.verdict.words.lower()
    return f"{entry.model.name} ({human_size(entry.model.size)}, {fit} on this computer)"


def pick_button(entry: Recommendation) -> QRadioButton:
    """The radio button that chooses ``entry``, named for a screen reader by its name and fit."""
    button = QRadioButton(pick_title(entry))
    button.setAccessibleName(f"{entry.model.name}, {entry.fit.verdict.words}")
    button.setAccessibleDescription(f"{entry.model.good_at} {entry.fit.reason}")
    return button


def pick_row(button: QRadioButton, entry: Recommendation, width: int) -> QWidget:
    """One recommended model: ``button`` over what the model is good at and how it fits, the text
    broken into lines of ``width`` pixels."""
    row = QWidget()
    layout = QVBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 4)
    layout.setSpacing(0)
    layout.addWidget(button)
    for text, muted in ((entry.model.good_at, False), (entry.fit.reason, True)):
        label = QLabel()
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setContentsMargins(TEXT_INDENT, 0, 0, 0)
        if muted:
            label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        label.setText(broken_lines(text, label.fontMetrics(), width))
        layout.addWidget(label)
    return row


def broken_lines(text: str, metrics: QFontMetrics, width: int) -> str:
    """``text`` broken at spaces into lines no wider than ``width`` pixels (where it can be)."""
    lines: list[str] = []
    for word in text.split():
        if lines and metrics.horizontalAdvance(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "\n".join(lines)
