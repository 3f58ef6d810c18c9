"""What a search keeps on disk for the next process (issue 28): the passages' vectors beside the
index, the built-in embedder's tokens of each word. Each is a cache: the next process gets the same
results from it as from the database and the tokenizer, and a cache that is out of date or damaged
is made again, never trusted."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import tokenizers

from imprint_desktop.core.errors import EmbedderError
from imprint_desktop.core.workspace import WorkspaceIndex, vector_file, vectors, word_tokens
from imprint_desktop.core.workspace.embedding import StaticEmbedder
from imprint_desktop.core.workspace.search import SearchMode
from imprint_desktop.core.workspace.word_tokens import WordTokens
from tests.unit.workspace.conftest import write
from tests.unit.workspace.test_meaning import TOPICS, topics

QUERIES = ("animals people keep at home", "storm coming tonight", "railway timetable", "bank")


def results(index: WorkspaceIndex) -> list[list[tuple[str, int, float]]]:
    """Every query's hits in every mode, as (path, first line, score)."""
    return [
        [(hit.path, hit.start_line, hit.score) for hit in index.search(query, 5, mode)]
        for query in QUERIES
        for mode in SearchMode
    ]


def fresh_results(root: Path, db_path: Path) -> list[list[tuple[str, int, float]]]:
    """The results of an index built from nothing, at ``db_path``: nothing kept to trust."""
    with WorkspaceIndex(root, db_path=db_path) as index:
        index.update()
        return results(index)


class TableRead:
    """Counts the reads of the vectors from the database (the real reads, observed)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = vectors._from_table

        def counted(db: sqlite3.Connection, embedder: str, *vector_set: object) -> object:
            self.count += 1
            return real(db, embedder, *vector_set)  # type: ignore[arg-type]

        monkeypatch.setattr(vectors, "_from_table", counted)


# --- the vectors beside the index ---------------------------------------------------------------


def test_kept_vectors_serve_the_next_process_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        first = results(index)
        kept = vector_file.path_for(index.db_path)
    assert kept.is_file()
    reads = TableRead(monkeypatch)
    with WorkspaceIndex(root) as index:  # as the next `imprint workspace search` does
        index.update()
        assert results(index) == first
    assert reads.count == 0
    assert first == fresh_results(root, tmp_path / "fresh.sqlite3")


def test_files_changed_removed_and_added_after_the_vectors_were_kept_are_searched_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        assert [hit.path for hit in index.search("storm coming tonight", 1)] == ["weather.md"]
    (root / "weather.md").unlink()
    write(root, "bank.md", "# Rates\n\nThe orchestra tuned its violins before the concert.\n")
    write(root, "sky.md", "# Outlook\n\nHeavy rain and strong wind over the coast tonight.\n")
    reads = TableRead(monkeypatch)
    with WorkspaceIndex(root) as index:
        index.update()
        now = results(index)
        assert [hit.path for hit in index.search("storm coming tonight", 1)] == ["sky.md"]
        by_meaning = [hit.path for hit in index.search("music", 5, SearchMode.MEANING)]
        assert "bank.md" in by_meaning
        assert "weather.md" not in [hit.path for hit in index.search("rain wind", 5)]
    assert reads.count == 1  # read from the table once, then kept again
    assert now == fresh_results(root, tmp_path / "fresh.sqlite3")


@pytest.mark.parametrize("damage", ["cut short", "a flipped byte", "not a vector file", "empty"])
def test_damaged_kept_vectors_are_read_again_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        first = results(index)
        kept = vector_file.path_for(index.db_path)
    data = kept.read_bytes()
    damaged = {
        "cut short": data[:-7],
        "a flipped byte": data[:-100] + bytes([data[-100] ^ 0x10]) + data[-99:],
        "not a vector file": b"\x00" * len(data),
        "empty": b"",
    }[damage]
    kept.write_bytes(damaged)
    reads = TableRead(monkeypatch)
    with WorkspaceIndex(root) as index:
        index.update()
        assert results(index) == first
    assert reads.count == 1
    assert kept.read_bytes() == data  # written again, whole


def test_kept_vectors_of_another_state_of_the_index_are_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors of an index as it was (a copy put back, an index built again) are of another
    generation, whatever changed since."""
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        results(index)
        kept = vector_file.path_for(index.db_path)
        db_path = index.db_path
    before = kept.read_bytes()
    write(root, "pets.md", "# Pets\n\nThe stock exchange closed higher on strong earnings.\n")
    with WorkspaceIndex(root) as index:
        index.update()
        results(index)
    kept.write_bytes(before)  # the vectors from before the change
    expected = fresh_results(root, tmp_path / "fresh.sqlite3")
    reads = TableRead(monkeypatch)
    with WorkspaceIndex(root) as index:
        index.update()
        assert [hit.path for hit in index.search("shares and markets", 1, SearchMode.MEANING)] == [
            "pets.md"
        ]
    assert reads.count == 1
    # An index deleted and built again over the same files starts from a generation of its own.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    kept.write_bytes(before)
    with WorkspaceIndex(root) as index:
        index.update()
        assert results(index) == expected
    assert reads.count == 2


