"""Research engine benchmark: the engine's own cost per round, fingerprinting speed, the evidence
store's memory bound, and Stop latency while a remote stream is open.

Run: .venv/bin/python bench/bench_engine.py
Each figure is printed with the target from issue 4 and, where it helps to judge a noisy shared
machine, a ratio against a baseline measured in the same run. Exits 1 when a target is missed.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import random
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.cancel import CancelToken  # noqa: E402
from imprint_desktop.core.config import NetworkConfig  # noqa: E402
from imprint_desktop.core.net import make_async_client  # noqa: E402
from imprint_desktop.core.providers.base import ToolCall  # noqa: E402
from imprint_desktop.core.providers.remote.client import RemoteProvider  # noqa: E402
from imprint_desktop.core.research import events as ev  # noqa: E402
from imprint_desktop.core.research.engine import ResearchEngine  # noqa: E402
from imprint_desktop.core.research.novelty import (  # noqa: E402
    MAX_BYTES,
    MAX_FINGERPRINTS,
    EvidenceStore,
)
from imprint_desktop.core.research.trace import TraceWriter, fan_out  # noqa: E402
from imprint_desktop.core.tools.tool import EvidenceItem, ToolResult  # noqa: E402
from tests.support.fake_tools import FakeTools  # noqa: E402
from tests.support.openai_server import OpenAIServer, Reply  # noqa: E402
from tests.support.scripted_provider import ScriptedProvider, Step  # noqa: E402
from tests.support.settings import research_settings  # noqa: E402

RNG = random.Random(2026)
VOCABULARY = [
    "".join(RNG.choice("abcdefghilmnoprstu") for _ in range(RNG.randint(2, 10)))
    for _ in range(20_000)
]
failures: list[str] = []


def prose(words: int) -> str:
    sentences = []
    while words > 0:
        length = min(words, RNG.randint(8, 20))
        sentences.append(" ".join(RNG.choice(VOCABULARY) for _ in range(length)).capitalize() + ".")
        words -= length
    return " ".join(sentences)


def check(
    name: str,
    value: float,
    target: float,
    *,
    lower_is_better: bool = True,
    unit: str = "",
    extra: str = "",
) -> None:
    ok = value <= target if lower_is_better else value >= target
    relation = "<=" if lower_is_better else ">="
    print(
        f"  {name}: {value:.3f}{unit} (target {relation} {target}{unit}) "
        f"{'ok' if ok else 'MISSED'}{'  ' + extra if extra else ''}"
    )
    if not ok:
        failures.append(name)


# --- 1. the engine's own work per round -------------------------------------------------------


def instrument(provider: ScriptedProvider, tools: FakeTools) -> list[float]:
    """Add up the time spent inside the provider and the tools: that is not the engine's work."""
    outside = [0.0]

    def timed(call: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await call(*args, **kwargs)
            finally:
                outside[0] += time.perf_counter() - started

        return wrapper

    provider.complete = timed(provider.complete)  # type: ignore[method-assign]
    provider.count_prompt = timed(provider.count_prompt)  # type: ignore[method-assign]
    tools.execute = timed(tools.execute)  # type: ignore[method-assign]
    return outside


def engine_round_cost(rounds: int = 50, evidence_kb: int = 20, runs: int = 5) -> None:
    print(
        f"Engine work per round ({runs} replies of {rounds} rounds, {evidence_kb} KB of new "
        "evidence each round)"
    )
    costs: list[float] = []
    run_medians: list[float] = []
    for _ in range(runs):
        reply_costs = _one_reply_round_costs(rounds, evidence_kb)
        costs += reply_costs
        run_medians.append(statistics.median(reply_costs) * 1000)
    median_ms = statistics.median(costs) * 1000
    # Baseline: JSON-encoding the round's evidence once, the least any record of it costs.
    sample = _round_result(evidence_kb, "x")
    started = time.perf_counter()
    for _ in range(20):
        json.dumps([item.text for item in sample.evidence])
    baseline_ms = (time.perf_counter() - started) / 20 * 1000
    check(
        "median engine work per round",
        median_ms,
        2.0,
        unit=" ms",
        extra=f"(p90 {statistics.quantiles(costs, n=10)[-1] * 1000:.2f} ms; per reply "
        f"{', '.join(f'{value:.2f}' for value in run_medians)} ms; "
        f"{median_ms / baseline_ms:.1f}x the cost of JSON-encoding the evidence)",
    )


def _round_result(evidence_kb: int, query: str) -> ToolResult:
    per_round_items = 10
    item_words = evidence_kb * 1024 // per_round_items // 7
    items = tuple(
        EvidenceItem(f"doc{query}-{i}.md", "lines 1-40", prose(item_words))
        for i in range(per_round_items)
    )
    text = "\n\n".join(f"[n] {item.text}" for item in items)
    return ToolResult("search_workspace", "ok", text, items)


def _one_reply_round_costs(rounds: int, evidence_kb: int) -> list[float]:
    """The engine's own time for each round of one reply (provider and tool time taken out)."""
    # Results are made before the reply starts, so making them is not timed as anyone's work.
    results = {str(n): _round_result(evidence_kb, str(n)) for n in range(rounds)}

    def respond(name: str, values: Mapping[str, Any]) -> ToolResult:
        return results[str(values["query"])]

    script = [Step(calls=[("search_workspace", {"query": str(n)})]) for n in range(rounds)]
    script.append(Step("Done."))
    provider = ScriptedProvider(script, context_window=10**9)
    tools = FakeTools(respond)
    outside = instrument(provider, tools)
    marks: list[tuple[float, float]] = []
    trace_path = Path("/tmp/imprint-bench-trace.jsonl")
    writer = TraceWriter(trace_path)
    events: list[ev.Event] = []

    def mark(event: ev.Event) -> None:
        if isinstance(event, ev.RoundEnded | ev.ReplyStarted):
            marks.append((time.perf_counter(), outside[0]))

    # The scripted rounds are the whole reply: no search of the engine's own before them.
    settings = research_settings(
        {
            "chat.research_token_budget": 2_000_000_000,
            "chat.research_timeout_sec": 3600,
            "chat.research_first": False,
        }
    )
    engine = ResearchEngine(provider, settings, sink=fan_out([writer, events.append, mark]))
    asyncio.run(engine.run("Benchmark question?", tools))
    writer.close()
    return [
        (end - start) - (outside_end - outside_start)
        for (start, outside_start), (end, outside_end) in itertools.pairwise(marks)
    ]


# --- 2. fingerprinting speed ------------------------------------------------------------------


def fingerprint_speed() -> None:
    print("Fingerprinting speed")
    paragraphs = [prose(RNG.randint(40, 120)) for _ in range(3000)]
    text = "\n\n".join(paragraphs)
    megabytes = len(text.encode()) / 1e6
    best = float("inf")
    for _ in range(5):
        store = EvidenceStore(max_fingerprints=10**8)
        started = time.perf_counter()
        store.add_many(paragraphs)
        best = min(best, time.perf_counter() - started)
    baseline = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        [paragraph.lower().split() for paragraph in paragraphs]
        baseline = min(baseline, time.perf_counter() - started)
    speed = megabytes / best
    check(
        "fingerprinting throughput",
        speed,
        20.0,
        lower_is_better=False,
        unit=" MB/s",
        extra=f"({megabytes:.1f} MB; lower()+split() alone runs at "
        f"{megabytes / baseline:.0f} MB/s)",
    )


# --- 3. the evidence store's memory bound -----------------------------------------------------


def memory_bound(rounds: int = 10_000) -> None:
    print(f"Evidence store memory over {rounds} rounds of new evidence")
    store = EvidenceStore()
    gc.collect()
    tracemalloc.start()
    for _ in range(rounds):
        store.add(prose(250))
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    bound_mb = MAX_BYTES / 1e6
    check("fingerprints held", len(store), MAX_FINGERPRINTS, extra="(the documented bound)")
    check(
        "store memory after the run",
        store.nbytes / 1e6,
        bound_mb,
        unit=" MB",
        extra=f"(traced now {current / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB)",
    )


# --- 4. Stop while a remote stream is open ----------------------------------------------------


def stop_latency(trials: int = 10) -> None:
    print(f"Stop to finished reply while a remote stream is open ({trials} trials)")
    latencies: list[float] = []
    with OpenAIServer() as server:
        for _ in range(trials):
            server.script(
                Reply.tool_calls(ToolCall("c1", "search_workspace", '{"query": "x"}')),
                Reply.stall(),
            )
            cancel = CancelToken()
            pressed: list[float] = []

            presser = threading.Thread(target=_press_stop, args=(server, cancel, pressed))
            presser.start()
            finished = asyncio.run(_stalled_reply(server.base_url, cancel))
            presser.join()
            server.release()
            latencies.append(finished - pressed[0])
    p50 = statistics.median(latencies) * 1000
    worst = max(latencies) * 1000
    check("Stop latency, worst", worst, 250.0, unit=" ms", extra=f"(median {p50:.1f} ms)")


def _press_stop(server: OpenAIServer, cancel: CancelToken, pressed: list[float]) -> None:
    server.wait_for_stall(timeout=30)
    pressed.append(time.monotonic())
    cancel.cancel()


async def _stalled_reply(url: str, cancel: CancelToken) -> float:
    async with make_async_client(NetworkConfig(proxy="", ca_bundle="")) as http:
        provider = RemoteProvider(http, url, "", None, 8192)
        engine = ResearchEngine(provider, research_settings(), cancel=cancel)

        def respond(name: str, values: Mapping[str, Any]) -> ToolResult:
            return ToolResult(name, "ok", "x", (EvidenceItem("a.md", "1", "Some text here."),))

        result = await engine.run("?", FakeTools(respond))
        assert result.stop_reason == "cancelled", result.stop_reason
        return time.monotonic()


def main() -> int:
    engine_round_cost()
    fingerprint_speed()
    memory_bound()
    stop_latency()
    if failures:
        print(f"\nMISSED: {', '.join(failures)}")
        return 1
    print("\nAll targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
