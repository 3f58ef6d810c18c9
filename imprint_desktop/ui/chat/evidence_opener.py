"""What an answer points at, opened: its evidence, its research record, the links the model wrote.

A citation ``[n]`` in the transcript, an evidence row in the research panel and an evidence row in a
research record all open in Imprint's own :class:`~.document_viewer.SourceViewer` (one at a time),
read from the workspace the reply researched — not the one chosen now. So this keeps, for the reply
being written, the folder it researches and the evidence found so far, and for the panel, the
folder of the evidence it lists. The chat session, the window's one consumer of the reply's
events, tells it (:meth:`~EvidenceOpener.reply_begun`, :meth:`~EvidenceOpener.reply_opened`,
:meth:`~EvidenceOpener.evidence_found`, :meth:`~EvidenceOpener.panel_lists`).

A link the model wrote acts on nothing: a web address opens in the browser only when the person
chooses to, with the full address in front of them; any other kind is not followed.

Documents are parsed by one :class:`~imprint_desktop.core.workspace.reader.DocumentReader` for the
window (a PDF in its isolated worker, started at the first PDF opened), stopped when the window
goes (:meth:`EvidenceOpener.close`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QUrl, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QWidget

from imprint_desktop.background import payloads as p
from imprint_desktop.background.bridge import Bridge
from imprint_desktop.core.workspace.reader import DocumentReader
from imprint_desktop.ui.chat.document_viewer import (
    SourceViewer,
    citing_sentences,
    confirm_web_link,
    quoted_sentence,
)
from imprint_desktop.ui.chat.view import ChatView, Citation
from imprint_desktop.ui.inert import is_web_link
from imprint_desktop.ui.research_panel.panel import ResearchPanel
from imprint_desktop.ui.research_panel.record_dialog import RecordDialog

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev


class EvidenceOpener(QObject):
    """Opens the evidence, records and links of one window's chat (GUI thread only)."""

    sig_status = Signal(str)  # a short line for the status bar

    def __init__(
        self,
        bridge: Bridge,
        *,
        view: ChatView,
        panel: ResearchPanel,
        parent: QWidget,
        source_bytes: Callable[[], int],
    ) -> None:
        super().__init__(parent)
        self.bridge, self.view, self.panel = bridge, view, panel
        self._window = parent
        self._source_bytes = source_bytes
        self._reader = DocumentReader()
        self._closing = threading.Event()  # stops a PDF still being read when the window goes
        self.viewer: SourceViewer | None = None
        self.link_box: QMessageBox | None = None
        self.record: RecordDialog | None = None
        self._record_message = -1
        self._live_stored: int | None = None  # the saved reply being written
        self.live_workspace: str | None = None  # the folder the running reply researches
        self._live_evidence: dict[int, ev.EvidenceItemView] = {}  # what it found so far
        self._panel_workspace: str | None = None  # the folder of the evidence the panel lists

        view.sig_citation_activated.connect(self._citation)
        view.sig_record_requested.connect(self.open_record)
        view.sig_link_requested.connect(self._model_link)
        panel.sig_evidence_opened.connect(self.open_panel_evidence)
        bridge.sig_trace_loaded.connect(self._trace_loaded)

    # --- where evidence comes from ----------------------------------------------------------------

    def reply_begun(self) -> None:
        """A question was sent: its folder and evidence are known when its research starts."""
        self._live_stored = None
        self.live_workspace = self._panel_workspace = None
        self._live_evidence = {}

    def panel_lists(self, workspace: str | None) -> None:
        """The panel now lists the evidence of a reply that researched ``workspace``."""
        self._panel_workspace = workspace

    def reply_opened(self, stored_id: int, workspace: str | None) -> None:
        """The reply being written is saved as ``stored_id`` and researches ``workspace``."""
        self._live_stored = stored_id
        self.live_workspace = self._panel_workspace = workspace

    def evidence_found(self, evidence: tuple[ev.EvidenceItemView, ...]) -> None:
        """The reply being written found ``evidence``."""
        self._live_evidence.update((item.id, item) for item in evidence)

    # --- evidence ---------------------------------------------------------------------------------

    @Slot(object)
    def _citation(self, citation: Citation) -> None:
        if self.view.live and citation.message == len(self.view.messages):  # being written
            self.panel.select_evidence(citation.number)
            found = self._live_evidence.get(citation.number)
            if found is not None:
                self.open_source(found, self.live_workspace)
            return
        if not 0 <= citation.message < len(self.view.messages):
            return
        message = self.view.messages[citation.message]
        if not self.view.live:
            self.panel.show_record(message.stop_reason, message.evidence, "Cited evidence.")
            self._panel_workspace = message.workspace
        self.panel.select_evidence(citation.number)
        item = next((item for item in message.evidence if item.id == citation.number), None)
        if item is not None:
            claims = citing_sentences(message.text, citation.number)
            self.open_source(item, message.workspace, quoted_sentence(item.excerpt, claims))
        else:
            self.sig_status.emit(f"The answer cites [{citation.number}], which it never found.")

    @Slot(object)
    def open_panel_evidence(self, item: ev.EvidenceItemView) -> None:
        """An evidence row was chosen: open it from the workspace of the reply it belongs to."""
        self.open_source(item, self._panel_workspace)

    def open_source(
        self, item: ev.EvidenceItemView, workspace: str | None, quoted: str = ""
    ) -> SourceViewer:
        """Show ``item`` in Imprint's own viewer at the cited lines (one viewer at a time); a PDF
        at its page, ``quoted`` (the excerpt's sentence the answer drew on) marked there."""
        if self.viewer is not None:
            self.viewer.close()
            self.viewer.deleteLater()
        self.viewer = SourceViewer(
            item,
            Path(workspace) if workspace else None,
            max_bytes=self._source_bytes(),
            reader=self._reader,
            stop=self._closing,
            quoted=quoted,
            parent=self._window,
        )
        self.viewer.show()
        return self.viewer

    def close(self) -> None:
        """Stop the document reader's worker (the window is closing)."""
        self._closing.set()
        self._reader.close()

    # --- links the model wrote --------------------------------------------------------------------

    @Slot(QUrl)
    def _model_link(self, url: QUrl) -> None:
        """A link the model wrote: a web address may open after the person confirms it in full;
        any other kind (a file, a share, an action of the app) is not followed."""
        if not is_web_link(url):
            self.sig_status.emit(
                f"Imprint does not follow “{url.scheme() or 'relative'}” links written in answers."
            )
            return
        if self.link_box is not None:
            self.link_box.close()
        self.link_box = confirm_web_link(url, self._window)
        self.link_box.finished.connect(self._link_box_closed)

    @Slot()
    def _link_box_closed(self) -> None:
        self.link_box = None

    # --- research records -------------------------------------------------------------------------

    @Slot(int)
    def open_record(self, index: int) -> None:
        """Ask for the trace of message ``index``; the dialog opens when it arrives."""
        if not 0 <= index < len(self.view.messages):
            return
        stored = self.view.messages[index].stored_id
        if stored is None:
            return
        self._record_message = index
        self.bridge.load_trace(stored)

    @Slot(object)
    def _trace_loaded(self, trace: p.TraceRecord) -> None:
        index = self._record_message
        if not 0 <= index < len(self.view.messages):
            return
        message = self.view.messages[index]
        if message.stored_id != trace.stored_id:
            return
        question = next(
            (m.text for m in reversed(self.view.messages[:index]) if m.role == "you"), ""
        )
        stored = trace.stored_id
        if self.record is not None:
            self.record.close()
        self.record = RecordDialog(
            question,
            message.evidence,
            trace.lines,
            lambda path: self.bridge.load_trace(stored, save_to=Path(path)),
            self._window,
            # The words of each call, which the trace does not keep, while the panel has them.
            described=self.panel.activity_described() if stored == self._live_stored else None,
            grounding=message.grounding,
        )
        folder = message.workspace  # evidence opens from the folder this reply researched
        self.record.sig_evidence_opened.connect(lambda item: self.open_source(item, folder))
        self.record.show()
