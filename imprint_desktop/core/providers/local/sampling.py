"""Choosing each output token: the sampler chain, the tool-call grammar, and the loop guard.

**The grammar is checked, not applied, first.** A GBNF grammar applied to every candidate costs a
walk of the grammar per vocabulary entry per token: on the starter model (49,152 entries) that
made a research reply generate four times slower than the same model without a grammar. Yet the
grammar rarely refuses what the model wants: its answer branch accepts any text once the first
character rules out a call. :class:`TokenSampler` therefore samples from the chain alone and asks
the grammar about that one token; only when the grammar refuses it are all candidates filtered
and the token sampled again (llama.cpp's own ``common_sampler`` works the same way). The token is
then drawn from the grammar's language as before, only without the cost on the common path.

**A reply that loops ends.** Small models fall into repeating a phrase ("The flood of 1912 The
flood of 1912 …") until their allowance runs out: that spends the time budget on nothing and
leaves a cut answer for the final request to continue. :class:`LoopGuard` sees the output's tail
repeat itself and ends the generation with one copy of the repeated part kept.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import llama_cpp
import numpy as np

from imprint_desktop.core.errors import ProviderError

#: The seed replies are sampled with unless a caller sets another: the same prompt, the same reply.
DEFAULT_SEED = 0x5EED


#: DRY sampling (``model.dry_multiplier``): a repeated run of more than this many tokens is
#: penalised, by ``multiplier * DRY_BASE ** (length - DRY_ALLOWED_LENGTH)``; the run never spans
#: a line end, a colon, a quote or an emphasis mark (llama.cpp's defaults).
DRY_BASE = 1.75
DRY_ALLOWED_LENGTH = 2
DRY_BREAKERS = ("\n", ":", '"', "*")
#: The repeat penalty (``model.repeat_penalty``) looks at this many of the last output tokens.
REPEAT_LAST_N = 64


@dataclass(frozen=True, slots=True)
class Sampling:
    """How one request's tokens are chosen. The penalties see only the output: the passages the
    answer quotes from the prompt are never penalised."""

    temperature: float
    grammar: str | None = None
    seed: int = DEFAULT_SEED
    repeat_penalty: float = 1.0  # 1.0: off
    dry_multiplier: float = 0.0  # 0.0: off


class TokenSampler:
    """Picks the next token from a context's last logits (see the module docstring).

    Made on the model thread for one request; :meth:`close` frees its llama.cpp samplers.
    """

    def __init__(self, vocab: Any, sampling: Sampling) -> None:
        self._chain = _chain(vocab, sampling)
        self._grammar: Any = None
        self._candidates: Any = None
        if sampling.grammar is not None:
            self._grammar = llama_cpp.llama_sampler_init_grammar(
                vocab, sampling.grammar.encode("utf-8"), b"root"
            )
            if self._grammar is None:
                self.close()
                raise ProviderError("The tool-call grammar was rejected by llama.cpp.")
            size = int(llama_cpp.llama_vocab_n_tokens(vocab))
            self._candidates = (llama_cpp.llama_token_data * size)()
            self._view = np.ctypeslib.as_array(self._candidates)
            self._ids = np.arange(size, dtype=np.int32)
            self._one = (llama_cpp.llama_token_data * 1)()
        #: Tokens the grammar refused and that had to be sampled again (for tests and tuning).
        self.resampled = 0

    def sample(self, context: Any) -> int:
        """The next token after the context's last evaluated position."""
        token = int(llama_cpp.llama_sampler_sample(self._chain, context, -1))
        if self._grammar is None:
            return token
        if not self._allows(token):
            self.resampled += 1
            token = self._sample_within_grammar(context)
            # The chain's penalties remember what was written: the token chosen instead, too.
            llama_cpp.llama_sampler_accept(self._chain, token)
        llama_cpp.llama_sampler_accept(self._grammar, token)
        return token

    def close(self) -> None:
        for sampler in (self._chain, self._grammar):
            if sampler is not None:
                llama_cpp.llama_sampler_free(sampler)
        self._chain = self._grammar = None

    def _allows(self, token: int) -> bool:
        """Whether the grammar, in its state now, accepts ``token`` next."""
        self._one[0].id = llama_cpp.llama_token(token)
        self._one[0].logit = 0.0
        self._one[0].p = 0.0
        one = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(one))
        return not math.isinf(self._one[0].logit)

    def _sample_within_grammar(self, context: Any) -> int:
        """Every candidate filtered by the grammar first, then the chain: the slow, exact path."""
        size = len(self._ids)
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(context, -1), shape=(size,))
        self._view["id"] = self._ids
        self._view["logit"] = logits
        self._view["p"] = 0.0
        candidates = llama_cpp.llama_token_data_array(
            data=self._candidates, size=size, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(candidates))
        llama_cpp.llama_sampler_apply(self._chain, ctypes.byref(candidates))
        if not 0 <= candidates.selected < candidates.size:
            raise ProviderError("The tool-call grammar left no token to choose.")
        return int(self._candidates[candidates.selected].id)


