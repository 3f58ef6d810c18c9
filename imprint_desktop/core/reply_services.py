"""Where a reply gets what outlives it — the HTTP client, the model, the workspace — and how each
is made ready.

:class:`ReplyServices` is what :func:`~.assistant.run_reply` asks for them. The window keeps its
services between replies (``background/services.py``); ``imprint ask`` opens them for one run
(:class:`OneRunServices`). Both make them ready with the functions here: the provider the settings
choose (:func:`open_provider`, outside research time), the workspace index brought up to date
(:func:`prepare_workspace`), and a local model warmed while the person types (:func:`warm_up`).
The runner calls the services and the services call these, so a reply passes each module once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVar

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import Cancelled, WorkspaceIndexError
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import Provider
from imprint_desktop.core.research.engine import AskPerson, ResearchEngine, ResearchSettings
from imprint_desktop.core.tools.toolbox import Toolbox
from imprint_desktop.core.workspace import Workspace

log = logging.getLogger(__name__)

T = TypeVar("T")


class ReplyServices(Protocol):
    """Where a reply gets what outlives it: the HTTP client, the model and the workspace."""

    def http(self, config: Config) -> httpx.AsyncClient: ...

    async def provider(self, config: Config, cancel: CancelToken) -> Provider:
        """The model the settings choose, ready (loaded, or its server asked)."""
        ...

    async def ready_workspace(self, config: Config, cancel: CancelToken) -> Workspace:
        """The workspace the settings choose, its index brought up to date (Stop ends that)."""
        ...


async def open_provider(
    config: Config,
    http: httpx.AsyncClient,
    *,
    api_key: str | None = None,
    cancel: CancelToken | None = None,
) -> Provider:
    """The provider the settings choose; a local model is loaded here, a server is asked for its
    context window here (both outside research time)."""
    chosen = chosen_model(config)
    if chosen.remote:
        from imprint_desktop.core.providers.remote.client import RemoteProvider  # noqa: PLC0415

        remote = RemoteProvider(
            http, chosen.server, chosen.server_model, api_key, config.remote.context_window
        )
        await remote.discover_context_window()
        return remote
    from imprint_desktop.core.providers.local.provider import (  # noqa: PLC0415 - loads llama.cpp
        open_local_provider,
    )

    return await open_local_provider(chosen.file, config.model, cancel=cancel)


def provider_note(provider: Provider) -> str:
    """What the person should know about the provider before the reply, in a sentence (a server
    that does not say its context window, for instance), or "" when there is nothing to say."""
    return str(getattr(provider, "context_window_note", ""))


async def prepare_workspace(workspace: Workspace, cancel: CancelToken | None = None) -> None:
    """Bring the workspace's indexes (one per folder) up to date before research time starts
    counting; Stop (``cancel``) ends it at once, keeping what was indexed."""
    for _, index in workspace.indexes:
        await asyncio.to_thread(index.update, cancel=cancel)
        if cancel is not None and cancel.cancelled:
            return


async def warm_up(
    provider: Provider,
    config: Config,
    workspace: Workspace,
    http: httpx.AsyncClient | None,
    *,
    ask: AskPerson | None = None,
) -> int:
    """Let a local model evaluate what every reply's first request starts with (its
    instructions and tools) while the person is still typing; a question that comes first ends
    it at once and keeps what it did. Returns the tokens evaluated (0 for a remote provider)."""
    warm = getattr(provider, "warm", None)
    if warm is None:
        return 0
    engine = ResearchEngine(provider, ResearchSettings.from_config(config), ask=ask)
    tokens: int = await warm(engine.opening(Toolbox(workspace, config.tools, http)))
    return tokens


class OneRunServices:
    """The client, the model and the workspace of one ``imprint ask``: opened for it, closed
    after it (:meth:`aclose`). ``tell`` shows the person what they should know of the provider
    before the reply (:func:`provider_note`)."""

    def __init__(self, root: Path, api_key: str | None, tell: Callable[[str], None]) -> None:
        self._root, self._api_key, self._tell = root, api_key, tell
        self._http: httpx.AsyncClient | None = None
        self._provider: Provider | None = None
        self._workspace: Workspace | None = None

    def http(self, config: Config) -> httpx.AsyncClient:
        if self._http is None:
            self._http = make_async_client(config.network)
        return self._http

    async def provider(self, config: Config, cancel: CancelToken) -> Provider:
        self._provider = await _unless_stopped(
            open_provider(config, self.http(config), api_key=self._api_key, cancel=cancel),
            cancel,
            # A local model's loading thread watches the token itself and ends soon after it.
            stop_the_wait=chosen_model(config).remote,
        )
        if note := provider_note(self._provider):
            self._tell(note)
        return self._provider

    async def ready_workspace(self, config: Config, cancel: CancelToken) -> Workspace:
        self._workspace = Workspace.from_config(self._root, config.workspace)
        await prepare_workspace(self._workspace, cancel)
        if self._provider is not None and not cancel.cancelled:
            # The opening every first request starts with, loaded as an earlier ``imprint ask``
            # kept it, or evaluated now and kept for the next one (:mod:`.local.prefixes`).
            try:
                await warm_up(self._provider, config, self._workspace, self.http(config))
            except Exception:  # only a head start is lost: the first request evaluates it
                log.warning("warming the model up failed", exc_info=True)
        return self._workspace

    def search_embedder(self) -> str | None:
        """Which embedders served the reply's searches by meaning, in words
        (:meth:`~.workspace.meaning.Coverage.describe`); None when no workspace was opened or
        its index cannot be read."""
        if self._workspace is None:
            return None
        try:
            return self._workspace.index.coverage().describe()
        except WorkspaceIndexError:
            return None

    async def aclose(self) -> None:
        try:
            if self._workspace is not None:
                self._workspace.close()
            if self._provider is not None:
                await self._provider.aclose()
        finally:
            if self._http is not None:
                await self._http.aclose()


async def _unless_stopped(work: Awaitable[T], cancel: CancelToken, *, stop_the_wait: bool) -> T:
    """``work``, but with ``stop_the_wait`` given up on as soon as Ctrl+C sets ``cancel`` (a
    server asked for its context window may take long to answer, or never answer)."""
    if not stop_the_wait:
        return await work
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()

    def stop() -> None:
        loop.call_soon_threadsafe(task.cancel)

    remove = cancel.on_cancel(stop)
    try:
        return await task
    except asyncio.CancelledError:
        if cancel.cancelled:
            raise Cancelled("stopped before research began") from None
        raise
    finally:
        remove()
