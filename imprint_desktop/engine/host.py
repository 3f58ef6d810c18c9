"""The engine thread: a QThread owning an asyncio loop, the HTTP client, the provider and history.

Everything slow happens here, never on the GUI thread: loading a model, updating the workspace
index, research itself, and every history read and write (SQLite connections belong to the thread
that opened them, so the whole :class:`HistoryStore` lives on this thread).

The GUI talks to it only through :class:`~imprint_desktop.engine.bridge.EngineBridge`, which calls
:meth:`EngineHost.submit` (thread-safe) and receives frozen payloads through ``emit``. The loop is
created with the host so work can be queued before the thread has started; the HTTP client is
created and closed inside the loop. :meth:`EngineHost.stop` asks the loop to finish: running jobs
are cancelled (each still reports its one terminal payload), the provider, client, workspace and
history are closed there, and the thread returns — ``QThread.terminate()`` is never needed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.consent import AllowedSites, Consent, Decision, remembering, site_of
from imprint_desktop.engine import payloads as p
from imprint_desktop.engine.work import (
    ProviderFactory,
    describe_model,
    model_key,
    network_key,
    open_default_provider,
    read_api_key,
    test_remote,
    workspace_key,
)

if TYPE_CHECKING:  # imported on the engine thread, where they are used, to keep startup fast
    import httpx

    from imprint_desktop.core.history import HistoryStore
    from imprint_desktop.core.providers.base import Message, Provider
    from imprint_desktop.core.workspace import Workspace

log = logging.getLogger(__name__)

Emit = Callable[[object], None]

# Strong references: a QThread object destroyed while its thread runs aborts the process, so a
# forgotten engine stays alive here until its thread ends — and the tests can report it.
_live: set[EngineHost] = set()
_live_lock = threading.Lock()


def running_hosts() -> list[EngineHost]:
    """Engine threads still running (the tests fail when one outlives its test)."""
    with _live_lock:
        return [host for host in _live if host.isRunning()]


def stop_running_hosts(timeout_ms: int = 15_000) -> list[str]:
    """Stop and join every engine thread still running; returns their names (for the tests)."""
    names = []
    for host in running_hosts():
        names.append(host.objectName())
        host.stop()
        host.wait(timeout_ms)
    return names


class EngineHost(QThread):
    """Hosts the research engine on its own thread and event loop."""

    def __init__(
        self,
        emit: Emit,
        *,
        provider_factory: ProviderFactory | None = None,
        history_path: Path | None = None,
        api_key: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__()
        self.setObjectName("imprint-engine")
        self._emit = emit
        self._factory = provider_factory or open_default_provider
        self._history_path = history_path
        self._api_key = api_key
        self.loop = asyncio.new_event_loop()
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._reply_lock = asyncio.Lock()
        self._model_lock = asyncio.Lock()
        self._history: HistoryStore | None = None
        self._http: httpx.AsyncClient | None = None
        self._http_key: tuple[object, ...] = ()
        self._provider: Provider | None = None
        self._provider_key: tuple[object, ...] = ()
        self._workspace: Workspace | None = None
        self._workspace_key: tuple[object, ...] = ()
        self._answer: asyncio.Future[str] | None = None
        self._consent: tuple[str, asyncio.Future[Decision]] | None = None  # (call id, decision)
        self._sites: dict[int, AllowedSites] = {}  # per conversation: "Allow this site"
        self._index_cancel = threading.Event()
        self._conversations: dict[int, tuple[Message, ...]] = {}
        with _live_lock:
            _live.add(self)

    # --- called from the GUI thread ----------------------------------------------------------

    def submit(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``job()`` as a task on the engine loop (thread-safe; queued until the loop runs)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._spawn, job)

    def stop(self) -> None:
        """Ask the loop to cancel its jobs, close what it owns and return (thread-safe)."""
        self._index_cancel.set()
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stopping.set)

    def answer(self, text: str) -> None:
        """Hand the person's answer to the waiting ``ask_user`` call (thread-safe)."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._deliver_answer, text)

    def answer_consent(self, call_id: str, decision: Decision) -> None:
        """Hand the person's decision to the ``fetch_url`` call ``call_id`` (thread-safe)."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._deliver_consent, call_id, decision)

    # --- the thread ---------------------------------------------------------------------------

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            self.loop.close()
            with _live_lock:
                _live.discard(self)

    async def _serve(self) -> None:
        from imprint_desktop.core.history import HistoryStore  # noqa: PLC0415 - engine thread

        try:
            self._history = HistoryStore(self._history_path)
            interrupted = self._history.mark_interrupted()
            if interrupted:
                log.info("%d reply(s) of an earlier run marked interrupted", interrupted)
        except Exception as error:  # the window still opens; replies will say what is wrong
            log.exception("history store could not be opened")
            self._emit(p.EngineProblem(f"The chat history could not be opened: {error}"))
        await self._stopping.wait()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._close_provider()
        if self._http is not None:
            await self._http.aclose()
        if self._workspace is not None:
            self._workspace.close()
        if self._history is not None:
            self._history.close()

    def _spawn(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._stopping.is_set():
            job().close()  # never started: nothing to report
            return
        task = self.loop.create_task(job())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _deliver_answer(self, text: str) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(text)

    def _deliver_consent(self, call_id: str, decision: Decision) -> None:
        if self._consent is None:
            return
        waiting_for, future = self._consent
        if waiting_for == call_id and not future.done():  # a late click on an old card: ignored
            future.set_result(decision)

    @property
    def history(self) -> HistoryStore:
        if self._history is None:
            raise RuntimeError("The chat history is not available.")
        return self._history

    # --- what replies need --------------------------------------------------------------------

    def http(self, settings: Mapping[str, Any]) -> httpx.AsyncClient:
        """The client for ``settings``' network options (made again when they change)."""
        from imprint_desktop.core.config import Config  # noqa: PLC0415 - engine thread
        from imprint_desktop.core.net import make_async_client  # noqa: PLC0415 - engine thread

        key = network_key(settings)
        if self._http is None or key != self._http_key:
            network = Config.from_values(settings).network
            old, self._http = self._http, make_async_client(network)
            self._http_key = key
            if old is not None:
                self._spawn(old.aclose)
        return self._http

    async def provider(
        self, settings: Mapping[str, Any], cancel: CancelToken | None = None
    ) -> Provider:
        """The provider ``settings`` choose, loaded once and kept while they stay the same."""
        async with self._model_lock:
            key = model_key(settings)
            http = self.http(settings)
            if self._provider is not None and key == self._provider_key and self._http is http:
                return self._provider
            await self._close_provider()
            description = describe_model(settings)
            self._emit(p.ModelStatus(p.ModelState.LOADING, description))
            try:
                api_key = await read_api_key(settings, self._api_key)
                provider = await self._factory(settings, http, api_key, cancel or CancelToken())
            except BaseException as error:
                message = str(error) if not isinstance(error, asyncio.CancelledError) else ""
                self._emit(p.ModelStatus(p.ModelState.FAILED, description, message))
                raise
            self._provider, self._provider_key = provider, key
            from imprint_desktop.core import assistant  # noqa: PLC0415 - engine thread

            note = assistant.provider_note(provider)  # e.g. a context window the server hides
            self._emit(p.ModelStatus(p.ModelState.READY, description, note))
            return provider

    async def _close_provider(self) -> None:
        provider, self._provider, self._provider_key = self._provider, None, ()
        if provider is not None:
            try:
                await provider.aclose()
            except Exception:
                log.exception("closing the provider failed")

    def workspace(self, settings: Mapping[str, Any]) -> Workspace:
        """The workspace ``settings`` choose, opened once and kept while they stay the same."""
        from imprint_desktop.core import assistant  # noqa: PLC0415 - engine thread
        from imprint_desktop.core.config import Config  # noqa: PLC0415
        from imprint_desktop.core.workspace import Workspace  # noqa: PLC0415

        config = Config.from_values(settings)
        root = assistant.workspace_root(config)
        key = workspace_key(root, settings)
        if self._workspace is None or key != self._workspace_key:
            if self._workspace is not None:
                self._workspace.close()
                self._workspace = None
            self._workspace = Workspace.from_config(root, config.workspace)
            self._workspace_key = key
        return self._workspace

    async def update_index(
        self,
        settings: Mapping[str, Any],
        progress: Callable[[p.IndexStatus], None],
        cancel: CancelToken | None = None,
    ) -> None:
        """Bring the chosen workspace's index up to date, reporting progress (throttled).

        ``cancel`` is the reply's Stop, which ends the update at once (a PDF being read
        included); without it only shutting down does. Shutting down also stops a reply."""
        workspace = self.workspace(settings)
        root = str(workspace.root)
        last = [0.0]

        def report(event: Any) -> None:
            now = self.loop.time()
            if now - last[0] >= 0.05 or event.done == event.total:
                last[0] = now
                progress(p.IndexStatus(root, event.done, event.total, event.path))

        result = await asyncio.to_thread(
            workspace.index.update,
            progress=report,
            cancel=cancel if cancel is not None else self._index_cancel,
        )
        outcome = p.Outcome.CANCELLED if result.cancelled else p.Outcome.FINISHED
        progress(p.IndexStatus(root, result.documents, result.documents, outcome=outcome))

    async def ask_person(self, question: str) -> str:
        """Wait for :meth:`answer`; cancelled with the reply when Stop is pressed."""
        del question  # shown through the QuestionAsked event
        self._answer = self.loop.create_future()
        try:
            return await self._answer
        finally:
            self._answer = None

    def conversation(self, conversation_id: int) -> tuple[Message, ...]:
        """The whole conversation the last reply in ``conversation_id`` left, or () when this
        process has none (a conversation reopened after a restart continues from its history)."""
        return self._conversations.get(conversation_id, ())

    def keep_conversation(self, conversation_id: int, messages: tuple[Message, ...]) -> None:
        """Remember the conversation a reply left, for the next question in it: the model then
        continues what it has cached instead of reading the conversation again."""
        if messages:
            self._conversations[conversation_id] = messages
        else:  # the answer did not come from it (a fallback, "not found"): start from history
            self.forget_conversation(conversation_id)

    def forget_conversation(self, conversation_id: int) -> None:
        """Drop what :meth:`keep_conversation` kept (the conversation was deleted: its id may be
        given to a new one)."""
        self._conversations.pop(conversation_id, None)

    def consent_for(self, reply_id: int, conversation_id: int) -> Consent:
        """How reply ``reply_id`` asks the person about a fetch: a ``ConsentRequest`` payload
        for the window's card, then the decision it sends back through :meth:`answer_consent`.
        Sites allowed "for this conversation" are kept per conversation, for as long as the window
        is open, and not asked about again."""

        async def ask(call_id: str, url: str) -> Decision:
            future: asyncio.Future[Decision] = self.loop.create_future()
            self._consent = (call_id, future)
            self._emit(p.ConsentRequest(reply_id, call_id, url, site_of(url)))
            try:
                return await future  # cancelled with the reply when Stop is pressed
            finally:
                self._consent = None

        return remembering(ask, self._sites.setdefault(conversation_id, AllowedSites()))

    async def test_connection(self, settings: Mapping[str, Any]) -> p.ConnectionTest:
        api_key = await read_api_key({**settings, "model.provider": "remote"}, self._api_key)
        return await test_remote(self.http(settings), settings, api_key)

    async def locked_reply(self, work: Callable[[], Awaitable[None]]) -> None:
        """Replies run one at a time: a new one waits for the superseded one to wind down."""
        async with self._reply_lock:
            await work()
