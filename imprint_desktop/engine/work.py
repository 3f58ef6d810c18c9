"""Small pieces of engine-thread work: which settings need a new provider, errors in words.

Kept apart from :mod:`.host` so the thread's life cycle reads on its own, and so these rules can be
tested without a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint_desktop.core import resources
from imprint_desktop.core.cancel import CancelToken
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
    [Mapping[str, Any], "httpx.AsyncClient", str | None, CancelToken], Awaitable["Provider"]
]
"""Builds the provider for a settings snapshot on the engine loop (tests pass a scripted one)."""


async def open_default_provider(
    settings: Mapping[str, Any], http: httpx.AsyncClient, api_key: str | None, cancel: CancelToken
) -> Provider:
    from imprint_desktop.core import assistant  # noqa: PLC0415 - engine thread, not startup
    from imprint_desktop.core.config import Config  # noqa: PLC0415 - likewise

    config = Config.from_values(settings)
    return await assistant.open_provider(config, http, api_key=api_key, cancel=cancel)


def model_key(settings: Mapping[str, Any]) -> tuple[object, ...]:
    """The settings whose change needs the provider made again (a model reload)."""
    return tuple(
        (key, settings.get(key))
        for key in sorted(settings)
        if key.startswith(("model.", "remote."))
    )


def network_key(settings: Mapping[str, Any]) -> tuple[object, ...]:
    return tuple((key, settings.get(key)) for key in sorted(settings) if key.startswith("network."))


def workspace_key(root: Path, settings: Mapping[str, Any]) -> tuple[object, ...]:
    return (
        str(root),
        settings.get("workspace.notes_folder"),
        settings.get("workspace.max_file_mb"),
    )


def describe_model(settings: Mapping[str, Any]) -> str:
    """The model in a few words, for the toolbar and status line."""
    if settings.get("model.provider") == "remote":
        name = str(settings.get("remote.model") or "") or "default model"
        return f"{name} on {server_address(settings)}"
    path = str(settings.get("model.path") or "").strip()
    if path:
        return Path(path).name
    return resources.STARTER_NAME


def server_address(settings: Mapping[str, Any]) -> str:
    """``remote.base_url`` as it may be shown or logged: without user name, password, query or
    fragment, exactly as the remote provider shows it (:func:`~.remote.public_url`)."""
    address = str(settings.get("remote.base_url") or "")
    if not address:
        return ""
    from imprint_desktop.core.providers.remote import public_url  # noqa: PLC0415 - httpx: not at startup

    return public_url(address)


async def read_api_key(settings: Mapping[str, Any], lookup: Callable[[], str | None]) -> str | None:
    """The remote API key from the keyring, read off the loop (a keyring call may block)."""
    if settings.get("model.provider") != "remote":
        return None
    try:
        return await asyncio.to_thread(lookup)
    except SecretStoreError as error:
        log.warning("API key not available: %s", error)
        return None  # a server without authentication needs none; one that does says 401


def sentence(  # noqa: PLR0911 - one sentence per kind of error
    error: BaseException, settings: Mapping[str, Any] | None = None
) -> str:
    """What went wrong, as a sentence the person can act on (never a traceback)."""
    settings = settings or {}
    server = server_address(settings) or "the server"
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
    http: httpx.AsyncClient, settings: Mapping[str, Any], api_key: str | None
) -> ConnectionTest:
    """Try the remote server as research would: the provider's own connection check (address
    and key checked before sending, the model list read bounded, errors in its words)."""
    from imprint_desktop.core.providers.remote import RemoteProvider  # noqa: PLC0415 - httpx

    provider = RemoteProvider(
        http,
        str(settings.get("remote.base_url") or ""),
        str(settings.get("remote.model") or ""),
        api_key,
        int(settings.get("remote.context_window") or 0),
    )
    try:
        return ConnectionTest(True, await provider.check_connection())
    except ProviderError as error:  # already a sentence naming the server without credentials
        log.info("connection test failed: %s", type(error).__name__)
        return ConnectionTest(False, str(error))
    except Exception as error:
        return ConnectionTest(False, sentence(error, settings))
