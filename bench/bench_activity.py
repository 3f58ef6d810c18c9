"""Benchmark of the research panel's activity list (issue 16): 200 tool calls a second, live.

Three runs in one process, each the same length, each with a lag probe on the GUI thread (a 5 ms
precise timer; how late each tick is):

- **idle** — the panel shown, no events: the machine's own noise, the baseline of the stalls;
- **per event** — the same panel, its activity list updated at every event (no coalescing): the
  baseline of the GUI thread's work;
- **panel** — the research panel as the window feeds it (``ResearchPanel.apply``): events are
  coalesced by a single-shot timer, as the transcript coalesces tokens.

The events come from another thread through a queued signal, as the bridge delivers them: every
tool call is a ToolStarted and a ToolFinished (every other one with a new piece of evidence), each
round of five calls opens with a request (RequestStarted/RequestFinished), and budgets update ten
times a second. Targets for the panel: worst stall < 50 ms, 99th percentile < 16 ms, every row shown
once the stream ends, at most 12 view updates a second.

Run ``python bench/bench_activity.py`` (``--seconds``: each run's length). Prints the figures and
ratios against the baselines and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from gui_lag import LagProbe  # noqa: E402
from PySide6.QtCore import QEventLoop, QObject, Qt, QTimer, Signal  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

import imprint_desktop.background  # noqa: E402, F401 - guards None/True/False, as in the app
from imprint_desktop.core.research import events as ev  # noqa: E402
from tests.support.settings import make_config  # noqa: E402

CALLS_PER_SECOND = 200
CALLS_PER_ROUND = 5
BUDGETS_PER_SECOND = 10
PROBE_MS = 5
TARGET_WORST = 0.050
TARGET_P99 = 0.016
TARGET_UPDATES_PER_SECOND = 12


def stream(seconds: float) -> list[tuple[float, ev.Event]]:
    """The events of ``seconds`` of research at 200 tool calls a second, with their send times."""
    timed: list[tuple[float, ev.Event]] = []
    calls = int(seconds * CALLS_PER_SECOND)
    interval = 1.0 / CALLS_PER_SECOND
    evidence = 0
    for number in range(calls):
        at = number * interval
        round_number = 1 + number // CALLS_PER_ROUND
        if number % CALLS_PER_ROUND == 0:
            timed.append((at, ev.RequestStarted(at, "research", round_number, 4000, 5024)))
            timed.append(
                (
                    at,
                    ev.RequestFinished(
                        at, "research", round_number, 4000, 5024, 3500, 500, 120, 620, 4404,
                        60000, False, None, "tool_calls",
                    ),
                )
            )  # fmt: skip
        call = f"call_{number}"
        query = f"harbour light {number % 37}"
        timed.append(
            (
                at,
                ev.ToolStarted(
                    at, round_number, call, "search_workspace", "read", f"Searching '{query}'"
                ),
            )
        )
        found: tuple[ev.EvidenceItemView, ...] = ()
        if number % 2 == 0:
            evidence += 1
            found = (
                ev.EvidenceItemView(
                    evidence, f"stations/doc{number % 50}.md", "lines 10-40", "The light. " * 8
                ),
            )
        timed.append(
            (
                at + interval / 2,
                ev.ToolFinished(
                    at + interval / 2, round_number, call, "search_workspace", "read", "ok",
                    len(found), 1 - len(found), 0.002, found,
                ),
            )
        )  # fmt: skip
    for tick in range(int(seconds * BUDGETS_PER_SECOND)):
        at = tick / BUDGETS_PER_SECOND
        update = ev.BudgetUpdate(at, at, 300.0, False, int(at * 900), 5024, 65536, 0, 4, 1, 1)
        timed.append((at, update))
    timed.sort(key=lambda pair: pair[0])
    return timed


class Relay(QObject):
    """Carries events from the sending thread to the GUI thread (queued), as the bridge does."""

    sig_event = Signal(object)


@dataclass
class Run:
    name: str
    worst: float
    p99: float
    busy: float  # CPU seconds of the GUI thread during the run
    events: int
    updates: int


def measure(
    name: str, seconds: float, handle: Callable[[ev.Event], None] | None, updates: Callable[[], int]
) -> Run:
    """Send the stream (or nothing, for ``handle=None``) and probe the GUI thread's lag."""
    timed = stream(seconds) if handle is not None else []
    relay = Relay()
    if handle is not None:
        relay.sig_event.connect(handle, Qt.ConnectionType.QueuedConnection)
    probe = LagProbe(PROBE_MS, name)

    def send() -> None:
        start = time.monotonic()
        for at, event in timed:
            delay = start + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            relay.sig_event.emit(event)

    sender = threading.Thread(target=send, name="bench-sender")
    before = updates()
    cpu = time.thread_time()  # the GUI thread's CPU time: handling, layout and painting
    probe.start()
    sender.start()
    run_for(seconds + 0.3)
    sender.join()
    run_for(0.1)  # what is still queued, and the last coalesced update
    probe.stop()
    busy = time.thread_time() - cpu
    steady = probe.steady(0.2)
    return Run(
        name,
        max(steady),
        sorted(steady)[min(len(steady) - 1, int(0.99 * len(steady)))],
        busy,
        len(timed),
        updates() - before,
    )


