"""The nearest passages by meaning past :data:`~.vectors.TWO_STEP_ROWS`: the leading halves of
the vectors pick a shortlist, and the whole vectors rank it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from imprint_desktop.core.workspace import vectors
from imprint_desktop.core.workspace.database import Connections
from imprint_desktop.core.workspace.embedding import Vectors, normalized
from imprint_desktop.core.workspace.vectors import VectorSearch

NAME = "test-embedder"
DIMENSIONS = 16


def index_with(folder: Path, rows: Vectors, per_file: int = 10) -> Connections:
    """An index whose passages have the vectors ``rows``, ``per_file`` passages a file."""
    connections = Connections(folder / "index.sqlite3", folder)
    db = connections.get()
    files = range(1, len(rows) // per_file + 2)
    db.executemany(
        "INSERT INTO files (id, path, size, mtime_ns, digest, format, title, lines, status, note)"
        " VALUES (?, ?, 1, 1, 'x', 'md', '', 1, 'ok', '')",
        [(file, f"f{file}.md") for file in files],
    )
    db.executemany(
        "INSERT INTO passages (id, file_id, start_line, end_line, section, heading, text)"
        " VALUES (?, ?, 1, 1, '', '', 'text')",
        [(at + 1, at // per_file + 1) for at in range(len(rows))],
    )
    db.executemany(
        "INSERT INTO passage_vectors (passage_id, vector) VALUES (?, ?)",
        [(at + 1, row.astype(np.float16).tobytes()) for at, row in enumerate(rows)],
    )
    db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (NAME,))
    return connections


@pytest.fixture
def two_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "TWO_STEP_ROWS", 100)
    monkeypatch.setattr(vectors, "SHORTLIST", 40)


def clustered(rng: np.random.Generator, count: int) -> Vectors:
    """Unit rows in 20 clusters, most of their length in the leading half, as a model trained to
    be cut short (the built-in embedder's) puts it."""
    centres = rng.normal(size=(20, DIMENSIONS)) * np.r_[np.ones(8), np.full(8, 0.4)]
    rows = centres[rng.integers(0, 20, count)] + rng.normal(scale=0.3, size=(count, DIMENSIONS))
    return normalized(rows.astype(np.float32))


def nearest(connections: Connections, query: Vectors, count: int) -> list[tuple[int, float]]:
    return VectorSearch().nearest(connections.get(), NAME, query, count)


@pytest.fixture
def connections(tmp_path: Path) -> Iterator[Connections]:
    rng = np.random.default_rng(26)
    opened = index_with(tmp_path, clustered(rng, 600))
    yield opened
    opened.close_all()


def test_a_small_index_ranks_every_passage_by_its_whole_vector(
    connections: Connections,
) -> None:
    db = connections.get()
    rows = np.array(
        [
            np.frombuffer(blob, dtype=np.float16)
            for (blob,) in db.execute("SELECT vector FROM passage_vectors ORDER BY passage_id")
        ],
        dtype=np.float32,
    )
    documents = normalized(rows.reshape(-1, 10, DIMENSIONS).sum(axis=1))
    query = normalized(np.random.default_rng(1).normal(size=(1, DIMENSIONS)).astype(np.float32))[0]
    scores = 0.5 * rows @ query + 0.5 * np.repeat(documents @ query, 10)
    expected = list(np.argsort(-scores, kind="stable")[:12] + 1)
    found = nearest(connections, query, 12)
    assert [passage for passage, _ in found] == expected
    assert [score for _, score in found] == pytest.approx(list(scores[np.array(expected) - 1]))


@pytest.mark.usefixtures("two_steps")
def test_past_two_step_rows_the_nearest_are_those_of_one_pass(
    connections: Connections, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    db = connections.get()
    # The same 30 rows every run (SQLite's random() is not seeded: the test was flaky).
    blobs = [blob for (blob,) in db.execute("SELECT vector FROM passage_vectors ORDER BY rowid")]
    chosen = [blobs[at] for at in rng.choice(len(blobs), size=30, replace=False)]
    queries = [
        normalized(np.frombuffer(blob, dtype=np.float16).astype(np.float32)[None] + noise)[0]
        for blob, noise in zip(
            chosen, rng.normal(scale=0.2, size=(30, 1, DIMENSIONS)).astype(np.float32), strict=True
        )
    ]
    in_two_steps = [nearest(connections, query, 10) for query in queries]
    monkeypatch.setattr(vectors, "TWO_STEP_ROWS", 10_000)
    in_one_pass = [nearest(connections, query, 10) for query in queries]
    assert in_two_steps == in_one_pass


@pytest.mark.usefixtures("two_steps")
def test_only_the_shortlist_is_ranked_by_whole_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A passage near the question by the trailing half of its vector alone is not found past
    TWO_STEP_ROWS (the trade made for a pass over half as much), and is found below it."""
    rng = np.random.default_rng(3)
    rows = clustered(rng, 400)
    query = np.zeros(DIMENSIONS, dtype=np.float32)
    query[0], query[8:] = 0.3, 0.3
    query /= np.linalg.norm(query)
    stray = np.zeros(DIMENSIONS, dtype=np.float32)
    stray[8:] = 1.0  # nothing in the leading half
    rows[0] = normalized(stray[None])[0]
    with_stray = index_with(tmp_path, rows)
    try:
        assert 1 not in [passage for passage, _ in nearest(with_stray, query, 5)]
        monkeypatch.setattr(vectors, "TWO_STEP_ROWS", 10_000)
        assert nearest(with_stray, query, 5)[0][0] == 1
    finally:
        with_stray.close_all()
