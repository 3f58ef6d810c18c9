"""The remote provider: an OpenAI-compatible server (llama.cpp's, vLLM, LM Studio, a cloud API).

One :meth:`RemoteProvider.complete` is one streamed ``POST {base_url}/chat/completions``:

* **Deadline.** The request's monotonic deadline bounds everything: httpx timeouts are derived
  from the time left, and the stream is raced against the deadline itself, so a server that
  trickles bytes forever is cut there and the text that arrived is kept (``stop="deadline"``).
* **Cancel.** The cancel token wakes the loop through ``call_soon_threadsafe`` and the open read
  is cancelled at once (``stop="cancelled"``), whichever thread pressed Stop.
* **Retries.** 429, 5xx and connection failures are retried with exponential backoff and jitter,
  honouring ``Retry-After``, but only while nothing has streamed yet (a retry would repeat text
  the person already saw) and never past the deadline: when the next wait would end after the
  deadline, the provider gives up at once with the matching error (:class:`ProviderRateLimitError`
  or :class:`ProviderUnavailableError`) instead of idling until the deadline — a server that keeps
  failing is an error the person should read, not a silent time-budget stop.
* **Counting.** Prompts are estimated from UTF-8 bytes (:data:`BYTES_PER_TOKEN`) and reconciled
  with the server's ``usage`` when it reports it (``stream_options.include_usage``).
* **Failures.** Whatever the server, the network or the settings do,
  :meth:`~RemoteProvider.complete` returns a :class:`Completion` or raises a
  :class:`ProviderError` in words for people; only cancellation of the calling task passes
  through as it is. An unusable server address or API key fails before anything is sent; a body
  that breaks its ``Content-Encoding`` or the protocol is a :class:`ProviderResponseError` (not
  retried: the same body would come again); an exception nobody foresaw (httpcore passes on what
  it cannot map) is logged with its traceback and reported as a :class:`ProviderResponseError`.
  Only what ``on_text`` itself raises is passed on unchanged: that is the caller's.

The API key travels only in the ``Authorization`` header of this provider's own requests — never
in the shared client's defaults (``fetch_url`` uses the same client), logs, errors or ``repr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import random
import time
import traceback
from asyncio import FIRST_COMPLETED
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from imprint_desktop.core.providers.base import Completion, CompletionRequest, StopKind, TextSink
from imprint_desktop.core.providers.sse import (
    ANSWER_LIMIT,
    ChunkAssembler,
    StreamProtocolError,
    StreamServerError,
    error_text,
    parse_json,
    read_answer,
    read_bounded,
    read_limited,
    try_json,
    valid_text,
)

log = logging.getLogger(__name__)

BYTES_PER_TOKEN = 4
"""UTF-8 bytes per token, for estimating what the server will count.

