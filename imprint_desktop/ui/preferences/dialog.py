"""The preferences dialog, generated from the settings schema.

A page per section, an editor per setting (see :mod:`.editors`), a reset button beside each field,
inline validation, "Restore Page Defaults" and "Restore All Defaults" (both confirmed), OK / Apply /
Cancel, and a notice when a change needs a restart. Edits stay pending in the editors until OK or
Apply; Cancel discards them and leaves the store untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPalette, QShowEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.core.errors import SecretStoreError, SettingsError
from imprint_desktop.settings import schema
from imprint_desktop.settings.schema import Setting, Value
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore, Source
from imprint_desktop.ui.preferences.editors import Editor, SecretEditor, make_editor
from imprint_desktop.ui.preferences.gui_tasks import GuiTasks, off_thread

_RESTART_MARK = "⟳"


@dataclass(frozen=True)
class _Field:
    """The widgets of one setting on a page."""

    setting: Setting
    editor: Editor | SecretEditor
    reset: QToolButton
    message: QLabel


class PreferencesDialog(QDialog):
    """Edit every setting. Construct it with the store and secret store the app uses."""

    #: Settings were saved (OK or Apply). Payload: the keys that changed, as a frozenset.
    sig_settings_applied = Signal(object)

    def __init__(
        self, store: SettingsStore, secrets: SecretStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.setObjectName("preferences")
        self.resize(820, 560)
        self._store = store
        self._secrets = secrets
        self._fields: dict[str, _Field] = {}
        self._restart_pending: set[str] = set()
        #: The dialog's short asynchronous work (keyring checks); closing the dialog cancels it.
        self.tasks = GuiTasks()
        self._checks: dict[str, asyncio.Task[None]] = {}  # keyring checks under way, by key

        self.sections = QListWidget()
        self.sections.setAccessibleName("Preference pages")
        self.sections.setFixedWidth(170)
        self.pages = QStackedWidget()
        for section in schema.SECTIONS:
            self.sections.addItem(section.title)
            self.pages.addWidget(self._make_page(section))
        self.sections.currentRowChanged.connect(self.pages.setCurrentIndex)
        self.sections.setCurrentRow(0)

        self.restart_notice = QLabel()
        self.restart_notice.setObjectName("restartNotice")
        self.restart_notice.setWordWrap(True)
        self.restart_notice.setVisible(False)

        self.restore_page_button = QPushButton("Restore Page Defaults")
        self.restore_page_button.clicked.connect(self._restore_page)
        self.restore_all_button = QPushButton("Restore All Defaults…")
        self.restore_all_button.clicked.connect(self._restore_all)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Apply
            | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.clicked.connect(self._button_clicked)
        self.buttons.rejected.connect(self.reject)

        body = QHBoxLayout()
        body.addWidget(self.sections)
        body.addWidget(self.pages, 1)
        footer = QHBoxLayout()
        footer.addWidget(self.restore_page_button)
        footer.addWidget(self.restore_all_button)
        footer.addStretch(1)
        footer.addWidget(self.buttons)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(self.restart_notice)
        layout.addLayout(footer)

        self._load_values()

    # --- public ------------------------------------------------------------------------------

    def editor(self, key: str) -> Editor | SecretEditor:
        return self._fields[key].editor

    def reset_button(self, key: str) -> QToolButton:
        return self._fields[key].reset

    def message(self, key: str) -> QLabel:
        return self._fields[key].message

    def show_section(self, name: str) -> None:
        index = [section.name for section in schema.SECTIONS].index(name)
        self.sections.setCurrentRow(index)

    def errors(self) -> dict[str, str]:
        """Settings whose current input is invalid, with the reason."""
        found = {}
        for key, field in self._fields.items():
            if isinstance(field.editor, Editor):
                problem = field.editor.error()
                if problem:
                    found[key] = problem
        return found

    def pending_changes(self) -> dict[str, Value | None]:
        """Non-secret changes Apply would save; ``None`` means back to the default."""
        changes: dict[str, Value | None] = {}
        for key, field in self._fields.items():
            if not isinstance(field.editor, Editor) or field.editor.error():
                continue
            value = field.setting.coerce(field.editor.value())
            if value != self._store.saved_value(key):
                changes[key] = None if value == field.setting.default else value
        return changes

    # --- building ----------------------------------------------------------------------------

    def _make_page(self, section: schema.Section) -> QWidget:
        page = QWidget()
        grid = QGridLayout(page)
        grid.setColumnStretch(1, 1)
        heading = QLabel(f"<h3>{section.title}</h3><p>{section.description}</p>")
        heading.setWordWrap(True)
        grid.addWidget(heading, 0, 0, 1, 3)
        row = 1
        for setting in schema.in_section(section.name):
            field = self._make_field(setting)
            self._fields[setting.key] = field
            title = setting.title + (f" {_RESTART_MARK}" if setting.restart else "")
            label = QLabel(title)
            label.setBuddy(field.editor)
            label.setToolTip("Takes effect after a restart" if setting.restart else "")
            grid.addWidget(label, row, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(field.editor, row, 1)
            grid.addWidget(field.reset, row, 2, Qt.AlignmentFlag.AlignTop)
            description = QLabel(self._description(setting))
            description.setWordWrap(True)
            description.setForegroundRole(QPalette.ColorRole.PlaceholderText)
            grid.addWidget(description, row + 1, 1)
            grid.addWidget(field.message, row + 2, 1)
            row += 3
        grid.setRowStretch(row, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(page)
        return scroll

    def _make_field(self, setting: Setting) -> _Field:
        message = QLabel()
        message.setObjectName("validationMessage")
        message.setWordWrap(True)
        message.setStyleSheet("color: #c62828;")
        message.setVisible(False)
        reset = QToolButton()
        reset.setText("Reset")
        reset.setAccessibleName(f"Reset {setting.title} to its default")
        reset.setToolTip(f"Reset to the default ({setting.format(setting.default) or 'empty'})")
        editor: Editor | SecretEditor
        if setting.secret:
            editor = self._make_secret_editor(setting, message)
            reset.setText("Remove")
            reset.setToolTip("Remove the stored key from the system keyring")
            reset.setAccessibleName(f"Remove {setting.title}")
        else:
            editor = make_editor(setting)
        field = _Field(setting, editor, reset, message)
        editor.sig_value_changed.connect(lambda: self._refresh(field))
        reset.clicked.connect(lambda: self._reset_field(field))
        return field

    def _make_secret_editor(self, setting: Setting, message: QLabel) -> SecretEditor:
        try:
            where = f"Kept in {self._secrets.location(setting.key)}."
        except SecretStoreError as error:
            editor = SecretEditor(setting, stored=False)
            _refuse_secret(editor, message, str(error))
            return editor
        editor = SecretEditor(setting, stored=None)  # asked when the dialog is shown
        editor.setToolTip(where)
        editor.line.setAccessibleDescription(f"{setting.description} {where}")
        return editor

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._check_secrets()

    def done(self, result: int) -> None:
        self.tasks.cancel_all()  # closed (OK, Cancel or the title bar): nothing left to update
        self._checks.clear()  # shown again, the dialog asks again
        super().done(result)

    def _check_secrets(self) -> None:
        """Ask the keyring which keys are stored, for the fields that do not know yet (again
        when the dialog is shown after a close that cut a check short)."""
        for key, field in self._fields.items():
            editor = field.editor
            if isinstance(editor, SecretEditor) and editor.checking and key not in self._checks:
                task = self.tasks.start(
                    self._check_secret(field),
                    what="ask the keyring whether a key is stored",
                    failed=functools.partial(self._secret_unknown, field),
                )
                self._checks[key] = task
                task.add_done_callback(functools.partial(self._check_ended, key))

    def _check_ended(self, key: str, task: asyncio.Task[None]) -> None:
        if self._checks.get(key) is task:
            del self._checks[key]

    async def _check_secret(self, field: _Field) -> None:
        """Off the GUI thread, as the keyring can be slow, or locked and waiting for its own
        unlock prompt: the dialog stays responsive meanwhile."""
        key, editor = field.setting.key, field.editor
        assert isinstance(editor, SecretEditor)
        try:
            stored = await off_thread(
                functools.partial(self._secrets.has, key), name=f"keyring-check-{key}"
            )
        except SecretStoreError as error:
            self._secret_unknown(field, str(error))
            return
        if editor.checking:  # not saved meanwhile (then that is the state now)
            editor.set_stored(stored)
            self._refresh(field)

    def _secret_unknown(self, field: _Field, problem: str) -> None:
        """The keyring could not say whether the key is stored: the field says why."""
        if isinstance(field.editor, SecretEditor) and field.editor.checking:
            _refuse_secret(field.editor, field.message, problem)
            self._refresh(field)

    def _description(self, setting: Setting) -> str:
        parts = [setting.description]
        if setting.bounds_text():
            parts.append(f"Allowed: {setting.bounds_text()}.")
        if setting.secret:
            with contextlib.suppress(SecretStoreError):
                parts.append(f"Kept in {self._secrets.location(setting.key)}.")
        elif self._store.source(setting.key) is Source.ENV:
            parts.append(
                f"Now overridden by the environment variable {setting.env_var} "
                f"(= {setting.format(self._store.get(setting.key))}); what you save here applies "
                "once it is unset."
            )
        return " ".join(parts)

    # --- state -------------------------------------------------------------------------------

    def _load_values(self) -> None:
        for key, field in self._fields.items():
            if isinstance(field.editor, Editor):
                field.editor.set_value(self._store.saved_value(key))
            self._refresh(field)

    def _refresh(self, field: _Field) -> None:
        editor = field.editor
        if isinstance(editor, SecretEditor):
            field.reset.setEnabled(editor.isEnabled() and editor.will_be_stored())
        else:
            problem = editor.error()
            if problem:
                field.message.setText(problem)
            field.message.setVisible(bool(problem))
            differs = problem is not None or editor.value() != field.setting.default
            field.reset.setEnabled(differs)
        self._refresh_buttons()

    def _refresh_buttons(self) -> None:
        valid = not self.errors()
        dirty = bool(self.pending_changes()) or self._secret_changes_pending()
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(valid)
        self.buttons.button(QDialogButtonBox.StandardButton.Apply).setEnabled(valid and dirty)
        restart_keys = {
            key for key in self.pending_changes() if schema.get(key).restart
        } | self._restart_pending
        if restart_keys:
            titles = ", ".join(sorted(schema.get(key).title for key in restart_keys))
            self.restart_notice.setText(
                f"{_RESTART_MARK} Restart Imprint for these changes to take effect: {titles}."
            )
        self.restart_notice.setVisible(bool(restart_keys))

    def _secret_changes_pending(self) -> bool:
        return any(
            isinstance(field.editor, SecretEditor) and field.editor.pending() is not None
            for field in self._fields.values()
        )

    def _reset_field(self, field: _Field) -> None:
        if isinstance(field.editor, SecretEditor):
            field.editor.mark_removed()
            return
        default = field.setting.default
        assert default is not None
        field.editor.set_value(default)

    def _reset_fields(self, fields: list[_Field]) -> None:
        for field in fields:
            if isinstance(field.editor, Editor):  # API keys are removed only one by one
                self._reset_field(field)

    # --- actions -----------------------------------------------------------------------------

    @Slot()
    def _restore_page(self) -> None:
        section = schema.SECTIONS[self.sections.currentRow()]
        if self._confirm(f"Restore the defaults of every setting on the {section.title} page?"):
            keys = {setting.key for setting in schema.in_section(section.name)}
            self._reset_fields([field for key, field in self._fields.items() if key in keys])

    @Slot()
    def _restore_all(self) -> None:
        if self._confirm(
            "Restore the defaults of every setting on every page? API keys in "
            "the system keyring are kept."
        ):
            self._reset_fields(list(self._fields.values()))

    def _confirm(self, question: str) -> bool:
        answer = QMessageBox.question(
            self,
            "Restore Defaults",
            question + "\n\nNothing is saved until you press OK or Apply.",
            QMessageBox.StandardButton.RestoreDefaults | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.RestoreDefaults

    @Slot(QAbstractButton)
    def _button_clicked(self, button: QAbstractButton) -> None:
        role = self.buttons.standardButton(button)
        if role == QDialogButtonBox.StandardButton.Apply:
            self.apply()
        elif role == QDialogButtonBox.StandardButton.Ok and self.apply():
            self.accept()

    def apply(self) -> bool:
        """Save the pending changes; False (and a message) when something could not be saved."""
        if self.errors():
            return False
        changes = self.pending_changes()
        changed = set(changes)
        try:
            if changes:
                self._store.update(changes)
            for key, field in self._fields.items():
                editor = field.editor
                if isinstance(editor, SecretEditor) and editor.pending() is not None:
                    self._secrets.set(key, editor.pending() or "")
                    editor.applied()
                    changed.add(key)
        except (SettingsError, SecretStoreError) as error:
            QMessageBox.warning(self, "Settings Not Saved", str(error))
            return False
        self._restart_pending |= {key for key in changes if schema.get(key).restart}
        for field in self._fields.values():
            self._refresh(field)
        self.sig_settings_applied.emit(frozenset(changed))
        return True


def _refuse_secret(editor: SecretEditor, message: QLabel, problem: str) -> None:
    """The keyring cannot be used: the field says why and takes no input."""
    editor.setEnabled(False)
    message.setText(problem)
    message.setVisible(True)
