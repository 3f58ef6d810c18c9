"""Embedders: text as vectors, so a search finds passages by what they mean, not only by words.

Three kinds, chosen by ``workspace.embedder`` (:func:`embedder_for`, :func:`better_embedder_for`):

* the built-in :class:`StaticEmbedder` — WordLlama's static token vectors (MIT), which ship inside
  the ``wordllama`` wheel, so it works offline with nothing to download. A passage's vector is the
  mean of its tokens' vectors: no neural network runs, so embedding keeps pace with indexing and
  costs 32 MB of memory;
* the sentence encoder all-MiniLM-L6-v2 (:mod:`.encoder`), installed with Imprint: 100 to 200
  times slower, and far better at paraphrases;
* a :class:`GgufEmbedder` — a GGUF embedding model (nomic-embed, bge, e5, Qwen3-Embedding) run by
  llama.cpp in embedding mode: slower, and better at paraphrases.

The default, :data:`AUTO`, uses two: the built-in embedder gives every passage its vector as it is
indexed (the first answer never waits), and the sentence encoder, when installed, embeds the
passages again in the background; a search ranks by the encoder what it has embedded and by the
built-in embedder the rest (:mod:`.meaning`). Any other value names the one embedder used.

Every embedder returns unit-length ``float32`` rows, so a dot product is the cosine similarity,
and has a :attr:`~Embedder.name` that says which vectors it makes: the index keeps the name beside
its vectors and embeds again when the name changes.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from imprint_desktop.core import paths
from imprint_desktop.core.errors import EmbedderError, ModelStoreError
from imprint_desktop.core.workspace.encoder import SentenceEncoder, model_folder
from imprint_desktop.core.workspace.query_words import meaning_words
from imprint_desktop.core.workspace.word_tokens import WordTokens

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

#: The longest text a GGUF embedder is given, in characters (passages are shorter; this bounds a
#: model with a small context).
_GGUF_MAX_CHARS = 2000
#: Words whose vectors the built-in embedder keeps (1 KB each); the cache starts again when full.
_WORD_CACHE = 32_000


class Embedder(Protocol):
    """Texts in, one unit-length row per text out."""

    @property
    def name(self) -> str:
        """Which vectors this embedder makes: equal names, comparable vectors."""
        ...

    @property
    def fusion_weight(self) -> float:
        """How much its ranking counts beside the keyword ranking (1.0) in a hybrid search."""
        ...

    @property
    def min_similarity(self) -> float:
        """The cosine similarity below which a passage is not near a query at all: a search by
        meaning finds nothing rather than the least unrelated passages."""
        ...

    @property
    def alone_similarity(self) -> float:
        """The most a passage's cosine similarity must reach when no word of the query (nor its
        stem) is in the documents, so meaning is all that could find it: above what made-up words
        reached over the benches' corpora. Each index measures made-up words against its own
        vectors and asks just above them, up to this (:meth:`.meaning.MeaningSearch._alone_floor`),
        so that "zqxjkv" finds nothing rather than passages that share a few letters with it."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Passages' vectors, one row each."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """A question's vector (some models are trained to see a question marked as one)."""
        ...


