"""Small pieces of engine-thread work: which settings need a new provider, errors in words.

Kept apart from :mod:`.host` so the thread's life cycle reads on its own, and so these rules can be
tested without a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import (
    ImprintError,
    ModelLoadError,
    ProviderAuthError,
    ProviderError,
    ProviderNotFoundError,
    ProviderUnavailableError,
    SecretStoreError,
    WorkspaceError,
)
from imprint_desktop.engine.payloads import ConnectionTest

if TYPE_CHECKING:  # the engine thread imports these when it first needs them
    import httpx

    from imprint_desktop.core.providers.base import Provider

log = logging.getLogger(__name__)

ProviderFactory = Callable[
    [Config, "httpx.AsyncClient", str | None, CancelToken], Awaitable["Provider"]
]
"""Builds the provider a settings snapshot chooses, on the engine loop (tests pass a scripted
one)."""


async def open_default_provider(
    config: Config, http: httpx.AsyncClient, api_key: str | None, cancel: CancelToken
) -> Provider:
    from imprint_desktop.core import assistant  # noqa: PLC0415 - engine thread, not startup

    return await assistant.open_provider(config, http, api_key=api_key, cancel=cancel)


def model_key(config: Config) -> tuple[object, ...]:
    """The settings whose change needs the provider made again (a model reload)."""
    return (config.model, config.remote)


def workspace_key(root: Path, config: Config) -> tuple[object, ...]:
    """The settings whose change needs the workspace opened again (``root`` is where
    ``workspace.path`` leads)."""
    return (
        str(root),
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


def sentence(  # noqa: PLR0911 - one sentence per kind of error
    error: BaseException, config: Config | None = None
) -> str:
    """What went wrong, as a sentence the person can act on (never a traceback); ``config``
    names the server, shown without its credentials."""
    server = (chosen_model(config).server_address if config is not None else "") or "the server"
    text = str(error).strip()
    if isinstance(error, ProviderAuthError):
        return (
            f"The server at {server} said the API key is invalid. Open Preferences → Remote to "
            "change it."
        )
    if isinstance(error, ProviderNotFoundError):
        return f"{text} Check the server address and model name in Preferences → Remote."
    if isinstance(error, ProviderUnavailableError):
        return f"{text} Check that the server at {server} is running, then ask again."
    if isinstance(error, ModelLoadError):
        return f"{text} Choose another model in the toolbar or open Model → Models… (Ctrl+M)."
    if isinstance(error, WorkspaceError):
        return f"{text} Choose another folder with the workspace button in the toolbar."
    if isinstance(error, ProviderError | ImprintError) and text:
        return text
    log.error("unexpected engine error", exc_info=error)
    return (
        f"Something went wrong inside Imprint ({type(error).__name__}). Try again; if it keeps "
        "happening, save the trace (Chat → Save Trace…) and report it."
    )


async def test_remote(
    http: httpx.AsyncClient, config: Config, api_key: str | None
) -> ConnectionTest:
    """Try the remote server as research would: the provider's own connection check (address
    and key checked before sending, the model list read bounded, errors in its words)."""
    from imprint_desktop.core.providers.remote.provider import RemoteProvider  # noqa: PLC0415 - httpx

    chosen = chosen_model(config)
    provider = RemoteProvider(
        http, chosen.server, chosen.server_model, api_key, config.remote.context_window
    )
    try:
        return ConnectionTest(True, await provider.check_connection())
    except ProviderError as error:  # already a sentence naming the server without credentials
        log.info("connection test failed: %s", type(error).__name__)
        return ConnectionTest(False, str(error))
    except Exception as error:
        return ConnectionTest(False, sentence(error, config))
