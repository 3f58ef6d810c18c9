"""One reply on the loop thread, without the thread: it ends once whatever happens, and the
person's answer reaches only the call that asked (a real history store, workspace and index, a
scripted model)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from imprint_desktop.background import payloads as p
from imprint_desktop.background.reply_job import ConversationMemory, ReplyJob, Waiting
from imprint_desktop.background.services import KeptServices
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Decision
from imprint_desktop.core.errors import ModelFileError
from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.providers.base import Provider
from imprint_desktop.core.research import events as ev
from tests.support.scripted_provider import ScriptedProvider, Step
from tests.support.settings import make_config

Factory = Callable[[object, httpx.AsyncClient, str | None, CancelToken], Awaitable[Provider]]


def scripted(provider: ScriptedProvider) -> Factory:
    async def factory(
        settings: object, http: httpx.AsyncClient, api_key: str | None, cancel: CancelToken
    ) -> Provider:
        del settings, http, api_key, cancel
        return provider

    return factory


class Reply:
    """A reply job with everything the host would give it, and the payloads it sent."""

    def __init__(self, tmp_path: Path, factory: Factory, cancel: CancelToken | None = None) -> None:
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        (corpus / "walls.md").write_text("# Walls\n\nThe harbour wall is granite.\n")
        self.payloads: list[p.Payload] = []
        self.asked = asyncio.Event()
        self.history = HistoryStore(tmp_path / "history.sqlite3")
        self.resources = KeptServices(self._emit, factory, lambda: None)
        self.job = ReplyJob(
            7,
            question="What is the wall made of?",
            conversation_id=None,
            config=make_config({"workspace.path": str(corpus)}),
            cancel=cancel or CancelToken(),
            emit=self._emit,
        )

    def _emit(self, payload: p.Payload) -> None:
        self.payloads.append(payload)  # index progress comes from a worker thread: append only
        if isinstance(payload, p.ReplyEvent) and isinstance(payload.event, ev.QuestionAsked):
            self.asked.set()

    async def run(self) -> None:
        try:
            await self.job.run(self.history, self.resources, ConversationMemory())
        finally:
            await self.resources.aclose()

    def close(self) -> None:
        self.history.close()

    def ends(self) -> list[p.ReplyEnded]:
        return [payload for payload in self.payloads if isinstance(payload, p.ReplyEnded)]

    def events(self, kind: type[ev.Event]) -> list[ev.Event]:
        return [
            payload.event
            for payload in self.payloads
            if isinstance(payload, p.ReplyEvent) and isinstance(payload.event, kind)
        ]


def test_the_answer_reaches_only_the_call_that_asked_and_only_once(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [Step(calls=[("ask_user", {"question": "Which wall?"})]), Step("Granite.")]
    )
    reply = Reply(tmp_path, scripted(provider))

    async def scenario() -> list[bool]:
        running = asyncio.create_task(reply.run())
        asked = asyncio.create_task(reply.asked.wait())
        await asyncio.wait({running, asked}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert asked.done() and not running.done(), reply.payloads
        [question] = reply.events(ev.QuestionAsked)
        assert isinstance(question, ev.QuestionAsked)
        delivered = [
            reply.job.answer("call_elsewhere", "for another call"),
            reply.job.decide(question.call_id, Decision.DENY),  # no fetch waits under this id
            reply.job.answer(question.call_id, "The harbour wall"),
            reply.job.answer(question.call_id, "a second answer"),
        ]
        await asyncio.wait_for(running, timeout=30)
        return delivered

    try:
        assert asyncio.run(scenario()) == [False, False, True, False]
        [wait] = reply.events(ev.UserWait)
        assert isinstance(wait, ev.UserWait) and wait.answer == "The harbour wall"
        [ended] = reply.ends()
        assert ended.outcome is p.Outcome.FINISHED and ended.reply_id == 7
        assert ended.result is not None and ended.result.answer.startswith("Granite.")
        assert not reply.job.answer("call_elsewhere", "after the end")
    finally:
        reply.close()


def test_a_failure_ends_the_reply_once_in_a_sentence_and_closes_its_row(tmp_path: Path) -> None:
    async def broken(*_args: object) -> Provider:
        raise ModelFileError("The model file /models/x.gguf is truncated.")

    reply = Reply(tmp_path, broken)
    try:
        asyncio.run(reply.run())
        [ended] = reply.ends()
        assert ended.outcome is p.Outcome.FAILED and ended.result is None
        assert "truncated" in ended.message and "Choose another model" in ended.message
        assert ended.conversation_id is not None and ended.stored_id is not None
        [row] = reply.history.replies(ended.conversation_id)
        assert (row.id, row.status, row.stop_reason) == (ended.stored_id, "finished", "error")
        assert row.error == ended.message
    finally:
        reply.close()


def test_a_reply_stopped_before_it_starts_ends_cancelled_and_saves_nothing(
    tmp_path: Path,
) -> None:
    cancel = CancelToken()
    cancel.cancel()
    reply = Reply(tmp_path, scripted(ScriptedProvider([])), cancel)
    try:
        asyncio.run(reply.run())
        assert reply.payloads == [p.ReplyEnded(7, p.Outcome.CANCELLED)]
        assert reply.history.conversations() == []
    finally:
        reply.close()


def test_a_deleted_conversation_leaves_nothing_for_a_new_one_with_its_id() -> None:
    memory = ConversationMemory()
    memory.sites(3).allow("https://wiki.example/walls")
    assert memory.sites(3).allows("https://wiki.example/other")
    memory.forget(3)  # deleted
    assert not memory.sites(3).allows("https://wiki.example/walls"), "asked again"


def test_a_wait_takes_one_value_for_its_call_and_none_once_it_is_over() -> None:
    """Values arrive as the host delivers them: in a callback of the loop the wait runs on."""

    async def scenario() -> tuple[list[bool], str]:
        loop = asyncio.get_running_loop()
        waiting: Waiting[str] = Waiting()
        delivered: list[bool] = []
        loop.call_soon(
            lambda: delivered.extend(
                [waiting.deliver("call_2", "no"), waiting.deliver("call_1", "yes")]
            )
        )
        value = await waiting.wait("call_1")
        stopped = asyncio.create_task(waiting.wait("call_3"))
        loop.call_soon(stopped.cancel)  # Stop pressed while it waits
        await asyncio.gather(stopped, return_exceptions=True)
        assert stopped.cancelled()
        delivered += [waiting.deliver("call_3", "late"), waiting.deliver("call_1", "again")]
        return delivered, value

    assert asyncio.run(scenario()) == ([False, True, False, False], "yes")