def run_for(seconds: float) -> None:
    """Let the GUI thread's event loop run, as the window's does."""
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each run")
    args = parser.parse_args()
    QApplication(sys.argv[:1])
    from imprint_desktop.ui.research_panel.panel import ResearchPanel  # noqa: PLC0415

    print(f"platform: {QApplication.platformName()}")

    def shown_panel() -> ResearchPanel:
        panel = ResearchPanel()
        panel.resize(380, 820)
        panel.show()
        run_for(0.1)
        panel.begin("Starting…")
        panel.apply(ev.ReplyStarted(0.0, "Bench?", make_config(), "bench"))
        return panel

    quiet = shown_panel()
    idle = measure("idle", args.seconds, None, lambda: 0)
    quiet.close()

    eager = shown_panel()

    def every_event(event: ev.Event) -> None:
        eager.apply(event)
        eager.activity_model.flush()

    per_event = measure(
        "per event", args.seconds, every_event, lambda: eager.activity_model.flushes
    )
    eager.close()

    panel = shown_panel()
    coalesced = measure("panel", args.seconds, panel.apply, lambda: panel.activity_model.flushes)
    panel.finish("answered", ())
    calls = int(args.seconds * CALLS_PER_SECOND)
    rounds = -(-calls // CALLS_PER_ROUND)
    model = panel.activity_model
    shown = sum(model.row_at(model.index(row, 0)) is not None for row in range(model.rowCount()))
    expected = calls + rounds  # every call, and a request per round

    for run in (idle, per_event, coalesced):
        print(
            f"{run.name:>9}: worst stall {run.worst * 1000:5.1f} ms, p99 {run.p99 * 1000:5.1f} ms, "
            f"GUI thread CPU {run.busy * 1000:6.0f} ms for {run.events} events, "
            f"{run.updates} view updates"
        )
    per_second = coalesced.updates / args.seconds
    print(
        "ratios of the panel to this run's baselines: GUI thread CPU "
        f"{coalesced.busy / max(per_event.busy, 1e-9):.2f}x of per-event updates, worst stall "
        f"{coalesced.worst / max(per_event.worst, 1e-9):.2f}x of per-event, p99 stall "
        f"{coalesced.p99 / max(idle.p99, 1e-4):.2f}x of idle"
    )
    print(
        f"panel: {shown} of {expected} rows shown when the stream ended; "
        f"{per_second:.0f} view updates a second"
    )
    misses = [
        name
        for name, ok in (
            ("worst stall", coalesced.worst < TARGET_WORST),
            ("p99 stall", coalesced.p99 < TARGET_P99),
            ("rows shown", shown == expected),
            ("updates per second", per_second <= TARGET_UPDATES_PER_SECOND),
        )
        if not ok
    ]
    print("all targets met" if not misses else f"MISSED: {', '.join(misses)}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
