"""The toolbar: which model answers, which folder is researched, and the indexing progress.

Choosing here writes the settings (the same keys Preferences edits), and the window reacts to the
settings change — a model reload or a workspace index update on the loop thread — so the toolbar,
the dialog and the command line can never disagree about what is in use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QToolButton,
    QWidget,
)

from imprint_desktop.background.payloads import (
    IndexStage,
    IndexStatus,
    ModelState,
    ModelStatus,
    Outcome,
)
from imprint_desktop.core import resources
from imprint_desktop.core.chosen import (
    chosen_model,
    chosen_workspace,
    model_file,
    sample_workspace,
)
from imprint_desktop.core.workspace.folders import folder_lines
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.chat.banner import STARTER_HONESTY
from imprint_desktop.ui.chat.index_progress import (
    STEP_PURPOSES,
    ElidedBar,
    Pace,
    finished_line,
    progress_line,
)
from imprint_desktop.ui.fitted_label import FittedLabel
from imprint_desktop.ui.inert import tooltip

if TYPE_CHECKING:  # the model store is imported by the download manager, after the first paint
    from imprint_desktop.core.models import InstalledModel

_ACTION = "action"
#: The most of the workspace folder's name the toolbar shows (its tooltip has the whole path).
FOLDER_CHARS = 28


class ModelPicker(QComboBox):
    """Starter model, installed models, the remote server, and ways to get more."""

    sig_manage_requested = Signal()
    sig_remote_settings_requested = Signal()

    def __init__(self, store: SettingsStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelPicker")
        self.setAccessibleName("Model")
        self.setToolTip("The model that researches and answers")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.setMinimumContentsLength(24)
        self._store = store
        self._installed: tuple[InstalledModel, ...] = ()
        self.starter: Path | bool | None = True  # True: not checked yet, assumed present
        self.activated.connect(self._chosen)
        self.rebuild()

    def set_starter(self, path: Path | None) -> None:
        """What the off-thread check found: the starter model's file, or None."""
        self.starter = path
        self.rebuild()

    def set_installed(self, models: tuple[InstalledModel, ...]) -> None:
        self._installed = tuple(m for m in models if m.source.value != "starter" and m.usable)
        self.rebuild()

    def rebuild(self) -> None:
        self.blockSignals(True)
        self.clear()
        config = self._store.config()
        chosen = chosen_model(config)
        starter = self.starter if isinstance(self.starter, Path) else None
        if self.starter is not None:
            self.addItem(
                f"Starter: {resources.STARTER_NAME}", {"model.provider": "local", "model.path": ""}
            )
            self.setItemData(self.count() - 1, STARTER_HONESTY, Qt.ItemDataRole.ToolTipRole)
        for model in self._installed:
            self.addItem(model.name, {"model.provider": "local", "model.path": str(model.path)})
        own = chosen.file  # a model file chosen that is neither installed nor the starter
        installed = any(chosen.uses_file(model.path) for model in self._installed)
        if own is not None and own != starter and not installed:
            self.addItem(own.name, {"model.provider": "local", "model.path": config.model.path})
        self.addItem(f"Remote server: {chosen.server_address}", {"model.provider": "remote"})
        self.insertSeparator(self.count())
        self.addItem("Import a model file…", {_ACTION: "import"})
        self.addItem("Download models… (Ctrl+M)", {_ACTION: "manage"})
        self.addItem("Remote server settings…", {_ACTION: "remote"})
        self.setCurrentIndex(self._current_index())
        self.blockSignals(False)

    def _current_index(self) -> int:
        """The entry of the model the settings choose (the first entry when none is)."""
        chosen = chosen_model(self._store.config())
        for index in range(self.count()):
            data = self.itemData(index)
            if not isinstance(data, dict) or _ACTION in data:
                continue
            if data.get("model.provider") != chosen.provider:
                continue
            if chosen.remote or model_file(str(data.get("model.path", ""))) == chosen.file:
                return index
        return 0

    @Slot(int)
    def _chosen(self, index: int) -> None:
        data: dict[str, Any] = self.itemData(index) or {}
        action = data.get(_ACTION)
        self.setCurrentIndex(self._current_index())  # an action is not a model
        if action == "import":
            self._import()
        elif action == "manage":
            self.sig_manage_requested.emit()
        elif action == "remote":
            self.sig_remote_settings_requested.emit()
        elif data:
            self._store.update(data)
            self.rebuild()

    def _import(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(
            self, "Choose a GGUF model file", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self._store.update({"model.provider": "local", "model.path": path})
            self.rebuild()


class WorkspacePicker(QToolButton):
    """The researched folders; a menu offers another folder, a folder more (each kept current
    while the window is open), taking one of those out again, or the sample workspace."""

    def __init__(self, store: SettingsStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("workspacePicker")
        self.setAccessibleName("Workspace folder")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self._store = store
        menu = QMenu(self)
        self.choose_action = QAction("Choose a &folder…", self)
        self.choose_action.triggered.connect(self.choose_folder)
        self.add_action = QAction("&Add a folder…", self)
        self.add_action.triggered.connect(self.add_folder)
        self.remove_menu = QMenu("&Remove a folder", self)
        self.sample_action = QAction("Use the &sample workspace", self)
        self.sample_action.triggered.connect(lambda: self._store.set("workspace.path", ""))
        menu.addAction(self.choose_action)
        menu.addAction(self.add_action)
        menu.addMenu(self.remove_menu)
        menu.addAction(self.sample_action)
        self.setMenu(menu)
        self.refresh()

    def more_folders(self) -> list[Path]:
        return folder_lines(self._store.config().workspace.more_folders)

    def researches(self, root: str) -> bool:
        """Whether the folder at ``root`` (resolved) is one the workspace researches now."""
        chosen = chosen_workspace(self._store.config().workspace.path) or sample_workspace()
        try:
            wanted = Path(root).resolve()
            return any(wanted == folder.resolve() for folder in [chosen, *self.more_folders()])
        except (OSError, RuntimeError):  # a folder that cannot be resolved: say what it says
            return True

    def refresh(self) -> None:
        folder = chosen_workspace(self._store.config().workspace.path)
        name = folder.name if folder is not None else "Sample workspace"
        if len(name) > FOLDER_CHARS:  # a long name would widen the window; the tooltip has it
            name = name[: FOLDER_CHARS - 1] + "…"
        more = self.more_folders()
        also = f" +{len(more)} folder{'s' if len(more) != 1 else ''}" if more else ""
        self.setText(f"Workspace: {name}{also}")
        every = [str(folder or sample_workspace()), *(str(path) for path in more)]
        self.setToolTip(tooltip("\n".join(every)))
        self.remove_menu.clear()
        for path in more:
            action = self.remove_menu.addAction(str(path).replace("&", "&&"))
            action.triggered.connect(lambda _=False, path=path: self.remove_folder(path))
        self.remove_menu.setEnabled(bool(more))

    @Slot()
    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Choose the folder to research", self._store.config().workspace.path
        )
        if folder:
            self._store.set("workspace.path", folder)

    @Slot()
    def add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder to research")
        if folder:
            self.add(Path(folder))

    def add(self, folder: Path) -> None:
        """Research ``folder`` too (``workspace.more_folders``)."""
        more = self.more_folders()
        if folder not in more:
            self._store.set(
                "workspace.more_folders", "\n".join(str(path) for path in [*more, folder])
            )

    def remove_folder(self, folder: Path) -> None:
        """Research ``folder`` no more: its passages leave the answers."""
        kept = [path for path in self.more_folders() if path != folder]
        self._store.set("workspace.more_folders", "\n".join(str(path) for path in kept))


class ResearchToolbar(QWidget):
    """Model picker, workspace picker, model state and index progress, in one row."""

    def __init__(
        self,
        store: SettingsStore,
        describe: Callable[[], str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.model = ModelPicker(store)
        self.workspace = WorkspacePicker(store)
        self.model_state = QLabel()
        self.model_state.setAccessibleName("Model state")
        self.index_bar = ElidedBar()
        self.index_bar.setAccessibleName("Workspace indexing")
        self.index_bar.hide()
        self._pace = Pace()
        self._files_read = True  # the last update of the files was not stopped half-way
        self._reading: IndexStatus | None = None  # the files being read, while they are
        self._problems = ""  # what it could not fully read
        self.index_problems = FittedLabel(1)  # as long as the problems: cut, never widening
        self.index_problems.setAccessibleName("Files the index could not fully read")
        self.index_problems.hide()
        self._describe = describe
        model_label = QLabel("&Model:")
        model_label.setBuddy(self.model)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(model_label)
        layout.addWidget(self.model)
        layout.addWidget(self.model_state)
        layout.addSpacing(12)
        layout.addWidget(self.workspace)
        layout.addWidget(self.index_bar)
        layout.addWidget(self.index_problems)
        layout.addStretch(1)

    @Slot(object)
    def show_model(self, status: ModelStatus) -> None:
        text = {
            ModelState.LOADING: "loading…",
            ModelState.READY: "ready",
            ModelState.FAILED: "could not be loaded",
        }[status.state]
        self.model_state.setText(text)
        self.model_state.setToolTip(
            tooltip(status.message or status.description)
        )  # a server's words

    @Slot(object)
    def show_index(self, status: IndexStatus) -> None:
        """Show the index's progress (:mod:`.index_progress` words it), or hide the bar when a
        step ends."""
        if status.outcome is not None:
            self._pace.forget()
            if status.stage is IndexStage.FILES and not status.more:
                self._reading = None
                self._files_read = status.outcome is Outcome.FINISHED
            if status.outcome is Outcome.FINISHED and status.stage is IndexStage.FILES:
                self._problems = status.problems
                self._show_index_problems(status)
            if self._reading is not None:  # (what was saved meanwhile is read, or has vectors)
                self.show_index(self._reading)  # the folder's files are still being read
            else:
                self.index_bar.hide()
            return
        if status.stage is IndexStage.FILES:
            self._reading = status
        self.index_bar.show()
        self.index_bar.setRange(0, max(1, status.total))
        self.index_bar.setValue(status.done)
        line = progress_line(status, self._pace.seconds_left(status))
        self.index_bar.setFormat(line.replace("%", "%%"))  # a file name may hold "%p"
        self.index_bar.setAccessibleDescription(line)
        where = f"\n{status.path}" if status.path else ""
        # A file name may hold anything: the tooltip is escaped.
        self.index_bar.setToolTip(tooltip(f"{line}\n\n{STEP_PURPOSES[status.stage]}{where}"))
        self.index_bar.update_width()  # its width follows its line, up to a limit

    def forget_reading(self) -> None:
        """The workspace's folders changed: a reading under way was ended without its end being
        told (the next folder's reading is shown as it comes)."""
        self._reading = None

    def finished_line(self, status: IndexStatus) -> str:
        """What the status bar says of ``status`` once its step ended ("" for nothing): the
        workspace is called indexed only when every step it needs is done, and no folder's files
        are being read (the passages of a file saved meanwhile may be ready first); a folder the
        workspace no longer researches (another was chosen while it was read) is not told of."""
        if status.more or (self._reading is not None and status.stage is not IndexStage.FILES):
            return ""
        line = finished_line(status, self._files_read, self._problems)
        if line and not self.workspace.researches(status.root):
            return ""  # the late end of a folder researched no more: not this workspace's
        return line

    def _show_index_problems(self, status: IndexStatus) -> None:
        """What the last update could not read: a count beside the picker, each file and why in
        its tooltip (file names and reasons are untrusted text: plain, never markup)."""
        self.index_problems.setText(status.problems)
        self.index_problems.setVisible(bool(status.problems))
        shown = list(status.details[:40])
        if len(status.details) > len(shown):
            shown.append(f"… and {len(status.details) - len(shown)} more")
        self.index_problems.setToolTip(tooltip("\n".join(shown)))

    @property
    def indexing(self) -> bool:
        return self.index_bar.isVisible()
