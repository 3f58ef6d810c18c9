"""Putting a reply together: provider, workspace, toolbox and engine.

The command line and the window's engine thread build replies the same way through these functions,
so a reply from ``imprint ask`` and one from the window are the same reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.config import Config
from imprint_desktop.core.consent import Consent
from imprint_desktop.core.providers.base import Message, Provider
from imprint_desktop.core.research.engine import (
    AskPerson,
    EventSink,
    ResearchEngine,
    ResearchSettings,
)
from imprint_desktop.core.research.events import ReplyResult
from imprint_desktop.core.tools.toolbox import Toolbox
from imprint_desktop.core.workspace import Workspace


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
        from imprint_desktop.core.providers.remote import RemoteProvider  # noqa: PLC0415

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
    """Bring the workspace index up to date before research time starts counting; Stop
    (``cancel``) ends it at once, keeping what was indexed."""
    await asyncio.to_thread(workspace.index.update, cancel=cancel)


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


async def research(
    question: str,
    *,
    provider: Provider,
    config: Config,
    workspace: Workspace,
    http: httpx.AsyncClient | None,
    cancel: CancelToken,
    ask: AskPerson | None = None,
    consent: Consent | None = None,
    sink: EventSink | None = None,
    history: Sequence[Message] = (),
) -> ReplyResult:
    """Run one reply on the current loop; research time starts here, after the provider is ready.

    ``consent`` decides each ``fetch_url`` while ``tools.fetch_url_confirm`` is on; without it
    nobody can be asked, and fetches are denied.
    """
    engine = ResearchEngine(
        provider,
        ResearchSettings.from_config(config),
        cancel=cancel,
        ask=ask,
        consent=consent,
        sink=sink,
    )
    toolbox = Toolbox(workspace, config.tools, http)
    return await engine.run(question, toolbox, history)
