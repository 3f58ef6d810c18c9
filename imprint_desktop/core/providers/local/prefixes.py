"""Evaluated prompt openings kept on disk, so a new process need not evaluate them again.

Every reply's first request opens with the same instructions (:func:`~imprint_desktop.core.
reply_services.warm_up` evaluates them while the person types). The window evaluates them once per
model it loads; ``imprint ask`` is a process per question and evaluated them for every answer:
about 90 tokens of the starter model's 300, a tenth of its time to answer
(``bench/bench_answer_time.py``). :class:`PrefixStore` keeps the KV cache of such an opening in a
file (llama.cpp's sequence state), named after the model file (its path, size and modification
time), the llama.cpp build and the opening's tokens; a later process loads it in milliseconds
instead.

It keeps the last prompt a model evaluated too (:meth:`PrefixStore.save_last`, when the model is
closed): the next process loads it in place of the opening when it opens with the same one, so
a question about the same documents as the one before reuses the passages they share, as a
long-lived process (the window) does — ``imprint ask`` asked one question after another reused
nothing but the instructions. It is kept only while it is small (:data:`LAST_BYTES`): a large
model's state would cost more to write at every exit than it saves.

The store is a cache: a file it cannot write (a full disk, a read-only folder) or read (torn,
from another build, for another model) is left aside and the opening is evaluated as before, and
it keeps only its :data:`KEPT` newest files, within :data:`KEPT_BYTES`.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import llama_cpp

from imprint_desktop.core.paths import data_dir

log = logging.getLogger(__name__)

#: The openings kept (one per model and set of instructions; each is a few megabytes at most).
KEPT = 8
#: ... and at most this many bytes of them: a large model's opening of a thousand tokens is
#: 30 to 130 MB (its KV cache); one larger than this alone is not kept at all.
KEPT_BYTES = 512 * 1024 * 1024
_SUFFIX = ".kv"
#: The last prompt is kept only when its state is at most this large (the starter model's
#: 500 tokens are about 10 MB; a 7B model's are hundreds).
LAST_BYTES = 64 * 1024 * 1024


#: The folder of the data directory where evaluated openings are kept.
FOLDER = "evaluated-openings"


class PrefixStore:
    """Openings evaluated on the model at ``model`` (see the module docstring), kept in
    ``folder``, by default :data:`FOLDER` of the data directory as it is when they are kept
    or loaded."""

    def __init__(self, model: Path, folder: Path | None = None) -> None:
        self._folder = folder
        try:
            info = model.stat()
            identity = f"{model.resolve()}|{info.st_size}|{info.st_mtime_ns}"
        except OSError:
            identity = ""  # a model that cannot be looked at keeps nothing
        self._identity = f"{identity}|{llama_cpp.__version__}" if identity else ""

    @property
    def folder(self) -> Path:
        return self._folder if self._folder is not None else data_dir() / FOLDER

    def path_for(self, tokens: Sequence[int]) -> Path | None:
        """The file of the opening ``tokens`` (None: this model keeps nothing)."""
        if not self._identity or not tokens:
            return None
        digest = hashlib.blake2b(self._identity.encode("utf-8"), digest_size=16)
        digest.update((ctypes.c_int32 * len(tokens))(*tokens))
        return self.folder / f"{digest.hexdigest()}{_SUFFIX}"

    def last_path(self) -> Path | None:
        """The file of the last prompt this model evaluated (None: this model keeps nothing)."""
        if not self._identity:
            return None
        digest = hashlib.blake2b(f"last|{self._identity}".encode(), digest_size=16)
        return self.folder / f"last-{digest.hexdigest()}{_SUFFIX}"

    def load_last(self, context: object, opening: Sequence[int], capacity: int) -> list[int]:
        """Load the last prompt kept for this model into sequence 0 of ``context`` (whose cache
        is empty) when it opens with ``opening``: its tokens, or [] with the cache left empty
        (none kept, another opening, more than ``capacity`` tokens, or a file that cannot be
        read)."""
        path = self.last_path()
        if path is None or not path.is_file() or not opening:
            return []
        read = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        loaded = llama_cpp.llama_state_seq_load_file(
            context, os.fsencode(path), 0, read, capacity, ctypes.byref(count)
        )
        tokens = list(read[: count.value]) if loaded else []
        if len(tokens) > len(opening) and tokens[: len(opening)] == list(opening):
            return tokens
        memory = llama_cpp.llama_get_memory(context)
        llama_cpp.llama_memory_clear(memory, True)
        if not loaded:  # torn, or too long for this context: the next close writes it anew
            log.info("the kept last prompt %s could not be used", path.name)
        return []

    def save_last(self, context: object, tokens: Sequence[int]) -> None:
        """Keep sequence 0 of ``context``, which holds exactly ``tokens``, as the last prompt
        (when it is no larger than :data:`LAST_BYTES`); a file that cannot be written is left
        aside."""
        path = self.last_path()
        if path is None or not tokens:
            return
        if llama_cpp.llama_state_seq_get_size(context, 0) > LAST_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()  # an older, smaller one would open with what this one replaced
            return
        self._write(path, context, tokens)

    def load(self, context: object, tokens: Sequence[int]) -> bool:
        """Load the opening ``tokens`` into sequence 0 of ``context`` (whose cache is empty);
        False when it is not kept or cannot be read, the cache left empty."""
        path = self.path_for(tokens)
        if path is None or not path.is_file():
            return False
        capacity = len(tokens)
        read = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        loaded = llama_cpp.llama_state_seq_load_file(
            context, os.fsencode(path), 0, read, capacity, ctypes.byref(count)
        )
        if loaded and count.value == capacity and list(read) == list(tokens):
            with contextlib.suppress(OSError):
                path.touch()  # the newest are kept
            return True
        log.warning("the kept evaluation %s could not be used; it is evaluated again", path.name)
        memory = llama_cpp.llama_get_memory(context)
        llama_cpp.llama_memory_clear(memory, True)
        with contextlib.suppress(OSError):
            path.unlink()
        return False

    def save(self, context: object, tokens: Sequence[int]) -> None:
        """Keep sequence 0 of ``context``, which holds exactly ``tokens``; a file that cannot
        be written is left aside (the log says why)."""
        path = self.path_for(tokens)
        if path is None or path.is_file():
            return
        self._write(path, context, tokens)

    def _write(self, path: Path, context: object, tokens: Sequence[int]) -> None:
        """Write sequence 0 of ``context`` (``tokens``) to ``path`` whole or not at all."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
            os.close(handle)
        except OSError as error:
            log.warning("cannot keep the evaluated opening in %s: %s", path.parent, error)
            return
        part = Path(temporary)
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        written = llama_cpp.llama_state_seq_save_file(
            context, os.fsencode(part), 0, array, len(tokens)
        )
        try:
            if written:
                part.replace(path)
        except OSError as error:
            written = 0
            log.warning("cannot keep the evaluated opening in %s: %s", path.parent, error)
        if not written:
            with contextlib.suppress(OSError):
                part.unlink()
            return
        self._prune(path.parent)

    def _prune(self, folder: Path) -> None:
        """Keep the :data:`KEPT` newest files within :data:`KEPT_BYTES`, and no file a process
        killed while writing left (another process may be pruning too)."""
        with contextlib.suppress(OSError):
            files = [(p, p.stat()) for p in folder.glob(f"*{_SUFFIX}")]
            files.sort(key=lambda item: item[1].st_mtime, reverse=True)
            gone = [p for p in folder.glob("*.part") if time.time() - p.stat().st_mtime > 600]
            total, kept = 0, 0
            for path, info in files:  # the newest first, each as long as it fits
                if kept >= KEPT or total + info.st_size > KEPT_BYTES:
                    gone.append(path)
                else:
                    total, kept = total + info.st_size, kept + 1
            for old in gone:
                with contextlib.suppress(OSError):
                    old.unlink()
