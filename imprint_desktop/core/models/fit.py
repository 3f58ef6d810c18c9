"""Will a model fit on this computer, and how well will it run?

Running a GGUF model needs roughly its file size (the weights are memory-mapped and all touched)
plus the KV cache for the context window (``model.n_ctx``) plus a little working memory. That total
is compared with the memory available now, not the installed total: a browser full of tabs matters.

Two judgements are made from it:

* :func:`fit_hint` — memory only, shown beside every file of a hub listing;
* :func:`assess_fit` — for the recommended models: memory, disk and speed together, as *runs well*,
  *runs slowly* or *does not fit*, with the reason in a sentence. Speed is an estimate: how long a
  typical research reply takes (reading the research prompt, writing calls and an answer) on the
  GPU, or on the CPU cores from rates llama.cpp reaches on current x86 and ARM cores. It runs well
  when that takes at most half of the research time budget (``chat.research_timeout_sec``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from imprint_desktop.core.models.machine import Machine, available_memory

__all__ = [  # available_memory too: the model loader reads it from here
    "WORKING_MEMORY",
    "Fit",
    "FitHint",
    "ModelFit",
    "Verdict",
    "assess_fit",
    "available_memory",
    "fit_hint",
    "human_size",
]

#: Working buffers llama.cpp allocates beside weights and KV cache (compute graph, batch, logits).
WORKING_MEMORY = 256 * 1024 * 1024


class Fit(enum.Enum):
    FITS = "fits"  # comfortably: at most 80% of available memory
    TIGHT = "tight"  # fits, but little else will
    TOO_BIG = "too_big"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FitHint:
    fit: Fit
    needed_bytes: int
    available_bytes: int | None
    kv_known: bool  # False when the KV cache size could not be read from the model's header

    @property
    def text(self) -> str:
        needed = human_size(self.needed_bytes)
        estimate = "" if self.kv_known else " (context memory not known)"
        if self.available_bytes is None or self.fit is Fit.UNKNOWN:
            return f"needs ≈{needed}{estimate}"
        available = human_size(self.available_bytes)
        words = {Fit.FITS: "fits", Fit.TIGHT: "tight fit", Fit.TOO_BIG: "too big"}[self.fit]
        return f"{words}: needs ≈{needed} of {available} free{estimate}"


def fit_hint(file_bytes: int, kv_cache_bytes: int | None, available: int | None) -> FitHint:
    """Compare what a model needs at the configured context with ``available`` memory."""
    needed = file_bytes + (kv_cache_bytes or 0) + WORKING_MEMORY
    if available is None:
        fit = Fit.UNKNOWN
    elif needed <= available * 0.8:
        fit = Fit.FITS
    elif needed <= available:
        fit = Fit.TIGHT
    else:
        fit = Fit.TOO_BIG
    return FitHint(fit, needed, available, kv_known=kv_cache_bytes is not None)


class Verdict(enum.Enum):
    RUNS_WELL = "runs_well"
    RUNS_SLOWLY = "runs_slowly"
    DOES_NOT_FIT = "does_not_fit"

    @property
    def words(self) -> str:
        return _VERDICT_WORDS[self]


_VERDICT_WORDS = {
    Verdict.RUNS_WELL: "Runs well",
    Verdict.RUNS_SLOWLY: "Runs slowly",
    Verdict.DOES_NOT_FIT: "Does not fit",
}

#: Prompt tokens a second one core reads for a one-billion-parameter model (llama.cpp, 4-bit
#: weights, AVX2 or NEON): about 70, so 8 cores read a 7B model's prompt at about 80 tokens/s.
PROMPT_RATE_PER_CORE = 70.0
#: Weight bytes a second one core streams while writing tokens; all cores together are capped by
#: the memory bandwidth of an ordinary desktop or laptop.
WEIGHT_BYTES_PER_CORE = 3.0e9
MEMORY_BANDWIDTH = 20.0e9
#: Without AVX2 llama.cpp falls back to much slower code.
SLOW_CPU_FACTOR = 0.3
#: Graphics cards read prompts and write tokens an order of magnitude faster than CPU cores.
GPU_FACTOR = 10.0
#: A typical research reply: a few rounds of searching and reading, then an answer.
REPLY_PROMPT_TOKENS = 4000
REPLY_OUTPUT_TOKENS = 400
#: Below this share of free memory left over, other programs start to crowd the model out.
MEMORY_HEADROOM = 0.8


@dataclass(frozen=True)
class ModelFit:
    """How one model fits one computer, in words a person can act on."""

    verdict: Verdict
    reason: str
    memory_needed: int
    on_gpu: bool = False
    reply_seconds: float | None = None  # the estimate behind the verdict, when it got that far


def assess_fit(
    *,
    size: int,
    parameters: float,
    kv_cache_bytes: int,
    machine: Machine,
    time_budget: float,
    installed: bool = False,
    disk_margin: int = 32 << 20,
) -> ModelFit:
    """Judge a model of ``size`` bytes and ``parameters`` billions on ``machine``.

    ``installed`` skips the disk check (the file is already here); ``time_budget`` is the research
    time limit in seconds that "runs well" is measured against.
    """
    needed = size + kv_cache_bytes + WORKING_MEMORY
    if not installed and machine.disk_free is not None and size + disk_margin > machine.disk_free:
        return ModelFit(
            Verdict.DOES_NOT_FIT,
            f"Needs {human_size(size)} of disk space; {human_size(machine.disk_free)} is free "
            "where models are saved.",
            needed,
        )
    gpu = machine.gpu
    if gpu is not None and needed <= gpu.free_bytes * MEMORY_HEADROOM:
        seconds = _reply_seconds(size, parameters, machine) / GPU_FACTOR
        return ModelFit(
            Verdict.RUNS_WELL if seconds <= time_budget / 2 else Verdict.RUNS_SLOWLY,
            f"Runs on the {gpu.name}: {_duration(seconds)} per research reply; needs "
            f"{human_size(needed)} of its {human_size(gpu.free_bytes)} free.",
            needed,
            on_gpu=True,
            reply_seconds=seconds,
        )
    return _on_the_cpu(size, parameters, needed, machine, time_budget)


def _on_the_cpu(
    size: int, parameters: float, needed: int, machine: Machine, time_budget: float
) -> ModelFit:
    """The fit in main memory, on the CPU cores; a GPU that is there but could not be counted
    is named in the reason."""
    fit = _cpu_fit(size, parameters, needed, machine, time_budget)
    if not machine.unseen_gpu:
        return fit
    return replace(fit, reason=f"{fit.reason} {machine.unseen_gpu}")


def memory_refusal(needed: int, machine: Machine) -> ModelFit | None:
    """ "Does not fit" when ``needed`` bytes are more than the memory free now, else None."""
    available = machine.available_memory
    if available is not None and needed > available:
        return ModelFit(
            Verdict.DOES_NOT_FIT,
            f"Needs about {human_size(needed)} of memory; {human_size(available)} is free now.",
            needed,
        )
    return None


def _cpu_fit(
    size: int, parameters: float, needed: int, machine: Machine, time_budget: float
) -> ModelFit:
    if (short := memory_refusal(needed, machine)) is not None:
        return short
    available = machine.available_memory
    seconds = _reply_seconds(size, parameters, machine)
    cores = f"{machine.cpu_cores} CPU core{'s' if machine.cpu_cores != 1 else ''}"
    speed = f"{_duration(seconds)} per research reply on {cores}"
    if available is not None and needed > available * MEMORY_HEADROOM:
        return ModelFit(
            Verdict.RUNS_SLOWLY,
            f"Leaves little memory for other programs: needs {human_size(needed)} of "
            f"{human_size(available)} free; {speed}.",
            needed,
            reply_seconds=seconds,
        )
    memory = (
        f"needs {human_size(needed)} of {human_size(available)} free memory"
        if available is not None
        else f"needs {human_size(needed)} of memory"
    )
    if seconds <= time_budget / 2:
        return ModelFit(Verdict.RUNS_WELL, f"{_capital(speed)}; {memory}.", needed, False, seconds)
    limit = _duration(time_budget, about=False)
    return ModelFit(
        Verdict.RUNS_SLOWLY,
        f"{_capital(speed)} (research time limit: {limit}); {memory}.",
        needed,
        reply_seconds=seconds,
    )


def _reply_seconds(size: int, parameters: float, machine: Machine) -> float:
    """Estimated seconds of a typical research reply on the CPU cores of ``machine``."""
    factor = 1.0 if machine.fast_cpu else SLOW_CPU_FACTOR
    cores = max(machine.cpu_cores, 1)
    prompt_rate = PROMPT_RATE_PER_CORE * cores * factor / max(parameters, 0.1)
    output_rate = min(WEIGHT_BYTES_PER_CORE * cores * factor, MEMORY_BANDWIDTH) / max(size, 1)
    return REPLY_PROMPT_TOKENS / prompt_rate + REPLY_OUTPUT_TOKENS / output_rate


def _duration(seconds: float, *, about: bool = True) -> str:
    prefix = "about " if about else ""
    if seconds < 90:
        return f"{prefix}{max(round(seconds / 5) * 5, 5):.0f} s"
    return f"{prefix}{round(seconds / 60):.0f} min"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def human_size(count: float) -> str:
    """``98362432`` → ``93.8 MiB``: binary units, as file managers and llama.cpp print them."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop returns at GiB
