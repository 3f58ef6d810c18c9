"""Make the README's screenshots of research: the panel mid-research and the research record.

Runs the real window on Xvfb (the xcb platform, as a person's desktop), in private config and data
folders, on a copy of the sample workspace, with a scripted model: searches, a read, a read that
fails, rounds that find nothing new, and a stop on patience. The model is held in the middle of one
request for the mid-research picture. Light and dark theme each run in a fresh process.

    python docs/screenshots.py            # docs/images/research-{panel,record}-{light,dark}.png
    python docs/screenshots.py --out DIR  # somewhere else

Needs Xvfb (``scripts/system-deps.sh test`` installs it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QUESTION = "When was the Gannet Point light first lit, and who built it?"
HELD_REQUEST = 5  # the research request the model is held in for the mid-research picture
THINKING = 1.5  # seconds each scripted request takes


def search(query: str) -> tuple[str, dict[str, Any]]:
    return ("search_workspace", {"query": query})


def read(path: str, start: int | None = None, end: int | None = None) -> tuple[str, dict[str, Any]]:
    arguments: dict[str, Any] = {"path": path}
    if start is not None:
        arguments |= {"start_line": start, "end_line": end}
    return ("read_document", arguments)


def shoot(theme: str, out: Path) -> None:  # noqa: PLR0915 - one scripted session, start to end
    from PySide6.QtCore import QEventLoop, QTimer  # noqa: PLC0415

    from imprint_desktop.app import build_window, create_application  # noqa: PLC0415
    from imprint_desktop.core.providers.base import CompletionRequest  # noqa: PLC0415
    from imprint_desktop.settings.secrets import SecretStore  # noqa: PLC0415
    from imprint_desktop.settings.store import SettingsStore  # noqa: PLC0415
    from tests.support.scripted_provider import ScriptedProvider, Step  # noqa: PLC0415

    research = iter(
        [
            Step(calls=[search("Gannet Point first lit")]),
            Step(calls=[read("stations/gannet-point.md", 1, 12), read("stations/gannet.md")]),
            Step(calls=[search("Elias Brandt engineer")]),
            Step(calls=[search("Gannet Point first lit")]),
            Step(calls=[search("Gannet lighthouse lit 1857")]),
            Step(calls=[search("Gannet Point first lit")]),
        ]
    )

    def script(request: CompletionRequest) -> Step:
        if request.phase == "final":
            return Step(
                "Gannet Point was first lit on **1 November 1857** [1]. Its engineer was "
                "Elias Brandt [2]."
            )
        return next(research, Step(calls=[search("Gannet Point first lit")]))

    class Held(ScriptedProvider):
        """The scripted model, held in one request until the picture is taken."""

        def __init__(self) -> None:
            super().__init__(script)
            self.holding = threading.Event()
            self.release = threading.Event()

        async def complete(
            self, request: CompletionRequest, cancel: Any, on_text: Any = None
        ) -> Any:
            if request.phase == "research" and len(self.requests) + 1 == HELD_REQUEST:
                self.holding.set()
                await asyncio.to_thread(self.release.wait, 60)
            await asyncio.sleep(THINKING)  # a model takes a while: the clock has something to show
            return await super().complete(request, cancel, on_text)

    provider = Held()

    async def factory(*_args: object) -> Held:
        return provider

    workspace = Path(tempfile.mkdtemp(prefix="imprint-shots-")) / "sample-workspace"
    shutil.copytree(ROOT / "resources" / "sample-workspace", workspace)
    app = create_application([sys.argv[0]])
    store = SettingsStore()
    store.update(
        {
            "ui.theme": theme,
            "workspace.path": str(workspace),
            "chat.research_no_progress_rounds": 3,
            "chat.research_timeout_sec": 60,
        }
    )
    window = build_window(store, SecretStore(), provider_factory=factory, downloads=False)  # type: ignore[arg-type]
    window.resize(1280, 800)
    window.show()
    window.splitter.setSizes([200, 590, 490])

    def run_until(done: Callable[[], bool], timeout: float = 30.0) -> None:
        loop = QEventLoop()
        poll = QTimer()
        poll.timeout.connect(lambda: loop.quit() if done() else None)
        poll.start(20)
        deadline = time.monotonic() + timeout
        guard = QTimer()
        guard.timeout.connect(lambda: loop.quit() if time.monotonic() > deadline else None)
        guard.start(200)
        loop.exec()
        poll.stop()
        guard.stop()
        if not done():
            raise SystemExit(f"timed out ({theme}): {done}")

    def settle(seconds: float) -> None:
        end = time.monotonic() + seconds
        run_until(lambda: time.monotonic() >= end)

    settle(1.0)
    window.composer.edit.setPlainText(QUESTION)
    window.composer.submit()
    run_until(provider.holding.is_set)
    settle(1.2)  # a few ticks of the clock, and the activity list's last update
    window.grab().save(str(out / f"research-panel-{theme}.png"))

    ended: list[object] = []
    window.bridge.sig_reply_ended.connect(ended.append)
    provider.release.set()
    run_until(lambda: bool(ended))
    loaded: list[object] = []
    window.bridge.sig_trace_loaded.connect(loaded.append)
    window.opener.open_record(window.session.last_answer_index())
    run_until(lambda: bool(loaded) and window.opener.record is not None)
    record = window.opener.record
    assert record is not None
    record.resize(1000, 860)
    settle(0.8)
    record.grab().save(str(out / f"research-record-{theme}.png"))
    record.close()
    window.close()
    app.processEvents()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--theme", choices=("light", "dark"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.theme:
        shoot(args.theme, args.out)
        return 0
    from tests.support.display import xvfb  # noqa: PLC0415

    home = Path(tempfile.mkdtemp(prefix="imprint-shots-home-"))
    with xvfb(1400, 1000) as display:
        for theme in ("light", "dark"):
            env = {
                **os.environ,
                "DISPLAY": display,
                "QT_QPA_PLATFORM": "xcb",
                "IMPRINT_CONFIG_DIR": str(home / theme / "config"),
                "IMPRINT_DATA_DIR": str(home / theme / "data"),
                "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            }
            subprocess.run(
                [sys.executable, __file__, "--theme", theme, "--out", str(args.out)],
                env=env,
                check=True,
                timeout=300,
            )
            print(f"{theme}: {args.out}/research-panel-{theme}.png, research-record-{theme}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
