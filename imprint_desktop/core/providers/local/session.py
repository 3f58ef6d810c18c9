"""The model thread's side of a request: tokens in, prefix reuse, chunked prefill, generation.

A :class:`ModelSession` owns one llama.cpp context and keeps an exact list of the tokens its KV
cache holds (sequence 0). Every request:

1. finds the longest common prefix between its prompt tokens and that list — the *reused prefix* —
   and removes everything after it from the KV cache;
2. evaluates the rest in chunks of ``model.n_batch`` tokens (one llama.cpp micro-batch each), adding
   each finished chunk to the list, so a prefill interrupted by Stop or a deadline leaves its
   finished chunks as the next request's reusable prefix;
3. samples and evaluates output tokens one at a time — the last one too, so that the KV cache holds
   the whole reply, the next round's prompt (which repeats it) reuses it, and what llama.cpp
   evaluated is exactly ``prompt_evaluated + output_tokens``.

Stop and deadlines reach *inside* llama.cpp through :class:`AbortSwitch`, an abort callback set on
the context once and checked by ggml between graph nodes, so a long prefill chunk stops within
milliseconds. An aborted ``llama_decode`` returns 2 and has already rolled back its unfinished
micro-batch; the session re-reads the KV cache's last position to keep its token list in step, and
the context stays usable. Everything here runs on the provider's single model thread.
"""

from __future__ import annotations

import codecs
import ctypes
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import llama_cpp

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import ProviderError
from imprint_desktop.core.providers.local.loader import (
    LoadedModel,
    quiet_errors_while,
    threads_for_now,
)
from imprint_desktop.core.providers.local.prefixes import PrefixStore
from imprint_desktop.core.providers.local.sampling import (
    LoopGuard,
    Sampling,
    TokenSampler,
    cut_loop,
)

log = logging.getLogger(__name__)

Interruption = Literal["deadline", "cancelled"]
#: ``on_prefill(evaluated, to_evaluate)`` after each prefill chunk, on the model thread.
PrefillObserver = Callable[[int, int], None]
#: Receives output text as it is decoded (already whole UTF-8 characters).
PieceSink = Callable[[str], None]


_NO_CALLBACK = llama_cpp.ggml_abort_callback()  # a NULL function pointer


