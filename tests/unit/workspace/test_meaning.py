"""Search by meaning: passages' vectors in the index, the built-in embedder, and hybrid ranking."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from imprint_desktop.core import resources
from imprint_desktop.core.errors import EmbedderError
from imprint_desktop.core.workspace import WorkspaceIndex, embedding, vectors
from imprint_desktop.core.workspace.embedding import (
    StaticEmbedder,
    Vectors,
    builtin_embedder,
    embedder_for,
    mapped_tensor,
)
from imprint_desktop.core.workspace.search import SearchMode, fuse
from imprint_desktop.core.workspace.vectors import EmbedProgress
from tests.unit.workspace.conftest import write

TOPICS = {
    "pets.md": "# Pets\n\nDogs and cats share our houses; a puppy needs walks, a kitten needs a "
    "scratching post.\n",
    "bank.md": "# Rates\n\nThe central bank raised interest rates again to slow inflation and "
    "cool borrowing.\n",
    "weather.md": "# Forecast\n\nHeavy rain and strong wind are expected over the coast "
    "tomorrow, with thunderstorms.\n",
    "garden.md": "# Garden\n\nTomatoes and beans grow well in a sunny vegetable plot if watered "
    "every morning.\n",
    "rail.md": "# Trains\n\nThe railway timetable lists departures from the station for every "
    "platform.\n",
}


def topics(root: Path) -> Path:
    for name, text in TOPICS.items():
        write(root, name, text)
    return root


def stored(index: WorkspaceIndex) -> tuple[int, int]:
    """Passages with a vector, and passages, as the database holds them."""
    with sqlite3.connect(index.db_path) as db:
        return vectors.counts(db)


def paths(index: WorkspaceIndex, query: str, mode: SearchMode = SearchMode.HYBRID) -> list[str]:
    return [hit.path for hit in index.search(query, 5, mode)]


class Counting:
    """The built-in embedder, counting the texts it is given (a real embedder, observed)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.name = builtin_embedder().name
        self.min_similarity = builtin_embedder().min_similarity
        self.alone_similarity = builtin_embedder().alone_similarity
        self.fusion_weight = builtin_embedder().fusion_weight

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return builtin_embedder().embed(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.embed([text])[0]


def test_the_built_in_embedder_gives_unit_vectors_that_place_paraphrases_near() -> None:
    embedder = embedder_for(None)
    rows = embedder.embed(
        ["a puppy and a kitten at home", "pets in the house", "interest rates and inflation", ""]
    )
    assert rows.shape == (4, 256)
    assert rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows[:3], axis=1), 1.0, atol=1e-5)
    assert not rows[3].any()  # no token, no direction
    similarity = rows @ rows.T
    assert similarity[0, 1] > similarity[0, 2] + 0.1


def test_the_built_in_embedder_reads_a_question_as_its_content_words() -> None:
    embedder = StaticEmbedder()
    question = embedder.embed_query("When was the harbour light at Gannet Point first lit?")
    words = embedder.embed_query("harbour light Gannet Point first lit")
    assert np.array_equal(question, words)
    # Words that say something of their neighbours stay: costs going up are not costs going down.
    up = embedder.embed_query("Why are costs going up?")
    assert not np.array_equal(up, embedder.embed_query("costs going"))