def normalized(rows: Vectors) -> Vectors:
    """``rows`` scaled to unit length; an all-zero row (a text with no known token) stays zero."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vectors = np.zeros_like(rows)
    np.divide(rows, norms, out=out, where=norms > 0)
    return out


class StaticEmbedder:
    """WordLlama's ``l2_supercat`` token vectors (256 dimensions), averaged over a text's tokens.

    The files come from the installed ``wordllama`` package; its tokenizer is Llama 2's, loaded
    at the first word whose tokens are not known yet: not in memory, nor in ``known_words``
    (:class:`~.word_tokens.WordTokens`, where every word tokenized is kept for later processes).
    """

    name = "wordllama-l2-supercat-256"
    #: Unrelated texts score below 0.15, a paraphrase of a passage 0.2 and more (measured on
    #: the tests' and the bench's documents).
    min_similarity = 0.2
    #: 47 made-up words and names (``bench/bench_workspace.py``'s) reached at most 0.32 over the
    #: benches' three corpora; the questions asked of them 0.22 at least, 0.44 at the median.
    alone_similarity = 0.35
    #: Half the keyword ranking's: averaged token vectors miss what a phrase says, so a passage
    #: that BM25 ranks first stays first when meaning ranks another document above it (the
    #: sample workspace's "last station automated"); paraphrase recall in
    #: ``bench/bench_workspace.py`` is the same at 0.5 and 1.0.
    fusion_weight = 0.5

    def __init__(self, known_words: Path | None = None) -> None:
        package = _wordllama_folder()
        self._tokenizer_file = package / "tokenizers" / "l2_supercat_tokenizer_config.json"
        try:
            self._table = mapped_tensor(
                package / "weights" / "l2_supercat_256.safetensors", "embedding.weight"
            )
            made = self._tokenizer_file.stat()
        except (OSError, ValueError) as error:  # a broken install
            raise EmbedderError(
                f"The built-in embedding model cannot be loaded: {error}"
            ) from error
        self._tokenizer: Tokenizer | None = None
        self._known = (
            None
            if known_words is None
            else WordTokens(known_words, f"{self.name} {made.st_size} {made.st_mtime_ns}")
        )
        self._word_rows: dict[str, int] = {}
        self._lock = threading.Lock()
        self._word_vectors: Vectors = np.zeros((0, self.dimensions), dtype=np.float32)

    @property
    def dimensions(self) -> int:
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._embedded(texts, query=False)

    def embed_query(self, text: str) -> Vectors:
        """The mean of the query's words that carry meaning (:func:`.query_words.meaning_words`:
        its content words, and "up", "not", "more" and their like): a question as written and
        its content words get one vector, as "what", "does" and "the" would only pull every
        query toward the same average, and made-up words asked about in a whole question ("What
        is zqxjkv?") must find nothing as the made-up words alone do."""
        row: Vectors = self._embedded([meaning_words(text)], query=True)[0]
        return row

    def _embedded(self, texts: Sequence[str], *, query: bool) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # Text a model or a page wrote may hold lone surrogates, which the tokenizer refuses.
        split = [text.encode("utf-8", "replace").decode("utf-8").split() for text in texts]
        with self._lock:  # one embedder serves the update's thread and every search's
            self._learn(dict.fromkeys(itertools.chain.from_iterable(split)), query=query)
            rows, vectors = self._word_rows, self._word_vectors
            for row, words in enumerate(split):
                if words:  # the mean's direction: the sum's
                    at = np.fromiter(map(rows.__getitem__, words), np.intp, len(words))
                    out[row] = vectors[at].sum(axis=0)
        return normalized(out)

    def _learn(self, words: Iterable[str], *, query: bool) -> None:
        """Give the ``words`` not known yet their vector: the sum of their tokens' vectors.

        Llama's tokenizer never joins two words in one token, so a word's tokens are the same
        wherever it stands: each word is tokenized and summed once while it is remembered (a
        workspace repeats its words, and tokenizing and summing tokens dominated embedding).
        At most :data:`_WORD_CACHE` words are remembered; then the cache starts again."""
        rows = self._word_rows
        words = list(words)
        new = [word for word in words if word not in rows]
        if not new:
            return
        if len(rows) + len(new) > len(self._word_vectors):
            rows.clear()
            new = words  # the batch's known words went with the rest
            size = max(_WORD_CACHE, len(new))
            if len(self._word_vectors) < size:
                self._word_vectors = np.zeros((size, self.dimensions), dtype=np.float32)
        tokens = self._tokens(new, query=query)
        lengths = np.fromiter((len(tokens[word]) for word in new), np.intp, len(new))
        ids = np.fromiter(
            itertools.chain.from_iterable(tokens[word] for word in new), np.intp, lengths.sum()
        )
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)  # once, not a numpy call a word
        ends = np.cumsum(lengths)
        spans = zip((ends - lengths).tolist(), ends.tolist(), strict=True)
        table, vectors, start = self._table, self._word_vectors, len(rows)
        for offset, (begin, end) in enumerate(spans):
            vectors[start + offset] = table[ids[begin:end]].sum(axis=0, dtype=np.float32)
        rows.update(zip(new, range(start, start + len(new)), strict=True))

    def _tokens(self, words: list[str], *, query: bool) -> dict[str, Sequence[int]]:
        """Each word's token ids: kept ones from :attr:`_known`, the rest from the tokenizer
        (and kept from now on). The first question that needs the tokenizer also keeps the
        words of its vocabulary (once: indexing, which tokenizes far more, is not held up)."""
        tokens: dict[str, Sequence[int]] = {}
        if self._known is not None:
            tokens.update(self._known.known(words))
        missing = [word for word in words if word not in tokens]
        if missing:
            tokenizer = self._tokenizer_loaded()
            if query and self._known is not None and not self._known.holds_vocabulary:
                self._known.remember_vocabulary(_vocabulary_tokens(tokenizer))
            encoded = tokenizer.encode_batch(missing, add_special_tokens=False)
            made = {word: encoding.ids for word, encoding in zip(missing, encoded, strict=True)}
            if self._known is not None:
                self._known.remember(made)
            tokens.update(made)
        return tokens

    def _tokenizer_loaded(self) -> Tokenizer:
        if self._tokenizer is None:
            from tokenizers import Tokenizer  # noqa: PLC0415 - only for words not known yet

            try:
                tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
            except (OSError, ValueError, RuntimeError) as error:  # a broken install
                raise EmbedderError(
                    f"The built-in embedding model cannot be loaded: {error}"
                ) from error
            tokenizer.no_padding()
            tokenizer.no_truncation()
            self._tokenizer = tokenizer
        return self._tokenizer


