"""Blocking tools past the research deadline (issue 42, item 3; ADR 0102's third condition).

Run: .venv/bin/python bench/bench_deadlines.py [--trials N]

The engine researches on a scripted model with the real toolbox over a real workspace, and each
reply's research time runs out while a tool blocks: a document whose reader never returns (a PDF
in the isolated reader), a web page whose body never finishes (a page server on 127.0.0.1), and,
for comparison, a search and a note that end in time. For each kind it prints the distribution of
``past_deadline`` — how far past the deadline the call returned, as its trace line says — and how
long the reply's worker threads ran on once the reply had ended (the loop's thread pool shut down,
every worker process gone). The baseline, measured in the same run, is how late the loop's own
timer fires (``asyncio.sleep``): a tool given up on at the deadline cannot return sooner than that.
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.config import NetworkConfig  # noqa: E402
from imprint_desktop.core.net import make_async_client  # noqa: E402
from imprint_desktop.core.providers.base import CompletionRequest  # noqa: E402
from imprint_desktop.core.research import events as ev  # noqa: E402
from imprint_desktop.core.research.engine import ResearchEngine  # noqa: E402
from imprint_desktop.core.tools import Toolbox  # noqa: E402
from imprint_desktop.core.workspace import ExtractionLimits, Workspace  # noqa: E402
from tests.support.ask_command import stalled_page  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402
from tests.support.research_run import Recorder  # noqa: E402
from tests.support.scripted_provider import ScriptedProvider, Step  # noqa: E402
from tests.support.settings import make_config, research_settings  # noqa: E402
from tests.unit.workspace import hostile_files  # noqa: E402

RNG = random.Random(42)
#: Targets: a call given up on returns this soon after the deadline; threads end this soon after.
PAST_TARGET = 0.25
WIND_DOWN_TARGET = 1.0
failures: list[str] = []


@dataclass(frozen=True)
class Kind:
    """One kind of call: what the model asks, and whether it blocks past the deadline."""

    name: str
    tool: str
    arguments: Callable[[str], dict[str, Any]]
    blocks: bool


KINDS = (
    Kind("read: a document whose reader never returns", "read_document",
         lambda _web: {"path": "stuck.pdf"}, blocks=True),
    Kind("fetch: a page whose body never finishes", "fetch_url",
         lambda web: {"url": f"{web}/stalled"}, blocks=True),
    Kind("search: ends in time", "search_workspace",
         lambda _web: {"query": "harbour light keeper"}, blocks=False),
    Kind("write: ends in time", "write_note",
         lambda _web: {"title": "Keeper", "content": "Ada Quill kept the light."}, blocks=False),
)  # fmt: skip


@dataclass(frozen=True)
class Trial:
    past_deadline: float
    status: str
    wind_down: float
    children_left: int


def folder(root: Path) -> Path:
    """A workspace of a few documents and a real PDF, indexed, and then a PDF whose reader never
    returns (added after indexing, as a file saved during a reply is)."""
    docs = root / "docs"
    docs.mkdir()
    for number in range(40):
        (docs / f"log-{number:02}.md").write_text(
            f"# Log {number}\n\nThe harbour light keeper wrote entry {number} by lamplight.\n",
            encoding="utf-8",
        )
    shutil.copy(ROOT / "resources/sample-workspace/reports/annual-report-1998.pdf", docs)
    with Workspace(docs) as workspace:
        workspace.index.update()
    (docs / "stuck.pdf").write_bytes(b"%PDF-1.4\n" + hostile_files.MARKER + b"\n%%EOF\n")
    return docs


def one_reply(docs: Path, web: str, kind: Kind, research_seconds: float) -> Trial:
    """One reply whose first request calls ``kind``'s tool under ``research_seconds``."""

    def model(request: CompletionRequest) -> Step:
        if request.phase == "final" or any(m.role == "tool" for m in request.messages):
            return Step("Done.")
        return Step(calls=[(kind.tool, kind.arguments(web))])

    limits = ExtractionLimits(base_seconds=60.0, seconds_per_mb=0.0, reader=hostile_files.hanging)
    overrides = {"chat.research_first": False, "tools.fetch_url_confirm": False}
    settings = research_settings(overrides, timeout_sec=research_seconds)
    recorder = Recorder()
    loop = asyncio.new_event_loop()
    try:
        with Workspace(docs, extraction=limits) as workspace:

            async def reply() -> None:
                async with make_async_client(NetworkConfig(proxy="", ca_bundle="")) as http:
                    toolbox = Toolbox(workspace, make_config(overrides).tools, http)
                    engine = ResearchEngine(ScriptedProvider(model), settings, sink=recorder)
                    await engine.run("Who kept the light?", toolbox)

            loop.run_until_complete(reply())
            ended = time.perf_counter()
            loop.run_until_complete(loop.shutdown_default_executor())
            wind_down = time.perf_counter() - ended
            children = len(multiprocessing.active_children())
    finally:
        loop.close()
    (finished,) = [e for e in recorder.of(ev.ToolFinished) if e.name == kind.tool]
    return Trial(finished.past_deadline, finished.status, wind_down, children)


def timer_lateness(trials: int) -> list[float]:
    """How late ``asyncio.sleep`` returns on this machine now: the floor for any deadline."""

    async def late(seconds: float) -> float:
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        return time.perf_counter() - started - seconds

    return [asyncio.run(late(RNG.uniform(0.05, 0.2))) for _ in range(trials)]


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (
        f"median {statistics.median(ordered) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, "
        f"max {ordered[-1] * 1000:.1f} ms"
    )


def check(name: str, value: float, target: float, extra: str = "") -> None:
    ok = value <= target
    print(f"  {name}: {value:.3f} s (target <= {target} s) {'ok' if ok else 'MISSED'}  {extra}")
    if not ok:
        failures.append(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="replies per kind of call")
    args = parser.parse_args()
    baseline = timer_lateness(args.trials * 2)
    floor = statistics.median(baseline)
    print(f"The loop's timer fires late by: {summary(baseline)} (the floor)")
    with tempfile.TemporaryDirectory() as temporary, OpenAIServer() as web:
        os.environ["IMPRINT_DATA_DIR"] = str(Path(temporary) / "data")  # the index goes there
        web.script(*[stalled_page()] * (args.trials + 2), path="/stalled")
        docs = folder(Path(temporary))
        for kind in KINDS:
            print(f"{kind.name} ({args.trials} replies, research time 0.6-1.2 s)")
            trials = [
                one_reply(docs, web.url, kind, RNG.uniform(0.6, 1.2)) for _ in range(args.trials)
            ]
            past = [trial.past_deadline for trial in trials]
            statuses = sorted({trial.status for trial in trials})
            print(f"  past_deadline: {summary(past)}; statuses {', '.join(statuses)}")
            ratio = statistics.median(past) / floor if floor > 0 else float("inf")
            if kind.blocks:
                check(
                    "past the deadline, worst",
                    max(past),
                    PAST_TARGET,
                    f"(median {ratio:.0f}x the timer's own lateness)",
                )
            check(
                "threads running on after the reply, worst",
                max(trial.wind_down for trial in trials),
                WIND_DOWN_TARGET,
                f"(worker processes left: {max(trial.children_left for trial in trials)})",
            )
            if any(trial.children_left for trial in trials):
                failures.append(f"{kind.name}: worker processes left")
        web.release()
    if failures:
        print(f"\nMISSED: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
