"""Light, dark or the system's colours (setting ``ui.theme``), applied while the app runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

_SCHEMES = {
    "light": Qt.ColorScheme.Light,
    "dark": Qt.ColorScheme.Dark,
}


def apply_theme(app: QApplication, choice: str) -> None:
    """Ask the platform for ``choice``; paint it ourselves where the platform has no theme."""
    hints = QGuiApplication.styleHints()
    if choice in _SCHEMES:
        hints.setColorScheme(_SCHEMES[choice])
    else:
        hints.unsetColorScheme()
    wanted = _SCHEMES.get(choice, hints.colorScheme())
    if wanted == Qt.ColorScheme.Dark:
        app.setPalette(_dark_palette())
    else:
        app.setPalette(app.style().standardPalette())


def _dark_palette() -> QPalette:
    palette = QPalette()
    role = QPalette.ColorRole
    base, window, text = QColor("#1e1f22"), QColor("#2b2d30"), QColor("#dfe1e5")
    for item, colour in (
        (role.Window, window),
        (role.WindowText, text),
        (role.Base, base),
        (role.AlternateBase, window),
        (role.ToolTipBase, window),
        (role.ToolTipText, text),
        (role.Text, text),
        (role.Button, window),
        (role.ButtonText, text),
        (role.BrightText, QColor("#ff6b6b")),
        (role.Link, QColor("#6ea8fe")),
        (role.Highlight, QColor("#3d6ea8")),
        (role.HighlightedText, QColor("#ffffff")),
        (role.PlaceholderText, QColor("#8c8f94")),
    ):
        palette.setColor(item, colour)
    muted = QColor("#8c8f94")
    for item in (role.WindowText, role.Text, role.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, item, muted)
    return palette
