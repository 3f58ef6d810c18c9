"""Errors in words: what went wrong on the loop thread, as a sentence the person can act on."""

from __future__ import annotations

import logging

from imprint_desktop.core.chosen import chosen_model
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import (
    ImprintError,
    ModelLoadError,
    ProviderAuthError,
    ProviderError,
    ProviderNotFoundError,
    ProviderUnavailableError,
    WorkspaceError,
)

log = logging.getLogger(__name__)


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
    log.error("unexpected error on the loop thread", exc_info=error)
    return (
        f"Something went wrong inside Imprint ({type(error).__name__}). Try again; if it keeps "
        "happening, save the trace (Chat → Save Trace…) and report it."
    )
