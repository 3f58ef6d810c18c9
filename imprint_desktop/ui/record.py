"""A finished reply's research record, and the document viewer that evidence opens in.

The record is built from the reply's trace (DESIGN §5), which the history keeps for every reply —
live or reopened after a restart — so both show the same budgets, stop reason and evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QUrl, Slot
from PySide6.QtGui import QColor, QDesktopServices, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.ui.budget_widgets import stop_words

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev

VIEWABLE = {".md", ".txt", ".rst", ".csv", ".py", ".json", ".toml", ".yaml", ".yml", ".log"}
VIEWABLE_BYTES = 2 << 20
_LINES = re.compile(r"lines?\s+(\d+)(?:\s*[-–]\s*(\d+))?")


def cited_lines(location: str) -> tuple[int, int] | None:
    """``"lines 3-8"`` → (3, 8)."""
    match = _LINES.search(location)
    if match is None:
        return None
    first = int(match.group(1))
    return first, int(match.group(2) or first)


def summary_from_trace(lines: Sequence[dict[str, object]]) -> list[tuple[str, str]]:
    """The budgets a reply used, in rows of (what, how much), computed from its trace."""
    research = final = refunded = 0
    rounds = 0
    user_wait = 0.0
    stop = ""
    settings: dict[str, object] = {}
    for line in lines:
        kind = line.get("type")
        given = line.get("settings")
        if kind == "run_start" and isinstance(given, dict):
            settings = {str(key): value for key, value in given.items()}
        elif kind == "request":
            charged = int(str(line.get("charged", 0)))
            refunded += int(str(line.get("refunded", 0)))
            if line.get("phase") == "final":
                final += charged
            else:
                research += charged
        elif kind == "round_end":
            rounds = max(rounds, int(str(line.get("round", 0))))
        elif kind == "user_wait":
            user_wait += float(str(line.get("seconds", 0.0)))
        elif kind == "stop":
            stop = str(line.get("reason", ""))
    budget = settings.get("chat.research_token_budget", "?")
    rows = [
        ("Stopped because", stop_words(stop) or "—"),
        ("Rounds", str(rounds)),
        (
            "Research tokens",
            f"{research:,} of {budget:,}" if isinstance(budget, int) else str(research),
        ),
        ("Final answer tokens", f"{final:,}"),
        ("Tokens refunded", f"{refunded:,}"),
        ("Waiting for you", f"{user_wait:.1f} s (not counted)"),
    ]
    if lines:
        rows.append(("Total time", f"{float(str(lines[-1].get('t', 0.0))):.1f} s"))
    return rows


class RecordDialog(QDialog):
    """Budgets used, stop reason, evidence and the raw trace of one reply."""

    def __init__(
        self,
        question: str,
        evidence: tuple[ev.EvidenceItemView, ...],
        lines: Sequence[dict[str, object]],
        save_trace: Callable[[Path], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Research record")
        self.setAccessibleName("Research record")
        self.resize(720, 560)
        self._save_trace = save_trace
        rows = "".join(
            f"<tr><td><b>{what}</b></td><td>{value}</td></tr>"
            for what, value in summary_from_trace(lines)
        )
        sources = "".join(
            f"<li>[{item.id}] {item.source} · {item.location}</li>" for item in evidence
        )
        self.summary = QLabel(
            f"<p><i>{_escape(question)}</i></p><table cellspacing=4>{rows}</table>"
            f"<p><b>Evidence</b></p><ol style='list-style:none'>{sources or '<li>none</li>'}</ol>"
        )
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trace = QPlainTextEdit()
        self.trace.setReadOnly(True)
        self.trace.setAccessibleName("Trace")
        self.trace.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        import json  # noqa: PLC0415 - only the record needs it

        self.trace.setPlainText("\n".join(json.dumps(line, ensure_ascii=False) for line in lines))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.save_button = QPushButton("&Save trace…")
        self.save_button.setAccessibleName("Save the trace for a bug report")
        buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.save_button.clicked.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        trace_label = QLabel("&Trace (JSON Lines; no secrets)")
        trace_label.setBuddy(self.trace)
        layout.addWidget(trace_label)
        layout.addWidget(self.trace, 1)
        layout.addWidget(buttons)

    @Slot()
    def _save(self) -> None:
        path, _filter = QFileDialog.getSaveFileName(
            self, "Save trace", "imprint-trace.jsonl", "JSON Lines (*.jsonl)"
        )
        if path:
            self._save_trace(Path(path))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class DocumentViewer(QDialog):
    """A workspace text file with the cited lines highlighted and scrolled into view."""

    def __init__(
        self, title: str, text: str, lines: tuple[int, int] | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setAccessibleName(f"Document {title}")
        self.resize(760, 600)
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setAccessibleName("Document text")
        self.view.setPlainText(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)
        if lines is not None:
            self._highlight(*lines)

    def _highlight(self, first: int, last: int) -> None:
        document = self.view.document()
        start = document.findBlockByNumber(max(0, first - 1))
        end = document.findBlockByNumber(max(0, last - 1))
        if not start.isValid():
            return
        cursor = QTextCursor(start)
        if end.isValid():
            cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        selection = QTextEdit.ExtraSelection()
        highlight = QColor(self.palette().color(self.palette().ColorRole.Highlight))
        highlight.setAlpha(70)
        selection.format.setBackground(highlight)
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        selection.cursor = cursor
        self.view.setExtraSelections([selection])
        self.view.setTextCursor(QTextCursor(start))
        self.view.centerCursor()


def open_document(
    item: ev.EvidenceItemView, root: Path, parent: QWidget
) -> DocumentViewer | str | None:
    """Show a piece of evidence where it came from: a text file in the viewer at the cited lines,
    anything else (PDF, HTML) in the system's application, a web page in the browser.

    Returns the viewer it opened, or a sentence when the file is gone.
    """
    if item.source.startswith(("http://", "https://")):
        QDesktopServices.openUrl(QUrl(item.source))
        return None
    path = root / item.source
    if not path.is_file():
        return f"{item.source} is no longer in the workspace folder {root}."
    if path.suffix.lower() in VIEWABLE and path.stat().st_size <= VIEWABLE_BYTES:
        text = path.read_text(encoding="utf-8", errors="replace")  # one small file, asked for
        viewer = DocumentViewer(item.source, text, cited_lines(item.location), parent)
        viewer.show()
        return viewer
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
    return None