class AbortSwitch:
    """The abort callback of one context: true once the deadline passes or the token is set.

    ggml calls it from the decoding thread between graph nodes, so it must be cheap and must never
    raise; the ctypes function object lives as long as the switch (llama.cpp keeps only a raw
    pointer). ``close()`` aborts whatever is running, for shutdown.
    """

    def __init__(self) -> None:
        #: The clock deadlines are read on: ``time.monotonic``, or the research engine's own
        #: when it keeps another (a test that moves time on, see LocalProvider.clock).
        self.clock: Callable[[], float] = time.monotonic
        self._deadline = math.inf
        self._token: CancelToken | None = None
        self._abandoned: threading.Event | None = None
        self._closing = False
        self.callback = llama_cpp.ggml_abort_callback(self._should_abort)

    def install(self, context: llama_cpp.llama_context_p) -> None:
        llama_cpp.llama_set_abort_callback(context, self.callback, None)

    def uninstall(self, context: llama_cpp.llama_context_p) -> None:
        llama_cpp.llama_set_abort_callback(context, _NO_CALLBACK, None)

    def arm(self, deadline: float, token: CancelToken, abandoned: threading.Event) -> None:
        self._token, self._abandoned, self._deadline = token, abandoned, deadline

    def disarm(self) -> None:
        self._token, self._abandoned, self._deadline = None, None, math.inf

    def close(self) -> None:
        self._closing = True

    def reason(self) -> Interruption | None:
        """Why work must stop now, if it must; cancellation wins over the deadline."""
        token, abandoned = self._token, self._abandoned
        if self._closing or (token is not None and token.cancelled):
            return "cancelled"
        if abandoned is not None and abandoned.is_set():
            return "cancelled"
        if self.clock() >= self._deadline:
            return "deadline"
        return None

    def _should_abort(self, _data: ctypes.c_void_p) -> bool:
        return self.reason() is not None


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one request did on the model: text, why it ended, and what it evaluated."""

    text: str
    stop: Literal["stop", "length", "deadline", "cancelled"]
    reused_prefix: int
    prompt_evaluated: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class _AnswerLimit:
    """Output that ``is_call`` does not take for tool calls ends after ``tokens``."""

    tokens: int
    is_call: Callable[[str], bool]

    def reached(self, generated: int, pieces: Sequence[str]) -> bool:
        return generated == self.tokens and not self.is_call("".join(pieces))


class ModelSession:
    """One context and the exact token list of its KV cache (see the module docstring).

    Made on the model thread, and used only there.
    """

    def __init__(self, loaded: LoadedModel, store: PrefixStore | None = None) -> None:
        self.loaded = loaded
        #: Where an opening evaluated by :meth:`warm` is kept for the next process (None: not).
        self.store = store
        self.n_batch = min(loaded.options.n_batch, loaded.n_ctx)
        self.cached: list[int] = []
        self.abort = AbortSwitch()
        self.abort.install(loaded.context)
        quiet_errors_while(lambda: self.abort.reason() is not None)
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._memory = llama_cpp.llama_get_memory(loaded.context)
        self._piece = ctypes.create_string_buffer(256)
        self.threads = 0  # what llama.cpp was last told to use (set before each request)

    def close(self) -> None:
        self.abort.close()
        if self.store is not None and self.cached:
            self.store.save_last(self.loaded.context, self.cached)  # for the next process
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        self.loaded.close()

    # --- tokens ------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """The prompt's tokens, special tokens parsed; BOS added when the model wants one and the
        template did not already write it."""
        data = text.encode("utf-8")
        add_bos = self.loaded.add_bos and not (
            self.loaded.bos_text and text.startswith(self.loaded.bos_text)
        )
        capacity = len(data) + 2
        buffer = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(
            self.loaded.vocab, data, len(data), buffer, capacity, add_bos, True
        )
        if count < 0:
            capacity = -count
            buffer = (llama_cpp.llama_token * capacity)()
            count = llama_cpp.llama_tokenize(
                self.loaded.vocab, data, len(data), buffer, capacity, add_bos, True
            )
        if count < 0:
            raise ProviderError(f"{self.loaded.name} could not tokenize the prompt.")
        return list(buffer[:count])

    def evaluated_total(self) -> int:
        """Tokens llama.cpp itself counts as evaluated on this context (its perf counters)."""
        llama_cpp.llama_synchronize(self.loaded.context)
        data = llama_cpp.llama_perf_context(self.loaded.context)
        return int(data.n_p_eval) + int(data.n_eval)

    # --- one request -------------------------------------------------------------------------

    def run(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int,
        sampling: Sampling,
        deadline: float,
        cancel: CancelToken,
        abandoned: threading.Event,
        on_piece: PieceSink | None = None,
        on_prefill: PrefillObserver | None = None,
        answer_tokens: int | None = None,
        is_call: Callable[[str], bool] | None = None,
    ) -> RunResult:
        """Evaluate ``prompt`` and generate up to ``max_tokens``; output that ``is_call`` does
        not take for calls ends at ``answer_tokens`` (``stop="length"``)."""
        self.abort.arm(deadline, cancel, abandoned)
        limit = _AnswerLimit(answer_tokens, is_call) if answer_tokens and is_call else None
        try:
            return self._run(prompt, max_tokens, sampling, on_piece, on_prefill, limit=limit)
        finally:
            self.abort.disarm()

    def warm(
        self, prompt: Sequence[int], stop: threading.Event, on_prefill: PrefillObserver | None
    ) -> int:
        """Evaluate ``prompt`` ahead of a request that will start with it, until ``stop`` is set
        (the next request comes): what was evaluated stays as its reusable prefix. Returns the
        tokens evaluated. With a :attr:`store`, a prompt an earlier process evaluated whole is
        loaded from it instead (or the last prompt one evaluated, when it opens with this one),
        and one evaluated whole here is kept in it."""
        self.abort.arm(math.inf, CancelToken(), stop)
        try:
            if self.abort.reason() is not None:
                return 0
            store, context = self.store, self.loaded.context
            if not self.cached and store is not None:
                # Evaluated by an earlier process: the last prompt it evaluated, which opens
                # with this one, or else this one alone.
                last = store.load_last(context, prompt, self.loaded.n_ctx)
                if last or store.load(context, prompt):
                    self.cached = last or list(prompt)
                    return 0
            self._fit_threads()
            start = self._reuse_prefix(prompt)
            self._prefill(prompt[start:], on_prefill)
            if store is not None and self.cached == list(prompt):
                store.save(context, prompt)
            return len(self.cached) - start
        finally:
            self.abort.disarm()

    def _run(
        self,
        prompt: Sequence[int],
        max_tokens: int,
        sampling: Sampling,
        on_piece: PieceSink | None,
        on_prefill: PrefillObserver | None,
        *,
        limit: _AnswerLimit | None,
    ) -> RunResult:
        interrupted = self.abort.reason()
        if interrupted is not None:
            return RunResult("", interrupted, 0, 0, 0)
        self._fit_threads()
        reused = self._reuse_prefix(prompt)
        start = len(self.cached)
        interrupted = self._prefill(prompt[start:], on_prefill)
        evaluated = len(self.cached) - start
        if interrupted is not None:
            return RunResult("", interrupted, reused, evaluated, 0)
        sampler = TokenSampler(self.loaded.vocab, sampling)
        # One-token decodes are short: the loop checks for Stop between tokens, so the callback
        # (a Python call from ggml's threads at every graph node) is switched off while
        # generating; it costs generation speed and buys nothing there.
        self.abort.uninstall(self.loaded.context)
        try:
            return self._generate(
                sampler, max_tokens, reused, evaluated, on_piece=on_piece, limit=limit
            )
        finally:
            self.abort.install(self.loaded.context)
            sampler.close()

    def _fit_threads(self) -> None:
        """Use as many threads as the machine has cores free now (:func:`threads_for_now`)."""
        threads = threads_for_now(self.loaded.options)
        if threads != self.threads:
            llama_cpp.llama_set_n_threads(self.loaded.context, threads, threads)
            self.threads = threads

    def _reuse_prefix(self, prompt: Sequence[int]) -> int:
        """Keep the longest common prefix with the KV cache, at least one token short of the
        whole prompt (the last prompt token must be evaluated to get the next token's logits)."""
        common = min(common_length(self.cached, prompt), len(prompt) - 1)
        if common < len(self.cached):
            if not llama_cpp.llama_memory_seq_rm(self._memory, 0, common, -1):
                llama_cpp.llama_memory_clear(self._memory, True)  # recurrent models: no partial
                common = 0
            del self.cached[common:]
        return common

    def _prefill(
        self, tokens: Sequence[int], on_prefill: PrefillObserver | None
    ) -> Interruption | None:
        total = len(tokens)
        for offset in range(0, total, self.n_batch):
            chunk = tokens[offset : offset + self.n_batch]
            last = offset + len(chunk) == total
            interrupted = self._decode(chunk, logits_last=last)
            if interrupted is not None:
                return interrupted
            if on_prefill is not None:
                on_prefill(offset + len(chunk), total)
        return None

    def _generate(
        self,
        sampler: TokenSampler,
        max_tokens: int,
        reused: int,
        evaluated: int,
        *,
        on_piece: PieceSink | None,
        limit: _AnswerLimit | None,
    ) -> RunResult:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        vocab, context = self.loaded.vocab, self.loaded.context
        pieces: list[str] = []
        ends: list[int] = []  # the text's length after each output token (for cutting a loop)
        guard = LoopGuard()
        written = 0
        generated = 0
        stop: Literal["stop", "length", "deadline", "cancelled"] = "length"
        while generated < max_tokens:
            interrupted = self.abort.reason()
            if interrupted is not None:
                stop = interrupted
                break
            token = sampler.sample(context)
            generated += 1
            end_of_turn = bool(llama_cpp.llama_vocab_is_eog(vocab, token))
            if not end_of_turn:
                text = decoder.decode(self._token_bytes(token))
                if text:
                    pieces.append(text)
                    written += len(text)
                    if on_piece is not None:
                        on_piece(text)
            ends.append(written)
            interrupted = self._decode([token], logits_last=True)
            if interrupted is not None:
                stop = interrupted
                break
            if end_of_turn:
                stop = "stop"
                break
            if (
                limit is not None
                and generated == limit.tokens
                and not limit.is_call("".join(pieces))
            ):
                break  # an answer, at its allowance: "length"
            loop = guard.add(token)
            if loop is not None:
                # The reply loops: it ends here, with one copy of what it repeats. The KV cache
                # keeps the whole output, as the token count says.
                unit_start = ends[loop.start - 1] if loop.start else 0
                text = cut_loop("".join(pieces)[: ends[loop.end - 1]], unit_start)
                log.info("the output loops after %d tokens: cut to %d", generated, loop.end)
                return RunResult(text, "stop", reused, evaluated, generated)
        tail = decoder.decode(b"", final=True)
        if tail:
            pieces.append(tail)
            if on_piece is not None:
                on_piece(tail)
        return RunResult("".join(pieces), stop, reused, evaluated, generated)

    def _decode(self, tokens: Sequence[int], *, logits_last: bool) -> Interruption | None:
        """Evaluate ``tokens`` after the cached ones; on abort, resync and say why."""
        batch = self._batch
        base = len(self.cached)
        for index, token in enumerate(tokens):
            batch.token[index] = token
            batch.pos[index] = base + index
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = 0
            batch.logits[index] = False
        batch.logits[len(tokens) - 1] = logits_last
        batch.n_tokens = len(tokens)
        code = llama_cpp.llama_decode(self.loaded.context, batch)
        if code == 0:
            self.cached.extend(tokens)
            return None
        self._resync(tokens)
        if code == 2:
            return self.abort.reason() or "cancelled"
        raise ProviderError(
            f"llama.cpp failed to evaluate {len(tokens)} tokens of {self.loaded.name} "
            f"(code {code}); the conversation so far is kept."
        )

    def _resync(self, tokens: Sequence[int]) -> None:
        """After a failed or aborted decode: the cache holds whatever micro-batches finished."""
        last = int(llama_cpp.llama_memory_seq_pos_max(self._memory, 0))
        kept = max(0, min(last + 1, len(self.cached) + len(tokens)))
        if kept <= len(self.cached):
            del self.cached[kept:]
        else:
            self.cached.extend(tokens[: kept - len(self.cached)])

    def _token_bytes(self, token: int) -> bytes:
        size = llama_cpp.llama_token_to_piece(
            self.loaded.vocab, token, self._piece, len(self._piece), 0, True
        )
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = llama_cpp.llama_token_to_piece(
                self.loaded.vocab, token, buffer, len(buffer), 0, True
            )
            return bytes(buffer.raw[:size])
        return bytes(self._piece.raw[:size])


def common_length(one: Sequence[int], other: Sequence[int]) -> int:
    """How many tokens ``one`` and ``other`` open with alike."""
    for at, (a, b) in enumerate(zip(one, other, strict=False)):
        if a != b:
            return at
    return min(len(one), len(other))
