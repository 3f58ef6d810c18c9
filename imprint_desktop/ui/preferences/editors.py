"""One editor widget per setting kind, made from the setting's declaration.

Every editor has the same small API, which is all the preferences dialog uses: :meth:`value`,
:meth:`set_value`, :meth:`error` (a sentence, or None when the text is valid) and the signal
:attr:`Editor.sig_value_changed`. Validation messages come from the schema itself, so the dialog,
the command line and the config loader say the same thing about the same mistake.
"""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent, QValidator
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QToolButton,
    QWidget,
)

from imprint_desktop.core.errors import SettingValueError
from imprint_desktop.settings.schema import Kind, Setting, Value


class Editor(QWidget):
    """Base of the per-kind editors."""

    #: The value (or the text being typed) changed. No payload: ask :meth:`value` and :meth:`error`.
    sig_value_changed = Signal()

    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setting = setting
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.setAccessibleName(setting.title)
        self.setToolTip(setting.description)

    def value(self) -> Value:
        raise NotImplementedError

    def set_value(self, value: Value) -> None:
        raise NotImplementedError

    def error(self) -> str | None:
        """Why the current input is not a valid value, or None when it is."""
        try:
            self.setting.coerce(self.value())
        except SettingValueError as problem:
            return _sentence(problem.reason)
        return None

    def _add(self, widget: QWidget) -> None:
        widget.setAccessibleName(self.setting.title)
        widget.setAccessibleDescription(self.setting.description)
        widget.setToolTip(self.setting.description)
        self._layout.addWidget(widget)

    @Slot()
    def _emit_changed(self) -> None:
        self.sig_value_changed.emit()


class _LenientSpinBox(QSpinBox):
    """A spin box that lets a person type a number outside its range, so it can be explained.

    Qt's own spin box refuses such keystrokes silently; here the text stays, the input is
    *intermediate* (not acceptable) and the dialog shows why.
    """

    def validate(self, text: str, position: int) -> tuple[QValidator.State, str, int]:
        state, text, position = super().validate(text, position)
        bare = _bare(self, text)
        word = self.specialValueText()  # "auto" for GPU layers: typed letter by letter
        if state == QValidator.State.Invalid and (
            _is_number(bare, int) or (bare and word.startswith(bare))
        ):
            state = QValidator.State.Intermediate
        return state, text, position


class _LenientDoubleSpinBox(QDoubleSpinBox):
    """The floating-point sibling of :class:`_LenientSpinBox`."""

    def validate(self, text: str, position: int) -> tuple[QValidator.State, str, int]:
        state, text, position = super().validate(text, position)
        if state == QValidator.State.Invalid and _is_number(_bare(self, text), float):
            state = QValidator.State.Intermediate
        return state, text, position


class _TypedTextKeeper(QObject):
    """Keeps a spin box from replacing what a person typed when an edit ends.

    When focus leaves a spin box, Enter is pressed in it or its page is hidden or shown again, Qt
    puts back the last valid value over text that is not one, silently: "5000" typed into a field
    of 10 to 3600 became "500" (the last value on the way), while the person believed they had
    typed 5000 and the dialog still explained 5000. Here Qt's handling runs as usual and the
    typed text is put back after it, so the text, the value refused and the message agree.
    """

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not isinstance(watched, QAbstractSpinBox) or not _puts_back_the_value(event):
            return False
        line = watched.lineEdit()
        if line.hasAcceptableInput():
            return False
        typed, position = line.text(), line.cursorPosition()
        watched.event(event)  # Qt's own handling, which is what puts the last value back
        if line.text() != typed:
            line.setText(typed)
            line.setCursorPosition(position)
        return True


