"""The remote provider: an OpenAI-compatible server (llama.cpp's, vLLM, LM Studio, a cloud API).

One :meth:`RemoteProvider.complete` is one streamed ``POST {base_url}/chat/completions``:

* **Deadline.** The request's monotonic deadline bounds everything: httpx timeouts are derived
  from the time left, and the stream is raced against the deadline itself, so a server that
  trickles bytes forever is cut there and the text that arrived is kept (``stop="deadline"``).
* **Cancel.** The cancel token wakes the loop through ``call_soon_threadsafe`` and the open read
  is cancelled at once (``stop="cancelled"``), whichever thread pressed Stop.
* **Retries.** 429, 5xx and connection failures are retried with exponential backoff and jitter,
  honouring ``Retry-After``, but only while nothing has streamed yet (a retry would repeat text
  the person already saw) and never past the deadline. When the server's own ``Retry-After``
  lies past the deadline, the provider raises :class:`ProviderDeadlineError` at once: the time
  ran out, research ends with ``time_budget`` (DESIGN §1). When its own backoff would end after
  the deadline, or the tries run out, it gives up at once with the matching error
  (:class:`ProviderRateLimitError` or :class:`ProviderUnavailableError`) — a server that keeps
  failing is an error the person should read, not a silent time-budget stop.
* **Context.** A refusal naming the context limit (HTTP 400/413/422, see :mod:`.limits`) is a
  :class:`ContextOverflowError` — research ends with ``context_full`` — and the window size it
  names, when smaller, is this connection's window from then on. A streamed request answered with
  an empty event stream is asked once more without streaming, which is how llama-cpp-python's
  server says a prompt is too long. The window itself is the person's number, else what the
  server says (:meth:`RemoteProvider.discover_context_window`), else
  :data:`DEFAULT_CONTEXT_WINDOW`; :attr:`RemoteProvider.context_window_note` says which.
* **Counting.** Prompts are estimated per script from their UTF-8 text (:mod:`.estimate`) and
  reconciled with the server's ``usage`` when it reports it (``stream_options.include_usage``).
  The reused prefix is the server's ``cached_tokens`` when it reports them, else the estimate of
  the prompt this request shares with the previous one the server read (the serialized tools,
  then each message, compared in order while they are equal: what a server's prompt cache can
  reuse of a growing conversation).
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
import random
import time
import traceback
from asyncio import FIRST_COMPLETED
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

from imprint_desktop.core.cancel import CancelToken
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
from imprint_desktop.core.providers import limits
from imprint_desktop.core.providers.base import Completion, CompletionRequest, StopKind, TextSink
from imprint_desktop.core.providers.bodies import (
    ANSWER_LIMIT,
    EmptyStreamError,
    parse_json,
    read_answer,
    read_bounded,
    read_limited,
)
from imprint_desktop.core.providers.chunks import ChunkAssembler
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.providers.wire import (
    StreamProtocolError,
    StreamServerError,
    error_text,
    try_json,
    valid_text,
)

log = logging.getLogger(__name__)

BYTES_PER_TOKEN = 4
"""UTF-8 bytes a token's text usually has (English, the common BPE tokenizers): only for the cut
of an answer that runs far past its allowance (:func:`output_limit`). Counting is
:func:`~.estimate.estimate_tokens`, which holds for every script."""

DEFAULT_CONTEXT_WINDOW = 8192
"""The window assumed when the person set none and the server does not say its own."""

ContextSource = Literal["settings", "server", "assumed"]

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


@dataclass(slots=True)
class _Exchange:
    """One request on its way, and whether it is streamed (one asked again after an empty event
    stream is not)."""

    request: CompletionRequest
    stream: bool = True


class RemoteProvider:
    """A model behind an OpenAI-compatible HTTP API (see the module docstring).

    ``client`` belongs to the caller, who closes it; ``model`` empty lets the server choose;
    ``api_key`` None or empty sends no ``Authorization`` header; ``context_window`` 0 asks the
    server (:meth:`discover_context_window`), any other number is the person's, used without
    asking (until the server refuses a prompt and names a smaller window).
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
        self._configured_window = max(0, context_window)
        self._context_window = self._configured_window or DEFAULT_CONTEXT_WINDOW
        self.context_window_source: ContextSource = "settings" if context_window > 0 else "assumed"
        self._discovered = False
        # The prompt (serialized tools and messages, in order) of the last request the server
        # read: what a prompt cache can reuse of the next one.
        self._previous_prompt: tuple[str, ...] = ()
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
    def context_window_note(self) -> str:
        """Where the context window comes from, in a sentence for the status line; empty when
        it is the person's own number."""
        size = f"{self._context_window:,}"
        if self.context_window_source == "server":
            return f"The server at {self._where} holds {size} tokens of context."
        if self.context_window_source == "assumed":
            return (
                f"The server at {self._where} does not say how many tokens its model holds, so "
                f"Imprint assumes {size}. If it holds more or less, set Context window in "
                f"{PREFERENCES}."
            )
        return ""

    @property
    def exact_counts(self) -> bool:
        return False

    async def count_prompt(self, request: CompletionRequest) -> int:
        return sum(map(estimate_tokens, self._prompt_pieces(request)))

    async def discover_context_window(self, timeout: float = 5.0) -> None:
        """Ask the server for its context window, once per connection, unless the person set
        one. A server that does not say (or cannot be reached) leaves the assumed window and its
        note; the first request then meets any real problem and reports it."""
        if self._configured_window or self._discovered:
            return
        self._discovered = True
        if address_problem(self._base_url) is not None:
            return
        if self._api_key and key_problem(self._api_key) is not None:
            return
        found = await limits.ask_window(
            self._client,
            self._base_url,
            self._model,
            self._headers(accept="application/json"),
            timeout=timeout,
        )
        if found is None:
            log.info(
                "%s does not say its context window: %d assumed", self._where, self.context_window
            )
            return
        log.info("%s holds %d tokens of context (%s)", self._where, found.size, found.where)
        self._context_window, self.context_window_source = found.size, "server"

    async def aclose(self) -> None:
        """Nothing to release: the client is the engine's, which closes it on its own loop."""

    # --- one completion ------------------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, cancel: CancelToken, on_text: TextSink | None = None
    ) -> Completion:
        prompt = self._prompt_pieces(request)
        counts = _Counts(
            prompt=sum(map(estimate_tokens, prompt)),
            prefix=self._shared_prefix(prompt),
            ceiling=sum(len(piece.encode()) for piece in prompt) + TEMPLATE_ALLOWANCE,
        )
        assembler = ChunkAssembler(on_text, output_limit=output_limit(request.max_tokens))
        remaining = request.deadline - time.monotonic()
        if remaining <= 0 or _stopped_by(cancel) == "cancelled":
            return self._result(assembler, _stopped_by(cancel), counts, sent=False)

        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(stopped.set)

        remove = cancel.on_cancel(wake)
        work = asyncio.create_task(self._attempts(_Exchange(request), assembler))
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
            if assembler.received_content:  # the server read this prompt: its cache holds it
                self._previous_prompt = prompt
            return self._result(assembler, _stopped_by(cancel), counts, sent=True)
        if (failure := work.exception()) is not None:
            raise failure
        self._previous_prompt = prompt
        return self._result(assembler, assembler.finish(), counts, sent=True)

    @staticmethod
    def _result(
        assembler: ChunkAssembler, stop: StopKind, counts: _Counts, *, sent: bool
    ) -> Completion:
        generated = assembler.text + "".join(c.name + c.arguments for c in assembler.tool_calls())
        return assembler.completion(
            stop,
            counts.prompt,
            estimate_tokens(generated),
            sent=sent,
            prompt_ceiling=counts.ceiling,
            prefix_estimate=counts.prefix,
        )

    async def _attempts(self, exchange: _Exchange, assembler: ChunkAssembler) -> None:
        request = exchange.request
        attempt = 1
        while True:
            try:
                await self._stream(exchange, assembler)
            except _OptionRefused as refused:  # not a failed attempt: asked again, as it likes
                log.info("%s refuses %s: asking without it", self._where, refused.option)
                if refused.option == "stream_options":
                    self._ask_for_usage = False
                elif refused.option == "stream":
                    exchange.stream = False  # this request only: the answer says why it failed
                else:
                    self._may_require = False
                assembler.reset()
            except _Retry as failure:
                left = request.deadline - time.monotonic()
                wait = failure.retry_after
                wait = self._retry.delay(attempt) if wait is None else wait
                if (
                    attempt < self._retry.attempts
                    and failure.retry_after is not None
                    and wait >= left
                ):
                    log.info("%s asks to wait %.1f s, %.1f s left", self._where, wait, left)
                    raise ProviderDeadlineError(
                        f"The server at {self._where} is busy and asked to be asked again in "
                        f"{_seconds(wait)}, after the {_seconds(left)} left for this request."
                    ) from None
                if attempt >= self._retry.attempts or wait >= left:
                    log.warning("giving up on %s after %d tries: %s", self._where, attempt, failure)
                    raise failure.error from None
                log.info("retrying %s in %.2f s (try %d): %s", self._where, wait, attempt, failure)
                assembler.reset()
                attempt += 1
                await asyncio.sleep(wait)
            else:
                return

    async def _stream(self, exchange: _Exchange, assembler: ChunkAssembler) -> None:
        """One attempt: send, check the status, read the answer into ``assembler``.

        Raises a :class:`ProviderError`, or :class:`_Retry` when another attempt may help; never
        anything else, except what ``on_text`` raised (see :meth:`_failure`).
        """
        self._check_settings()
        body = json.dumps(self._body(exchange.request, exchange.stream), ensure_ascii=False)
        left = max(exchange.request.deadline - time.monotonic(), 0.001)
        connect = min(self._retry.connect_timeout, left)
        # The race in complete() ends the request at the deadline; these only bound the pieces.
        timeout = httpx.Timeout(left + 1.0, connect=connect, pool=connect)
        accept = "text/event-stream" if exchange.stream else "application/json"
        headers = {**self._headers(accept=accept), "Content-Type": "application/json"}
        url = f"{self._base_url}/chat/completions"
        try:
            async with self._client.stream(
                "POST", url, content=body.encode(), headers=headers, timeout=timeout
            ) as response:
                complete = await self._read_answer(response, assembler)
        except (ProviderError, _Retry):
            raise
        except EmptyStreamError as error:
            if not exchange.stream:  # cannot happen: a plain answer is not an event stream
                raise ProviderResponseError(self._unreadable(str(error))) from None
            log.warning(
                "%s sent an empty event stream: asking again without streaming", self._where
            )
            unread = ProviderResponseError(self._unreadable(str(error)))
            raise _OptionRefused("stream", unread) from None
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

    def _body(self, request: CompletionRequest, stream: bool = True) -> dict[str, Any]:
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
        body["stream"] = stream
        if self._ask_for_usage and stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def _prompt_pieces(self, request: CompletionRequest) -> tuple[str, ...]:
        """The part of the request the server turns into prompt tokens, in the order chat
        templates write it: the tools, then each message, as JSON text."""
        sent = self._body(request)
        pieces = [_compact(sent["tools"])] if "tools" in sent else []
        return (*pieces, *map(_compact, sent["messages"]))

    def prompt_json(self, request: CompletionRequest) -> bytes:
        """The prompt part of the request as one JSON text (tools, then messages)."""
        return f"[{','.join(self._prompt_pieces(request))}]".encode()

    def _shared_prefix(self, prompt: tuple[str, ...]) -> int:
        """Estimated tokens of the pieces ``prompt`` starts with that the previous prompt the
        server read started with too. Only whole pieces count, and the first that differs ends
        the prefix: templates differ in where they write the tools and the system message, so
        nothing after a difference can be counted on to be reused."""
        shared = 0
        for before, now in zip(self._previous_prompt, prompt, strict=False):
            if before != now:
                break
            shared += estimate_tokens(now)
        return shared

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
        if endpoint == "chat/completions" and (
            refusal := limits.context_refusal(status, try_json(raw), detail)
        ):
            return self._too_long(refusal)
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

    def _too_long(self, refusal: limits.ContextRefusal) -> ContextOverflowError:
        """The error for a prompt the server refused as too long; a window size it names, when
        smaller than the one assumed, is this connection's window from then on."""
        if refusal.window is not None and refusal.window < self._context_window:
            log.warning(
                "%s holds %d tokens, not %d: using its number",
                self._where,
                refusal.window,
                self._context_window,
            )
            self._context_window, self.context_window_source = refusal.window, "server"
        return ContextOverflowError(
            f"The prompt does not fit the context window of the model at {self._where} "
            f"({self._context_window:,} tokens). It said: {refusal.message}"
        )

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


@dataclass(frozen=True, slots=True)
class _Counts:
    """A request's estimates: its prompt, the prefix it shares with the previous prompt, and the
    most prompt tokens it could make (its bytes and a template's own)."""

    prompt: int
    prefix: int
    ceiling: int


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
