"""A remote server's failures: read, sorted into retry or give up, and worded for people.

The remote provider (:mod:`.client`) meets failures of every kind: HTTP statuses (their bodies
read only as far as a message), connections that fail or break off, bodies that break their
encoding or the protocol, exceptions nobody foresaw. Each becomes a :class:`Retry` — another
attempt may fix it; an :class:`OptionRefused` when the server refused an optional part of the
request, asked again at once without it — or a :class:`~imprint_desktop.core.errors.ProviderError`
whose sentence says what happened and where to change it (:data:`~.server.PREFERENCES`).
A refusal naming the context limit (see :mod:`.stated_window`) is a :class:`ContextOverflowError`.
The sentences name the server by its public address only, and the API key is cut out of anything
the server or the network said (:meth:`Failures.redact`).

Which failures are retried: 408, 409, 425, 429 and 5xx statuses and connection failures, only as
long as nothing streamed (a retry would repeat text the person already saw), and as often as the
:class:`RetryPolicy` says. A body that breaks its ``Content-Encoding`` or the protocol is not: the
same body would come again.
"""

from __future__ import annotations

import logging
import random
import traceback
from dataclasses import dataclass

import httpx

from imprint_desktop.core.errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderDeadlineError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from imprint_desktop.core.net import retry_after_seconds
from imprint_desktop.core.providers.remote import stated_window
from imprint_desktop.core.providers.remote.bodies import read_limited
from imprint_desktop.core.providers.remote.request import RequestShape
from imprint_desktop.core.providers.remote.server import PREFERENCES, ContextWindow
from imprint_desktop.core.providers.remote.wire import (
    StreamProtocolError,
    StreamServerError,
    error_text,
    try_json,
)

# Lines logged here are the remote provider's, under its name (as ``imprint -v`` shows them).
log = logging.getLogger("imprint_desktop.core.providers.remote.client")

_CONNECTING = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError)
_STATUS_RETRIED = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_STATUS_MESSAGES: dict[int, tuple[type[ProviderError], str]] = {
    401: (ProviderAuthError, "said the API key is invalid (401). Open {prefs} to change it."),
    403: (
        ProviderAuthError,
        "refused access with this API key (403). Check what the key may use, or change it "
        "in {prefs}.",
    ),
    404: (
        ProviderNotFoundError,
        "has no /{endpoint} endpoint{model} (404). Check Server address (it usually ends in "
        "/v1) and Model name in {prefs}.",
    ),
    429: (
        ProviderRateLimitError,
        "is limiting requests (429) and kept refusing this one within the time left. Wait "
        "a minute and ask again.",
    ),
    500: (  # any 5xx, and 408/409/425 when their retries run out
        ProviderUnavailableError,
        "failed (HTTP {status}) and kept failing when asked again. Check that it is running "
        "and has its model loaded; its log says more.",
    ),
    0: (  # any other status: the request itself was refused
        ProviderResponseError,
        "refused the request (HTTP {status}). If the prompt may be too long, lower Context "
        "window in {prefs}.",
    ),
}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try before a failure becomes the person's problem.

    ``attempts`` counts the first try. Waits double from ``first_delay`` up to ``max_delay`` and
    are jittered down to half, so clients that failed together do not return together.
    """

    attempts: int = 5
    first_delay: float = 0.5
    max_delay: float = 8.0
    connect_timeout: float = 10.0  # an address that never answers should fail, not eat the budget

    def delay(self, retry: int) -> float:
        ceiling = min(self.max_delay, self.first_delay * 2.0 ** (retry - 1))
        return ceiling * random.uniform(0.5, 1.0)


class Retry(Exception):  # noqa: N818 - a signal inside the remote provider, never seen outside
    """An attempt failed in a way another attempt may fix; ``error`` is what to raise if not."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OptionRefused(Retry):
    """The server refused an optional part of the request: ask again without it, at once."""

    def __init__(self, option: str, error: ProviderError) -> None:
        super().__init__(error)
        self.option = option


