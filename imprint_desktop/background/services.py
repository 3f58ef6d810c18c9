"""What every job on the loop thread shares: the HTTP client, the provider and the workspace.

Each is made for a settings snapshot and kept while the settings it depends on stay the same, so a
second question does not load the model again or reopen the workspace index. Loading the provider
reports :class:`~.payloads.ModelStatus` (loading, ready, failed) through the ``emit`` it is given.

:class:`KeptServices` belongs to the loop thread: every method but :meth:`stop_indexing` is
called there, and :meth:`aclose` closes everything there when the thread stops.

The workspace's passages get their vectors in the background after each update (the quick
embedder: seconds), and then, while no reply runs, the better embedder's too
(:meth:`~imprint_desktop.core.workspace.WorkspaceIndex.improve`: the sentence encoder, minutes to
hours), reported as :attr:`~.payloads.IndexStage.IMPROVING`. A reply that starts
(:meth:`KeptServices.reply_started`) stops that within a batch (about a second) and the last reply
to end starts it again where it stopped; search meanwhile ranks by whatever vectors there are.
It knows nothing else of replies, nor of the thread that hosts it; the loop thread hands it to the
jobs that need it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint_desktop.background import payloads as p
from imprint_desktop.background.error_words import sentence
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import chosen_model, workspace_root
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import ProviderError, SecretStoreError

if TYPE_CHECKING:  # imported on the loop thread, where they are used, to keep startup fast
    import httpx

    from imprint_desktop.background.keeping import IndexKeeper
    from imprint_desktop.core.config import NetworkConfig
    from imprint_desktop.core.providers.base import Provider
    from imprint_desktop.core.workspace import Workspace, WorkspaceIndex

log = logging.getLogger(__name__)

ProviderFactory = Callable[
    [Config, "httpx.AsyncClient", str | None, CancelToken], Awaitable["Provider"]
]
"""Builds the provider a settings snapshot chooses, on the loop thread (tests pass a scripted
one)."""


async def open_default_provider(
    config: Config, http: httpx.AsyncClient, api_key: str | None, cancel: CancelToken
) -> Provider:
    from imprint_desktop.core import reply_services  # noqa: PLC0415 - loop thread, not startup

    return await reply_services.open_provider(config, http, api_key=api_key, cancel=cancel)


class _Throttle:
    """Progress reports at most one every ``seconds`` of the running loop's clock (read on the
    worker thread that reports), but for those that must go."""

    def __init__(self, seconds: float) -> None:
        self._clock = asyncio.get_running_loop().time
        self._seconds = seconds
        self._last = 0.0

    def due(self, *, always: bool = False) -> bool:
        now = self._clock()
        if always or now - self._last >= self._seconds:
            self._last = now
            return True
        return False


def model_key(config: Config) -> tuple[object, ...]:
    """The settings whose change needs the provider made again (a model reload)."""
    return (config.model, config.remote)


def workspace_key(root: Path, config: Config) -> tuple[object, ...]:
    """The settings whose change needs the workspace opened again (``root`` is where
    ``workspace.path`` leads)."""
    return (
        str(root),
        config.workspace.more_folders,
        config.workspace.watch,
        config.workspace.notes_folder,
        config.workspace.max_file_mb,
        config.workspace.embedder,
        config.workspace.ocr,
        config.workspace.ocr_page_seconds,
    )


async def read_api_key(lookup: Callable[[], str | None]) -> str | None:
    """The remote API key from the keyring, read off the loop (a keyring call may block)."""
    try:
        return await asyncio.to_thread(lookup)
    except SecretStoreError as error:
        log.warning("API key not available: %s", error)
        return None  # a server without authentication needs none; one that does says 401


class KeptServices:
    """The client, provider and workspace the current settings choose, made once and kept."""

    def __init__(
        self,
        emit: p.Emit,
        provider_factory: ProviderFactory,
        api_key: Callable[[], str | None],
    ) -> None:
        self._emit = emit
        self._factory = provider_factory
        self._api_key = api_key
        self._model_lock = asyncio.Lock()
        self._http: httpx.AsyncClient | None = None
        self._network: NetworkConfig | None = None  # what the client was made for
        self._closing: set[asyncio.Task[None]] = set()  # replaced clients, closing
        self._provider: Provider | None = None
        self._provider_key: tuple[object, ...] = ()
        self._workspace: Workspace | None = None
        self._workspace_key: tuple[object, ...] = ()
        self._keeper: IndexKeeper | None = None  # keeps the open workspace's indexes current
        self._embed_again = False  # an update committed while the embedding job ran
        self._stop_indexing = threading.Event()
        self._embedding: asyncio.Task[None] | None = None
        self._embedding_for: Workspace | None = None
        self._stop_embedding = threading.Event()
        self._improving: asyncio.Task[None] | None = None
        self._improving_for: Workspace | None = None
        self._stop_improving = threading.Event()
        self._replies = 0
        self._closed = False

    def stop_indexing(self) -> None:
        """End an index update that no reply's Stop can end, and the background embedding,
        because the app closes (any thread)."""
        self._stop_indexing.set()
        self._stop_embedding.set()
        self._stop_improving.set()
        if self._keeper is not None:
            self._keeper.halt()

    def reply_started(self) -> None:
        """A reply starts (or waits for the one before): the better embedder stops at its next
        batch, so that it takes no processor from the reply."""
        self._replies += 1
        self._stop_improving.set()

    def reply_ended(self) -> None:
        """A reply ended: with none left, the better embedder goes on where it stopped (once
        the folders' files are read and embedded: it starts after that by itself)."""
        self._replies -= 1
        running = self._embedding is not None and not self._embedding.done()
        indexing = self._keeper is not None and not self._keeper.idle
        if self._replies == 0 and self._workspace is not None and not running and not indexing:
            self._improve_in_background(self._workspace)

    def _stop_improving_now(self) -> None:
        """A folder's whole update starts: the better embedder stops at its next batch, and
        starts again once the new passages are embedded."""
        self._stop_improving.set()

    def http(self, config: Config) -> httpx.AsyncClient:
        """The client for the network settings (made again when they change)."""
        from imprint_desktop.core.net import make_async_client  # noqa: PLC0415 - loop thread

        if self._http is None or config.network != self._network:
            old, self._http = self._http, make_async_client(config.network)
            self._network = config.network
            if old is not None:
                task = asyncio.get_running_loop().create_task(old.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        return self._http

    async def provider(self, config: Config, cancel: CancelToken | None = None) -> Provider:
        """The provider the settings choose, loaded once and kept while they stay the same."""
        async with self._model_lock:
            key = model_key(config)
            http = self.http(config)
            if self._provider is not None and key == self._provider_key and self._http is http:
                return self._provider
            await self._close_provider()
            chosen = chosen_model(config)
            description = chosen.describe()
            self._emit(p.ModelStatus(p.ModelState.LOADING, description))
            try:
                api_key = await read_api_key(self._api_key) if chosen.remote else None
                provider = await self._factory(config, http, api_key, cancel or CancelToken())
            except BaseException as error:
                message = str(error) if not isinstance(error, asyncio.CancelledError) else ""
                self._emit(p.ModelStatus(p.ModelState.FAILED, description, message))
                raise
            self._provider, self._provider_key = provider, key
            from imprint_desktop.core import reply_services  # noqa: PLC0415 - loop thread

            note = reply_services.provider_note(provider)  # e.g. a context window the server hides
            self._emit(p.ModelStatus(p.ModelState.READY, description, note))
            return provider

    async def warm_up(self, config: Config) -> None:
        """Load the model the settings choose, then let it evaluate what every reply's first
        request starts with, so the first question is answered as fast as the next ones."""
        provider = await self.provider(config)
        from imprint_desktop.core import reply_services  # noqa: PLC0415 - loop thread

        # The workspace open now: one chosen while the model loaded is newer than ``config``'s,
        # and is kept (opening the older one again would stop its indexing).
        workspace = self._workspace if self._workspace is not None else self.workspace(config)
        try:
            await reply_services.warm_up(
                provider, config, workspace, self.http(config), ask=_asked_in_window
            )
        except Exception:  # only a head start is lost: the first reply evaluates it instead
            log.warning("warming the model up failed", exc_info=True)

    async def _close_provider(self) -> None:
        provider, self._provider, self._provider_key = self._provider, None, ()
        if provider is not None:
            try:
                await provider.aclose()
            except Exception:
                log.exception("closing the provider failed")

    def workspace(self, config: Config) -> Workspace:
        """The workspace the settings choose, opened once and kept while they stay the same."""
        from imprint_desktop.core.workspace import Workspace  # noqa: PLC0415 - loop thread

        root = workspace_root(config)
        key = workspace_key(root, config)
        if self._workspace is None or key != self._workspace_key:
            if self._workspace is not None:
                if self._keeper is not None:
                    self._keeper.close()
                    self._keeper = None
                self._stop_embedding.set()  # ends at its next batch; close waits for that
                self._stop_improving.set()
                self._workspace.close()
                self._workspace = None
            self._workspace = Workspace.from_config(root, config.workspace)
            self._workspace_key = key
            for problem in self._workspace.folder_problems:
                self._emit(p.JobProblem(f"A folder of the workspace: {problem}"))
        return self._workspace

    def keeper(self, config: Config) -> IndexKeeper:
        """What keeps the chosen workspace's indexes current (:mod:`.keeping`), started with
        it: its folders watched (``workspace.watch``) and each brought up to date in the
        background."""
        from imprint_desktop.background.keeping import IndexKeeper  # noqa: PLC0415 - loop thread

        workspace = self.workspace(config)
        if self._keeper is None:
            _freeze_what_lasts()
            self._keeper = IndexKeeper(
                workspace,
                self._emit,
                watch=config.workspace.watch,
                updated=lambda: self._embed_in_background(workspace),
                busy=self._stop_improving_now,
            )
            self._keeper.start()
        return self._keeper

    async def ready_workspace(self, config: Config, cancel: CancelToken) -> Workspace:
        """The workspace the settings choose, for a reply: it waits for the files that changed
        just before, never for a whole folder (:meth:`.keeping.IndexKeeper.ready`); Stop
        (``cancel``) ends the wait, not the background indexing."""
        await self.keeper(config).ready(cancel)
        return self.workspace(config)

    async def update_index(self, config: Config) -> None:
        """Bring the chosen workspace's indexes up to date in the background, reporting
        progress and each folder's end: the first time, and whenever the settings change, the
        folders are opened (and watched); otherwise every folder is looked at again."""
        opened = self._keeper is not None and self._workspace_key == workspace_key(
            workspace_root(config), config
        )
        keeper = self.keeper(config)
        if opened:
            keeper.check_again()

    def _embed_in_background(self, workspace: Workspace) -> None:
        """Give the passages of ``workspace``'s folders their vectors, reporting progress, while
        replies go on (they search by words what has no vector yet). One job at a time: a
        running one goes over the folders again for passages a later update added."""
        running = self._embedding is not None and not self._embedding.done()
        if self._stop_indexing.is_set():
            return
        if running and self._embedding_for is workspace:
            self._embed_again = True
            return  # (one running for a workspace closed since has been told to stop)
        from imprint_desktop.core.workspace.update import WAITING  # noqa: PLC0415 - loop thread

        self._stop_embedding = stop = threading.Event()
        self._embedding_for = workspace
        emit = self._emit
        meaning = p.IndexStage.MEANING

        def reporter(root: str) -> Callable[[Any], None]:
            throttle = _Throttle(0.05)

            def report(event: Any) -> None:  # on the worker thread; emit is thread-safe
                going = event.waiting or event.done < event.total
                if going and throttle.due(always=event.waiting):
                    waiting = WAITING if event.waiting else ""
                    emit(
                        p.IndexStatus(root, event.done, event.total, message=waiting, stage=meaning)
                    )

            return report

        async def embed_folder(root: str, index: WorkspaceIndex) -> p.Outcome:
            try:
                result = await asyncio.to_thread(index.embed, progress=reporter(root), cancel=stop)
            except Exception as error:  # the index is still searched by words
                log.exception("embedding the workspace's passages failed")
                failed = p.Outcome.FAILED
                emit(p.IndexStatus(root, 0, 0, outcome=failed, message=str(error), stage=meaning))
                return failed
            outcome = p.Outcome.CANCELLED if result.cancelled else p.Outcome.FINISHED
            if result.embedder_problem:  # search goes on by words; the person is told why
                outcome = p.Outcome.FAILED
            emit(
                p.IndexStatus(
                    root,
                    result.embedded,
                    result.embedded,
                    outcome=outcome,
                    message=result.embedder_problem,
                    stage=meaning,
                )
            )
            return outcome

        async def embed() -> None:
            outcomes: list[p.Outcome] = []
            again = True
            while again and not stop.is_set():
                self._embed_again, outcomes = False, []
                for folder, index in workspace.indexes:
                    outcomes.append(await embed_folder(str(folder.root), index))
                again = self._embed_again
            if all(outcome is p.Outcome.FINISHED for outcome in outcomes) and not stop.is_set():
                self._improve_in_background(workspace)

        self._embedding = asyncio.create_task(embed())

    def _improve_in_background(self, workspace: Workspace) -> None:
        """Give the passages of ``workspace`` the better embedder's vectors too (when there is
        one), reporting progress, until done or until a reply starts, the workspace changes or
        the app closes (each sets its Stop, checked between batches of about a second)."""
        if not workspace.index.better_name or self._replies or self._closed:
            return
        if self._stop_indexing.is_set():
            return
        if (
            self._improving is not None
            and not self._improving.done()
            and self._improving_for is workspace
            and not self._stop_improving.is_set()
        ):
            return  # already at work; it takes passages added meanwhile too
        # One told to stop (a reply, a workspace since closed) ends first; this one starts then.
        previous = self._improving
        self._stop_improving = stop = threading.Event()
        self._improving_for = workspace
        emit = self._emit
        improving = p.IndexStage.IMPROVING

        def reporter(root: str) -> Callable[[Any], None]:
            throttle = _Throttle(0.25)

            def report(event: Any) -> None:  # on the worker thread; emit is thread-safe
                if not event.waiting and event.done < event.total and throttle.due():
                    emit(p.IndexStatus(root, event.done, event.total, stage=improving))

            return report

        async def improve_folder(root: str, index: WorkspaceIndex) -> None:
            try:
                result = await asyncio.to_thread(
                    index.improve, progress=reporter(root), cancel=stop
                )
            except Exception as error:  # search goes on with the quick embedder's vectors
                log.exception("improving the workspace's vectors failed")
                failed = p.Outcome.FAILED
                emit(p.IndexStatus(root, 0, 0, outcome=failed, message=str(error), stage=improving))
                return
            if result.problem:
                outcome = p.Outcome.FAILED
            else:
                outcome = p.Outcome.FINISHED if result.finished else p.Outcome.CANCELLED
            emit(
                p.IndexStatus(
                    root,
                    result.done,
                    result.total,
                    outcome=outcome,
                    message=result.problem,
                    stage=improving,
                )
            )

        async def improve() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            for folder, index in workspace.indexes:
                if stop.is_set():
                    return
                await improve_folder(str(folder.root), index)

        self._improving = asyncio.create_task(improve())

    async def test_connection(self, config: Config) -> p.ConnectionTest:
        """Try the remote server the settings name (chosen or not), with the key the keyring
        keeps for it."""
        api_key = await read_api_key(self._api_key)
        return await test_remote(self.http(config), config, api_key)

    async def aclose(self) -> None:
        """Close the provider, the client and the workspace (on the loop, when it stops)."""
        await self._close_provider()
        self._closed = True
        if self._keeper is not None:
            self._keeper.close()
        self._stop_embedding.set()
        self._stop_improving.set()
        if self._embedding is not None:
            await asyncio.gather(self._embedding, return_exceptions=True)
        if self._improving is not None:
            await asyncio.gather(self._improving, return_exceptions=True)
        await asyncio.gather(*self._closing, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()
        if self._workspace is not None:
            self._workspace.close()


_FROZEN = threading.Event()


def _freeze_what_lasts() -> None:
    """Spare the window the cycle collector's sweeps of what lives as long as the process (once,
    when its folders are first kept current: the modules, the window's objects, the model's).

    Indexing makes objects by the hundred thousand, and every so often that starts a sweep of
    every object the collector tracks, on whichever thread it happens, all others waiting: 70 to
    100 ms in the window with a model loaded (about 106,000 objects), the longest stalls the
    window had while a folder was indexed (``bench/bench_folders.py``). Frozen, they are never
    swept again, and a sweep covers what came after, as ``imprint``'s commands do
    (:func:`imprint_desktop.cli._collector`)."""
    if not _FROZEN.is_set():
        _FROZEN.set()
        gc.freeze()


async def _asked_in_window(call_id: str, question: str) -> str:
    """Stands for the window's way of asking the person (its replies offer ``ask_user``) in the
    warm-up request, which is evaluated but never answered."""
    raise AssertionError("a warm-up never runs tools")


async def test_remote(
    http: httpx.AsyncClient, config: Config, api_key: str | None
) -> p.ConnectionTest:
    """Try the remote server as research would: the provider's own connection check (address
    and key checked before sending, the model list read bounded, errors in its words)."""
    from imprint_desktop.core.providers.remote.client import RemoteProvider  # noqa: PLC0415 - httpx

    chosen = chosen_model(config)
    provider = RemoteProvider(
        http, chosen.server, chosen.server_model, api_key, config.remote.context_window
    )
    try:
        return p.ConnectionTest(True, await provider.check_connection())
    except ProviderError as error:  # already a sentence naming the server without credentials
        log.info("connection test failed: %s", type(error).__name__)
        return p.ConnectionTest(False, str(error))
    except Exception as error:
        return p.ConnectionTest(False, sentence(error, config))
