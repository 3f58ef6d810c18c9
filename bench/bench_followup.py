"""A follow-up question on the starter model: how much of the conversation is evaluated again?

Two replies in one conversation over ``bench/quality-workspace`` with the real local provider
(llama.cpp, SmolLM2-135M): a first question, then a follow-up. The follow-up's first research
request is measured three ways, each from a fresh model (nothing cached but what the first reply
left):

- **compact**: the follow-up continues earlier questions and answers only (what the history
  database keeps);
- **conversation**: it continues the whole conversation the first reply returned
  (``ReplyResult.conversation``), so the model's cache holds all of it;
- the **new turn**: the follow-up's question and its seeded passages, in tokens — what must be
  evaluated at the least.

Prints the prompt tokens evaluated (not reused from the cache) by the follow-up's first request
for both, and their ratio to the new turn. Target: conversation ≤ 1.2 × the new turn.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.config import Config  # noqa: E402
from imprint_desktop.core.providers.base import CompletionRequest, Message  # noqa: E402
from imprint_desktop.core.providers.local.provider import open_local_provider  # noqa: E402
from imprint_desktop.core.research import events as ev  # noqa: E402
from imprint_desktop.core.research.engine import ResearchEngine, ResearchSettings  # noqa: E402
from imprint_desktop.core.research.sources import written  # noqa: E402
from imprint_desktop.core.tools.toolbox import Toolbox  # noqa: E402
from imprint_desktop.core.workspace import Workspace  # noqa: E402
from imprint_desktop.settings.store import SettingsStore  # noqa: E402

WORKSPACE = ROOT / "bench" / "quality-workspace"
FIRST = "Who was the engineer of the Tarn Valley Railway?"
FOLLOW_UP = "When did Crag Halt reopen?"
TARGET = 1.2


async def reply(
    provider: Any,
    config: Config,
    workspace: Workspace,
    *,
    question: str,
    history: list[Message],
    compact: list[Message] | None = None,
) -> tuple[ev.ReplyResult, list[ev.Event], list[CompletionRequest]]:
    events: list[ev.Event] = []
    requests: list[CompletionRequest] = []
    complete = provider.complete

    async def recording(request: CompletionRequest, *args: Any) -> Any:
        requests.append(request)
        return await complete(request, *args)

    provider.complete = recording
    engine = ResearchEngine(provider, ResearchSettings.from_config(config), sink=events.append)
    tools = Toolbox(workspace, config.tools, None)
    try:
        result = await engine.run(question, tools, history, compact_history=compact)
    finally:
        provider.complete = complete
    return result, events, requests


async def follow_up(mode: str, config: Config, workspace: Workspace) -> tuple[int, int, bool]:
    provider = await open_local_provider(None, config.model)
    try:
        first, _, _ = await reply(provider, config, workspace, question=FIRST, history=[])
        compact = [Message("user", FIRST), Message("assistant", written(first.answer))]
        history = list(first.conversation) if mode == "conversation" else compact
        _, events, requests = await reply(
            provider, config, workspace, question=FOLLOW_UP, history=history, compact=compact
        )
        [opening] = [e for e in events if isinstance(e, ev.RequestFinished)][:1]
        # The new turn: the first request's prompt less the conversation it continues.
        before = CompletionRequest(
            messages=requests[0].messages[: len(requests[0].messages) - 3],
            max_tokens=1,
            deadline=requests[0].deadline,
            tools=requests[0].tools,
        )
        new_turn = opening.prompt_tokens - await provider.count_prompt(before)
        # Whether the opening request continued the whole first conversation, or the engine fell
        # back to the compact history (the conversation would take over half the window).
        whole = list(requests[0].messages[1 : len(first.conversation)]) == list(
            first.conversation[1:]
        )
        return opening.charged_prompt, new_turn, whole
    finally:
        await provider.aclose()


def main() -> int:
    config = SettingsStore(environ={}).config()
    config = replace(
        config, chat=replace(config.chat, max_tokens=256, research_max_output_tokens=256)
    )
    with Workspace(WORKSPACE) as workspace:
        workspace.index.update()
        results = {
            m: asyncio.run(follow_up(m, config, workspace)) for m in ("compact", "conversation")
        }
    for mode, (evaluated, new_turn, whole) in results.items():
        print(
            f"{mode:>12}: {evaluated:5d} prompt tokens evaluated, new turn {new_turn:5d} "
            f"→ {evaluated / max(new_turn, 1):.2f}×"
            + ("" if whole else "  (continued the compact history)")
        )
    if not results["conversation"][2]:
        print("the first conversation took over half the window: the follow-up fell back to the")
        print("compact history, whose earlier answer is evaluated again")
    ratio = results["conversation"][0] / max(results["conversation"][1], 1)
    print(
        f"target: conversation ≤ {TARGET}× the new turn: {'met' if ratio <= TARGET else 'MISSED'}"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