def _puts_back_the_value(event: QEvent) -> bool:
    """Whether Qt's spin box handles ``event`` by putting the last valid value in its text."""
    if event.type() in (QEvent.Type.FocusOut, QEvent.Type.Hide, QEvent.Type.Show):
        return True
    # Only Enter: the arrows and Page Up/Down step from the last value, a change asked for.
    return isinstance(event, QKeyEvent) and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class NumberEditor(Editor):
    """Integers and reals: a spin box that carries the declared bounds."""

    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        assert setting.minimum is not None and setting.maximum is not None
        self.spin: QSpinBox | QDoubleSpinBox
        if setting.kind is Kind.INT:
            spin = _LenientSpinBox()
            spin.setRange(int(setting.minimum), int(setting.maximum))
            if setting.word is not None and setting.word[0] == setting.minimum:
                spin.setSpecialValueText(setting.word[1])  # shown, and typed, for the minimum
                spin.lineEdit().textChanged.connect(self._take_word)
            spin.valueChanged.connect(self._emit_changed)
            self.spin = spin
        else:
            real = _LenientDoubleSpinBox()
            real.setDecimals(2)
            real.setSingleStep(0.05)
            real.setRange(setting.minimum, setting.maximum)
            real.valueChanged.connect(self._emit_changed)
            self.spin = real
        if setting.unit:
            self.spin.setSuffix(f" {setting.unit}")
        self.spin.setGroupSeparatorShown(setting.kind is Kind.INT and setting.maximum >= 100_000)
        self.spin.setMinimumWidth(140)
        self._keeper = _TypedTextKeeper(self)
        self.spin.installEventFilter(self._keeper)
        # Any change of the text, typed or made by Qt (a value reformatted, a step), is checked
        # again, so the message always speaks of what the field shows.
        self.spin.lineEdit().textChanged.connect(self._emit_changed)
        self._add(self.spin)
        self._layout.addStretch(1)

    def _take_word(self, text: str) -> None:
        """The word typed in full is its value (Qt accepts the text but keeps the old value)."""
        spin = self.spin
        if not isinstance(spin, QSpinBox):
            return
        if _bare(spin, text) == spin.specialValueText() and spin.value() != spin.minimum():
            spin.setValue(spin.minimum())

    def value(self) -> Value:
        return self.spin.value()

    def set_value(self, value: Value) -> None:
        assert isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(self.spin, QSpinBox):
            self.spin.setValue(int(value))
        else:
            self.spin.setValue(float(value))
        self.sig_value_changed.emit()  # also when the text was invalid and the value unchanged

    def error(self) -> str | None:
        if self.spin.lineEdit().hasAcceptableInput():
            return None
        text = self.spin.cleanText().replace(self.spin.locale().groupSeparator(), "")
        try:
            number = self.setting.parse(text)
        except SettingValueError as problem:
            return _sentence(problem.reason)
        if isinstance(self.spin, QDoubleSpinBox):
            decimals = self.spin.decimals()
            if round(float(number), decimals) != number:
                return _sentence(f"must have at most {decimals} decimals (got {text.strip()})")
        return _sentence(f"must be {self.setting.bounds_text()} (got {text.strip()})")


class BoolEditor(Editor):
    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        self.check = QCheckBox(setting.title)
        self.check.toggled.connect(self._emit_changed)
        self._add(self.check)

    def value(self) -> Value:
        return self.check.isChecked()

    def set_value(self, value: Value) -> None:
        self.check.setChecked(bool(value))


class ChoiceEditor(Editor):
    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        self.combo = QComboBox()
        for value, title in setting.choices:
            self.combo.addItem(title, value)
        self.combo.currentIndexChanged.connect(self._emit_changed)
        self._add(self.combo)
        self._layout.addStretch(1)

    def value(self) -> Value:
        return str(self.combo.currentData())

    def set_value(self, value: Value) -> None:
        self.combo.setCurrentIndex(self.combo.findData(value))


class LineEditor(Editor):
    """One line of text, also the base of the path editor."""

    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        self.line = QLineEdit()
        self.line.setClearButtonEnabled(True)
        self.line.textChanged.connect(self._emit_changed)
        self._add(self.line)

    def value(self) -> Value:
        return self.line.text().strip()

    def set_value(self, value: Value) -> None:
        self.line.setText(str(value))


class PathEditor(LineEditor):
    """A file or folder path with a Browse… button; empty means "use the default"."""

    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        self.line.setPlaceholderText("Default")
        browse = QToolButton()
        browse.setText("Browse…")
        browse.setAccessibleName(f"Browse for {setting.title}")
        browse.clicked.connect(self._browse)
        self._layout.addWidget(browse)

    @Slot()
    def _browse(self) -> None:
        start = self.line.text()
        if self.setting.kind is Kind.FOLDER:
            chosen = QFileDialog.getExistingDirectory(self, self.setting.title, start)
        else:
            chosen, _ = QFileDialog.getOpenFileName(self, self.setting.title, start)
        if chosen:
            self.line.setText(chosen)


