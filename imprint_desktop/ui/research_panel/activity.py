"""The activity of a reply: one row per tool call and a thin row per model request, by round.

:class:`ActivityModel` is fed the engine's events as they come (:meth:`ActivityModel.feed`), and
rows are only *published* to views by a single-shot timer (:data:`FLUSH_MS`), in one insertion and
one ``dataChanged`` per flush — as the transcript coalesces streamed tokens — so hundreds of tool
events a second cost ten view updates a second. Until a row is published, ``rowCount`` does not
count it, which keeps the model's contract with its views exact.

The same model shows a finished reply's activity in the research record (:meth:`ActivityModel.load`
with the rows of :func:`~imprint_desktop.core.research.record.report.build_report`). Every word in
it that came from a tool argument is untrusted: it is plain text in the item views (which never
interpret markup) and escaped in tooltips.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette

from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.record.rows import (
    FINAL_GROUP,
    ActivityRow,
    describe_call,
    describe_started,
    read_words,
    round_heading,
    without_unopened_rounds,
)
from imprint_desktop.core.research.wording import phase_words

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.vocabulary import CallStatus

FLUSH_MS = 100  # a list people read: ten updates a second are live enough
EVIDENCE_IDS_ROLE = int(Qt.ItemDataRole.UserRole) + 1
COLUMNS = ("What", "Status", "New")
_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_NO_FLAGS = Qt.ItemFlag.NoItemFlags
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_ACCESSIBLE = int(Qt.ItemDataRole.AccessibleTextRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_ROLES = frozenset(
    (_DISPLAY, _ACCESSIBLE, _TOOLTIP, _FONT, _FOREGROUND, _BACKGROUND, EVIDENCE_IDS_ROLE)
)
_BAD = frozenset(("error", "denied", "not_executed"))
_HEADER = -1  # a round's own row, in the (group, row) address of a table row

Index = QModelIndex | QPersistentModelIndex


class _Group:
    """One round's rows; ``shown`` of them are published to views."""

    __slots__ = ("calls", "found", "number", "rows", "shown")

    def __init__(self, number: int) -> None:
        self.number = number
        self.rows: list[ActivityRow] = []
        self.shown = 0
        self.calls = 0
        self.found = 0

    def title(self) -> str:
        return round_heading(self.number, self.calls, self.found)


