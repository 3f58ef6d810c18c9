"""Embedders: text as vectors, so a search finds passages by what they mean as well as by their words.

Two kinds, chosen by ``workspace.embedder`` (:func:`embedder_for`):

* the built-in :class:`StaticEmbedder` — WordLlama's static token vectors (MIT), which ship inside
  the ``wordllama`` wheel, so it works offline with nothing to download. A passage's vector is the
  mean of its tokens' vectors: no neural network runs, so embedding keeps pace with indexing and
  costs 32 MB of memory;
* a :class:`GgufEmbedder` — a GGUF embedding model (nomic-embed, bge, e5, Qwen3-Embedding) run by
  llama.cpp in embedding mode: slower, and better at paraphrases.

Every embedder returns unit-length ``float32`` rows, so a dot product is the cosine similarity,
and has a :attr:`~Embedder.name` that says which vectors it makes: the index keeps the name beside
its vectors and embeds again when the name changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from imprint_desktop.core.errors import EmbedderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

#: The longest text a GGUF embedder is given, in characters (passages are shorter; this bounds a
#: model with a small context).
_GGUF_MAX_CHARS = 2000


class Embedder(Protocol):
    """Texts in, one unit-length row per text out."""

    @property
    def name(self) -> str:
        """Which vectors this embedder makes: equal names, comparable vectors."""
        ...

    @property
    def min_similarity(self) -> float:
        """The cosine similarity below which a passage is not near a query at all: a search by
        meaning finds nothing rather than the least unrelated passages."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalized(rows: Vectors) -> Vectors:
    """``rows`` scaled to unit length; an all-zero row (a text with no known token) stays zero."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


class StaticEmbedder:
    """WordLlama's ``l2_supercat`` token vectors (256 dimensions), averaged over a text's tokens.

    The files come from the installed ``wordllama`` package; its tokenizer is Llama 2's. Tokens are
    pooled a few texts at a time, so memory stays small whatever the batch.
    """

    name = "wordllama-l2-supercat-256"
    #: Unrelated texts score below 0.15, a paraphrase of a passage 0.2 and more (measured on
    #: the tests' and the bench's documents).
    min_similarity = 0.2
    _POOL_TEXTS = 16

    def __init__(self) -> None:
        from safetensors.numpy import load_file  # noqa: PLC0415 - loaded with the model
        from tokenizers import Tokenizer  # noqa: PLC0415

        package = files("wordllama")
        try:
            weights = load_file(str(package / "weights" / "l2_supercat_256.safetensors"))
            tokenizer = Tokenizer.from_file(
                str(package / "tokenizers" / "l2_supercat_tokenizer_config.json")
            )
        except (OSError, ValueError, RuntimeError) as error:  # a broken install
            raise EmbedderError(f"The built-in embedding model cannot be loaded: {error}") from error
        self._table: Vectors = np.ascontiguousarray(weights["embedding.weight"], dtype=np.float32)
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer: Tokenizer = tokenizer

    @property
    def dimensions(self) -> int:
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        last = self._table.shape[0] - 1
        for start in range(0, len(encodings), self._POOL_TEXTS):
            chunk = encodings[start : start + self._POOL_TEXTS]
            lengths = np.array([len(encoding.ids) for encoding in chunk], dtype=np.intp)
            if not lengths.any():
                continue
            ids = np.concatenate([np.asarray(e.ids, dtype=np.intp) for e in chunk])
            np.clip(ids, 0, last, out=ids)
            offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            filled = lengths > 0  # reduceat needs every offset inside the array
            sums = np.add.reduceat(self._table[ids], offsets[filled], axis=0)
            out[start : start + len(chunk)][filled] = sums / lengths[filled, None]
        return normalized(out)


@lru_cache(maxsize=1)
def builtin_embedder() -> StaticEmbedder:
    """The built-in embedder, loaded once per process (its tables are read-only)."""
    return StaticEmbedder()


class GgufEmbedder:
    """A GGUF model in llama.cpp's embedding mode, mean-pooled when the model names no pooling.

    One llama.cpp context serves every thread, one text at a time (a context is not thread-safe):
    the index's update embeds passages while a search embeds its query.
    """

    def __init__(self, path: Path, *, n_ctx: int = 512, n_threads: int | None = None) -> None:
        from llama_cpp import LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_UNSPECIFIED, Llama  # noqa: PLC0415

        from imprint_desktop.core.models.gguf import inspect_gguf  # noqa: PLC0415

        try:
            info = inspect_gguf(path)
            stat = path.stat()
        except (OSError, ValueError) as error:
            raise EmbedderError(f"The embedding model {path} cannot be read: {error}") from error
        except Exception as error:
            raise EmbedderError(f"{path} is not a GGUF model file: {error}") from error
        pooling = (
            LLAMA_POOLING_TYPE_UNSPECIFIED
            if info.arch_int("pooling_type")
            else LLAMA_POOLING_TYPE_MEAN
        )
        try:
            self._model = Llama(
                model_path=str(path),
                embedding=True,
                pooling_type=pooling,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                n_threads=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise EmbedderError(f"The embedding model {path} cannot be loaded: {error}") from error
        self._max_chars = min(_GGUF_MAX_CHARS, n_ctx * 3)
        #: Models differ in how near unrelated texts score; none is assumed.
        self.min_similarity = 0.0
        self.name = f"gguf:{path.name}:{stat.st_size}"
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        with self._lock:
            for text in texts:
                vector = self._model.embed(text[: self._max_chars] or " ", truncate=True)
                rows.append(vector)  # type: ignore[arg-type] # one text, one pooled vector
        return normalized(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))

    def close(self) -> None:
        self._model.close()


def embedder_for(model: Path | None) -> Embedder:
    """The embedder ``workspace.embedder`` names: the built-in one for None, else the GGUF
    embedding model at ``model``. Raises :class:`EmbedderError` saying why not."""
    if model is None:
        return builtin_embedder()
    if not model.is_file():
        raise EmbedderError(f"The embedding model {model} does not exist.")
    return GgufEmbedder(model)