class Failures:
    """The failures of one connection to the server at ``where`` (its public address).

    ``shape`` says which optional parts of a request the server has not refused yet and which
    model is asked for; ``api_key`` is what to cut out of anything shown or logged, and whether
    a 401 means a wrong key or a missing one; ``window`` is narrowed when a refusal names a
    smaller context window.
    """

    __slots__ = ("_api_key", "_shape", "_where", "_window")

    def __init__(
        self, where: str, shape: RequestShape, api_key: str | None, window: ContextWindow
    ) -> None:
        self._where = where
        self._shape = shape
        self._api_key = api_key
        self._window = window

    def redact(self, text: str) -> str:
        return text.replace(self._api_key, "[API key]") if self._api_key else text

    def of(  # noqa: PLR0911 - one answer per kind of failure
        self, error: Exception, *, received: bool
    ) -> ProviderError | Retry:
        """What to raise for ``error``, raised while sending a request or reading its answer.

        ``received``: content already streamed, so a retry would repeat it. Connection failures
        are retried (as long as nothing streamed); everything else is final.
        """
        reason = self.redact(str(error)) or type(error).__name__
        if isinstance(error, StreamServerError):
            message = reason[:300]
            log.warning("%s reported an error in the stream: %s", self._where, message)
            return ProviderResponseError(
                f"The server at {self._where} reported an error while answering: {message}"
            )
        if isinstance(error, StreamProtocolError):
            log.warning("%s broke the stream protocol: %s", self._where, reason)
            return ProviderResponseError(self.unreadable(reason))
        if isinstance(error, httpx.UnsupportedProtocol | httpx.InvalidURL):
            return self.bad_address(reason)
        if isinstance(error, httpx.DecodingError):
            log.warning("%s sent a body that does not decode: %s", self._where, reason)
            return ProviderResponseError(
                self.unreadable(f"its body could not be decoded as its headers say ({reason})")
            )
        if isinstance(error, httpx.TransportError | httpx.StreamError):
            log.warning("connection to %s failed: %s", self._where, self.redact(repr(error)))
            if isinstance(error, _CONNECTING):
                return Retry(self.unreachable(error))
            dropped = self.dropped(str(error))
            return dropped if received else Retry(dropped)
        if isinstance(error, httpx.HTTPError):  # too many redirects, and kinds to come
            log.warning("request to %s failed: %s", self._where, self.redact(repr(error)))
            return ProviderResponseError(self.unreadable(f"{type(error).__name__}: {reason}"))
        details = self.redact("".join(traceback.format_exception(error)))
        log.error("unexpected failure talking to %s:\n%s", self._where, details)
        return ProviderResponseError(
            f"The server at {self._where} could not be read: {type(error).__name__} "
            f"({reason[:300]}). Ask again; if it keeps happening, check the server's log and "
            "Imprint's."
        )

    async def status_error(self, response: httpx.Response, endpoint: str) -> ProviderError | Retry:
        """The error (or the :class:`Retry`) for a response to ``/endpoint`` that is not 200.

        A refused optional part of a chat request is an :class:`OptionRefused`; a prompt the
        server refuses as too long a :class:`ContextOverflowError` (see :mod:`.stated_window`); any
        other status is worded from its table, with what the body said.
        """
        status = response.status_code
        try:
            raw = await read_limited(response)
        except Exception:  # the body only adds detail: the status is the answer
            raw = b""
        detail = error_text(try_json(raw)) or raw[:300].decode("utf-8", "replace")
        detail = self.redact(detail).strip()[:300]
        log.warning("%s answered %d to /%s: %s", self._where, status, endpoint, detail)
        if status in (400, 422) and endpoint == "chat/completions":
            if self._shape.ask_for_usage and "stream_options" in detail:
                return OptionRefused("stream_options", ProviderResponseError(detail))
            if self._shape.may_require and "tool_choice" in detail:
                return OptionRefused("tool_choice", ProviderResponseError(detail))
        if endpoint == "chat/completions" and (
            refusal := stated_window.context_refusal(status, try_json(raw), detail)
        ):
            self._window.narrow(refusal.window, self._where)
            return ContextOverflowError(
                f"The prompt does not fit the context window of the model at {self._where} "
                f"({self._window.size:,} tokens). It said: {refusal.message}"
            )
        retried = status in _STATUS_RETRIED or status >= 500
        kind, message = _STATUS_MESSAGES.get(status) or _STATUS_MESSAGES[500 if retried else 0]
        if status == 401 and not self._api_key:
            message = "asks for an API key (401). Add one in {prefs}."
        model = self._shape.model
        model = f" or no model named {model!r}" if model else ""
        error = kind(
            f"The server at {self._where} "
            + message.format(prefs=PREFERENCES, status=status, endpoint=endpoint, model=model)
            + (f" It said: {detail}" if detail and status != 401 else "")
        )
        if retried:
            return Retry(error, retry_after_seconds(response.headers.get("retry-after")))
        return error

    def unreadable(self, problem: str) -> str:
        return (
            f"The server at {self._where} sent an answer Imprint cannot read: {problem}. "
            f"Check that Server address in {PREFERENCES} points to an OpenAI-compatible API "
            "(it usually ends in /v1)."
        )

    def bad_address(self, problem: str) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"The server address {self._where} cannot be used ({problem}). Change Server "
            f"address in {PREFERENCES}; it usually looks like http://127.0.0.1:8080/v1."
        )

    def bad_key(self, problem: str) -> ProviderAuthError:
        return ProviderAuthError(
            f"The API key in {PREFERENCES} cannot be used: {problem}. Paste it again."
        )

    def unreachable(self, error: Exception) -> ProviderUnavailableError:
        reason = self.redact(str(error)) or type(error).__name__
        return ProviderUnavailableError(
            f"Could not connect to the server at {self._where} ({reason}). Check that it is "
            f"running and that Server address in {PREFERENCES} is right."
        )

    def dropped(self, reason: str) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"The connection to the server at {self._where} broke off before the answer was "
            f"complete ({self.redact(reason) or 'no reason given'}). Ask again; if it keeps "
            "happening, check the server's log."
        )

    def busy(self, wait: float, left: float) -> ProviderDeadlineError:
        """The server asked to be asked again only after the time left for the request."""
        return ProviderDeadlineError(
            f"The server at {self._where} is busy and asked to be asked again in "
            f"{_seconds(wait)}, after the {_seconds(left)} left for this request."
        )


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
