"""Benchmark of the main window (issue 6): GUI responsiveness, opening history, startup.

In one run (offscreen by default, or on the display given by ``QT_QPA_PLATFORM``/``DISPLAY``):

- **stall while streaming** — a reply streams 200 tokens a second through the real loop thread and
  bridge while budget updates arrive 10 times a second; a timer-lag probe on the GUI thread (a 5 ms
  precise timer) records how late each tick is. Targets: worst < 50 ms, 99th percentile < 16 ms.
- **opening a conversation of 500 messages** (250 questions and answers with citations, tables and
  code), from the click to the transcript painted. Target < 300 ms.
- **startup to first paint** of the main window, as a ratio to a bare QMainWindow started the same
  way in the same run (fresh processes, alternating, median of five each). Target <= 2.5x.

Run ``python bench/bench_gui.py`` (``--seconds`` sets the streaming time). Prints the figures and
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_WORST_STALL = 0.050
TARGET_P99_STALL = 0.016
TARGET_OPEN_500 = 0.300
TARGET_STARTUP_RATIO = 2.5
TOKENS_PER_SECOND = 200
BUDGETS_PER_SECOND = 10
PROBE_MS = 5


def _private_dirs() -> Path:
    home = Path(tempfile.mkdtemp(prefix="imprint-bench-gui-"))
    os.environ["IMPRINT_CONFIG_DIR"] = str(home / "config")
    os.environ["IMPRINT_DATA_DIR"] = str(home / "data")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return home


# --- startup (child processes) ------------------------------------------------------------------


def child_first_paint(kind: str) -> None:
    """Print CLOCK_MONOTONIC at the window's first paint; the parent started the clock."""
    _private_dirs()
    from PySide6.QtCore import QEvent, QObject, QTimer  # noqa: PLC0415
    from PySide6.QtWidgets import QApplication, QMainWindow  # noqa: PLC0415

    class FirstPaint(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint and not hasattr(self, "done"):
                self.done = time.monotonic()
                print(f"{self.done:.6f}", flush=True)
                QTimer.singleShot(0, QApplication.quit)
            return False

    watcher = FirstPaint()
    if kind == "bare":
        app = QApplication(sys.argv[:1])
        window = QMainWindow()
        window.resize(1180, 760)
        window.installEventFilter(watcher)
        window.show()
        app.exec()
        return
    # Exactly what ``imprint gui`` does (imprint_desktop.app.run), with the paint watcher added.
    import qasync  # noqa: PLC0415

    from imprint_desktop.app import (  # noqa: PLC0415
        create_application,
        new_secret_store,
        open_main_window,
    )
    from imprint_desktop.settings.store import SettingsStore  # noqa: PLC0415

    app = create_application(sys.argv[:1])
    main = open_main_window(SettingsStore(), new_secret_store)
    main.installEventFilter(watcher)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_forever()
    main.close()


def startup_seconds(runs: int = 5) -> tuple[float, float]:
    """Median seconds from spawning the process to the first paint: (bare, main window).

    The two kinds alternate, so a change in the machine's load during the run hits both alike.
    """
    times: dict[str, list[float]] = {"bare": [], "main": []}
    for _ in range(runs):
        for kind in ("bare", "main"):
            started = time.monotonic()
            out = subprocess.run(
                [sys.executable, __file__, "--child", kind],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
            times[kind].append(float(out.strip().splitlines()[-1]) - started)
    return statistics.median(times["bare"]), statistics.median(times["main"])


# --- in-process measurements ------------------------------------------------------------------


class StreamingProvider:
    """Streams ``tokens`` tokens at 200 a second, then answers; no tools.

    Every 20th token it also calls ``on_budget`` — on the loop thread, as the engine's own
    budget events are sent — which makes the 10 budget updates a second.
    """

    name = "bench"
    exact_counts = True
    parameters: int | None = None
    context_window = 32_768

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.on_budget: Callable[[float], None] = lambda _t: None

    async def count_prompt(self, request: object) -> int:
        return 500

    async def complete(
        self, request: object, cancel: object, on_text: Callable[[str], None] | None
    ):  # type: ignore[no-untyped-def]
        from imprint_desktop.core.providers.base import Completion  # noqa: PLC0415

        text = []
        interval = 1.0 / TOKENS_PER_SECOND
        start = time.monotonic()
        for index in range(self.tokens):
            token = f"word{index} " if index % 40 else f"\n\n**Part {index // 40}** [1] "
            text.append(token)
            if on_text is not None:
                on_text(token)
            if index % (TOKENS_PER_SECOND // BUDGETS_PER_SECOND) == 0:
                self.on_budget(time.monotonic() - start)
            await asyncio.sleep(max(0.0, start + (index + 1) * interval - time.monotonic()))
        return Completion(
            text="".join(text),
            tool_calls=(),
            stop="stop",
            prompt_tokens=500,
            reused_prefix=0,
            prompt_evaluated=500,
            output_tokens=self.tokens,
        )

    async def aclose(self) -> None:
        return None


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure_streaming(seconds: float) -> tuple[float, float, int, int]:
    """(worst lag, p99 lag, ticks, renders) while a reply streams and budgets update."""
    from gui_lag import LagProbe  # noqa: PLC0415 - Qt loads here, after the startup figures
    from PySide6.QtCore import QTimer  # noqa: PLC0415
    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    from imprint_desktop.app import build_window  # noqa: PLC0415
    from imprint_desktop.background import payloads as p  # noqa: PLC0415
    from imprint_desktop.core.research import events as ev  # noqa: PLC0415
    from imprint_desktop.settings.secrets import SecretStore  # noqa: PLC0415
    from imprint_desktop.settings.store import SettingsStore  # noqa: PLC0415

    tokens = int(seconds * TOKENS_PER_SECOND)
    provider = StreamingProvider(tokens)

    async def factory(*_args: object) -> StreamingProvider:
        return provider

    window = build_window(SettingsStore(), SecretStore(), provider_factory=factory)  # type: ignore[arg-type]
    window.show()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    probe = LagProbe(PROBE_MS)
    bridge = window.bridge
    reply_id = [0]

    def budget(t: float) -> None:  # called on the loop thread
        update = ev.BudgetUpdate(t, t, 300.0, False, int(t * 100), 1024, 65536, 1, 4, 1, 3)
        bridge._relay.sig_payload.emit(p.ReplyEvent(reply_id[0], update))

    provider.on_budget = budget

    ended: list[object] = []

    def reply_ended(payload: object) -> None:
        ended.append(payload)
        # Stop measuring first: quitting closes the window, which joins the loop thread.
        QTimer.singleShot(0, probe.stop)
        QTimer.singleShot(0, app.quit)

    window.bridge.sig_reply_ended.connect(reply_ended)

    def start() -> None:
        probe.start()
        window.composer.edit.setPlainText("Stream a long answer, please.")
        window.composer.submit()
        reply_id[0] = bridge.current_reply_id

    QTimer.singleShot(300, start)
    QTimer.singleShot(int((seconds + 30) * 1000), app.quit)  # a safety net, never the measure
    app.exec()
    probe.stop()
    renders = window.transcript.renders
    window.close()
    if not ended:
        raise SystemExit("the streamed reply did not end")
    # Skip the first ticks: they include the model "loading" and the first index of the workspace.
    steady = probe.steady(0.3)
    return max(steady), percentile(steady, 0.99), len(steady), renders


def measure_open_500() -> float:
    """Seconds from choosing a 500-message conversation to its transcript painted."""
    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    from imprint_desktop.app import build_window  # noqa: PLC0415
    from imprint_desktop.core.history import HistoryStore  # noqa: PLC0415
    from imprint_desktop.core.research import events as ev  # noqa: PLC0415
    from imprint_desktop.settings.secrets import SecretStore  # noqa: PLC0415
    from imprint_desktop.settings.store import SettingsStore  # noqa: PLC0415

    history = HistoryStore()
    conversation = history.create_conversation("Five hundred messages")
    answer = (
        "The keepers logged fog [1] and wind [2].\n\n| Year | Hours |\n|---|---|\n| 1902 | 410 |\n"
        "| 1978 | 220 |\n\n```python\nhours = sum(log)\n```\n\nSee also [3]. " + "More words. " * 40
    )
    evidence = tuple(
        ev.EvidenceItemView(n, f"stations/doc{n}.md", "lines 1-5", "excerpt") for n in (1, 2, 3)
    )
    for number in range(250):
        recorder = history.start_reply(conversation, f"Question {number} about the light?")
        result = ev.ReplyResult(
            answer, "model", "answered", 2, evidence, ev.TokenTotals(65536, 900, 100, 0), 3.0, 0.0
        )
        recorder(ev.ReplyFinished(1.0, result))
    history.close()

    window = build_window(SettingsStore(), SecretStore())
    window.show()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    listed: list[object] = []
    window.bridge.sig_conversations_listed.connect(listed.append)
    while not listed:
        app.processEvents()
    loaded: list[object] = []
    window.bridge.sig_conversation_loaded.connect(loaded.append)
    started = time.perf_counter()
    window.session.open_conversation(conversation)
    while not loaded:
        app.processEvents()
    window.transcript.viewport().repaint()
    elapsed = time.perf_counter() - started
    count = len(window.transcript.messages)
    window.close()
    if count != 500:
        raise SystemExit(f"expected 500 messages, the transcript shows {count}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0, help="streaming time")
    parser.add_argument("--child", choices=("bare", "main"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_first_paint(args.child)
        return 0
    _private_dirs()
    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    from imprint_desktop.app import create_application  # noqa: PLC0415

    create_application(sys.argv[:1])
    print(f"platform: {QApplication.platformName()}")
    worst, p99, ticks, renders = measure_streaming(args.seconds)
    print(
        f"stall while streaming {TOKENS_PER_SECOND} tokens/s + {BUDGETS_PER_SECOND} budget "
        f"updates/s: worst {worst * 1000:.1f} ms (target < {TARGET_WORST_STALL * 1000:.0f}), "
        f"p99 {p99 * 1000:.1f} ms (target < {TARGET_P99_STALL * 1000:.0f}); {ticks} probe ticks, "
        f"{renders} transcript renders"
    )
    opened = measure_open_500()
    print(f"open a 500-message conversation: {opened * 1000:.0f} ms (target < 300)")
    bare, main_window = startup_seconds()
    ratio = main_window / bare
    print(
        f"startup to first paint: main window {main_window * 1000:.0f} ms, bare QMainWindow "
        f"{bare * 1000:.0f} ms, ratio {ratio:.2f}x (target <= {TARGET_STARTUP_RATIO})"
    )
    misses = [
        name
        for name, ok in (
            ("worst stall", worst < TARGET_WORST_STALL),
            ("p99 stall", p99 < TARGET_P99_STALL),
            ("open 500", opened < TARGET_OPEN_500),
            ("startup ratio", ratio <= TARGET_STARTUP_RATIO),
        )
        if not ok
    ]
    print("all targets met" if not misses else f"MISSED: {', '.join(misses)}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