def test_passages_get_vectors_as_they_are_indexed_and_lose_them_with_their_file(
    tmp_path: Path,
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        report = index.update()
        assert report.embedded == stored(index)[1] == 5
        (root / "bank.md").unlink()
        write(root, "rail.md", TOPICS["rail.md"] + "\nNight trains leave at midnight.\n\n" * 3)
        report = index.update()
        embedded, passages = stored(index)
        assert embedded == passages == report.embedded
        with sqlite3.connect(index.db_path) as db:
            orphans = db.execute(
                "SELECT count(*) FROM passage_vectors WHERE passage_id NOT IN "
                "(SELECT id FROM passages)"
            ).fetchone()[0]
        assert orphans == 0
        assert paths(index, "money lending costs going up", SearchMode.MEANING) == []


def test_only_new_passages_are_embedded_and_a_stopped_embedding_keeps_its_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "w"
    for number in range(30):
        write(root, f"note{number:02d}.md", f"# Note {number}\n\nParagraph {number}.\n")
    counting = Counting()
    monkeypatch.setattr(vectors, "BATCH", 8)
    with WorkspaceIndex(root) as index:
        monkeypatch.setattr(index, "embedder", lambda: counting)
        stop = threading.Event()

        def progress(event: EmbedProgress) -> None:
            if event.done >= 16:
                stop.set()

        first = index.update(embed_progress=progress, cancel=stop)
        assert first.cancelled
        assert stored(index) == (16, 30)  # two batches committed before Stop
        index.update()
        assert stored(index) == (30, 30)
        assert len(counting.texts) == 30  # none embedded twice
        write(root, "new.md", "# New\n\nA thirty-first note.\n")
        index.update()
        assert counting.texts[-1].endswith("A thirty-first note.")
        assert len(counting.texts) == 31


def test_a_paraphrase_is_found_by_meaning_where_no_word_matches(tmp_path: Path) -> None:
    with WorkspaceIndex(topics(tmp_path / "w")) as index:
        index.update()
        asked = {
            "animals people keep at home": "pets.md",
            "money lending costs going up": "bank.md",
            "storm coming tonight": "weather.md",
            "harvesting produce from the backyard": "garden.md",  # no word, nor its stem
        }
        for query, answer in asked.items():
            assert paths(index, query, SearchMode.KEYWORD) == []
            assert paths(index, query)[0] == answer
            assert paths(index, query, SearchMode.MEANING)[0] == answer
        # Nothing near at all: nothing found, rather than the least unrelated passages.
        assert paths(index, "xylophone quantum zebra") == []


def test_a_question_in_another_language_finds_what_keywords_find(tmp_path: Path) -> None:
    with WorkspaceIndex(topics(tmp_path / "w")) as index:
        index.update()
        for query in (
            "Wann fährt der Zug von der station ab?",
            "Quand le timetable du train est-il publié ?",
            "¿Cuándo sale el tren de la station?",
            "Hoe laat vertrekt de trein van het platform?",
        ):
            by_words = paths(index, query, SearchMode.KEYWORD)
            assert by_words[:1] == ["rail.md"]
            assert paths(index, query)[:1] == by_words[:1]


@pytest.mark.parametrize("embedder", [None, Path("all-minilm-l6-v2")], ids=["builtin", "encoder"])
def test_made_up_words_find_nothing_in_any_mode(tmp_path: Path, embedder: Path | None) -> None:
    """No word of the query, nor its stem, is in the documents: a passage found by meaning alone
    must be nearer than made-up words come (the embedder's ``alone_similarity``). The sample
    workspace holds made-up names ("Gannet Point", "Skerry Rock") for the letters to brush."""
    root = tmp_path / "sample"
    shutil.copytree(resources.resource("sample-workspace"), root)
    with WorkspaceIndex(root, embedder=embedder) as index:
        index.update()
        for made_up in ("zqxjkv", "qajajox fosot", "Blorptax Vexworth"):
            for mode in SearchMode:
                assert index.search(made_up, 5, mode) == [], (made_up, mode)
        # A real word beside them still finds its passages, by words and by meaning.
        for mode in SearchMode:
            assert index.search("zqxjkv lighthouse", 5, mode), mode


def test_fusion_adds_each_halfs_scores_scaled_to_its_best() -> None:
    fused = fuse([(1, 8.0), (2, 4.0), (3, 2.0)], [(3, 1.0), (4, 0.5)], 0.5)
    assert [passage for passage, _ in fused] == [1, 3, 2, 4]
    scores = dict(fused)
    assert scores[1] == pytest.approx(1.0)
    assert scores[3] == pytest.approx(0.25 + 0.5)  # a quarter of the best BM25, the nearest
    assert scores[4] == pytest.approx(0.25)
    assert fuse([], [], 1.0) == []
    # Meaning alone: its order, weighed.
    assert fuse([], [(7, 1.0), (8, 0.2)], 2.0) == [(7, 2.0), (8, pytest.approx(0.4))]


def test_a_new_embedder_embeds_everything_again_while_words_still_find_passages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
    other = Counting()
    other.name = "another-embedder"
    monkeypatch.setattr(vectors, "BATCH", 2)
    with WorkspaceIndex(root) as index:
        monkeypatch.setattr(index, "embedder", lambda: other)
        stop = threading.Event()
        found_meanwhile: list[list[str]] = []

        def progress(event: EmbedProgress) -> None:
            found_meanwhile.append(paths(index, "railway timetable"))
            if event.done >= 2:
                stop.set()

        report = index.embed(progress=progress, cancel=stop)
        assert report.cancelled
        assert stored(index) == (2, 5)  # the old vectors are gone, two new ones are in
        assert all(found[:1] == ["rail.md"] for found in found_meanwhile)
        report = index.embed()
        assert (report.embedded, report.cancelled) == (5, False)
        assert len([text for text in other.texts if text != "railway timetable"]) == 5


def test_an_embedder_that_cannot_be_loaded_leaves_search_to_words(tmp_path: Path) -> None:
    root = topics(tmp_path / "w")
    missing = tmp_path / "no-such-model.gguf"
    with WorkspaceIndex(root, embedder=missing) as index:
        report = index.update()
        assert "no-such-model.gguf" in report.embedder_problem
        assert report.embedded == 0
        assert paths(index, "railway timetable")[:1] == ["rail.md"]
        with pytest.raises(EmbedderError):
            index.search("railway timetable", 5, SearchMode.MEANING)


def test_an_index_made_before_vectors_keeps_its_passages_and_gets_vectors(
    tmp_path: Path,
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        db_path = index.db_path
    with sqlite3.connect(db_path) as db:  # as an index of the version before vectors was
        db.executescript(
            "DROP TRIGGER passage_vectors_gone; DROP TRIGGER passage_vectors_added; "
            "DROP TRIGGER passage_vectors_deleted; DROP TABLE passage_vectors; "
            "DELETE FROM meta WHERE key IN ('embedder', 'vectors_generation');"
        )
    with WorkspaceIndex(root) as index:
        report = index.update()
        assert (report.added, report.unchanged, report.embedded) == (0, 5, 5)
        assert paths(index, "storm coming tonight")[:1] == ["weather.md"]


def test_the_built_in_embedder_forgets_words_when_its_cache_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = StaticEmbedder()
    monkeypatch.setattr(embedding, "_WORD_CACHE", 8)
    first = embedder.embed(["word0 harbour lamp keeper"])
    embedder.embed([f"word{number}" for number in range(6)])  # six of eight words known
    again = embedder.embed(["word0 harbour lamp keeper"])  # one known, three new: too many
    assert np.allclose(first, again, atol=1e-6)


def test_a_text_vector_is_the_sum_of_its_words_tokens_however_the_words_were_learned() -> None:
    """Words learned together in one batch (of one token and of many, repeated, and a text of no
    words) give the sums of the rows the tokenizer names, read one by one from the table."""
    from tokenizers import Tokenizer

    embedder = StaticEmbedder()
    tokenizer = Tokenizer.from_file(str(embedder._tokenizer_file))
    texts = [
        "Lighthouse keepers logged weather twice daily.",
        "Keepers keepers keepers: Überwachungsstation 1986-03-03 lighthouse",
        "",
    ]
    got = embedder.embed(texts)
    table = np.asarray(embedder._table, dtype=np.float32)
    for text, row in zip(texts, got, strict=True):
        ids = [
            i for word in text.split() for i in tokenizer.encode(word, add_special_tokens=False).ids
        ]
        expected = table[ids].sum(axis=0) if ids else np.zeros(table.shape[1], np.float32)
        norm = np.linalg.norm(expected)
        assert np.allclose(row, expected / norm if norm else expected, atol=1e-5)


# --- the built-in table, mapped from its file -------------------------------------------------


def test_a_mapped_tensor_equals_the_stored_one(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    table = np.arange(24, dtype=np.float16).reshape(6, 4) / 7
    path = tmp_path / "t.safetensors"
    save_file({"other": np.ones(3, dtype=np.float32), "embedding.weight": table}, str(path))
    mapped = mapped_tensor(path, "embedding.weight")
    assert mapped.dtype == np.float16 and mapped.shape == (6, 4)
    assert np.array_equal(mapped[[5, 0, 5]], table[[5, 0, 5]])


@pytest.mark.parametrize(
    "damage",
    ["truncated", "missing tensor", "not safetensors", "integer tensor"],
)
def test_a_broken_table_is_a_clear_error(tmp_path: Path, damage: str) -> None:
    from safetensors.numpy import save_file

    path = tmp_path / "t.safetensors"
    tensor = np.ones((8, 4), dtype=np.int32 if damage == "integer tensor" else np.float16)
    save_file({"embedding.weight" if damage != "missing tensor" else "x": tensor}, str(path))
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-10])
    if damage == "not safetensors":
        path.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match=path.name):
        mapped_tensor(path, "embedding.weight")
