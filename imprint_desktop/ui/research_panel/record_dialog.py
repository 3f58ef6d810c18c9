"""A finished reply's research record: the report of what its research did.

The record is built from the reply's trace (DESIGN §5), which the history keeps for every reply —
live or reopened after a restart — so both show the same budgets, stop reason and evidence; and
from the reply's grounding (what its answer stands on, also kept in the history), shown claim by
claim with the passages that hold each. Its evidence opens where it came from through
:attr:`RecordDialog.sig_evidence_opened` (Imprint's own source viewer,
:mod:`imprint_desktop.ui.chat.document_viewer`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.core.research.record.claims import (
    GROUNDING_TITLE,
    claim_rows,
    offered_line,
    verdict_sentence,
)
from imprint_desktop.core.research.record.report import Report, build_report
from imprint_desktop.ui import export_paths
from imprint_desktop.ui.research_panel.activity import ActivityModel
from imprint_desktop.ui.research_panel.activity_view import ActivityView, titled_stack
from imprint_desktop.ui.research_panel.budget_chart import BudgetChart
from imprint_desktop.ui.research_panel.panel import EVIDENCE_ROLE, evidence_row
from imprint_desktop.ui.tables import append_row, cell, list_table

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev


class RecordDialog(QDialog):
    """One reply's research record as a report: why and when research stopped, what the answer
    stands on (the verdict, each claim with the passages that hold it or why it is flagged), where
    the time and tokens went (figures, and a chart of the budgets per round), what every call did,
    the evidence — and the raw trace one click away (Save trace…, and a collapsed raw view).

    Built from the trace with :func:`~imprint_desktop.core.research.record.report.build_report`; the
    same report exports to a self-contained HTML file. Everything shown that came from the
    question, a tool argument or a document is plain text.
    """

    sig_evidence_opened = Signal(object)  # EvidenceItemView: open it where it came from

    def __init__(
        self,
        question: str,
        evidence: tuple[ev.EvidenceItemView, ...],
        lines: Sequence[dict[str, object]],
        save_trace: Callable[[Path], None],
        parent: QWidget | None = None,
        *,
        described: Mapping[tuple[int, str], str] | None = None,
        grounding: ev.GroundingView | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Research record")
        self.setAccessibleName("Research record")
        self.resize(960, 820)
        self._save_trace = save_trace
        self.report = build_report(
            lines, evidence, question=question, described=described, grounding=grounding
        )
        summary = self.report.summary
        self.question = _plain_label(summary.question, "The question")
        italic = self.question.font()
        italic.setItalic(True)
        self.question.setFont(italic)
        self.summary = _plain_label(summary.stop_text, "Why research stopped")
        bold = self.summary.font()
        bold.setBold(True)
        bold.setPointSizeF(bold.pointSizeF() * 1.15)
        self.summary.setFont(bold)
        self.chart = BudgetChart(self.report)
        self.activity_model = ActivityModel(self)
        self.activity = ActivityView(self.activity_model)
        self.activity_model.load(self.report.activity)
        self.activity.horizontalHeader().resizeSection(
            2, 12 * self.fontMetrics().averageCharWidth() + 120
        )
        self.activity.sig_evidence_chosen.connect(self._show_evidence)
        self.evidence = QListWidget()
        self.evidence.setAccessibleName("Evidence")
        self.evidence.setAccessibleDescription("Press Enter or double-click to open the document")
        self.evidence.setWordWrap(True)
        self.evidence.setAlternatingRowColors(True)
        for item in self.report.evidence:
            self.evidence.addItem(evidence_row(item))
        self.evidence.itemActivated.connect(self._open_item)
        self.verdict, self.claims = self._grounding()
        self.trace, self.trace_toggle = self._raw_trace(lines)
        self.saved = QLabel()
        self.saved.setTextFormat(Qt.TextFormat.PlainText)
        self.saved.setAccessibleName("Export status")
        self._writer = _ReportFiles(self)
        self._writer.sig_done.connect(self.saved.setText)

        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(self.summary)
        layout.addLayout(self._figures_and_chart())
        views: list[tuple[str, QWidget]] = [
            ("&Activity", self.activity),
            ("E&vidence", self.evidence),
        ]
        if self.report.grounding is not None:
            views.insert(0, (f"&{GROUNDING_TITLE}", self._grounding_box()))
        lists = titled_stack(views)
        for index, stretch in enumerate((2, 3, 2)[-len(views) :]):
            lists.setStretchFactor(index, stretch)
        layout.addWidget(lists, 1)
        layout.addWidget(self.trace_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.trace, 1)
        layout.addWidget(self.saved)
        layout.addWidget(self._buttons())

    def _grounding(self) -> tuple[QLabel, QTableWidget]:
        """The verdict in words, and the claims: each beside the passages ([n], as the answer
        numbers them) that hold it, or the note that flags it, both wrapped to be read whole.
        Activating a claim shows its first passage in the evidence list."""
        grounding = self.report.grounding
        sentence = verdict_sentence(grounding.verdict) if grounding is not None else ""
        offered = offered_line(grounding)
        verdict = _plain_label(f"{sentence}\n{offered}" if offered else sentence, "Verdict")
        claims = list_table(("Claim", "Stands on"), "claims")
        claims.setAccessibleName("Claims of the answer")
        claims.setAccessibleDescription("Press Enter on a claim to see the passage that holds it")
        claims.setWordWrap(True)
        claims.setAlternatingRowColors(True)
        header = claims.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        claims.setColumnWidth(1, 360)
        self._flagged: list[QTableWidgetItem] = []
        for row in claim_rows(grounding):
            stands = cell(row.stands_on)
            if row.flagged:
                self._flagged.append(stands)
            append_row(claims, (cell(row.claim, row.sources), stands))
        self._colour_flags()
        claims.resizeRowsToContents()
        claims.setVisible(claims.rowCount() > 0)  # "nothing was found" has no claims to list
        header.sectionResized.connect(lambda *_: claims.resizeRowsToContents())
        claims.itemActivated.connect(self._claim_chosen)
        return verdict, claims

    def _colour_flags(self) -> None:
        """The flagged claims' notes in the report's colour for a problem, as it reads on the
        theme's background (the dialog's: its children learn of a new palette after it)."""
        on_dark = self.palette().base().color().lightness() < 128
        bad = QColor("#ff8a80" if on_dark else "#b3261e")
        for stands in self._flagged:
            stands.setForeground(bad)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "claims"):
            self._colour_flags()  # another theme

    def _grounding_box(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.verdict)
        layout.addWidget(self.claims, 1)
        return box

    def _raw_trace(self, lines: Sequence[dict[str, object]]) -> tuple[QPlainTextEdit, QToolButton]:
        trace = QPlainTextEdit()
        trace.setReadOnly(True)
        trace.setAccessibleName("Trace")
        trace.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        from imprint_desktop.core.research.trace import trace_json  # noqa: PLC0415 - with a record

        trace.setPlainText("\n".join(trace_json(dict(line)) for line in lines))
        trace.hide()
        toggle = QToolButton()
        toggle.setText("Raw &trace (JSON Lines; no secrets)")
        toggle.setAccessibleName("Show the raw trace")
        toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toggle.setArrowType(Qt.ArrowType.RightArrow)
        toggle.setCheckable(True)
        toggle.setAutoRaise(True)
        toggle.toggled.connect(self._toggle_trace)
        return trace, toggle

    def _figures_and_chart(self) -> QHBoxLayout:
        figures = QFormLayout()
        figures.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        for what, value in self.report.summary.figures():
            figure = _plain_label(value, what)
            figure.setWordWrap(False)
            figures.addRow(f"{what}:", figure)
        top = QHBoxLayout()
        top.addLayout(figures)
        top.addWidget(self.chart, 1)
        return top

    def _buttons(self) -> QDialogButtonBox:
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.export_button = QPushButton("&Export report…")
        self.export_button.setAccessibleName("Export the record as an HTML report")
        self.save_button = QPushButton("&Save trace…")
        self.save_button.setAccessibleName("Save the trace for a bug report")
        buttons.addButton(self.export_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.export_button.clicked.connect(self._export)
        self.save_button.clicked.connect(self._save)
        buttons.rejected.connect(self.reject)
        return buttons

    def export_to(self, path: Path) -> None:
        """Write the report as HTML to ``path`` on a worker thread; :attr:`saved` says when."""
        self._writer.write(path, self.report)

    @Slot(bool)
    def _toggle_trace(self, shown: bool) -> None:
        self.trace.setVisible(shown)
        arrow = Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow
        self.trace_toggle.setArrowType(arrow)

    @Slot()
    def _export(self) -> None:
        path = export_paths.ask_save_path(self, export_paths.REPORT, self.report.summary.question)
        if path is not None:
            self.export_to(path)

    @Slot()
    def _save(self) -> None:
        path = export_paths.ask_save_path(self, export_paths.TRACE, self.report.summary.question)
        if path is not None:
            self._save_trace(path)

    @Slot(int)
    def _show_evidence(self, number: int) -> None:
        for row in range(self.evidence.count()):
            if self.evidence.item(row).data(EVIDENCE_ROLE).id == number:
                self.evidence.setCurrentRow(row)
                self.evidence.scrollToItem(self.evidence.item(row))
                self.evidence.setFocus()
                return

    @Slot(QTableWidgetItem)
    def _claim_chosen(self, item: QTableWidgetItem) -> None:
        first = self.claims.item(item.row(), 0)
        sources = first.data(Qt.ItemDataRole.UserRole) if first is not None else None
        if sources:
            self._show_evidence(int(sources[0]))

    @Slot(QListWidgetItem)
    def _open_item(self, row: QListWidgetItem) -> None:
        self.sig_evidence_opened.emit(row.data(EVIDENCE_ROLE))


def _plain_label(text: str, name: str) -> QLabel:
    """A label that shows ``text`` as it is: never as markup (it may be untrusted)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setAccessibleName(name)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class _ReportFiles(QObject):
    """Writes report files off the GUI thread and says, in a sentence, how it went."""

    sig_done = Signal(str)

    def write(self, path: Path, report: Report) -> None:
        from imprint_desktop.core.research.record.page import write_report  # noqa: PLC0415

        def job() -> None:
            try:
                write_report(path, report)
            except OSError as error:
                self.sig_done.emit(f"The report could not be saved: {error.strerror or error}.")
                return
            self.sig_done.emit(f"Report saved to {path}.")

        threading.Thread(target=job, name="imprint-report", daemon=True).start()