def test_the_vectors_are_searched_when_they_cannot_be_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = topics(tmp_path / "w")
    db_path = tmp_path / "index" / "index.sqlite3"
    with WorkspaceIndex(root, db_path=db_path) as index:
        index.update()
        vector_file.path_for(db_path).mkdir()  # a folder where the file would go
        assert results(index) == fresh_results(root, tmp_path / "fresh.sqlite3")


def test_a_vector_file_checks_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "v"
    kept = vector_file.Kept(
        np.array([4, 2, 9], dtype=np.int64),
        np.array([1, 1, 3], dtype=np.int64),
        np.arange(12, dtype=np.float16).reshape(3, 4) / 8,
        np.arange(8, dtype=np.float32).reshape(2, 4) / 3,
    )
    vector_file.write(path, ("embedder", "ab12"), kept)
    read = vector_file.read(path, ("embedder", "ab12"))
    assert read is not None
    assert all(np.array_equal(a, b) for a, b in zip(read, kept, strict=True))
    assert read.rows.dtype == np.float16 and read.ids.dtype == np.int64
    assert read.documents.dtype == np.float32
    assert vector_file.read(path, ("embedder", "ab13")) is None
    assert vector_file.read(path, ("other", "ab12")) is None
    assert vector_file.read(tmp_path / "missing", ("embedder", "ab12")) is None
    none = vector_file.Kept(
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros((0, 0), dtype=np.float16),
        np.zeros((0, 0), dtype=np.float32),
    )
    vector_file.write(path, ("embedder", "00"), none)
    read = vector_file.read(path, ("embedder", "00"))
    assert read is not None and len(read[0]) == 0


def test_every_change_to_the_vectors_gives_a_generation_never_seen(tmp_path: Path) -> None:
    root = topics(tmp_path / "w")
    seen: list[str] = []

    def generation(index: WorkspaceIndex) -> str:
        with sqlite3.connect(index.db_path) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'vectors_generation'").fetchone()
        return str(row[0])

    with WorkspaceIndex(root) as index:
        seen.append(generation(index))
        index.update()
        seen.append(generation(index))
        index.update()  # nothing changed
        assert generation(index) == seen[-1]
        write(root, "rail.md", TOPICS["rail.md"] + "\nA night train too.\n")
        index.update()
        seen.append(generation(index))
        (root / "rail.md").unlink()
        index.update()
        seen.append(generation(index))
    assert len(set(seen)) == len(seen)


# --- the tokens of each word ----------------------------------------------------------------------


class NoTokenizer:
    """Stands in for the tokenizers library's Tokenizer where a test shows it is not needed."""

    @staticmethod
    def from_file(path: str) -> object:
        raise RuntimeError(f"the tokenizer was loaded from {path}")


TEXTS = ["The harbour keeper lit the lamp.", "Gales and downpours, tonight!", "naïve café 東京"]


def test_words_kept_give_the_tokenizers_vectors_without_loading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = tmp_path / "words.sqlite3"
    expected = StaticEmbedder().embed(TEXTS)
    asked = StaticEmbedder().embed_query(TEXTS[0])
    # The first question that needs the tokenizer keeps the words of its vocabulary too.
    common = StaticEmbedder().embed(["garden station Zeit maison"])
    first = StaticEmbedder(known_words=known)
    assert np.array_equal(first.embed(TEXTS), expected)
    assert np.array_equal(first.embed_query(TEXTS[0]), asked)
    first.embed_query("gardens")
    monkeypatch.setattr(tokenizers, "Tokenizer", NoTokenizer)
    later = StaticEmbedder(known_words=known)  # another process, as far as it knows
    assert np.array_equal(later.embed(TEXTS), expected)
    assert np.array_equal(later.embed_query(TEXTS[0]), asked)
    assert np.array_equal(later.embed(["garden station Zeit maison"]), common)
    with pytest.raises(EmbedderError, match="loaded from"):
        later.embed(["a word never seen before: quillwort"])


def test_words_kept_for_another_tokenizer_are_not_trusted(tmp_path: Path) -> None:
    known = tmp_path / "words.sqlite3"
    other = WordTokens(known, "another tokenizer")
    other.remember({"harbour": [5], "keeper": [6, 7]})
    other.close()
    expected = StaticEmbedder().embed(TEXTS)
    assert np.array_equal(StaticEmbedder(known_words=known).embed(TEXTS), expected)


