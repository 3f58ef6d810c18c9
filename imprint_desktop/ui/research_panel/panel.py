"""The research panel: the live budgets of a reply, what it is doing now, its activity (every tool
call and request, by round: :mod:`.activity`) and its evidence.

It is fed the engine's events one by one (:meth:`ResearchPanel.apply`). Budget events arrive a few
times a second at most, so between them a GUI timer extrapolates the research clock from the last
:class:`~imprint_desktop.core.research.events.BudgetUpdate` — and holds it still while research is
paused for the person's answer. The final stage has its own line and bar: its allowance and its
deadline are outside the research budgets (DESIGN §1), so they are not drawn on the same bars.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.wording import final_mode_words, phase_words, stop_sentence
from imprint_desktop.ui.fitted_label import FittedLabel
from imprint_desktop.ui.research_panel.activity import ActivityModel
from imprint_desktop.ui.research_panel.activity_view import ActivityView, titled_stack
from imprint_desktop.ui.research_panel.budget_widgets import SegmentBar, seconds_text

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev

TICK_MS = 100
#: What the final answer's line says before its stage begins, and when the model answered during
#: research (no stage of its own).
FINAL_WAITS = "After research, with a time and tokens of its own."
FINAL_NOT_NEEDED = "None needed: the answer came with research's last request."
#: The most of a status line the "now" label shows.
NOW_CHARS = 300
EVIDENCE_ROLE = Qt.ItemDataRole.UserRole


@dataclass(frozen=True, slots=True)
class ClockReading:
    """The research clock as last reported, and when it was received (monotonic)."""

    seconds: float
    limit: float
    paused: bool
    received: float
    running: bool

    def now(self, at: float) -> float:
        if self.paused or not self.running:
            return self.seconds
        return min(self.limit, self.seconds + (at - self.received))


class _AsWideAsTheList(QStyledItemDelegate):
    """Rows as wide as the list, whatever their text: a long line ends in "…" instead of making
    the list scroll sideways."""

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        return QSize(1, super().sizeHint(option, index).height())


def evidence_row(item: ev.EvidenceItemView) -> QListWidgetItem:
    """A piece of evidence as a list row: plain text, and an escaped tooltip (documents are
    untrusted: a tooltip would otherwise render their markup)."""
    excerpt = " ".join(item.excerpt.split())
    if len(excerpt) > 160:
        excerpt = excerpt[:159] + "…"
    row = QListWidgetItem(f"[{item.id}] {item.source} · {item.location}\n{excerpt}")
    row.setData(EVIDENCE_ROLE, item)
    row.setToolTip(f"<p>{html.escape(item.excerpt)}</p>")
    return row


class ResearchPanel(QWidget, EventHandler):
    """Live view of one reply's research; also shows a finished reply's record."""

    sig_evidence_opened = Signal(object)  # EvidenceItemView

    def __init__(self, parent: QWidget | None = None) -> None:  # noqa: PLR0915 - the layout
        super().__init__(parent)
        self.setObjectName("researchPanel")
        self.setAccessibleName("Research panel")
        # Every line that changes while a reply runs keeps its room (a FittedLabel): the panel
        # never widens (moving Send/Stop) and the lists below never move.
        self.now_label = FittedLabel(2)  # built from tool arguments: plain text
        self.now_label.setText("Ask a question to start research.")
        self.now_label.setObjectName("nowLine")
        self.now_label.setAccessibleName("What research is doing now")
        self.stop_label = FittedLabel(2)
        self.stop_label.setAccessibleName("Why research stopped")

        self.time_bar = QProgressBar()
        self.time_bar.setAccessibleName("Research time")
        self.time_bar.setTextVisible(True)
        self.time_bar.setRange(0, 1000)
        self.token_bar = SegmentBar("Research tokens")
        self.token_text = FittedLabel(2)  # "… used + … reserved of … (… left)"
        self.patience_bar = SegmentBar("Patience: rounds without new evidence")
        self.patience_text = FittedLabel(1)
        self.counters = FittedLabel(1)
        self.counters.setAccessibleName("Rounds and evidence")

        # The final answer's stage: its allowance and deadline are outside the research budgets,
        # so it has its own bar, there before it starts so that nothing moves when it does.
        self.final_bar = QProgressBar()
        self.final_bar.setAccessibleName("Final answer time")
        self.final_bar.setRange(0, 1000)
        self.final_text = FittedLabel(2)
        self.final_text.setAccessibleName("Final answer stage")

        self.evidence = QListWidget()
        self.evidence.setObjectName("evidenceList")
        self.evidence.setAccessibleName("Evidence")
        self.evidence.setAccessibleDescription("Press Enter or double-click to open the document")
        # Two lines a row, all the same height: a list of hundreds that grows many times a second
        # is laid out without measuring each row (the excerpt is cut; the tooltip has it whole).
        self.evidence.setUniformItemSizes(True)
        self.evidence.setItemDelegate(_AsWideAsTheList(self.evidence))
        self.evidence.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.evidence.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.evidence.setAlternatingRowColors(True)
        self.evidence.itemActivated.connect(self._open_item)
        self._evidence_pending: list[ev.EvidenceItemView] = []
        self.activity_model = ActivityModel(self)
        self.activity = ActivityView(self.activity_model)
        self.activity.sig_evidence_chosen.connect(self._show_evidence)
        self.activity_model.sig_flushed.connect(self._flush_evidence)

        budgets = QFormLayout()
        budgets.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        budgets.setVerticalSpacing(3)  # a bar and the line of figures under it read as one
        budgets.addRow("Time", self.time_bar)
        budgets.addRow("Tokens", self.token_bar)
        budgets.addRow("", self.token_text)
        budgets.addRow("Patience", self.patience_bar)
        budgets.addRow("", self.patience_text)
        budgets.addRow("Final", self.final_bar)
        budgets.addRow("", self.final_text)
        layout = QVBoxLayout(self)
        heading = QLabel("<b>Research</b>")
        layout.addWidget(heading)
        layout.addWidget(self.now_label)
        layout.addLayout(budgets)
        layout.addWidget(self.counters)
        layout.addWidget(self.stop_label)
        self.lists = titled_stack((("&Activity", self.activity), ("&Evidence", self.evidence)))
        layout.addWidget(self.lists, 1)

        self._clock = ClockReading(0.0, 1.0, False, 0.0, False)
        self._final_started: float | None = None
        self.final_began = False  # whether this reply's final answer has a stage of its own
        self._limit_known = False  # a budget update has said the research time limit
        self._research_over = False
        self._rounds = 0  # rounds done, as the last budget update counted them
        self._final_deadline = 120.0
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._tick.timeout.connect(self._advance)
        self.reset()

    # --- feeding ----------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty panel for a new reply."""
        self._tick.stop()
        self._clock = ClockReading(0.0, 1.0, False, 0.0, False)
        self._final_started = None
        self._research_over = False
        self._rounds = 0
        self.final_began = False
        self._limit_known = False
        self.final_bar.setValue(0)
        self.final_bar.setFormat("not started")
        self.final_text.setText(FINAL_WAITS)
        self.stop_label.clear()
        self.evidence.clear()
        self._evidence_pending = []
        self.activity_model.clear()
        self.time_bar.setValue(0)
        self.time_bar.setFormat("not started")
        self.token_bar.set_values(0, 0, 1, "No tokens used yet")
        self.token_text.setText("")
        self.patience_bar.set_values(0, 0, 1, "No rounds yet")
        self.patience_text.setText("")
        self.counters.setText("")

    def begin(self, what: str) -> None:
        self.reset()
        self.set_now(what)

    def set_now(self, text: str) -> None:
        """Show what research is doing: one line, cut to :data:`NOW_CHARS` (it may quote what the
        model wrote, and a label lays out all it is given)."""
        self.now_label.setText(text if len(text) <= NOW_CHARS else text[: NOW_CHARS - 1] + "…")

    def apply(self, event: ev.Event) -> None:
        """Reflect one research event (in the ``on_…`` methods below)."""
        from imprint_desktop.core.research import events as ev  # noqa: PLC0415 - after startup

        ev.dispatch(event, self)

    def on_reply_started(self, event: ev.ReplyStarted) -> None:
        self.set_now(phase_words("research").now)
        self._tick.start()

    def on_budget_update(self, update: ev.BudgetUpdate) -> None:
        running = self._tick.isActive() and not self._research_over
        self._limit_known = True
        self._clock = ClockReading(
            update.research_seconds,
            update.time_budget,
            update.time_paused,
            time.monotonic(),
            running,
        )
        self._show_time()
        left = update.token_budget - update.tokens_charged - update.tokens_reserved
        self.token_bar.set_values(
            update.tokens_charged,
            update.tokens_reserved,
            update.token_budget,
            f"{update.tokens_charged:,} tokens charged and {update.tokens_reserved:,} reserved "
            f"of {update.token_budget:,}",
        )
        self.token_text.setText(
            f"{update.tokens_charged:,} used"
            + (f" + {update.tokens_reserved:,} reserved" if update.tokens_reserved else "")
            + f" of {update.token_budget:,} ({max(0, left):,} left)"
        )
        self.patience_bar.warn = update.no_progress_rounds >= update.patience - 1
        self.patience_bar.set_values(
            update.no_progress_rounds,
            0,
            update.patience,
            f"{update.no_progress_rounds} of {update.patience} rounds without new evidence",
        )
        self.patience_text.setText(
            f"{update.no_progress_rounds} of {update.patience} rounds without new evidence"
        )
        # Rounds done, not the round under way: the activity list names that one ("Round 1").
        self._rounds = update.rounds
        self.counters.setText(
            f"{update.rounds} round{'' if update.rounds == 1 else 's'} done · "
            f"{update.evidence} piece{'' if update.evidence == 1 else 's'} of evidence"
        )

    def on_request_started(self, event: ev.RequestStarted) -> None:
        self.activity_model.feed(event)
        if event.phase != "final":  # the final answer's own line said so already
            self.set_now(phase_words(event.phase).now)

    def on_request_finished(self, event: ev.RequestFinished) -> None:
        self.activity_model.feed(event)

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        self.activity_model.feed(event)
        self.set_now(f"{event.summary}…")

    def on_tool_finished(self, event: ev.ToolFinished) -> None:
        self.activity_model.feed(event)
        self._evidence_pending += event.evidence  # shown with the activity, coalesced

    def on_question_asked(self, event: ev.QuestionAsked) -> None:
        self.activity_model.feed(event)
        self.set_now("Waiting for your answer (research time is paused)…")

    def on_consent_decided(self, event: ev.ConsentDecided) -> None:
        self.activity_model.feed(event)

    def on_research_stopped(self, event: ev.ResearchStopped) -> None:
        self.stop_label.setText(stop_sentence(event.reason))
        self._freeze_research_clock()

    def _freeze_research_clock(self) -> None:
        if self._research_over:
            return
        self._research_over = True
        self._clock = ClockReading(
            self._clock.now(time.monotonic()), self._clock.limit, False, 0.0, False
        )
        self._show_time()

    def on_final_started(self, event: ev.FinalStarted) -> None:
        # Research is over (its stop line comes once the final is: Stop may still change it).
        self._freeze_research_clock()
        self.set_now(phase_words("final").now)
        self._final_started = time.monotonic()
        self._final_deadline = event.deadline_seconds
        self.final_text.setText(
            f"Up to {event.allowance:,} tokens, within {event.deadline_seconds:.0f} s "
            "(outside the research budgets)."
        )
        self.final_began = True
        self.final_bar.setFormat(f"{seconds_text(0.0)} of {seconds_text(event.deadline_seconds)}")
        self._tick.start()

    def on_final_finished(self, event: ev.FinalFinished) -> None:
        self._final_started = None
        how = final_mode_words(event.mode).done
        if not self.final_began:  # no stage of its own: the answer came with research's last
            self.final_bar.setFormat("none")
            self.final_text.setText(FINAL_NOT_NEEDED if event.mode == "model" else f"None: {how}.")
            return
        self.final_text.setText(f"Done in {event.seconds:.1f} s: {how}.")
        self.final_bar.setValue(1000)

    def finish(self, reason: str | None, evidence: tuple[ev.EvidenceItemView, ...]) -> None:
        """Research is over: freeze the clock, say why it ended, list all the evidence."""
        self._tick.stop()
        self.activity_model.settle(self._rounds, reason or "")
        self._flush_evidence()
        self._clock = ClockReading(
            self._clock.now(time.monotonic()), self._clock.limit, False, 0.0, False
        )
        self._show_time()
        self.set_now("Done." if reason != "cancelled" else "Stopped.")
        if reason:
            self.stop_label.setText(stop_sentence(reason))
        if not self.final_began and self.final_text.whole == FINAL_WAITS:
            self.final_text.setText("Not started.")  # research ended with no final answer
        known = {
            self.evidence.item(row).data(EVIDENCE_ROLE).id for row in range(self.evidence.count())
        }
        for item in evidence:
            if item.id not in known:
                self._add_evidence(item)

    def show_record(
        self, reason: str | None, evidence: tuple[ev.EvidenceItemView, ...], note: str = ""
    ) -> None:
        """A saved reply's outcome and evidence (no live budgets)."""
        self.reset()
        self.set_now(note or "A saved reply.")
        self.stop_label.setText(stop_sentence(reason))
        for item in evidence:
            self._add_evidence(item)

    def stop_clock(self) -> None:
        self._tick.stop()

    # --- internals ------------------------------------------------------------------------

    @Slot()
    def _advance(self) -> None:
        self._show_time()
        if self._final_started is not None:
            spent = time.monotonic() - self._final_started
            self.final_bar.setValue(int(1000 * min(1.0, spent / max(self._final_deadline, 1e-9))))
            self.final_bar.setFormat(
                f"{seconds_text(spent)} of {seconds_text(self._final_deadline)}"
            )

    def _show_time(self) -> None:
        if not self._limit_known:  # "not started" until the engine says the time limit
            return
        clock = self._clock
        shown = clock.now(time.monotonic())
        value = int(1000 * min(1.0, shown / max(clock.limit, 1e-9)))
        if value != self.time_bar.value():
            self.time_bar.setValue(value)
        text = f"{seconds_text(shown)} of {seconds_text(clock.limit)}"
        if clock.paused:
            text += " (paused)"
        if text != self.time_bar.format():
            self.time_bar.setFormat(text)
            self.time_bar.setAccessibleDescription(text)

    @property
    def shown_seconds(self) -> float:
        return self._clock.now(time.monotonic())

    @property
    def time_paused(self) -> bool:
        return self._clock.paused

    def activity_described(self) -> Mapping[tuple[int, str], str]:
        """What each call of the reply shown did, in words (for its research record)."""
        return self.activity_model.described()

    @Slot()
    def _flush_evidence(self) -> None:
        pending, self._evidence_pending = self._evidence_pending, []
        if not pending:
            return
        self.evidence.setUpdatesEnabled(False)
        for item in pending:
            self._add_evidence(item)
        self.evidence.setUpdatesEnabled(True)

    def _add_evidence(self, item: ev.EvidenceItemView) -> None:
        self.evidence.addItem(evidence_row(item))

    @Slot(int)
    def _show_evidence(self, number: int) -> None:
        if self.select_evidence(number):
            self.evidence.setFocus()

    def select_evidence(self, number: int) -> bool:
        """Show evidence ``[number]`` (a citation link was followed)."""
        self._flush_evidence()
        for row in range(self.evidence.count()):
            if self.evidence.item(row).data(EVIDENCE_ROLE).id == number:
                self.evidence.setCurrentRow(row)
                self.evidence.scrollToItem(self.evidence.item(row))
                return True
        return False

    @Slot(QListWidgetItem)
    def _open_item(self, row: QListWidgetItem) -> None:
        self.sig_evidence_opened.emit(row.data(EVIDENCE_ROLE))
