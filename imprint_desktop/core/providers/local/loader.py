"""Opening a GGUF model with llama.cpp: check first, then load, and say exactly what went wrong.

llama.cpp itself reports most bad files as a NULL pointer and a line in its log, and a few (a
garbled header) can take the whole process down. So everything that can be checked cheaply is
checked in Python before llama.cpp sees the file: that it exists and is not empty, that it is GGUF
with a header that fits inside the file (``core.models.gguf.inspect_gguf``, which also catches
truncated copies), that its chat template renders in the sandbox within its time and memory
limits (a template that asks for endless work refuses the model in seconds), and that the weights
plus the KV cache for ``model.n_ctx`` fit in the memory available now. Models are opened through
llama.cpp's C API, never ``llama_cpp.Llama``, whose constructor compiles the template with its own
unbounded Jinja environment: our sandbox is the only code that ever sees the template.

What is left — an architecture this llama.cpp does not know, an allocation that fails anyway — is
read back from llama.cpp's log, which is routed into Python logging (instead of the process's
stderr) with the loading thread's error lines kept for the message.

Loading is slow (seconds for big files) and runs on the provider's model thread, never the GUI
thread; ``progress(fraction, stage)`` reports it from that thread. The research clock starts only
after this returns.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
from jinja2.exceptions import SecurityError

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import ModelConfig
from imprint_desktop.core.errors import (
    Cancelled,
    ChatTemplateError,
    InvalidModelFileError,
    ModelFileError,
    ModelLoadError,
    ModelMemoryError,
    UnsupportedModelError,
)
from imprint_desktop.core.models.fit import WORKING_MEMORY, available_memory, human_size
from imprint_desktop.core.models.gguf import GgufInfo, inspect_gguf
from imprint_desktop.core.models.gpu import AUTO, OffloadPlan, offload_plan
from imprint_desktop.core.models.machine import Gpu, find_gpu, physical_cores
from imprint_desktop.core.providers.local.template import ChatTemplate

log = logging.getLogger(__name__)
llama_log = logging.getLogger("imprint_desktop.llama_cpp")

#: Largest micro-batch llama.cpp computes at once. ggml checks the abort callback between graph
#: nodes, and a node's work grows with the micro-batch (a 512-token attention product late in a long
#: prompt is tens of milliseconds on a laptop CPU); capping it keeps Stop and deadlines prompt
#: whatever ``model.n_batch`` is. An aborted decode keeps its finished micro-batches.
MAX_UBATCH = 128

#: ``progress(fraction in [0, 1], stage)``, called on the model thread while loading.
LoadProgress = Callable[[float, str], None]


@dataclass(slots=True)
class LoadedModel:
    """A model and its one context, owned by the model thread; :meth:`close` frees both."""

    path: Path
    name: str
    info: GgufInfo
    model: Any  # llama_model *, freed by close()
    context: Any  # llama_context *, freed by close()
    vocab: Any  # llama_vocab *, owned by the model
    template: ChatTemplate
    options: ModelConfig  # the model.* settings it was loaded with (DESIGN §3)
    n_ctx: int
    add_bos: bool
    bos_text: str
    offload: OffloadPlan  # the layers put on the GPU (model.n_gpu_layers "auto" made a number)

    @property
    def parameters(self) -> int:
        return int(llama_cpp.llama_model_n_params(self.model))

    def close(self) -> None:
        if self.context is not None:
            llama_cpp.llama_free(self.context)
            self.context = None
        if self.model is not None:
            llama_cpp.llama_model_free(self.model)
            self.model = None


#: How often, and how far apart, the run queue is read to learn how busy the machine is.
_BUSY_SAMPLES = 3
_BUSY_SAMPLE_GAP = 0.002


def busy_elsewhere() -> int | None:
    """Cores that other work keeps busy right now: the runnable threads the kernel counts, less
    the one asking (Linux ``/proc/stat``); the least of a few readings, so a passing burst does
    not count. None where the platform does not tell."""
    readings = []
    for sample in range(_BUSY_SAMPLES):
        if sample:
            time.sleep(_BUSY_SAMPLE_GAP)
        try:
            text = Path("/proc/stat").read_bytes()
        except OSError:
            return None
        found = re.search(rb"^procs_running (\d+)", text, re.MULTILINE)
        if found is None:
            return None
        readings.append(int(found.group(1)))
    return max(0, min(readings) - 1)


def threads_for_now(options: ModelConfig) -> int:
    """The threads llama.cpp should use for the next request.

    ``model.n_threads`` when set; else (0) one a physical core that other work leaves free, at
    least one. llama.cpp's threads wait for each other at every step of the graph: one that finds
    its core taken holds all the others up, so on a busy machine fewer threads run faster
    (``bench/bench_threads.py``).
    """
    if options.n_threads > 0:
        return options.n_threads
    cores = physical_cores()
    busy = busy_elsewhere()
    if busy is None:
        return cores
    try:
        logical = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - busy_elsewhere() reads /proc, so this is Linux
        logical = os.cpu_count() or cores
    return max(1, min(cores, logical - busy))


def load_model(
    path: Path,
    options: ModelConfig,
    progress: LoadProgress | None = None,
    cancel: CancelToken | None = None,
) -> LoadedModel:
    """Check ``path`` and load it as the ``model.*`` settings in ``options`` say; raise a
    :class:`ModelLoadError` subclass saying why not."""
    report = progress or (lambda _fraction, _stage: None)
    report(0.0, "Checking the model file")
    info = check_model_file(path)
    name = info.name or path.stem
    source = info.metadata.get("tokenizer.chat_template")
    template_source = source if isinstance(source, str) else None
    template_source = usable_template(template_source, name)
    offload = gpu_offload(path, info, options)
    log.info("%s: %d GPU layers (%s)", name, offload.layers, offload.reason)
    check_memory(path, info, options, offload.layers)
    if cancel is not None and cancel.cancelled:
        raise Cancelled("Model loading was stopped.")

    _install_log_router()
    model_params = llama_cpp.llama_model_default_params()
    model_params.n_gpu_layers = offload.layers

    def on_progress(fraction: float, _data: ctypes.c_void_p) -> bool:
        report(0.05 + 0.85 * float(fraction), "Loading weights")
        return not (cancel is not None and cancel.cancelled)

    callback = llama_cpp.llama_progress_callback(on_progress)
    model_params.progress_callback = callback
    with _captured_errors() as errors:
        model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), model_params)
    if model is None:
        if cancel is not None and cancel.cancelled:
            raise Cancelled("Model loading was stopped.")
        raise _load_failure(name, info, errors)
    try:
        report(0.92, "Preparing the context")
        context = _new_context(model, options, name)
        vocab = llama_cpp.llama_model_get_vocab(model)
        bos_text = _token_text(vocab, llama_cpp.llama_vocab_bos(vocab))
        eos_text = _token_text(vocab, llama_cpp.llama_vocab_eos(vocab))
        template = ChatTemplate(template_source, bos_token=bos_text, eos_token=eos_text, label=name)
        template.check()
    except BaseException:
        llama_cpp.llama_model_free(model)
        raise
    report(1.0, "Ready")
    return LoadedModel(
        path=path,
        name=name,
        info=info,
        model=model,
        context=context,
        vocab=vocab,
        template=template,
        options=options,
        n_ctx=int(llama_cpp.llama_n_ctx(context)),
        add_bos=bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        bos_text=bos_text,
        offload=offload,
    )


def check_model_file(path: Path) -> GgufInfo:
    """The file's GGUF header, or :class:`ModelFileError` for anything llama.cpp should not see."""
    if not path.exists():
        raise ModelFileError(f"There is no model file at {path}.")
    if not path.is_file():
        raise ModelFileError(f"{path} is a folder, not a model file.")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path.name} is empty (0 bytes): download or copy it again.")
    try:
        return inspect_gguf(path)
    except InvalidModelFileError as error:
        raise ModelFileError(f"{path.name}: {error}") from error