def _vocabulary_tokens(tokenizer: Tokenizer) -> dict[str, list[int]]:
    """The tokens of every word that is a whole token of ``tokenizer`` (a piece that starts a
    word: "▁light" is "light"), as the tokenizer gives them: the common words of any language
    it knows, kept once so that a question's words are mostly found without it."""
    words = [piece[1:] for piece in tokenizer.get_vocab() if piece.startswith("\u2581")]
    words = [word for word in words if word and not any(character.isspace() for character in word)]
    encoded = tokenizer.encode_batch(words, add_special_tokens=False)
    return {word: encoding.ids for word, encoding in zip(words, encoded, strict=True)}


_SAFETENSORS_DTYPES = {"F16": np.float16, "F32": np.float32}


def mapped_tensor(path: Path, name: str) -> npt.NDArray[np.floating]:
    """One tensor of a ``.safetensors`` file, mapped rather than read: a search that embeds a
    few words touches a few pages of the table, not all of it.

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the bytes. Raises ValueError for a file that does not hold
    ``name`` as a 2-D float tensor of the size its header says.
    """
    with path.open("rb") as file:
        size = int.from_bytes(file.read(8), "little")
        if not 0 < size <= 100_000_000:
            raise ValueError(f"{path.name} has no safetensors header")
        header = json.loads(file.read(size))
    entry = header.get(name) if isinstance(header, dict) else None
    if not isinstance(entry, dict) or entry.get("dtype") not in _SAFETENSORS_DTYPES:
        raise ValueError(f"{path.name} holds no float tensor {name!r}")
    dtype = np.dtype(_SAFETENSORS_DTYPES[entry["dtype"]])
    rows, columns = (int(n) for n in entry["shape"])
    begin, end = (int(n) for n in entry["data_offsets"])
    if end - begin != rows * columns * dtype.itemsize or 8 + size + end > path.stat().st_size:
        raise ValueError(f"{path.name}: tensor {name!r} does not match its header")
    mapped = np.memmap(path, dtype=dtype, mode="r", offset=8 + size + begin, shape=(rows, columns))
    # A plain array over the same pages: indexing a memmap runs Python code of its class each
    # time, which was most of the time to embed a word.
    table: npt.NDArray[np.floating] = mapped.view(np.ndarray)
    return table


