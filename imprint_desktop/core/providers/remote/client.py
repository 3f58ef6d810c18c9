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
* **Context.** A refusal naming the context limit (HTTP 400/413/422, see :mod:`.stated_window`) is a
  :class:`ContextOverflowError` — research ends with ``context_full`` — and the window size it
  names, when smaller, is this connection's window from then on. A streamed request answered with
  an empty event stream is asked once more without streaming, which is how llama-cpp-python's
  server says a prompt is too long. The window itself is the person's number, else what the
  server says (:meth:`RemoteProvider.discover_context_window`), else an assumed one
  (:class:`~.server.ContextWindow`); :attr:`RemoteProvider.context_window_note` says which.
* **Output.** The answer is cut at the request's allowance, estimated as it arrives, streamed or
  not, with at most :data:`~.base.MAX_CALLS_PER_REPLY` calls kept (:mod:`.chunks`). Hidden
  reasoning is output too: counted, bounded, never the answer. Call markup a server passed on
  as text (it does not parse tools) is read as the calls it is.
* **Counting.** Prompts are estimated before they are sent (:mod:`.request`) and
  reconciled with the server's ``usage`` when it reports it (``stream_options.include_usage``).
  The reused prefix is the server's ``cached_tokens`` when it reports them, else the estimate of
  the prompt this request shares with the previous one the server read.
* **Failures.** Whatever the server, the network or the settings do,
  :meth:`~RemoteProvider.complete` returns a :class:`Completion` or raises a
  :class:`ProviderError` in words for people (:mod:`.failures`); only cancellation of the
  calling task passes through as it is. An unusable server address or API key fails before
  anything is sent; an exception nobody foresaw (httpcore passes on what it cannot map) is
  logged with its traceback and reported as a :class:`ProviderResponseError`. Only what
  ``on_text`` itself raises is passed on unchanged: that is the caller's.

The API key travels only in the ``Authorization`` header of this provider's own requests — never
in the shared client's defaults (``fetch_url`` uses the same client), logs, errors or ``repr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from asyncio import FIRST_COMPLETED
from dataclasses import dataclass, replace
from typing import Any