@pytest.mark.parametrize("damage", ["not a database", "entries that do not parse"])
def test_damaged_kept_words_are_tokenized_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    known = tmp_path / "words.sqlite3"
    StaticEmbedder(known_words=known).embed(TEXTS)
    if damage == "not a database":
        for suffix in ("-wal", "-shm"):
            Path(f"{known}{suffix}").unlink(missing_ok=True)
        known.write_bytes(b"this is not a database" * 100)
    else:
        with sqlite3.connect(known) as db:
            db.execute("UPDATE words SET tokens = 'x -1' WHERE word = 'harbour'")
            db.execute("UPDATE words SET tokens = '-3' WHERE word = 'keeper'")
    expected = StaticEmbedder().embed(TEXTS)
    assert np.array_equal(StaticEmbedder(known_words=known).embed(TEXTS), expected)
    monkeypatch.setattr(tokenizers, "Tokenizer", NoTokenizer)
    assert np.array_equal(StaticEmbedder(known_words=known).embed(TEXTS), expected)


def test_an_index_keeps_the_words_of_its_passages_for_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``imprint workspace search`` relies on: after indexing, a search with the documents'
    own words needs no tokenizer in a new process."""
    known = tmp_path / "words.sqlite3"
    root = topics(tmp_path / "w")
    monkeypatch.setattr(
        "imprint_desktop.core.workspace.index.embedder_for",
        lambda model: StaticEmbedder(known_words=known),
    )
    with WorkspaceIndex(root) as index:
        index.update()
        first = [(hit.path, hit.score) for hit in index.search("railway timetable", 5)]
    monkeypatch.setattr(tokenizers, "Tokenizer", NoTokenizer)
    with WorkspaceIndex(root) as index:
        index.update()
        assert [(hit.path, hit.score) for hit in index.search("railway timetable", 5)] == first
        # A word no document uses needs the tokenizer: search by words goes on without it.
        assert [hit.path for hit in index.search("platform zeppelin", 5)][:1] == ["rail.md"]
        with pytest.raises(EmbedderError):
            index.search("zeppelin", 5, SearchMode.MEANING)


def test_an_index_whose_generation_counted_changes_gets_random_generations(
    tmp_path: Path,
) -> None:
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        db_path = index.db_path
    with sqlite3.connect(db_path) as db:  # as an index made when the generation was a count
        db.executescript(
            "DROP TRIGGER passage_vectors_added; DROP TRIGGER passage_vectors_deleted; "
            "CREATE TRIGGER passage_vectors_ai AFTER INSERT ON passage_vectors BEGIN "
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_generation';"
            " END; "
            "CREATE TRIGGER passage_vectors_ad AFTER DELETE ON passage_vectors BEGIN "
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_generation';"
            " END; UPDATE meta SET value = '5' WHERE key = 'vectors_generation';"
        )
    with WorkspaceIndex(root) as index:
        write(root, "rail.md", TOPICS["rail.md"] + "\nA night train too.\n")
        index.update()
    with sqlite3.connect(db_path) as db:
        triggers = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        generation = db.execute(
            "SELECT value FROM meta WHERE key = 'vectors_generation'"
        ).fetchone()[0]
    assert {"passage_vectors_ai", "passage_vectors_ad"}.isdisjoint(triggers)
    assert {"passage_vectors_added", "passage_vectors_deleted"} <= triggers
    assert len(generation) == 16 and generation not in {"5", "6", "7"}


def test_counting_the_vectors_reads_an_index_of_them_not_every_vector(tmp_path: Path) -> None:
    """Every update counts the vectors to know whether a passage lacks one; count(*) over their
    own table would read all of them (issue 28). An index made before has its index added."""
    root = topics(tmp_path / "w")
    with WorkspaceIndex(root) as index:
        index.update()
        db_path = index.db_path
    with sqlite3.connect(db_path) as db:  # as an index made before
        db.execute("DROP INDEX passage_vectors_ids")
    with WorkspaceIndex(root) as index:
        index.update()
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        embedded, total = vectors.counts(db)
        plan = db.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM passage_vectors").fetchall()
    assert embedded == total > 0
    assert "COVERING INDEX passage_vectors_ids" in plan[0][-1]


def test_kept_words_start_again_when_there_are_too_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_tokens, "LIMIT", 8)
    known = tmp_path / "words.sqlite3"
    expected = StaticEmbedder().embed(TEXTS)
    for number, text in enumerate(TEXTS):  # 6, 4 and 3 words: the second passes the limit
        assert np.array_equal(StaticEmbedder(known_words=known).embed([text])[0], expected[number])
    with sqlite3.connect(known) as db:
        kept = {row[0] for row in db.execute("SELECT word FROM words")}
    assert kept == set(TEXTS[2].split())
    monkeypatch.setattr(tokenizers, "Tokenizer", NoTokenizer)
    assert np.array_equal(StaticEmbedder(known_words=known).embed([TEXTS[2]])[0], expected[2])
