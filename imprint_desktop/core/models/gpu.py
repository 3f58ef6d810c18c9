"""How many of a local model's layers go on the GPU: ``model.n_gpu_layers`` "auto" made a number.

llama.cpp puts the first ``n_gpu_layers`` of a model's repeating layers (blocks) in video memory
and runs the rest on the CPU. "auto" (:data:`AUTO`, stored as -1) asks this module to choose:

- no GPU llama.cpp can use here (none found, its free memory unreadable, or a CPU-only build of
  llama.cpp; :func:`~.machine.find_gpu` says which): 0 layers;
- the whole model with its KV cache fits the GPU's free memory, by the same measure the model
  manager's fit uses (:func:`~.fit.assess_fit`: weights + cache + working memory within
  :data:`~.fit.MEMORY_HEADROOM` of the free memory): every layer;
- otherwise as many blocks as fit, each counted as an equal share of the weights and the cache.

A number the person sets is used as it is (0 keeps the model on the CPU).

:func:`offload_plan` is pure: the loader hands it the model's size and header and the GPU that
:func:`~.machine.find_gpu` found, and tests hand it made-up ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from imprint_desktop.core.models.fit import MEMORY_HEADROOM, WORKING_MEMORY, human_size
from imprint_desktop.core.models.machine import Gpu

#: ``model.n_gpu_layers`` "auto".
AUTO = -1
#: What llama.cpp reads as "every layer" (more than any model has).
ALL_LAYERS = 1000


@dataclass(frozen=True)
class OffloadPlan:
    """The layers to put on the GPU and why, in a sentence for the log and the model's status."""

    layers: int
    reason: str


def offload_plan(
    setting: int,
    *,
    file_bytes: int,
    block_count: int | None,
    kv_bytes: int | None,
    gpu: Gpu | None,
    no_gpu_reason: str = "",
) -> OffloadPlan:
    """The layers for ``model.n_gpu_layers`` = ``setting`` of a model of ``file_bytes`` with
    ``block_count`` blocks and a KV cache of ``kv_bytes``, on ``gpu`` (None: no usable GPU, for
    the reason ``no_gpu_reason``)."""
    if setting != AUTO:
        return OffloadPlan(setting, f"model.n_gpu_layers is {setting}")
    if gpu is None:
        return OffloadPlan(0, no_gpu_reason or "no GPU that llama.cpp can use was found")
    cache = kv_bytes or 0
    usable = gpu.free_bytes * MEMORY_HEADROOM - WORKING_MEMORY
    free = human_size(gpu.free_bytes)
    if file_bytes + cache <= usable:
        return OffloadPlan(ALL_LAYERS, f"the whole model fits the {gpu.name} ({free} free)")
    if not block_count:
        return OffloadPlan(0, "the model's header does not say how many layers it has")
    per_layer = (file_bytes + cache) / block_count
    layers = max(0, min(block_count, int(usable // per_layer)))
    return OffloadPlan(layers, f"{layers} of {block_count} layers fit the {gpu.name} ({free} free)")