import httpx

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import ProviderError, ProviderNotFoundError, ProviderResponseError
from imprint_desktop.core.providers.base import Completion, CompletionRequest, StopKind, TextSink
from imprint_desktop.core.providers.call_markup import CALL_MARKERS, parse_tool_calls, tool_names
from imprint_desktop.core.providers.estimate import estimate_tokens
from imprint_desktop.core.providers.remote import stated_window
from imprint_desktop.core.providers.remote.bodies import (
    ANSWER_LIMIT,
    EmptyStreamError,
    parse_json,
    read_answer,
    read_bounded,
)
from imprint_desktop.core.providers.remote.chunks import ChunkAssembler
from imprint_desktop.core.providers.remote.failures import (
    Failures,
    OptionRefused,
    Retry,
    RetryPolicy,
)
from imprint_desktop.core.providers.remote.request import (
    PromptCounts,
    RequestShape,
    headers,
    output_limit,
)
from imprint_desktop.core.providers.remote.server import (
    PREFERENCES,
    ContextSource,
    ContextWindow,
    address_problem,
    key_problem,
)
from imprint_desktop.core.providers.remote.wire import StreamProtocolError, valid_text
from imprint_desktop.core.urls import public_url

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Exchange:
    """One request on its way, and whether it is streamed (one asked again after an empty event
    stream is not)."""

    request: CompletionRequest
    stream: bool = True
    # An attempt is on its way to the server (not a failed one, nor a wait before the next): a
    # request stopped now may have had its prompt read, so its prompt is charged.
    in_flight: bool = False


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
        self._shape = RequestShape(model)
        self._window = ContextWindow(context_window)
        self._failures = Failures(self._where, self._shape, self._api_key, self._window)
        self._discovered = False
        # The prompt (serialized tools and messages, in order) of the last request the server
        # read: what a prompt cache can reuse of the next one.
        self._previous_prompt: tuple[str, ...] = ()
        self._retry = retry or RetryPolicy()

    def __repr__(self) -> str:
        return f"RemoteProvider({self._where!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        return f"{self._model or 'default model'} at {self._where}"

    @property
    def context_window(self) -> int:
        return self._window.size

    @property
    def context_window_source(self) -> ContextSource:
        return self._window.source

    @property
    def context_window_note(self) -> str:
        """Where the context window comes from, in a sentence for the status line; empty when
        it is the person's own number."""
        return self._window.note(self._where)

    @property
    def exact_counts(self) -> bool:
        return False

    @property
    def parameters(self) -> int | None:
        return None  # a server does not say

    async def count_prompt(self, request: CompletionRequest) -> int:
        return sum(map(estimate_tokens, self._shape.prompt_pieces(request)))

    async def discover_context_window(self, timeout: float = 5.0) -> None:
        """Ask the server for its context window, once per connection, unless the person set
        one. A server that does not say (or cannot be reached) leaves the assumed window and its
        note; the first request then meets any real problem and reports it."""
        if self._window.configured or self._discovered:
            return
        self._discovered = True
        if address_problem(self._base_url) is not None:
            return
        if self._api_key and key_problem(self._api_key) is not None:
            return
        found = await stated_window.ask_window(
            self._client,
            self._base_url,
            self._model,
            headers("application/json", self._api_key),
            timeout=timeout,
        )
        if found is None:
            log.info(
                "%s does not say its context window: %d assumed", self._where, self.context_window
            )
            return
        log.info("%s holds %d tokens of context (%s)", self._where, found.size, found.where)
        self._window.said_by_server(found.size)

    async def aclose(self) -> None:
        """Nothing to release: the client is the engine's, which closes it on its own loop."""

    # --- one completion ------------------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, cancel: CancelToken, on_text: TextSink | None = None
    ) -> Completion:
        prompt = self._shape.prompt_pieces(request)
        counts = PromptCounts.of(prompt, self._previous_prompt)
        assembler = ChunkAssembler(
            on_text, allowance=request.max_tokens, output_limit=output_limit(request.max_tokens)
        )
        remaining = request.deadline - time.monotonic()
        if remaining <= 0 or _stopped_by(cancel) == "cancelled":
            return self._result(assembler, _stopped_by(cancel), counts, sent=False)

        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(stopped.set)

        remove = cancel.on_cancel(wake)
        exchange = _Exchange(request)
        work = asyncio.create_task(self._attempts(exchange, assembler))
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
            # Stopped while waiting to retry, nothing was sent that could have been read.
            sent = exchange.in_flight or assembler.received_content
            return self._result(assembler, _stopped_by(cancel), counts, sent=sent)
        if (failure := work.exception()) is not None:
            if isinstance(failure, ProviderError) and assembler.received_content:
                # Broken part-way: what arrived is charged (the prompt past the reused prefix,
                # the output so far), and the server's cache holds the prompt.
                self._previous_prompt = prompt
                failure.partial = self._result(assembler, assembler.finish(), counts, sent=True)
            raise failure
        self._previous_prompt = prompt
        completion = self._result(assembler, assembler.finish(), counts, sent=True)
        if request.offers_tools and not completion.tool_calls:
            completion = _calls_written_as_text(completion, request)
        return completion

    @staticmethod
    def _result(
        assembler: ChunkAssembler, stop: StopKind, counts: PromptCounts, *, sent: bool
    ) -> Completion:
        return assembler.completion(
            stop,
            counts.prompt,
            assembler.output_estimate(),
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
            except OptionRefused as refused:  # not a failed attempt: asked again, as it likes
                exchange.in_flight = False
                log.info("%s refuses %s: asking without it", self._where, refused.option)
                if refused.option == "stream_options":
                    self._shape.ask_for_usage = False
                elif refused.option == "stream":
                    exchange.stream = False  # this request only: the answer says why it failed
                else:
                    self._shape.may_require = False
                assembler.reset()
            except Retry as failure:
                exchange.in_flight = False  # this attempt is over: the server read nothing
                left = request.deadline - time.monotonic()
                wait = failure.retry_after
                wait = self._retry.delay(attempt) if wait is None else wait
                if (
                    attempt < self._retry.attempts
                    and failure.retry_after is not None
                    and wait >= left
                ):
                    log.info("%s asks to wait %.1f s, %.1f s left", self._where, wait, left)
                    raise self._failures.busy(wait, left) from None
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

        Raises a :class:`ProviderError`, or :class:`Retry` when another attempt may help; never
        anything else, except what ``on_text`` raised (see :meth:`.Failures.of`).
        """
        self._check_settings()
        body = json.dumps(self._shape.body(exchange.request, exchange.stream), ensure_ascii=False)
        left = max(exchange.request.deadline - time.monotonic(), 0.001)
        connect = min(self._retry.connect_timeout, left)
        # The race in complete() ends the request at the deadline; these only bound the pieces.
        timeout = httpx.Timeout(left + 1.0, connect=connect, pool=connect)
        accept = "text/event-stream" if exchange.stream else "application/json"
        sent = {**headers(accept, self._api_key), "Content-Type": "application/json"}
        url = f"{self._base_url}/chat/completions"
        exchange.in_flight = True
        try:
            async with self._client.stream(
                "POST", url, content=body.encode(), headers=sent, timeout=timeout
            ) as response:
                complete = await self._read_answer(response, assembler)
        except (ProviderError, Retry):
            raise
        except EmptyStreamError as error:
            if not exchange.stream:  # cannot happen: a plain answer is not an event stream
                raise ProviderResponseError(self._failures.unreadable(str(error))) from None
            log.warning(
                "%s sent an empty event stream: asking again without streaming", self._where
            )
            unread = ProviderResponseError(self._failures.unreadable(str(error)))
            raise OptionRefused("stream", unread) from None
        except Exception as error:
            if assembler.sink_failed:
                raise
            failure = self._failures.of(error, received=assembler.received_content)
            raise failure from None
        if not complete:
            dropped = self._failures.dropped("the stream ended before the answer did")
            raise dropped if assembler.received_content else Retry(dropped)

    async def _read_answer(self, response: httpx.Response, assembler: ChunkAssembler) -> bool:
        if response.status_code != 200:
            raise await self._failures.status_error(response, "chat/completions")
        return await read_answer(response, assembler)

    def prompt_json(self, request: CompletionRequest) -> bytes:
        """The prompt part of the request as one JSON text (tools, then messages)."""
        return f"[{','.join(self._shape.prompt_pieces(request))}]".encode()

    def _check_settings(self) -> None:
        """Refuse, before sending anything, an address or an API key that cannot work."""
        if (problem := address_problem(self._base_url)) is not None:
            raise self._failures.bad_address(problem)
        if self._api_key and (problem := key_problem(self._api_key)) is not None:
            raise self._failures.bad_key(problem)

    # --- connection test ----------------------------------------------------------------------

    async def check_connection(self, timeout: float = 10.0) -> str:
        """Ask the server for its models: a short summary for "Test connection", or the
        :class:`ProviderError` that the same problem would raise during research."""
        self._check_settings()
        try:
            async with self._client.stream(
                "GET",
                f"{self._base_url}/models",
                headers=headers("application/json", self._api_key),
                timeout=timeout,
            ) as response:
                listing = await self._read_models(response)
            models = [valid_text(str(item["id"])) for item in listing["data"]]
        except ProviderError:
            raise
        except (StreamProtocolError, KeyError, TypeError, RecursionError) as error:
            problem = self._failures.redact(str(error) or type(error).__name__)[:300]
            problem = f"its model list is not in the OpenAI format ({problem})"
            raise ProviderResponseError(self._failures.unreadable(problem)) from None
        except httpx.TransportError as error:
            if isinstance(error, httpx.UnsupportedProtocol):
                raise self._failures.bad_address(self._failures.redact(str(error))) from None
            reason = self._failures.redact(repr(error))
            log.warning("connection to %s failed: %s", self._where, reason)
            raise self._failures.unreachable(error) from None
        except Exception as error:
            failure = self._failures.of(error, received=False)
            raise failure.error if isinstance(failure, Retry) else failure from None
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
            failure = await self._failures.status_error(response, "models")
            raise failure.error if isinstance(failure, Retry) else failure
        return parse_json(await read_bounded(response, ANSWER_LIMIT))


def _calls_written_as_text(completion: Completion, request: CompletionRequest) -> Completion:
    """``completion`` with the calls its text holds, when a server that does not parse tools
    passed the model's own call markup (``<tool_call>{…}</tool_call>`` and the other native
    shapes) on as text: they are the calls it is, parsed as the local provider parses them
    (without loading llama.cpp), never an answer."""
    text = completion.text
    # A reply that is one bare JSON object may be a call too, in the Llama 3 shape.
    if not any(mark in text for mark in CALL_MARKERS) and not text.lstrip().startswith("{"):
        return completion
    parsed = parse_tool_calls(text, tool_names(request.tools))
    if not parsed.calls:
        return completion
    stop: StopKind = "tool_calls" if completion.stop == "stop" else completion.stop
    return replace(completion, text=parsed.content, tool_calls=parsed.calls, stop=stop)


def _stopped_by(cancel: CancelToken) -> StopKind:
    """Why an interrupted request stopped: Stop when it was pressed, else the deadline."""
    return "cancelled" if cancel.cancelled else "deadline"
