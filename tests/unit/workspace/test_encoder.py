"""The sentence encoder: all-MiniLM-L6-v2 run in numpy from the files its wheel installs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from imprint_desktop.core.chosen import embedder_file
from imprint_desktop.core.errors import EmbedderError
from imprint_desktop.core.workspace import WorkspaceIndex
from imprint_desktop.core.workspace.embedding import (
    ENCODER,
    builtin_embedder,
    embedder_for,
    sentence_encoder,
)
from imprint_desktop.core.workspace.encoder import MAX_TOKENS, SentenceEncoder, model_folder
from imprint_desktop.core.workspace.search import SearchMode
from imprint_desktop.core.workspace.vectors import embedder_name
from tests.unit.workspace.conftest import write


def test_the_encoder_reproduces_the_models_published_similarities() -> None:
    """The model card's example: cosine similarities 0.6660, 0.1046 and 0.1411 between these
    three sentences, computed by the reference implementation. A wrong layer (attention mask,
    normalisation, activation, pooling) moves them by far more than the tolerance."""
    encoder = sentence_encoder()
    rows = encoder.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    assert rows.shape == (3, 384)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    similarities = rows @ rows.T
    assert similarities[0, 1] == pytest.approx(0.6660, abs=2e-3)
    assert similarities[0, 2] == pytest.approx(0.1046, abs=2e-3)
    assert similarities[1, 2] == pytest.approx(0.1411, abs=2e-3)


def test_a_text_gets_the_same_vector_alone_and_in_a_batch_of_longer_ones() -> None:
    """Padding in a batch is never attended to or pooled, and the batch's order is restored."""
    encoder = sentence_encoder()
    short = "How do I show a page of my own when an address does not exist?"
    texts = ["word " * 300, short, "A longer passage about configuration files. " * 5]
    together = encoder.embed(texts)
    alone = encoder.embed_query(short)
    np.testing.assert_allclose(together[1], alone, atol=1e-5)
    longer = encoder.embed(["word " * (MAX_TOKENS * 2)])[0]  # cut at MAX_TOKENS, like the first
    np.testing.assert_allclose(together[0], longer, atol=1e-5)


def test_empty_and_broken_text_still_gets_a_vector() -> None:
    encoder = sentence_encoder()
    rows = encoder.embed(["", "lone \ud800 surrogate"])
    assert np.isfinite(rows).all()
    assert encoder.embed([]).shape == (0, 384)


def test_the_setting_chooses_the_encoder_by_its_name() -> None:
    """``workspace.embedder = all-minilm-l6-v2`` (as a person types it) is the encoder, whose
    vectors the index keeps under that name; a file path is still a GGUF model."""
    assert embedder_for(embedder_file(f" {ENCODER} ")) is sentence_encoder()
    assert sentence_encoder().name == ENCODER
    with pytest.raises(EmbedderError, match="does not exist"):
        embedder_for(embedder_file(f"/nowhere/{ENCODER}"))


def test_a_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (folder / name).write_bytes((model_folder() / name).read_bytes())
    with pytest.raises(EmbedderError, match="all-MiniLM-L6-v2 cannot be loaded"):
        SentenceEncoder(folder)


def flask_like(root: Path) -> Path:
    """Three short documents in a web framework's words."""
    write(
        root,
        "errors.md",
        "# Error pages\n\nRegister a handler for 404 Not Found responses "
        "to render a custom template when a URL matches no route.\n",
    )
    write(
        root,
        "db.md",
        "# Databases\n\nOpen a sqlite3 connection per request and close it "
        "in a teardown function.\n",
    )
    write(
        root,
        "cli.md",
        "# Commands\n\nAdd custom commands to the flask command with click; "
        "they run inside an application context.\n",
    )
    return root


def test_search_by_meaning_with_the_encoder_finds_a_paraphrase(tmp_path: Path) -> None:
    """The kind of question the built-in embedder misses (it finds no passage near this one):
    no content word of it is in the passage that answers it."""
    root = flask_like(tmp_path / "ws")
    with WorkspaceIndex(root, db_path=tmp_path / "index.sqlite3", embedder=Path(ENCODER)) as index:
        report = index.update()
        assert report.embedded == 3
        assert not report.embedder_problem
        question = "show my own screen when a visitor asks for something that isn't there"
        found = [hit.path for hit in index.search(question, 3, SearchMode.MEANING)]
    assert found[0] == "errors.md"


def test_choosing_the_encoder_embeds_the_index_again_with_its_vectors(tmp_path: Path) -> None:
    """An index the built-in embedder filled (256 dimensions) gets the encoder's vectors (384)
    for every passage when the setting changes, and searches by them; and back again."""
    root = flask_like(tmp_path / "ws")
    db_path = tmp_path / "index.sqlite3"
    question = "show my own screen when a visitor asks for something that isn't there"
    with WorkspaceIndex(root, db_path=db_path) as index:
        assert index.update().embedded == 3
    with sqlite3.connect(db_path) as db:
        assert embedder_name(db) == builtin_embedder().name
    with WorkspaceIndex(root, db_path=db_path, embedder=Path(ENCODER)) as index:
        report = index.update()
        assert (report.embedded, report.embedder_problem) == (3, "")
        found = [hit.path for hit in index.search(question, 3, SearchMode.MEANING)]
    assert found[0] == "errors.md"
    with sqlite3.connect(db_path) as db:
        assert embedder_name(db) == ENCODER
        sizes = {len(blob) for (blob,) in db.execute("SELECT vector FROM passage_vectors")}
    assert sizes == {384 * 2}  # float16
    with WorkspaceIndex(root, db_path=db_path) as index:
        assert index.update().embedded == 3
    with sqlite3.connect(db_path) as db:
        assert embedder_name(db) == builtin_embedder().name
