"""The research engine on the real starter model: a deadline passing inside prompt prefill.

The question is long enough that its prefill takes many micro-batches. The deadline is driven
from the provider's own progress, not from how fast the machine is: the engine and the provider
read one clock, which the test moves past the research time as soon as the first micro-batch is
done. So research must end at its deadline inside llama.cpp (the abort callback), charged for the
micro-batch it did, and the reply must still end with a final answer, the labelled fallback or
"not found", never a hang. How fast a deadline is heard is measured in ``bench/bench_local.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from imprint_desktop.core import reply_services
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.local.provider import LocalProvider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Workspace
from tests.support.settings import make_config, research_settings

pytestmark = pytest.mark.integration

BUDGET = 30.0


class MovedClock:
    """``time.monotonic`` that a test moves on, for the engine and the provider alike."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@pytest.mark.timeout(400)
def test_a_deadline_inside_prefill_ends_research_on_time(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nThe ferry leaves at dawn.\n", encoding="utf-8")
    settings = {
        "model.n_ctx": 8192,
        "model.n_batch": 64,
        "chat.research_max_output_tokens": 64,
        "chat.max_tokens": 64,
        "chat.research_timeout_sec": BUDGET,
    }
    # About 4,000 tokens of question: many micro-batches of prefill.
    question = "Summarise this log. " + " ".join(
        f"Entry {n}: the lamp was trimmed, the log signed and the weather noted."
        for n in range(250)
    )
    events: list[ev.Event] = []
    clock = MovedClock()
    batches: list[int] = []

    def first_batch_done(evaluated: int, _to_evaluate: int) -> None:
        batches.append(evaluated)
        if len(batches) == 1:  # the research time runs out now, inside the prefill
            clock.offset += BUDGET

    async def reply() -> ev.ReplyResult:
        config = make_config(settings)
        async with make_async_client(config.network) as http:
            provider = await reply_services.open_provider(config, http)
            assert isinstance(provider, LocalProvider)
            provider.clock = clock
            provider.on_prefill = first_batch_done
            try:
                with Workspace(root) as workspace:
                    await reply_services.prepare_workspace(workspace)
                    engine = ResearchEngine(
                        provider,
                        research_settings(settings),
                        cancel=CancelToken(),
                        sink=events.append,
                        clock=clock,
                    )
                    return await engine.run(question, Toolbox(workspace, config.tools, http))
            finally:
                provider.on_prefill = None
                await provider.aclose()

    result = asyncio.run(reply())
    assert result.stop_reason == "time_budget"
    assert result.research_seconds >= BUDGET
    first = next(e for e in events if isinstance(e, ev.RequestFinished))
    assert first.stop == "deadline"
    # Charged for the micro-batch done before the deadline, never for the whole prompt.
    assert first.charged_prompt == batches[0] < first.prompt_tokens
    # The note does not match the question: the reply says nothing was found, or (had the
    # seed found something) answers or falls back; it always has its one final line.
    assert result.final_mode in ("model", "fallback", "no_evidence") and result.answer.strip()
    assert any(isinstance(e, ev.FinalFinished) for e in events)