def gpu_offload(
    path: Path,
    info: GgufInfo,
    options: ModelConfig,
    find: Callable[[], tuple[Gpu | None, str]] = find_gpu,
) -> OffloadPlan:
    """The layers to put on the GPU: ``model.n_gpu_layers``, or for "auto" what fits the GPU that
    ``find`` finds (:func:`~imprint_desktop.core.models.machine.find_gpu`: the kernel's cards,
    ``nvidia-smi``, and whether this llama.cpp can offload at all)."""
    gpu, why = find() if options.n_gpu_layers == AUTO else (None, "")
    return offload_plan(
        options.n_gpu_layers,
        file_bytes=path.stat().st_size,
        block_count=info.arch_int("block_count"),
        kv_bytes=info.kv_cache_bytes(options.n_ctx),
        gpu=gpu,
        no_gpu_reason=why,
    )


def check_memory(path: Path, info: GgufInfo, options: ModelConfig, gpu_layers: int = 0) -> None:
    """Refuse a model whose weights and KV cache for ``n_ctx`` exceed the memory available now.

    Only for CPU inference (``gpu_layers`` 0): with layers on a GPU, video memory is what runs
    out, and llama.cpp's own failure is reported instead.
    """
    if gpu_layers != 0:
        return
    kv_bytes = info.kv_cache_bytes(options.n_ctx)
    available = available_memory()
    if kv_bytes is None or available is None:
        return
    needed = path.stat().st_size + kv_bytes + WORKING_MEMORY
    if needed > available:
        raise ModelMemoryError(
            f"{info.name or path.stem} with a {options.n_ctx:,}-token context needs about "
            f"{human_size(needed)} ({human_size(kv_bytes)} of it for the context), but only "
            f"{human_size(available)} of memory is free. Lower model.n_ctx or close other programs."
        )


