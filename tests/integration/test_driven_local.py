"""Research the engine drives for the real starter model (issue 43), through llama.cpp, over a
real workspace index.

SmolLM2-135M is not offered the tools, so before it answers the engine searches each part of a
question of two, in a round of its own: the round is shown and traced as the engine's, its
searches are charged to the research time, and the answer's request holds both parts'
answering passages. A question the first search answers is answered at once, with no round.
What the 135M model then writes is measured in ``bench/bench_quality.py``, not asserted here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from imprint_desktop.core import reply_services
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import Completion, CompletionRequest
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.engine import ResearchEngine
from imprint_desktop.core.research.trace import TraceWriter, read_trace
from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Workspace
from tests.support.research_run import Recorder
from tests.support.settings import make_config, research_settings

pytestmark = pytest.mark.integration

DOCUMENTS = {
    "orchards/survey.md": (
        "# Orchard disease survey, spring 2025\n\n## Long Meadow\n\nApple scab was found on the "
        "Bramley trees in Long Meadow, worst in the damp north-west corner.\n\n## Hill Field\n\n"
        "Hill Field is clear of scab; two Cox trees show canker.\n"
    ),
    "orchards/pests.md": (
        "# Pests and diseases of apple\n\nApple scab is a fungus that spots leaves and fruit. "
        "Canker attacks the bark. Mildew coats young shoots.\n"
    ),
    "press/purchase.md": (
        "# New cider press: purchase decision\n\nThe members voted for a belt press. The new press "
        "will cost £14,800, including fitting, and will be delivered in September 2025.\n"
    ),
    "press/quotes-2024.md": (
        "# Press quotations of 2024 (superseded)\n\nA hydraulic press was quoted at £11,200.\n"
    ),
    "minutes/november.md": (
        "# Members' meeting, November\n\nThe old press needed a new seal; the repair cost £640. "
        "The wet weather raised the scab risk in every orchard.\n"
    ),
}
SETTINGS = {"chat.max_tokens": 96, "chat.research_timeout_sec": 300}


def ask(root: Path, question: str, trace: Path) -> tuple[ev.ReplyResult, Recorder, list[str]]:
    """Ask ``question`` of the starter model over ``root``, tracing to ``trace``: the result,
    every event, and the last user turn of each request the model was sent."""
    turns: list[str] = []
    writer = TraceWriter(trace)
    recorder = Recorder(writer)

    async def run() -> ev.ReplyResult:
        config = make_config(SETTINGS)
        async with make_async_client(config.network) as http:
            provider = await reply_services.open_provider(config, http)
            complete = provider.complete

            async def seen(
                request: CompletionRequest,
                cancel: CancelToken,
                on_text: Callable[[str], None] | None = None,
            ) -> Completion:
                turns.append(request.messages[-1].content)
                return await complete(request, cancel, on_text)

            provider.complete = seen  # type: ignore[method-assign]
            try:
                with Workspace(root) as workspace:
                    await reply_services.prepare_workspace(workspace)
                    engine = ResearchEngine(
                        provider, research_settings(SETTINGS), cancel=CancelToken(), sink=recorder
                    )
                    return await engine.run(question, Toolbox(workspace, config.tools, http))
            finally:
                await provider.aclose()

    try:
        result = asyncio.run(run())
    finally:
        writer.close()
    return result, recorder, turns


@pytest.fixture
def orchard(tmp_path: Path) -> Path:
    root = tmp_path / "orchard"
    for name, text in DOCUMENTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.timeout(600)
def test_the_engine_researches_each_part_for_the_starter_model(
    orchard: Path, tmp_path: Path
) -> None:
    question = "Which orchard has apple scab and how much will the new press cost?"
    trace = tmp_path / "trace.jsonl"
    result, recorder, turns = ask(orchard, question, trace)

    # The engine's round: both parts searched, shown as Imprint's own, with progress.
    engine_rounds = [e for e in recorder.of(ev.RoundEnded) if e.origin == "engine"]
    assert [e.round for e in engine_rounds] == [1] and engine_rounds[0].progress
    searches = [e for e in recorder.of(ev.ToolStarted) if e.round == 1]
    assert [e.origin for e in searches] == ["engine", "engine"]
    assert '"orchard apple scab"' in searches[0].arguments
    assert '"new press cost"' in searches[1].arguments
    assert result.rounds == 1 and result.research_seconds > 0
    budget = recorder.of(ev.BudgetUpdate)[-1]
    assert budget.rounds == 1 and budget.research_seconds > 0 and budget.tokens_charged > 0
    # Each part's answering passage was in front of the model.
    shown = "\n".join(turns)
    assert "Apple scab was found on the" in shown and "£14,800" in shown
    sources = {item.source for item in result.evidence}
    assert {"orchards/survey.md", "press/purchase.md"} <= sources
    # The trace marks the round as the engine's; the reply ends with one stop and one final.
    lines = read_trace(trace)
    [round_end] = [line for line in lines if line["type"] == "round_end" and line["round"] == 1]
    assert round_end["origin"] == "engine"
    assert all(line.get("origin") == "engine" for line in lines if line["type"] == "tool")
    assert [line["type"] for line in lines].count("stop") == 1
    assert [line["type"] for line in lines].count("final") == 1
    assert result.answer.strip()


@pytest.mark.timeout(600)
def test_a_question_the_first_search_answers_goes_straight_to_the_starter_model(
    orchard: Path, tmp_path: Path
) -> None:
    result, recorder, turns = ask(
        orchard, "How much will the new cider press cost?", tmp_path / "trace.jsonl"
    )
    assert result.rounds == 0
    assert not [e for e in recorder.of(ev.RoundEnded) if e.origin == "engine"]
    assert len(recorder.of(ev.ToolFinished)) == 1  # the first search, and nothing more
    assert "£14,800" in turns[0]
