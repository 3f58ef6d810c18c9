"""The one reply runner (core.assistant.run_reply) that the window and ``imprint ask`` share."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from imprint_desktop.core import assistant
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import ModelLoadError
from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.providers.base import Provider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.workspace import Workspace
from tests.support.settings import make_config


class NoModel:
    """Services whose model cannot be loaded."""

    def http(self, config: Config) -> httpx.AsyncClient:
        raise AssertionError("no request is made without a model")

    async def provider(self, config: Config, cancel: CancelToken) -> Provider:
        raise ModelLoadError("the model file is damaged")

    async def ready_workspace(self, config: Config, cancel: CancelToken) -> Workspace:
        raise AssertionError("the workspace is not needed without a model")


def test_a_reply_whose_model_cannot_be_loaded_keeps_its_row_closed_with_why(
    tmp_path: Path,
) -> None:
    history = HistoryStore(tmp_path / "history.sqlite3")
    opened: list[assistant.ReplyKept] = []
    seen: list[ev.Event] = []
    front = assistant.ReplyFront(
        sink=seen.append, opened=opened.append, failure_words=lambda error: f"Said: {error}"
    )
    config = make_config({"workspace.path": str(tmp_path)})
    with pytest.raises(ModelLoadError):
        asyncio.run(
            assistant.run_reply(
                "Who kept the light?",
                config=config,
                cancel=CancelToken(),
                services=NoModel(),
                front=front,
                history=history,
            )
        )
    [kept] = opened
    assert kept.conversation_created and kept.workspace == str(tmp_path)
    [reply] = history.replies(kept.conversation)
    assert (reply.id, reply.status, reply.stop_reason) == (kept.stored_id, "finished", "error")
    assert reply.error == "Said: the model file is damaged" and reply.workspace == str(tmp_path)
    assert seen == []  # nothing was researched
    history.close()
