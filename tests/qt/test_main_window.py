"""The main window: title, the Preferences shortcut, settings problems, theme changes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)
from pytestqt.qtbot import QtBot

from imprint_desktop.app import build_window
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.main_window import MainWindow


def open_window(qtbot: QtBot, store: SettingsStore) -> MainWindow:
    window = build_window(store, SecretStore())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()  # shortcuts go to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    return window


def test_title_and_preferences_shortcut(qtbot: QtBot, store: SettingsStore) -> None:
    window = open_window(qtbot, store)
    assert window.windowTitle() == "Imprint"
    assert not window.banner.isVisible()
    qtbot.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.preferences is not None and window.preferences.isVisible())
    assert window.preferences is not None
    window.preferences.reject()
    qtbot.waitUntil(lambda: window.preferences is None)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert not window.isVisible()


def test_settings_problems_are_shown_not_fatal(qtbot: QtBot, config_path: Path) -> None:
    config_path.write_text("[chat]\nresearch_timeout_sec = 5\n", encoding="utf-8")
    window = open_window(qtbot, SettingsStore(config_path, environ={}))
    assert window.banner.isVisible()
    assert "chat.research_timeout_sec" in window.banner.text.text()
    qtbot.mouseClick(window.banner.open_button, Qt.MouseButton.LeftButton)
    assert window.preferences is not None and window.preferences.isVisible()
    window.preferences.reject()
    qtbot.mouseClick(window.banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not window.banner.isVisible()


def test_summary_follows_saved_settings(qtbot: QtBot, store: SettingsStore) -> None:
    window = open_window(qtbot, store)
    store.update({"model.provider": "remote", "remote.base_url": "http://127.0.0.1:9999/v1"})
    assert "http://127.0.0.1:9999/v1" in window.summary.text()


def shown_texts(window: MainWindow) -> list[str]:
    """Every text the window shows, on hover too, or tells a screen reader."""
    texts = [window.windowTitle(), window.statusBar().currentMessage()]
    texts += [action.text() for action in window.findChildren(QAction)]
    texts += [action.toolTip() for action in window.findChildren(QAction)]
    for widget in window.findChildren(QWidget):
        texts += [widget.toolTip(), widget.accessibleName(), widget.accessibleDescription()]
        if isinstance(widget, QLabel | QAbstractButton | QLineEdit):
            texts.append(widget.text())
        elif isinstance(widget, QComboBox):
            texts += [widget.itemText(index) for index in range(widget.count())]
        elif isinstance(widget, QTextEdit | QPlainTextEdit):
            texts.append(widget.toPlainText())
    return texts


def test_a_password_in_the_server_address_never_shows(qtbot: QtBot, store: SettingsStore) -> None:
    secrets = ("hunter2", "k3y", "t0ken")
    store.update(
        {
            "model.provider": "remote",
            "remote.base_url": "http://alice:hunter2@127.0.0.1:9/v1?api_key=k3y#t0ken",
        }
    )
    window = open_window(qtbot, store)
    shown = shown_texts(window)
    assert "Remote server: http://127.0.0.1:9/v1" in shown  # the toolbar's model picker
    assert "Remote server http://127.0.0.1:9/v1, the server" in window.summary.text()
    assert not [text for text in shown if any(secret in text for secret in secrets)]

    store.update({"remote.base_url": "https://bob:hunter2@llm.example/v1?key=k3y"})
    shown = shown_texts(window)
    assert "Remote server: https://llm.example/v1" in shown
    assert "Remote server https://llm.example/v1," in window.summary.text()
    assert not [text for text in shown if any(secret in text for secret in secrets)]


def test_theme_applies_while_running(qtbot: QtBot, store: SettingsStore) -> None:
    open_window(qtbot, store)
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    store.set("ui.theme", "dark")
    assert app.palette().color(QPalette.ColorRole.Window).lightness() < 100
    store.set("ui.theme", "light")
    assert app.palette().color(QPalette.ColorRole.Window).lightness() > 150
