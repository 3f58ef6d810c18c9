"""The research engine on the real starter model: a deadline passing inside prompt prefill.

The question is long enough that reading it takes far longer than the research budget on any
CPU, so the research part must end at its deadline (llama.cpp's abort callback), and the reply
must still end with a final answer or the labelled fallback, never a hang.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from imprint_desktop.core import assistant
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.workspace import Workspace
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

BUDGET = 2.0


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
    }
    # About 4,000 tokens of question: far more prefill than BUDGET seconds allow.
    question = "Summarise this log. " + " ".join(
        f"Entry {n}: the lamp was trimmed, the log signed and the weather noted."
        for n in range(250)
    )
    events: list[ev.Event] = []

    async def reply() -> ev.ReplyResult:
        async with make_async_client(make_config(settings).network) as http:
            provider = await assistant.open_provider(make_config(settings), http)
            try:
                with Workspace(root) as workspace:
                    await assistant.prepare_workspace(workspace)
                    budget = {**settings, "chat.research_timeout_sec": BUDGET}
                    return await assistant.research(
                        question,
                        provider=provider,
                        config=make_config(budget),
                        workspace=workspace,
                        http=http,
                        cancel=CancelToken(),
                        sink=events.append,
                    )
            finally:
                await provider.aclose()

    result = asyncio.run(reply())
    assert result.stop_reason == "time_budget"
    assert BUDGET <= result.research_seconds < BUDGET + 1.5
    first = next(e for e in events if isinstance(e, ev.RequestFinished))
    assert first.stop == "deadline" and 0 < first.charged_prompt < first.prompt_tokens
    # The note does not match the question: the reply says nothing was found, or (had the
    # seed found something) answers or falls back; it always has its one final line.
    assert result.final_mode in ("model", "fallback", "no_evidence") and result.answer.strip()
    assert any(isinstance(e, ev.FinalFinished) for e in events)
