"""The remote token estimate against other tokenizer families (issue 42, item 1; ADR 0102's
second condition): never below their real count by more than :data:`MARGIN`.

The vocabularies are two of llama.cpp's vocabulary-only files, kept in ``tests/data/tokenizers``
(source and licences in its README): GPT-2's byte-level BPE and Phi-3's SentencePiece with byte
fallback, the two the estimate undercounted most before (Greek 0.82 and emoji 0.82 of the real
count). llama.cpp tokenizes with them exactly as a server of those models does.
``python bench/bench_tokenizers.py`` measures all 19 families the same way.
"""

from __future__ import annotations

import lzma
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_cpp import Llama

from imprint_desktop.core.providers.estimate import estimate_tokens
from tests.support.engine_prompts import request_pieces
from tests.support.script_samples import SAMPLES

pytestmark = pytest.mark.integration

#: The estimate may fall below a family's real count by this share at most.
MARGIN = 0.03
VOCABULARIES = Path(__file__).parents[1] / "data" / "tokenizers"
FAMILIES = ("gpt-2", "phi-3")


@pytest.fixture(scope="module", params=FAMILIES)
def family(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Llama]:
    name = request.param
    packed = VOCABULARIES / f"ggml-vocab-{name}.gguf.xz"
    path = tmp_path_factory.mktemp("vocab") / f"ggml-vocab-{name}.gguf"
    path.write_bytes(lzma.decompress(packed.read_bytes()))
    vocabulary = Llama(str(path), vocab_only=True, verbose=False)
    yield vocabulary
    vocabulary.close()


def real(vocabulary: Llama, text: str) -> int:
    return len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))


def test_the_estimate_holds_for_every_sample(family: Llama) -> None:
    low = {
        name: round(estimate_tokens(text) / real(family, text), 3)
        for name, text in SAMPLES.items()
        if estimate_tokens(text) < (1 - MARGIN) * real(family, text)
    }
    assert not low, low


def test_the_estimate_holds_for_research_requests_as_the_engine_builds_them(
    family: Llama,
) -> None:
    """Each request: instructions, tools, the question with its passages, a search and its result
    (the sample in each), as the JSON pieces the remote provider counts."""
    low = {}
    for name in SAMPLES:
        pieces = request_pieces(name)
        estimate = sum(map(estimate_tokens, pieces))
        exact = sum(real(family, piece) for piece in pieces)
        if estimate < (1 - MARGIN) * exact:
            low[name] = round(estimate / exact, 3)
    assert not low, low


def test_the_estimate_is_no_mere_byte_count(family: Llama) -> None:
    """One token a byte would hold too; the estimate stays well under it for English."""
    text = SAMPLES["english"]
    assert estimate_tokens(text) < 0.4 * len(text.encode())
    assert estimate_tokens(text) < 1.5 * real(family, text)
