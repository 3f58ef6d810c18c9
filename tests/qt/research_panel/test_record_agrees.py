"""The research record agrees with itself (issue 41, item 5).

A round begins when the model's request returns the calls it asks for; Imprint's own search before
the model is round 0 (DESIGN §1). Stopped while the model was asked for its first round, the record
once said "Rounds: 0" beside an activity group "Round 1", and its chart's stop label ("stopped:
stopped by you") was drawn over the legend. The real window, Stop pressed with the mouse while the
scripted model works: the panel, the record's figures, activity and chart all count the same
rounds, and the stop label stays clear of the legend (by geometry).
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPixmap
from pytestqt.qtbot import QtBot

from imprint_desktop.background import payloads as p
from imprint_desktop.core.research.record.chart import chart_places
from imprint_desktop.core.research.record.rows import STOPPED_GROUP
from imprint_desktop.settings.store import SettingsStore
from imprint_desktop.ui.research_panel.activity import ActivityModel
from imprint_desktop.ui.research_panel.record_dialog import RecordDialog
from tests.qt.research_harness import open_window, type_question
from tests.qt.research_panel.test_record_grounding import open_record
from tests.support.scripted_provider import Step

WAIT_MS = 10_000
SETTINGS = {"chat.research_timeout_sec": 100, "chat.research_token_budget": 10_000}


def titles(model: ActivityModel) -> list[str]:
    """The activity's group headings, as shown."""
    shown = (model.index(row, 0) for row in range(model.rowCount()))
    return [
        str(index.data())
        for index in shown
        if index.data(Qt.ItemDataRole.FontRole) is not None
        and index.data(Qt.ItemDataRole.FontRole).bold()
    ]


def assert_label_clear_of_legend(record: RecordDialog) -> None:
    chart = record.chart
    chart.plot_widget.grab()  # painted: the label takes its place in the view as it is painted
    label = chart.stop_text.sceneBoundingRect()
    assert not label.isEmpty()
    assert not label.intersects(chart.legend.sceneBoundingRect())
    for sample, text in chart.legend.items:
        assert not label.intersects(sample.sceneBoundingRect())
        assert not label.intersects(text.sceneBoundingRect())
    assert chart.plot.vb.sceneBoundingRect().contains(label)  # whole, not cut at an edge


def test_stopped_during_the_first_request_the_record_counts_no_round(
    qtbot: QtBot, research_store: SettingsStore
) -> None:
    hang = Step(hang=True)
    window = open_window(qtbot, research_store, [hang]).window
    type_question(qtbot, window, "What is the wall made of?")
    qtbot.waitUntil(hang.started.is_set, timeout=WAIT_MS)
    with qtbot.waitSignal(window.bridge.sig_reply_ended, timeout=WAIT_MS) as ended:
        qtbot.mouseClick(window.composer.button, Qt.MouseButton.LeftButton)
    assert ended.args[0].outcome is p.Outcome.CANCELLED

    panel = window.panel
    assert panel.counters.text().startswith("0 rounds done")
    assert titles(panel.activity_model)[-1] == "Stopped during the model's request"
    assert not any(title.startswith("Round") for title in titles(panel.activity_model))

    record = open_record(qtbot, window)
    report = record.report
    assert dict(report.summary.figures())["Rounds"] == "0"
    assert titles(record.activity_model) == titles(panel.activity_model)
    assert [group for group, _ in report.groups()] == [0, STOPPED_GROUP]
    assert chart_places(report) == ((0, "0"), (1, "stopped"))
    assert "after round 0" in record.chart.accessibleDescription()
    assert_label_clear_of_legend(record)
    for width in (record.minimumWidth() or record.minimumSizeHint().width(), 1400):
        record.resize(width, 820)  # as narrow as it goes, and wide
        qtbot.waitUntil(lambda w=width: record.width() == w)
        assert_label_clear_of_legend(record)
    record.close()


@pytest.mark.parametrize(
    ("lines", "places"),
    [
        (  # the time ran out in Imprint's own search: the stop at the left edge
            [
                {"t": 0.0, "type": "run_start", "question": "Q?", "settings": SETTINGS},
                {"t": 0.5, "type": "round_end", "round": 0, "progress": False,
                 "excluded": False, "no_progress_rounds": 0},
                {"t": 0.5, "type": "stop", "reason": "time_budget"},
                {"t": 0.5, "type": "final", "mode": "fallback", "seconds": 0.0},
            ],
            ((0, "0"),),
        ),
        (  # the model answered after its first round
            [
                {"t": 0.0, "type": "run_start", "question": "Q?", "settings": SETTINGS},
                {"t": 1.0, "type": "request", "phase": "research", "round": 1, "charged": 900,
                 "reserved": 1500, "refunded": 100},
                {"t": 2.0, "type": "tool", "round": 1, "call_id": "c1",
                 "name": "search_workspace", "status": "ok", "new_evidence": 0},
                {"t": 2.0, "type": "round_end", "round": 1, "progress": False,
                 "excluded": False, "no_progress_rounds": 1},
                {"t": 3.0, "type": "request", "phase": "research", "round": 2, "charged": 9800,
                 "reserved": 9900, "refunded": 100},
                {"t": 3.0, "type": "stop", "reason": "answered"},
                {"t": 3.0, "type": "final", "mode": "model", "seconds": 0.0},
            ],
            ((0, "0"), (1, "1"), (2, "answer")),
        ),
    ],
)  # fmt: skip
def test_the_stop_label_is_clear_of_the_legend_wherever_research_stopped(
    qtbot: QtBot, lines: list[dict[str, Any]], places: tuple[tuple[int, str], ...]
) -> None:
    record = RecordDialog("Q?", (), lines, lambda _path: None)
    qtbot.addWidget(record)
    record.show()
    qtbot.waitExposed(record)
    assert chart_places(record.report) == places
    assert_label_clear_of_legend(record)


def test_every_quarter_of_the_budgets_is_named_on_the_axis(qtbot: QtBot) -> None:
    lines: list[dict[str, Any]] = [
        {"t": 0.0, "type": "run_start", "question": "Q?", "settings": SETTINGS},
        {"t": 0.5, "type": "stop", "reason": "time_budget"},
    ]
    record = RecordDialog("Q?", (), lines, lambda _path: None)
    qtbot.addWidget(record)
    record.show()
    qtbot.waitExposed(record)
    axis = record.chart.plot.getAxis("left")
    canvas = QPixmap(10, 10)
    painter = QPainter(canvas)
    try:  # the words the axis draws, as it lays them out to paint
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert sorted(text for _rect, _flags, text in texts) == ["0%", "100%", "25%", "50%", "75%"]
