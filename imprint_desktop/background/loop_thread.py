"""The loop thread: a QThread owning an asyncio loop and, on it, the history and the services.

Everything slow happens here, never on the GUI thread: loading a model, updating the workspace
index, research itself, and every history read and write (SQLite connections belong to the thread
that opened them, so the whole :class:`HistoryStore` lives on this thread).

The GUI talks to it only through :class:`~imprint_desktop.background.bridge.Bridge`, which calls
the methods under "called from the GUI thread" (each thread-safe: it queues work on the loop) and
receives frozen payloads through ``emit``. The thread hands each job what it uses — a
:class:`~.reply_job.ReplyJob` the history store, the shared :class:`~.services.KeptServices`
and the :class:`~.reply_job.ConversationMemory`; a history job the store — and no job calls back
into the thread. Replies run one at a time, each ending through :meth:`~.reply_job.ReplyJob.run`;
every other job runs under :meth:`LoopThread._submit`, where an exception becomes the payload that
words its failure.

The loop is created with the thread so work can be queued before the thread has started; the HTTP
client is created and closed inside the loop. :meth:`LoopThread.stop` asks the loop to finish:
running jobs are cancelled (each still reports its one terminal payload), the provider, client,
workspace and history are closed there, and the thread returns — ``QThread.terminate()`` is never
needed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from imprint_desktop.background import jobs
from imprint_desktop.background import payloads as p
from imprint_desktop.background.reply_job import ConversationMemory, ReplyJob, require
from imprint_desktop.background.services import KeptServices, ProviderFactory, open_default_provider
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import Decision

if TYPE_CHECKING:  # imported on the loop thread, where it is used, to keep startup fast
    from imprint_desktop.core.config import Config
    from imprint_desktop.core.history import HistoryStore

log = logging.getLogger(__name__)

# Strong references: a QThread object destroyed while its thread runs aborts the process, so a
# forgotten loop thread stays alive here until its thread ends — and the tests can report it.
_live: set[LoopThread] = set()
_live_lock = threading.Lock()


def running_loop_threads() -> list[LoopThread]:
    """Loop threads still running (the tests fail when one outlives its test)."""
    with _live_lock:
        return [thread for thread in _live if thread.isRunning()]


def stop_running_loop_threads(timeout_ms: int = 15_000) -> list[str]:
    """Stop and join every loop thread still running; returns their names (for the tests)."""
    names = []
    for thread in running_loop_threads():
        names.append(thread.objectName())
        thread.stop()
        thread.wait(timeout_ms)
    return names


class LoopThread(QThread):
    """The one thread, with its own event loop, where replies and history jobs run."""

    def __init__(
        self,
        emit: p.Emit,
        *,
        provider_factory: ProviderFactory | None = None,
        history_path: Path | None = None,
        api_key: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__()
        self.setObjectName("imprint-loop")
        self._emit = emit
        self._history_path = history_path
        self._loop = asyncio.new_event_loop()
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._history: HistoryStore | None = None
        self._services = KeptServices(emit, provider_factory or open_default_provider, api_key)
        self._memory = ConversationMemory()
        self._replies: dict[int, ReplyJob] = {}  # started and not yet ended, by reply id
        self._reply_lock = asyncio.Lock()
        with _live_lock:
            _live.add(self)

    # --- called from the GUI thread ----------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to cancel its jobs, close what it owns and return."""
        self._services.stop_indexing()
        self._call(self._stopping.set)

    def start_reply(
        self,
        reply_id: int,
        *,
        conversation_id: int | None,
        question: str,
        config: Config,
        cancel: CancelToken,
    ) -> None:
        """Research ``question`` as reply ``reply_id``; it waits for the one before to end."""
        reply = ReplyJob(
            reply_id,
            question=question,
            conversation_id=conversation_id,
            config=config,
            cancel=cancel,
            emit=self._emit,
        )
        self._spawn_soon(lambda: self._run_reply(reply))

    def answer_question(self, reply_id: int, call_id: str, text: str) -> None:
        """Hand the person's answer to ``ask_user`` call ``call_id`` of reply ``reply_id``."""
        self._call(self._deliver, reply_id, call_id, lambda reply: reply.answer(call_id, text))

    def answer_consent(self, reply_id: int, call_id: str, decision: Decision) -> None:
        """Hand the person's decision to ``fetch_url`` call ``call_id`` of reply ``reply_id``."""
        self._call(self._deliver, reply_id, call_id, lambda reply: reply.decide(call_id, decision))

    def load_model(self, config: Config) -> None:
        services = self._services
        self._submit(lambda: services.warm_up(config), jobs.model_failed(config))

    def index_workspace(self, config: Config) -> None:
        """Bring the index up to date in the background; each folder's update ends with its own
        terminal IndexStatus."""
        services = self._services
        self._submit(lambda: services.update_index(config), jobs.index_failed(config))

    def test_connection(self, config: Config) -> None:
        async def work() -> None:
            self._emit(await self._services.test_connection(config))

        self._submit(work, jobs.connection_failed(config))

    def list_conversations(self, search: str) -> None:
        self._submit(
            lambda: jobs.list_conversations(self.history, self._emit, search), jobs.history_failed
        )

    def load_conversation(self, conversation_id: int, request: int) -> None:
        self._submit(
            lambda: jobs.load_conversation(self.history, self._emit, conversation_id, request),
            jobs.history_failed,
        )

    def rename_conversation(self, conversation_id: int, title: str, search: str) -> None:
        self._submit(
            lambda: jobs.rename_conversation(
                self.history, self._emit, conversation_id, title, search
            ),
            jobs.history_failed,
        )

    def delete_conversation(self, conversation_id: int, search: str) -> None:
        self._submit(
            lambda: jobs.delete_conversation(
                self.history, self._memory, self._emit, conversation_id, search
            ),
            jobs.history_failed,
        )

    def load_trace(self, stored_id: int, save_to: Path | None) -> None:
        self._submit(
            lambda: jobs.save_trace(self.history, self._emit, stored_id, save_to),
            jobs.trace_failed,
        )

    def export_conversation(self, conversation_id: int, path: Path) -> None:
        self._submit(
            lambda: jobs.export_conversation(self.history, self._emit, conversation_id, path),
            jobs.export_failed(path),
        )

    def _submit(self, work: Callable[[], Awaitable[object]], failed: jobs.Failed) -> None:
        """Run ``work`` on the loop under the one error policy of jobs outside a reply: an
        exception becomes the payload ``failed`` words (Stop and shutdown stay cancellations)."""

        async def job() -> None:
            try:
                await work()
            except Exception as error:
                self._emit(failed(error))

        self._spawn_soon(job)

    def _spawn_soon(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``job()`` as a task on the loop (queued until the loop runs)."""
        self._call(self._spawn, job)

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(callback, *args)

    # --- the thread ---------------------------------------------------------------------------

    def run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            self._loop.close()
            with _live_lock:
                _live.discard(self)

    async def _serve(self) -> None:
        from imprint_desktop.core.history import HistoryStore  # noqa: PLC0415 - loop thread

        try:
            self._history = HistoryStore(self._history_path)
            interrupted = self._history.mark_interrupted()
            if interrupted:
                log.info("%d reply(s) of an earlier run marked interrupted", interrupted)
        except Exception as error:  # the window still opens; replies will say what is wrong
            log.exception("history store could not be opened")
            self._emit(p.JobProblem(f"The chat history could not be opened: {error}"))
        await self._stopping.wait()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._services.aclose()
        if self._history is not None:
            self._history.close()

    def _spawn(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._stopping.is_set():
            job().close()  # never started: nothing to report
            return
        task = self._loop.create_task(job())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def history(self) -> HistoryStore:
        return require(self._history)

    async def _run_reply(self, reply: ReplyJob) -> None:
        """Replies run one at a time: a new one waits for the superseded one to wind down."""
        self._replies[reply.reply_id] = reply
        self._services.reply_started()  # the background's better embedding gives way
        try:
            async with self._reply_lock:
                await reply.run(self._history, self._services, self._memory)
        finally:
            del self._replies[reply.reply_id]
            self._services.reply_ended()

    def _deliver(self, reply_id: int, call_id: str, deliver: Callable[[ReplyJob], bool]) -> None:
        reply = self._replies.get(reply_id)
        if reply is None or not deliver(reply):  # a late click on an old card: dropped
            log.info("dropped the person's answer to %s of reply %d", call_id, reply_id)