class TextEditor(Editor):
    def __init__(self, setting: Setting, parent: QWidget | None = None) -> None:
        super().__init__(setting, parent)
        self.text = QPlainTextEdit()
        self.text.setTabChangesFocus(True)
        self.text.setFixedHeight(90)
        self.text.textChanged.connect(self._emit_changed)
        self._add(self.text)

    def value(self) -> Value:
        return self.text.toPlainText()

    def set_value(self, value: Value) -> None:
        self.text.setPlainText(str(value))


EDITORS: dict[Kind, type[Editor]] = {
    Kind.INT: NumberEditor,
    Kind.FLOAT: NumberEditor,
    Kind.BOOL: BoolEditor,
    Kind.CHOICE: ChoiceEditor,
    Kind.STR: LineEditor,
    Kind.TEXT: TextEditor,
    Kind.FILE: PathEditor,
    Kind.FOLDER: PathEditor,
}


class SecretEditor(QWidget):
    """A password field for a keyring secret. It never shows the stored secret.

    Its value is what the person wants done on Apply: :attr:`KEEP`, a new secret, or
    :attr:`REMOVE`.
    """

    KEEP: ClassVar[None] = None
    REMOVE: ClassVar[str] = ""

    sig_value_changed = Signal()

    def __init__(
        self, setting: Setting, stored: bool | None, parent: QWidget | None = None
    ) -> None:
        """``stored`` None: not known yet (the keyring is being asked; see :meth:`set_stored`)."""
        super().__init__(parent)
        self.setting = setting
        self.checking = stored is None
        self.stored = bool(stored)
        self._pending: str | None = self.KEEP
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.line = QLineEdit()
        self.line.setEchoMode(QLineEdit.EchoMode.Password)
        self.line.setAccessibleName(setting.title)
        self.line.setAccessibleDescription(setting.description)
        self.line.textEdited.connect(self._typed)
        layout.addWidget(self.line)
        self.reveal = QToolButton()
        self.reveal.setText("Show")
        self.reveal.setCheckable(True)
        self.reveal.setAccessibleName(f"Show {setting.title}")
        self.reveal.toggled.connect(self._toggle_reveal)
        layout.addWidget(self.reveal)
        self._update_placeholder()

    def set_stored(self, stored: bool) -> None:
        """What the keyring said: a secret is stored, or not."""
        self.stored = stored
        self.checking = False
        self._update_placeholder()

    def pending(self) -> str | None:
        return self._pending

    def will_be_stored(self) -> bool:
        """Whether a secret will be stored after Apply."""
        if self._pending is self.KEEP:
            return self.stored
        return bool(self._pending)

    def mark_removed(self) -> None:
        self._pending = self.REMOVE
        self.line.clear()
        self._update_placeholder()
        self.sig_value_changed.emit()

    def applied(self) -> None:
        """The pending change was saved: it is now the stored state."""
        self.stored = self.will_be_stored()
        self.checking = False  # known now, whatever a keyring check still on its way says
        self._pending = self.KEEP
        self.line.clear()
        self._update_placeholder()

    @Slot(str)
    def _typed(self, text: str) -> None:
        self._pending = text if text else (self.REMOVE if self.stored else self.KEEP)
        self._update_placeholder()
        self.sig_value_changed.emit()

    @Slot(bool)
    def _toggle_reveal(self, shown: bool) -> None:
        mode = QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password
        self.line.setEchoMode(mode)
        self.reveal.setText("Hide" if shown else "Show")

    def _update_placeholder(self) -> None:
        if self._pending == self.REMOVE:
            self.line.setPlaceholderText("Will be removed")
        elif self.checking:
            self.line.setPlaceholderText("Checking the keyring…")
        elif self.stored:
            self.line.setPlaceholderText("Stored; type a new key to replace it")
        else:
            self.line.setPlaceholderText("Not set")


def make_editor(setting: Setting, parent: QWidget | None = None) -> Editor:
    """The editor for a (non-secret) setting."""
    return EDITORS[setting.kind](setting, parent)


def _sentence(reason: str) -> str:
    return reason[:1].upper() + reason[1:] + ("" if reason.endswith(".") else ".")


def _bare(spin: QSpinBox | QDoubleSpinBox, text: str) -> str:
    """Spin box text without its prefix and suffix."""
    return text.removeprefix(spin.prefix()).removesuffix(spin.suffix()).strip()


def _is_number(text: str, kind: type[int] | type[float]) -> bool:
    try:
        kind(text.replace(",", "").replace("_", ""))
    except ValueError:
        return False
    return True