def _wordllama_folder() -> Path:
    """Where the ``wordllama`` package's files are, found without importing it (importing it
    configures the process's logging); in a frozen build, beside the app's own files."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and (Path(bundle) / "wordllama").is_dir():
        return Path(bundle) / "wordllama"
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("The built-in embedding model is not installed (package wordllama).")
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=1)
def builtin_embedder() -> StaticEmbedder:
    """The built-in embedder, loaded once per process (its tables are read-only), keeping the
    words it tokenizes in Imprint's data folder for the next process."""
    return StaticEmbedder(
        known_words=paths.data_dir() / "embedders" / f"{StaticEmbedder.name}.words.sqlite3"
    )


#: The ``workspace.embedder`` value that chooses the sentence encoder all-MiniLM-L6-v2
#: (:mod:`.encoder`), which its wheel installs, alone: a name, not a file.
ENCODER = "all-minilm-l6-v2"
#: The ``workspace.embedder`` default: the built-in embedder at once, and the sentence encoder in
#: the background when it is installed (:func:`better_embedder_for`).
AUTO = "auto"
#: The ``workspace.embedder`` value that chooses the built-in embedder alone (as an empty value).
BUILTIN = "builtin"


@lru_cache(maxsize=1)
def sentence_encoder() -> SentenceEncoder:
    """The sentence encoder, loaded once per process (its weights are read-only)."""
    return SentenceEncoder()


def encoder_installed() -> bool:
    """Whether the sentence encoder's files are installed (it can be chosen)."""
    try:
        return (model_folder() / "model.safetensors").is_file()
    except EmbedderError:
        return False


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
        #: Not calibrated for a model chosen by the person: only a near passage stands alone.
        self.alone_similarity = 0.5
        #: A model that reads whole sentences: its ranking counts as much as the keyword one.
        self.fusion_weight = 1.0
        self.name = f"gguf:{path.name}:{stat.st_size}"
        self._query_prefix, self._document_prefix = _prefixes(path.name)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self._document_prefix + text for text in texts])

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._embed([self._query_prefix + text])[0]
        return row

    def _embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        with self._lock:
            for text in texts:
                vector = self._model.embed(text[: self._max_chars] or " ", truncate=True)
                rows.append(vector)  # one text: one pooled vector
        return normalized(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))

    def close(self) -> None:
        self._model.close()


def _prefixes(file_name: str) -> tuple[str, str]:
    """What the recommended embedder stored as ``file_name`` expects before a question and a
    passage (nothing for another file)."""
    from imprint_desktop.core.models.embedders import load_embedders, prefixes_for  # noqa: PLC0415

    try:
        return prefixes_for(file_name, load_embedders())
    except ModelStoreError:
        log.warning("the list of recommended embedders cannot be read", exc_info=True)
        return "", ""


def embedder_for(model: Path | None) -> Embedder:
    """The embedder that gives every passage its vector as it is indexed, for the
    ``workspace.embedder`` value ``model``: the built-in one for None, :data:`BUILTIN` and
    :data:`AUTO`, the sentence encoder for its name (:data:`ENCODER`), else the GGUF embedding
    model at ``model``. Raises :class:`EmbedderError` saying why not."""
    if model is None or str(model) in (BUILTIN, AUTO):
        return builtin_embedder()
    if str(model) == ENCODER:
        return sentence_encoder()
    if not model.is_file():
        raise EmbedderError(f"The embedding model {model} does not exist.")
    return GgufEmbedder(model)


def better_name_for(model: Path | None) -> str:
    """The name of the embedder that improves on :func:`embedder_for`'s in the background for the
    ``workspace.embedder`` value ``model`` (the sentence encoder's, under :data:`AUTO` when it is
    installed), or "" when there is none; known without loading it."""
    if model is not None and str(model) == AUTO and encoder_installed():
        return SentenceEncoder.name
    return ""


def better_embedder_for(model: Path | None) -> Embedder | None:
    """The embedder :func:`better_name_for` names, loaded (once per process), or None. Raises
    :class:`EmbedderError` when its files are installed but cannot be loaded."""
    return sentence_encoder() if better_name_for(model) else None