def usable_template(source: str | None, name: str) -> str | None:
    """The template source to use (None: ChatML): refuse a hostile one, fall back to ChatML for
    a broken one. Loading then builds the template with the model's special tokens and checks it
    again (:meth:`~.template.ChatTemplate.check`, which learns how it takes tool conversations)."""
    try:
        ChatTemplate(source, label=name).check()
    except ChatTemplateError as error:
        if isinstance(error.__cause__, SecurityError):
            raise UnsupportedModelError(str(error)) from error
        log.warning("%s; using a plain ChatML template instead", error)
        return None
    return source


def _new_context(model: Any, options: ModelConfig, name: str) -> Any:
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = options.n_ctx
    params.n_batch = min(options.n_batch, options.n_ctx)
    params.n_ubatch = min(params.n_batch, MAX_UBATCH)
    threads = threads_for_now(options)  # and again before every request (ModelSession)
    params.n_threads = threads
    params.n_threads_batch = threads
    params.no_perf = False
    params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    with _captured_errors() as errors:
        context = llama_cpp.llama_init_from_model(model, params)
    if context is None:
        detail = f" ({errors[-1]})" if errors else ""
        raise ModelMemoryError(
            f"llama.cpp could not set up a {options.n_ctx:,}-token context for {name}{detail}. "
            "Lower model.n_ctx (or model.n_gpu_layers)."
        )
    return context


def _load_failure(name: str, info: GgufInfo, errors: list[str]) -> ModelLoadError:
    text = " ".join(errors)
    if "unknown model architecture" in text:
        return UnsupportedModelError(
            f"{name} uses the {info.architecture!r} architecture, which this version of "
            "llama.cpp cannot run."
        )
    detail = errors[-1] if errors else "no reason given"
    return ModelLoadError(f"llama.cpp could not load {name}: {detail}")


def _token_text(vocab: Any, token: int) -> str:
    if token < 0:
        return ""
    raw = llama_cpp.llama_vocab_get_text(vocab, token)
    return raw.decode("utf-8", errors="replace") if raw else ""


# --- llama.cpp's log, into Python logging ----------------------------------------------------

# ggml's levels: 1 debug, 2 info, 3 warn, 4 error, 5 continuation. Loading is chatty at "info",
# and llama.cpp warns about settings it then copes with, so both go one level down here.
_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.WARNING}
_ERROR = 4
_capture = threading.local()
_router_lock = threading.Lock()
_router_installed = False


@llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
def _route_llama_log(level: int, text: bytes | None, _data: ctypes.c_void_p) -> None:
    message = text.decode("utf-8", errors="replace").rstrip() if text else ""
    if not message:
        return
    lines: list[str] | None = getattr(_capture, "lines", None)
    if lines is not None and level == _ERROR:
        lines.append(message)
    quiet: Callable[[], bool] | None = getattr(_capture, "quiet", None)
    if level == _ERROR and quiet is not None and quiet():
        level = 1  # a decode we aborted on purpose: llama.cpp reports it as a failure
    llama_log.log(_LEVELS.get(level, logging.DEBUG), "%s", message)


def _install_log_router() -> None:
    """Send llama.cpp's log to the ``imprint_desktop.llama_cpp`` logger (once per process)."""
    global _router_installed  # noqa: PLW0603 - one native hook for the whole process
    with _router_lock:
        if not _router_installed:
            llama_cpp.llama_backend_init()
            llama_cpp.llama_log_set(_route_llama_log, ctypes.c_void_p(0))
            _router_installed = True


def quiet_errors_while(predicate: Callable[[], bool]) -> None:
    """On this thread, log llama.cpp's errors as debug lines while ``predicate()`` holds (the
    model thread: a decode stopped by the abort callback is not an error to show anyone)."""
    _capture.quiet = predicate


@contextmanager
def _captured_errors() -> Iterator[list[str]]:
    """The error lines llama.cpp logs on this thread inside the block."""
    lines: list[str] = []
    _capture.lines = lines
    try:
        yield lines
    finally:
        _capture.lines = None
