"""After the starter model answers, one quiet line under the transcript offers a better model.

The starter model is for trying Imprint: it is tiny and often wrong (the welcome, the model box and
the banner say so before anything is asked). Once it has answered, :class:`StarterOffer` says so
where the answer is read, and offers the recommended model that fits this computer best — the model
manager's own judgement (:meth:`~imprint_desktop.background.downloads.manager.DownloadManager.
recommend`) — in one click: "Answers from the starter model are often wrong — get Qwen3 4B
(2.3 GiB, runs well on this computer)". The click opens the model manager on that model with its
download started (it is used only once it is verified and the person says so), or, when the model
is here already, makes it the model used for research.

It never nags: at most once per conversation, never again in this run once dismissed or taken,
never while a download of that model is under way or once one ended in this run (its end asked
whether to switch), and never when another model is in use (a reply on any other model offers
nothing, and choosing another model takes the line away).

The chat session, the window's one consumer of the reply's events, says when the starter model has
answered (:attr:`~.chat_session.ChatSession.sig_starter_answered`) and when the conversation on
screen changes (:attr:`~.chat_session.ChatSession.sig_conversation_left`). The model store and the
model manager load after the window's first paint, so their types are for the type checker only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.settings.store import SettingsStore

if TYPE_CHECKING:
    from imprint_desktop.background.downloads.book import JobEnded
    from imprint_desktop.background.downloads.manager import DownloadManager
    from imprint_desktop.core.config import Config
    from imprint_desktop.core.models import Recommendation, Recommendations
    from imprint_desktop.ui.model_manager.window import ModelManagerWindow

#: What the line says before the model it offers.
STARTER_OFTEN_WRONG = "Answers from the starter model are often wrong —"


def uses_starter(config: Config) -> bool:
    """Whether ``config`` has the starter model answer: a local model and no file of another
    chosen (:func:`~imprint_desktop.core.chosen.model_file` reads the starter's own file as
    none)."""
    chosen = chosen_model(config)
    return not chosen.remote and chosen.file is None


def get_in_manager(manager: ModelManagerWindow, found: Recommendations, model_id: str) -> None:
    """Show ``model_id`` in the model manager's Recommended list, and start its download there
    (or, when it is on this computer already, use it), as its own buttons would."""
    page = manager.recommended
    manager.tabs.setCurrentWidget(page)
    if page.found is None:  # the manager judges the computer again; this judgement is as good
        page.show_recommendations(found)
    page.select(model_id)
    if page.use_button.isEnabled():
        page.use_selected()
    elif page.download_button.isEnabled():
        page.download_selected()


class StarterOffer(QFrame):
    """The line under the transcript that offers the best-fit recommended model (hidden until
    the starter model has answered)."""

    def __init__(
        self,
        store: SettingsStore,
        downloads: Callable[[], DownloadManager | None],
        open_manager: Callable[[], ModelManagerWindow | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("starterOffer")
        self.setAccessibleName("A better model")
        self._store = store
        self._downloads = downloads
        self._open_manager = open_manager
        self._listening: DownloadManager | None = None
        self._job = ""
        self._asking_for: int | None = None  # the conversation a judgement is awaited for
        self._offered: set[int] = set()  # conversations the line was shown in
        self.done = False  # dismissed or taken: not again in this run
        self.found: Recommendations | None = None
        self.entry: Recommendation | None = None

        self.text = QLabel(STARTER_OFTEN_WRONG)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        # Wrapped when the window is narrow: the line never widens the window it is shown in.
        self.text.setWordWrap(True)
        self.text.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.get_button = QPushButton()
        self.get_button.setObjectName("starterOfferGet")
        self.get_button.setFlat(True)
        self.get_button.setCursor(Qt.CursorShape.PointingHandCursor)
        link = self.get_button.font()
        link.setUnderline(True)
        self.get_button.setFont(link)
        self._colour_link()
        self.get_button.clicked.connect(self._get)
        self.dismiss_button = QToolButton()
        self.dismiss_button.setText("✕")
        self.dismiss_button.setAutoRaise(True)
        self.dismiss_button.setAccessibleName("Dismiss the offer of a better model")
        self.dismiss_button.setToolTip("Not now")
        self.dismiss_button.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.get_button)
        layout.addWidget(self.dismiss_button)
        self.hide()
        unsubscribe = store.subscribe(self._settings_changed)
        self.destroyed.connect(lambda _gone=None: unsubscribe())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        changes = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
        if event.type() in changes:  # another theme: its own link colour
            self._colour_link()

    def _colour_link(self) -> None:
        """Draw the button as a link, in the palette's link colour."""
        palette = self.get_button.palette()
        palette.setColor(
            QPalette.ColorRole.ButtonText, self.palette().color(QPalette.ColorRole.Link)
        )
        self.get_button.setPalette(palette)

    @property
    def judging(self) -> bool:
        """Whether a judgement of this computer is awaited before the line may show."""
        return bool(self._job)

    # --- when to offer ----------------------------------------------------------------------------

    @Slot(int)
    def starter_answered(self, conversation_id: int) -> None:
        """The starter model answered in ``conversation_id``: judge this computer's best fit (on
        the download manager's worker), and offer it if nothing speaks against it."""
        if self.done or conversation_id in self._offered or not self.isHidden():
            return
        downloads = self._downloads()
        if downloads is None or not uses_starter(self._store.config()):
            return
        if self._listening is not downloads:
            downloads.sig_job_ended.connect(self._job_ended)
            self._listening = downloads
        self._asking_for = conversation_id
        self._job = downloads.recommend()

    @Slot()
    def conversation_left(self) -> None:
        """Another conversation is on screen: the offer belonged to the one left."""
        self._asking_for = None
        self.hide()

    @Slot(object)
    def _job_ended(self, event: JobEnded) -> None:
        from imprint_desktop.background.payloads import Outcome  # noqa: PLC0415 - with downloads
        from imprint_desktop.core.models import Recommendations  # noqa: PLC0415

        if event.job_id != self._job:
            return
        conversation, self._asking_for, self._job = self._asking_for, None, ""
        found = event.value
        if (
            conversation is None
            or self.done
            or event.outcome is not Outcome.FINISHED
            or not isinstance(found, Recommendations)
            or not uses_starter(self._store.config())
        ):
            return
        best = found.best
        if best is None or self._downloading(best):
            return
        self.found, self.entry = found, best
        self._offered.add(conversation)
        self._show(best)

    def _downloading(self, entry: Recommendation) -> bool:
        """Whether a download of ``entry`` is queued, running, paused or verified already."""
        from imprint_desktop.background.downloads.book import DownloadState  # noqa: PLC0415
        from imprint_desktop.ui.model_manager.model_switch import is_download_of  # noqa: PLC0415

        downloads = self._downloads()
        items = downloads.items() if downloads is not None else []
        stopped = (DownloadState.FAILED, DownloadState.CANCELLED)
        return any(is_download_of(i, entry.model) and i.state not in stopped for i in items)

    def _show(self, entry: Recommendation) -> None:
        from imprint_desktop.ui.model_manager.welcome_picks import offer_words  # noqa: PLC0415

        words = offer_words(entry)
        verb = "use" if entry.installed is not None else "get"
        self.get_button.setText(f"{verb} {words}")
        self.get_button.setAccessibleName(f"{verb.capitalize()} {words}")
        self.get_button.setToolTip(f"{entry.model.good_at} {entry.fit.reason}")
        self.show()

    def _settings_changed(self, keys: frozenset[str]) -> None:
        chosen = any(key.startswith(("model.", "remote.")) for key in keys)
        if chosen and not uses_starter(self._store.config()):
            self.hide()

    # --- what the person does ---------------------------------------------------------------------

    @Slot()
    def dismiss(self) -> None:
        """Not now: the line goes, and is not offered again in this run."""
        self.done = True
        self.hide()

    @Slot()
    def _get(self) -> None:
        entry, found = self.entry, self.found
        self.done = True
        self.hide()
        if entry is None or found is None:
            return
        manager = self._open_manager()
        if manager is not None:
            get_in_manager(manager, found, entry.model.id)