def _chain(vocab: Any, sampling: Sampling) -> Any:
    params = llama_cpp.llama_sampler_chain_default_params()
    params.no_perf = True
    chain = llama_cpp.llama_sampler_chain_init(params)
    # The penalties come after top-k: they then weigh 40 candidates, not the whole vocabulary.
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_k(40))
    for penalty in _penalties(vocab, sampling):
        llama_cpp.llama_sampler_chain_add(chain, penalty)
    if sampling.temperature <= 0:
        llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        return chain
    for stage in (
        llama_cpp.llama_sampler_init_top_p(0.95, 1),
        llama_cpp.llama_sampler_init_min_p(0.05, 1),
        llama_cpp.llama_sampler_init_temp(sampling.temperature),
        llama_cpp.llama_sampler_init_dist(sampling.seed),
    ):
        llama_cpp.llama_sampler_chain_add(chain, stage)
    return chain


def _penalties(vocab: Any, sampling: Sampling) -> list[Any]:
    """The repeat penalty and DRY sampler ``sampling`` asks for (none when both are off)."""
    stages = []
    if sampling.repeat_penalty > 1.0:
        size = int(llama_cpp.llama_vocab_n_tokens(vocab))
        stages.append(
            llama_cpp.llama_sampler_init_penalties(
                size, REPEAT_LAST_N, sampling.repeat_penalty, 0.0, 0.0
            )
        )
    if sampling.dry_multiplier > 0.0:
        breakers = (ctypes.c_char_p * len(DRY_BREAKERS))(
            *(breaker.encode("utf-8") for breaker in DRY_BREAKERS)
        )
        stages.append(
            llama_cpp.llama_sampler_init_dry(
                vocab,
                sampling.dry_multiplier,
                DRY_BASE,
                DRY_ALLOWED_LENGTH,
                -1,  # the whole output
                breakers,
                len(DRY_BREAKERS),
            )
        )
    return stages


#: The longest repeated unit looked for, in tokens (a sentence or two).
MAX_LOOP_PERIOD = 64
#: A loop must cover at least this many tokens, and its unit must have come three times: short
#: runs ("1, 1, 1", a table's "| --- | --- |") are text, not a loop.
MIN_LOOP_TOKENS = 32


class Loop(NamedTuple):
    """A tail that repeats: its first unit is ``tokens[start:end]``; what to keep ends there."""

    start: int
    end: int


def cut_loop(text: str, unit_start: int) -> str:
    """``text`` (which ends with a loop's first unit, from character ``unit_start``) cut where a
    sentence or line inside that unit ends: a unit found in tokens need not start or end at one
    ("… closed the line. The")."""
    unit = text[unit_start:]
    ends = [unit.rfind(mark) for mark in (". ", "! ", "? ", "\n")]
    if unit.rstrip().endswith((".", "!", "?")):
        return text.rstrip()
    best = max(ends)
    if best < 0:
        return text.rstrip()
    return text[: unit_start + best + 1].rstrip()


class LoopGuard:
    """Watches generated tokens for a tail that repeats itself (see the module docstring).

    For each period ``p`` it keeps how many of the last tokens equal the token ``p`` before them;
    the tail loops when that run, with its first unit, spans three units and
    :data:`MIN_LOOP_TOKENS`. O(:data:`MAX_LOOP_PERIOD`) per token.
    """

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self._runs = [0] * (MAX_LOOP_PERIOD + 1)

    def add(self, token: int) -> Loop | None:
        """Note ``token``; when the tail now loops, where its first unit lies."""
        tokens = self.tokens
        tokens.append(token)
        last = len(tokens) - 1
        for period in range(1, min(MAX_LOOP_PERIOD, last) + 1):
            run = self._runs[period] + 1 if tokens[last - period] == token else 0
            self._runs[period] = run
            if run >= max(2 * period, MIN_LOOP_TOKENS - period):
                keep = len(tokens) - run
                return Loop(keep - period, keep)
        return None
