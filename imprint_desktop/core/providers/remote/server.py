"""The remote server as the person set it up: its address, its API key, its context window.

Nothing here talks to a server. The address and the key are checked before anything is sent, so
a typing slip is a sentence about the setting, not a network error; :data:`PREFERENCES` is where
the person changes them. The context window is the person's number when they set one, else what
the server says (asked once per connection, or named when it refuses a prompt as too long), else
:data:`DEFAULT_CONTEXT_WINDOW`; :class:`ContextWindow` keeps which, and says it in a sentence.
"""

from __future__ import annotations

import logging
from typing import Literal

from imprint_desktop.core.urls import NotHttpUrl, http_url

# Lines logged here are the remote provider's, under its name (as ``imprint -v`` shows them).
log = logging.getLogger("imprint_desktop.core.providers.remote.client")

PREFERENCES = "Preferences → Remote server"

DEFAULT_CONTEXT_WINDOW = 8192
"""The window assumed when the person set none and the server does not say its own."""

ContextSource = Literal["settings", "server", "assumed"]


def address_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server address, or None when it can (as far as parsing tells)."""
    try:
        http_url(url)
    except NotHttpUrl as problem:
        return str(problem)
    return None


def key_problem(api_key: str) -> str | None:
    """Why ``api_key`` cannot travel in an HTTP header, or None when it can."""
    if all(" " <= character <= "~" for character in api_key):
        return None
    return (
        "it contains characters that cannot be sent in a request (line breaks, control "
        "characters or characters beyond plain ASCII, often picked up when copying it)"
    )


class ContextWindow:
    """The context window of one connection, and where its size comes from (``source``).

    ``configured`` 0 means the person set none: the window is assumed until the server says its
    own. A window the server names when it refuses a prompt, when smaller, is the window from
    then on — even the person's number yields to it.
    """

    __slots__ = ("configured", "size", "source")

    def __init__(self, configured: int) -> None:
        self.configured = max(0, configured)
        self.size = self.configured or DEFAULT_CONTEXT_WINDOW
        self.source: ContextSource = "settings" if configured > 0 else "assumed"

    def note(self, where: str) -> str:
        """Where the window comes from, in a sentence for the status line; empty when it is the
        person's own number. ``where`` is the server's public address."""
        size = f"{self.size:,}"
        if self.source == "server":
            return f"The server at {where} holds {size} tokens of context."
        if self.source == "assumed":
            return (
                f"The server at {where} does not say how many tokens its model holds, so "
                f"Imprint assumes {size}. If it holds more or less, set Context window in "
                f"{PREFERENCES}."
            )
        return ""

    def said_by_server(self, size: int) -> None:
        """The server said its window (asked, not refusing anything): it is the window now."""
        self.size, self.source = size, "server"

    def narrow(self, size: int | None, where: str) -> None:
        """A refusal named ``size`` (None: it named none): smaller, it is the window from now."""
        if size is not None and size < self.size:
            log.warning("%s holds %d tokens, not %d: using its number", where, size, self.size)
            self.size, self.source = size, "server"