About four characters of English make one token for the common BPE tokenizers (OpenAI's published
rule of thumb), and English text is about one byte per character. Measured here: the sample
workspace, as JSON chat messages, is 3.75 bytes per token with the starter model's tokenizer.
Large-vocabulary tokenizers get more bytes per token; code and non-Latin scripts fewer, so the
estimate runs low for them. It is only a reservation: the server's ``usage`` replaces it.
"""

TEMPLATE_ALLOWANCE = 1024
"""Tokens a server may add to a prompt beyond its bytes: the chat template's special tokens and a
short system prompt of its own. A ``usage`` report of more prompt tokens than the request's
UTF-8 bytes plus this is not a count (10**30 for a few kilobytes), and the estimate stands."""

PREFERENCES = "Preferences → Remote server"
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


def output_limit(max_tokens: int) -> int:
    """Bytes of output after which an answer is cut: four times what ``max_tokens`` tokens
    usually make, and never less than 4 KiB, so a server that honours the allowance is never cut
    (a token's text is rarely more than a few bytes) and one that ignores it is stopped."""
    return max_tokens * BYTES_PER_TOKEN * 4 + 4096


def estimate_tokens(byte_count: int) -> int:
    return math.ceil(byte_count / BYTES_PER_TOKEN)


def public_url(url: str) -> str:
    """``url`` without user name, password, query or fragment: safe to show and to log.
    Never fails: an address too broken to parse is cut down by hand the same way."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port out of range, an unclosed "[": show it, without credentials
        head = url.split("#", 1)[0].split("?", 1)[0]
        scheme, separator, rest = head.partition("://")
        if not separator:
            return head.rstrip("/")
        netloc, slash, path = rest.partition("/")
        return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}".rstrip("/")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def address_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server address, or None when it can (as far as parsing tells)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as error:
        return str(error)
    if parts.scheme.lower() not in ("http", "https"):
        return "it must start with http:// or https://"
    if not parts.hostname:
        return "it names no server"
    return None


def key_problem(api_key: str) -> str | None:
    """Why ``api_key`` cannot travel in an HTTP header, or None when it can."""
    if all(" " <= character <= "~" for character in api_key):
        return None
    return (
        "it contains characters that cannot be sent in a request (line breaks, control "
        "characters or characters beyond plain ASCII, often picked up when copying it)"
    )


class _Retry(Exception):  # noqa: N818 - a signal between methods, never seen outside
    """An attempt failed in a way another attempt may fix; ``error`` is what to raise if not."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class _OptionRefused(_Retry):
    """The server refused an optional part of the request: ask again without it, at once."""

    def __init__(self, option: str, error: ProviderError) -> None:
        super().__init__(error)
        self.option = option


class RemoteProvider:
    """A model behind an OpenAI-compatible HTTP API (see the module docstring).

    ``client`` belongs to the caller, who closes it; ``model`` empty lets the server choose;
    ``api_key`` None or empty sends no ``Authorization`` header.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        model: str,
        api_key: str | None,
        context_window: int,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._client = client
        self._base_url = base_url.rstrip("/")
        self._where = public_url(base_url)
        self._model = model
        self._api_key = (api_key or "").strip() or None  # a pasted key often ends in a newline
        self._context_window = context_window
        self._retry = retry or RetryPolicy()
        # Some servers refuse ``stream_options`` (400 or 422 naming it): then the provider asks
        # without it from then on, and charges by its own estimate.
        self._ask_for_usage = True
        # Likewise ``tool_choice: "required"``: refused once, "auto" is sent instead from then on.
        self._may_require = True

    def __repr__(self) -> str:
        return f"RemoteProvider({self._where!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        return f"{self._model or 'default model'} at {self._where}"

    @property
    def context_window(self) -> int:
        return self._context_window

    @property
    def exact_counts(self) -> bool:
        return False

    async def count_prompt(self, request: CompletionRequest) -> int:
        return estimate_tokens(len(self._prompt_json(request)))

    async def aclose(self) -> None:
        """Nothing to release: the client is the engine's, which closes it on its own loop."""

    # --- one completion ------------------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, cancel: CancelToken, on_text: TextSink | None = None
    ) -> Completion:
        prompt_estimate = await self.count_prompt(request)
        assembler = ChunkAssembler(on_text, output_limit=output_limit(request.max_tokens))
        remaining = request.deadline - time.monotonic()
        if remaining <= 0 or _stopped_by(cancel) == "cancelled":
            return self._result(assembler, _stopped_by(cancel), prompt_estimate, sent=False)

        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(stopped.set)

        remove = cancel.on_cancel(wake)
        work = asyncio.create_task(self._attempts(request, assembler))
        waiter = asyncio.create_task(stopped.wait())
        try:
            await asyncio.wait({work, waiter}, timeout=remaining, return_when=FIRST_COMPLETED)
        finally:
            remove()
            for task in (work, waiter):
                task.cancel()
            await asyncio.wait({work, waiter})
        # A Stop pressed while a failure was on its way wins: the person asked to stop. Any
        # failure is a ProviderError by now (see _stream), or the text sink's own exception.
        if work.cancelled() or (_stopped_by(cancel) == "cancelled" and work.exception()):
            return self._result(assembler, _stopped_by(cancel), prompt_estimate, sent=True)
        if (failure := work.exception()) is not None:
            raise failure
        return self._result(assembler, assembler.finish(), prompt_estimate, sent=True)

    @staticmethod
    def _result(
        assembler: ChunkAssembler, stop: StopKind, prompt_estimate: int, *, sent: bool
    ) -> Completion:
        output_estimate = estimate_tokens(assembler.output_bytes())
        # No tokenizer makes more tokens than the text has bytes; the template may add some.
        ceiling = prompt_estimate * BYTES_PER_TOKEN + TEMPLATE_ALLOWANCE
        return assembler.completion(
            stop, prompt_estimate, output_estimate, sent=sent, prompt_ceiling=ceiling
        )

    async def _attempts(self, request: CompletionRequest, assembler: ChunkAssembler) -> None:
        body = json.dumps(self._body(request), ensure_ascii=False).encode()
        attempt = 1
        while True:
            try:
                await self._stream(body, request.deadline, assembler)
            except _OptionRefused as refused:  # not a failed attempt: asked again, as it likes
                log.info("%s refuses %s: asking without it", self._where, refused.option)
                if refused.option == "stream_options":
                    self._ask_for_usage = False
                else:
                    self._may_require = False
                body = json.dumps(self._body(request), ensure_ascii=False).encode()
                assembler.reset()
            except _Retry as failure:
                left = request.deadline - time.monotonic()
                wait = failure.retry_after
                wait = self._retry.delay(attempt) if wait is None else wait
                if attempt >= self._retry.attempts or wait >= left:
                    log.warning("giving up on %s after %d tries: %s", self._where, attempt, failure)
                    raise failure.error from None
                log.info("retrying %s in %.2f s (try %d): %s", self._where, wait, attempt, failure)
                assembler.reset()
                attempt += 1
                await asyncio.sleep(wait)
            else:
                return

    async def _stream(self, body: bytes, deadline: float, assembler: ChunkAssembler) -> None:
        """One attempt: send, check the status, read the answer into ``assembler``.

        Raises a :class:`ProviderError`, or :class:`_Retry` when another attempt may help; never
        anything else, except what ``on_text`` raised (see :meth:`_failure`).
        """
        self._check_settings()
        left = max(deadline - time.monotonic(), 0.001)
        connect = min(self._retry.connect_timeout, left)
        # The race in complete() ends the request at the deadline; these only bound the pieces.
        timeout = httpx.Timeout(left + 1.0, connect=connect, pool=connect)
        headers = {**self._headers(accept="text/event-stream"), "Content-Type": "application/json"}
        url = f"{self._base_url}/chat/completions"
        try:
            async with self._client.stream(
                "POST", url, content=body, headers=headers, timeout=timeout
            ) as response:
                complete = await self._read_answer(response, assembler)
        except (ProviderError, _Retry):
            raise
        except Exception as error:
            if assembler.sink_failed:
                raise
            failure = self._failure(error, received=assembler.received_content)
            raise failure from None
        if not complete:
            dropped = self._dropped("the stream ended before the answer did")
            raise dropped if assembler.received_content else _Retry(dropped)

    async def _read_answer(self, response: httpx.Response, assembler: ChunkAssembler) -> bool:
        if response.status_code != 200:
            raise await self._status_error(response, "chat/completions")
        return await read_answer(response, assembler)

    def _failure(  # noqa: PLR0911 - one answer per kind of failure
        self, error: Exception, *, received: bool
    ) -> ProviderError | _Retry:
        """What to raise for ``error``, raised while sending a request or reading its answer.

        ``received``: content already streamed, so a retry would repeat it. Connection failures
        are retried (as long as nothing streamed); everything else is final.
        """
        reason = self._redact(str(error)) or type(error).__name__
        if isinstance(error, StreamServerError):
            message = reason[:300]
            log.warning("%s reported an error in the stream: %s", self._where, message)
            return ProviderResponseError(
                f"The server at {self._where} reported an error while answering: {message}"
            )
        if isinstance(error, StreamProtocolError):
            log.warning("%s broke the stream protocol: %s", self._where, reason)
            return ProviderResponseError(self._unreadable(reason))
        if isinstance(error, httpx.UnsupportedProtocol | httpx.InvalidURL):
            return self._bad_address(reason)
        if isinstance(error, httpx.DecodingError):
            log.warning("%s sent a body that does not decode: %s", self._where, reason)
            return ProviderResponseError(
                self._unreadable(f"its body could not be decoded as its headers say ({reason})")
            )
        if isinstance(error, httpx.TransportError | httpx.StreamError):
            log.warning("connection to %s failed: %s", self._where, self._redact(repr(error)))
            if isinstance(error, _CONNECTING):
                return _Retry(self._unreachable(error))
            dropped = self._dropped(str(error))
            return dropped if received else _Retry(dropped)
        if isinstance(error, httpx.HTTPError):  # too many redirects, and kinds to come
            log.warning("request to %s failed: %s", self._where, self._redact(repr(error)))
            return ProviderResponseError(self._unreadable(f"{type(error).__name__}: {reason}"))
        details = self._redact("".join(traceback.format_exception(error)))
        log.error("unexpected failure talking to %s:\n%s", self._where, details)
        return ProviderResponseError(
            f"The server at {self._where} could not be read: {type(error).__name__} "
            f"({reason[:300]}). Ask again; if it keeps happening, check the server's log and "
            "Imprint's."
        )

    # --- request shape ------------------------------------------------------------------------

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        """The chat completion request. A tools-free request sends no tools at all, rather than
        ``tool_choice: "none"``: some servers reject that value, none reject a missing list."""
        body: dict[str, Any] = {}
        if self._model:
            body["model"] = self._model
        body["messages"] = [message.to_openai() for message in request.messages]
        if request.offers_tools:
            body["tools"] = [dict(tool) for tool in request.tools]
            required = request.tool_choice == "required" and self._may_require
            body["tool_choice"] = "required" if required else "auto"
        body["max_tokens"] = request.max_tokens
        body["temperature"] = request.temperature
        body["stream"] = True
        if self._ask_for_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    def _prompt_json(self, request: CompletionRequest) -> bytes:
        """The part of the request body the server turns into prompt tokens: messages and tools."""
        sent = self._body(request)
        counted = {key: sent[key] for key in ("messages", "tools") if key in sent}
        return json.dumps(counted, ensure_ascii=False, separators=(",", ":")).encode()

    def _check_settings(self) -> None:
        """Refuse, before sending anything, an address or an API key that cannot work."""
        if (problem := address_problem(self._base_url)) is not None:
            raise self._bad_address(problem)
        if self._api_key and (problem := key_problem(self._api_key)) is not None:
            raise ProviderAuthError(
                f"The API key in {PREFERENCES} cannot be used: {problem}. Paste it again."
            )

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    # --- connection test ----------------------------------------------------------------------

    async def check_connection(self, timeout: float = 10.0) -> str:
        """Ask the server for its models: a short summary for "Test connection", or the
        :class:`ProviderError` that the same problem would raise during research."""
        self._check_settings()
        try:
            async with self._client.stream(
                "GET",
                f"{self._base_url}/models",
                headers=self._headers(accept="application/json"),
                timeout=timeout,
            ) as response:
                listing = await self._read_models(response)
            models = [valid_text(str(item["id"])) for item in listing["data"]]
        except ProviderError:
            raise
        except (StreamProtocolError, KeyError, TypeError, RecursionError) as error:
            problem = self._redact(str(error) or type(error).__name__)[:300]
            raise ProviderResponseError(
                self._unreadable(f"its model list is not in the OpenAI format ({problem})")
            ) from None
        except httpx.TransportError as error:
            if isinstance(error, httpx.UnsupportedProtocol):
                raise self._bad_address(self._redact(str(error))) from None
            log.warning("connection to %s failed: %s", self._where, self._redact(repr(error)))
            raise self._unreachable(error) from None
        except Exception as error:
            failure = self._failure(error, received=False)
            raise failure.error if isinstance(failure, _Retry) else failure from None
        if self._model and self._model not in models:
            offered = ", ".join(models[:10]) or "none"
            raise ProviderNotFoundError(
                f"The server at {self._where} does not offer a model named {self._model!r} "
                f"(it offers: {offered}). Change Model name in {PREFERENCES}."
            )
        shown = ", ".join(models[:3]) + (", …" if len(models) > 3 else "")
        count = f"{len(models)} model{'s' if len(models) != 1 else ''}"
        return f"Connected to {self._where}: {count} available ({shown or 'none listed'})."

    async def _read_models(self, response: httpx.Response) -> Any:
        if response.status_code != 200:
            failure = await self._status_error(response, "models")
            raise failure.error if isinstance(failure, _Retry) else failure
        return parse_json(await read_bounded(response, ANSWER_LIMIT))

    # --- errors -------------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[API key]") if self._api_key else text

    def _unreadable(self, problem: str) -> str:
        return (
            f"The server at {self._where} sent an answer Imprint cannot read: {problem}. "
            f"Check that Server address in {PREFERENCES} points to an OpenAI-compatible API "
            "(it usually ends in /v1)."
        )

    async def _status_error(
        self, response: httpx.Response, endpoint: str
    ) -> ProviderError | _Retry:
        """The error (or the :class:`_Retry`) for a response that is not 200."""
        status = response.status_code
        try:
            raw = await read_limited(response)
        except Exception:  # the body only adds detail: the status is the answer
            raw = b""
        detail = error_text(try_json(raw)) or raw[:300].decode("utf-8", "replace")
        detail = self._redact(detail).strip()[:300]
        log.warning("%s answered %d to /%s: %s", self._where, status, endpoint, detail)
        if status in (400, 422) and endpoint == "chat/completions":
            if self._ask_for_usage and "stream_options" in detail:
                return _OptionRefused("stream_options", ProviderResponseError(detail))
            if self._may_require and "tool_choice" in detail:
                return _OptionRefused("tool_choice", ProviderResponseError(detail))
        retried = status in _STATUS_RETRIED or status >= 500
        kind, message = _STATUS_MESSAGES.get(status) or _STATUS_MESSAGES[500 if retried else 0]
        if status == 401 and not self._api_key:
            message = "asks for an API key (401). Add one in {prefs}."
        model = f" or no model named {self._model!r}" if self._model else ""
        error = kind(
            f"The server at {self._where} "
            + message.format(prefs=PREFERENCES, status=status, endpoint=endpoint, model=model)
            + (f" It said: {detail}" if detail and status != 401 else "")
        )
        if retried:
            return _Retry(error, _retry_after(response.headers.get("retry-after")))
        return error

    def _bad_address(self, problem: str) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"The server address {self._where} cannot be used ({problem}). Change Server "
            f"address in {PREFERENCES}; it usually looks like http://127.0.0.1:8080/v1."
        )

    def _unreachable(self, error: Exception) -> ProviderUnavailableError:
        reason = self._redact(str(error)) or type(error).__name__
        return ProviderUnavailableError(
            f"Could not connect to the server at {self._where} ({reason}). Check that it is "
            f"running and that Server address in {PREFERENCES} is right."
        )

    def _dropped(self, reason: str) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"The connection to the server at {self._where} broke off before the answer was "
            f"complete ({self._redact(reason) or 'no reason given'}). Ask again; if it keeps "
            "happening, check the server's log."
        )


def _stopped_by(cancel: CancelToken) -> StopKind:
    """Why an interrupted request stopped: Stop when it was pressed, else the deadline."""
    return "cancelled" if cancel.cancelled else "deadline"


def _retry_after(header: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not header:
        return None
    header = header.strip()
    with contextlib.suppress(ValueError):
        seconds = float(header)
        return seconds if seconds >= 0 else 0.0  # NaN too: a wait that makes no sense is none
    try:
        wait = parsedate_to_datetime(header).timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None  # not a date, or one out of any calendar's range
    return max(wait, 0.0)