class ActivityModel(QAbstractTableModel, EventHandler):
    """A table of the reply's rounds in the order they came: each round's own row (its title),
    then its calls and requests.

    A flat table rather than a tree: a view lays out inserted rows without walking the rows it
    already has, so a reply of ten thousand calls updates as fast as one of ten.
    """

    sig_flushed = Signal()  # after the views were updated with what was fed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._groups: list[_Group] = []
        self._where: dict[int, int] = {}  # round → position in _groups
        self._table: list[tuple[int, int]] = []  # published rows: (group position, row or -1)
        self._starts: list[int] = []  # the table row of each published group's own row
        self._calls: dict[tuple[int, str], tuple[int, int]] = {}  # (round, call id) → place
        self._request: tuple[int, int] | None = None  # the request in flight
        self._denied: set[str] = set()
        self._pending: list[ev.Event] = []
        self._changed: set[tuple[int, int]] = set()  # rows the flush under way changed
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        self.flushes = 0  # how many times views were updated (the coalescing is tested on it)
        self._style: _Style | None = None

    # --- feeding --------------------------------------------------------------------------

    def clear(self) -> None:
        self.load(())

    def load(self, rows: Iterable[ActivityRow]) -> None:
        """Show a finished reply's rows (from its report) at once."""
        self._timer.stop()
        self.beginResetModel()
        self._groups, self._where, self._table, self._starts = [], {}, [], []
        self._calls, self._request, self._denied, self._pending = {}, None, set(), []
        for row in rows:
            self._append(row)
        self._publish_tail()
        self.endResetModel()

    def settle(self, rounds: int, stop_reason: str) -> None:
        """The reply ended after ``rounds`` rounds: the request that opened none (the one that
        answered, or one research stopped during) moves to the group the record shows it in, so
        the panel never names a round its "rounds done" does not count."""
        self.flush()
        rows = self.rows()
        settled = without_unopened_rounds(rows, rounds, stop_reason)
        if settled != rows:
            self.load(sorted(settled, key=lambda row: row.group))

    def feed(self, event: ev.Event) -> None:
        """Take one research event; views see it within :data:`FLUSH_MS`."""
        self._pending.append(event)
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def flush(self) -> None:
        """Publish what was fed since the last flush: one insertion for the rows added at the end,
        one ``dataChanged`` for the rows that changed."""
        from imprint_desktop.core.research import events as ev  # noqa: PLC0415 - after startup

        self._timer.stop()
        pending, self._pending = self._pending, []
        if not pending:
            return
        changed = self._changed = set()
        for event in pending:
            ev.dispatch(event, self)  # the on_… methods below
        # A round before the last that grew (rare: a section worker's coordinator call) gets its
        # rows inserted in place; everything else is appended in one go.
        for position in range(len(self._starts) - 1):
            group = self._groups[position]
            if group.shown < len(group.rows):
                at = self._starts[position] + 1 + group.shown
                added = [(position, index) for index in range(group.shown, len(group.rows))]
                self.beginInsertRows(QModelIndex(), at, at + len(added) - 1)
                self._table[at:at] = added
                group.shown = len(group.rows)
                for later in range(position + 1, len(self._starts)):
                    self._starts[later] += len(added)
                self.endInsertRows()
        tail = self._tail()
        if tail:
            self.beginInsertRows(QModelIndex(), len(self._table), len(self._table) + tail - 1)
            self._publish_tail()
            self.endInsertRows()
        rows = [self._starts[p] + 1 + i for p, i in changed if p < len(self._starts)]
        rows += [self._starts[p] for p, _ in changed if p < len(self._starts)]
        if rows:
            last = len(COLUMNS) - 1
            self.dataChanged.emit(self.index(min(rows), 0), self.index(max(rows), last))
        self.flushes += 1
        self.sig_flushed.emit()

    def _tail(self) -> int:
        """How many rows publishing the last published round and every new one adds."""
        count = 0
        if self._starts:
            last = self._groups[len(self._starts) - 1]
            count += len(last.rows) - last.shown
        for group in self._groups[len(self._starts) :]:
            count += 1 + len(group.rows)
        return count

    def _publish_tail(self) -> None:
        if self._starts:
            position = len(self._starts) - 1
            last = self._groups[position]
            self._table += [(position, index) for index in range(last.shown, len(last.rows))]
            last.shown = len(last.rows)
        for position in range(len(self._starts), len(self._groups)):
            group = self._groups[position]
            self._starts.append(len(self._table))
            self._table.append((position, _HEADER))
            self._table += [(position, index) for index in range(len(group.rows))]
            group.shown = len(group.rows)

    def described(self) -> Mapping[tuple[int, str], str]:
        """What each call did in words, by (round, call id): the record's words for this reply."""
        return {
            (group.number, row.call_id): row.what
            for group in self._groups
            for row in group.rows
            if row.kind == "tool"
        }

    def rows(self) -> list[ActivityRow]:
        """Every row, published or not, in order."""
        return [row for group in self._groups for row in group.rows]

    # --- the events, as a flush applies them -------------------------------------------------

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        row = ActivityRow(
            event.round,
            "tool",
            describe_started(event),
            "running",
            t=event.t,
            call_id=event.call_id,
            name=event.name,
            origin=event.origin,
        )
        self._calls[(event.round, event.call_id)] = self._append(row)

    def on_tool_finished(self, event: ev.ToolFinished) -> None:
        status: CallStatus = event.status
        if status == "error" and event.call_id in self._denied:
            status = "denied"
        place = self._calls.pop((event.round, event.call_id), None)
        if place is None:  # a call answered without running (not executed, refused)
            words = describe_call(event.name, None)
            row = ActivityRow(event.round, "tool", words, status, t=event.t, name=event.name)
            place = self._append(row)
        position, index = place
        group = self._groups[position]
        what = group.rows[index].what
        if event.name == "read_document" and event.evidence and " lines " not in what:
            what = read_words(event.evidence)  # the lines it read, which the words lacked
        group.rows[index] = replace(
            group.rows[index],
            what=what,
            status=status,
            call_id=event.call_id,
            origin=event.origin,
            new_evidence=event.new_evidence,
            repeated_evidence=event.repeated_evidence,
            evidence_ids=tuple(item.id for item in event.evidence),
            seconds=event.seconds,
        )
        group.found += event.new_evidence
        self._changed.add(place)

    def on_request_started(self, event: ev.RequestStarted) -> None:
        group = FINAL_GROUP if event.phase == "final" else event.round
        words = phase_words(event.phase).request
        row = ActivityRow(group, "request", words, "running", t=event.t, reserved=event.reserved)
        self._request = self._append(row)

    def on_request_finished(self, event: ev.RequestFinished) -> None:
        place, self._request = self._request, None
        if place is None:
            number = FINAL_GROUP if event.phase == "final" else event.round
            words = phase_words(event.phase).request
            place = self._append(ActivityRow(number, "request", words, event.phase, t=event.t))
        position, index = place
        group = self._groups[position]
        group.rows[index] = replace(
            group.rows[index],
            status=event.phase,
            charged=event.charged,
            reused_prefix=event.reused_prefix,
            refunded=event.refunded,
            reserved=event.reserved,
        )
        self._changed.add(place)

    def on_question_asked(self, event: ev.QuestionAsked) -> None:
        """The question, which the call's start did not say."""
        for (_round, call_id), (position, index) in self._calls.items():
            if call_id == event.call_id:
                row = self._groups[position].rows[index]
                words = describe_call(row.name, {"question": event.question})
                self._groups[position].rows[index] = replace(row, what=words)
                self._changed.add((position, index))

    def on_consent_decided(self, event: ev.ConsentDecided) -> None:
        if not event.decision.allowed:  # its call ends in an error, shown as denied
            self._denied.add(event.call_id)

    def _append(self, row: ActivityRow) -> tuple[int, int]:
        position = self._where.get(row.group)
        if position is None:
            position = self._where[row.group] = len(self._groups)
            self._groups.append(_Group(row.group))
        group = self._groups[position]
        group.rows.append(row)
        if row.kind == "tool":
            group.calls += 1
            group.found += row.new_evidence
        return position, len(group.rows) - 1

    # --- the model's interface ---------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._table)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> object:
        if orientation == Qt.Orientation.Horizontal and role == _DISPLAY:
            return COLUMNS[section]
        return None

    def row_at(self, index: Index) -> ActivityRow | None:
        """The call or request at ``index`` (None for a round's own row)."""
        if not index.isValid():
            return None
        position, row = self._table[index.row()]
        return None if row == _HEADER else self._groups[position].rows[row]

    def is_round(self, index: Index) -> bool:
        return index.isValid() and self._table[index.row()][1] == _HEADER

    def is_wide(self, row: int) -> bool:
        """Whether table row ``row`` is one line across every column (a round, a request)."""
        position, number = self._table[row]
        return number == _HEADER or self._groups[position].rows[number].kind == "request"

    def data(self, index: Index, role: int = _DISPLAY) -> object:  # noqa: PLR0911
        if role not in _ROLES or not index.isValid():  # most roles a view asks for: none here
            return None
        position, number = self._table[index.row()]
        column = index.column()
        if number == _HEADER:
            return self._group_data(self._groups[position], column, role)
        row = self._groups[position].rows[number]
        if role in (_DISPLAY, _ACCESSIBLE):
            return _cell(row, column)
        if role == _TOOLTIP:
            return f"<p>{html.escape(row.text)}</p>" if column == 0 else None  # escaped
        style = self._style or self._new_style()
        if role == _FONT:
            return style.small if row.kind == "request" else None
        if role == _FOREGROUND:
            if row.kind == "request":
                return style.muted
            return style.warning if column == 1 and row.status in _BAD else None
        if role == EVIDENCE_IDS_ROLE:
            return row.evidence_ids
        return None

    def _group_data(self, group: _Group, column: int, role: int) -> object:
        if role in (_DISPLAY, _ACCESSIBLE):
            return group.title() if column == 0 else None
        style = self._style or self._new_style()
        if role == _FONT:
            return style.bold
        if role == _BACKGROUND:
            return style.band
        if role == EVIDENCE_IDS_ROLE:
            return tuple(i for row in group.rows for i in row.evidence_ids)
        return None

    def refresh_style(self) -> None:
        """The fonts and colours changed (theme, font): ask the application again."""
        self._style = None
        if self._table:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._table) - 1, 2))

    def _new_style(self) -> _Style:
        self._style = _Style.of_application()
        return self._style

    def flags(self, index: Index) -> Qt.ItemFlag:
        return _FLAGS if index.isValid() else _NO_FLAGS


def _cell(row: ActivityRow, column: int) -> str:
    if column == 0:
        return row.text
    if column == 1:
        return row.status_text
    return row.evidence_text


@dataclass(frozen=True, slots=True)
class _Style:
    """Fonts and colours of the rows, made once (views ask for them for every cell painted)."""

    small: QFont
    bold: QFont
    muted: QColor
    warning: QColor
    band: QColor

    @classmethod
    def of_application(cls) -> _Style:
        palette = QGuiApplication.palette()
        small = QFont(QGuiApplication.font())
        small.setPointSizeF(max(6.0, small.pointSizeF() * 0.85))
        bold = QFont(QGuiApplication.font())
        bold.setBold(True)
        dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
        return cls(
            small,
            bold,
            palette.color(QPalette.ColorRole.PlaceholderText),
            QColor("#ff8a80") if dark else QColor("#b3261e"),  # red that reads on the theme
            palette.color(QPalette.ColorRole.AlternateBase),
        )
