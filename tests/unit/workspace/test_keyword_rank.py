"""Ranking by words without scoring every passage that has a common word: the same rows as the
whole OR query, found by scoring the rows with the rarer words."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import WorkspaceIndex, keyword_rank
from imprint_desktop.core.workspace.database import Connections
from imprint_desktop.core.workspace.keyword_rank import best_by_words, most_added
from imprint_desktop.core.workspace.search import SearchMode, best_passages, keyword_scores
from tests.unit.workspace.conftest import write

WHOLE = "SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """An index of 800 passages: ``common`` in about a third of them, ``usual`` in about a fifth,
    and 1 to 4 of 300 rarer words (``word0`` … ``word299``, each in a few passages), each word
    said once or more, sometimes in the heading, which weighs double."""
    folder = tmp_path_factory.mktemp("ranked")
    connections = Connections(folder / "index.sqlite3", folder)
    connection = connections.get()
    rng = random.Random(26)
    passages = []
    for _ in range(800):
        words = []
        for word in rng.sample([f"word{number}" for number in range(300)], rng.randint(1, 4)):
            words += [word] * rng.choice([1, 1, 1, 2, 3])
        words += ["common"] * rng.choice([0] * 7 + [1, 1, 3])
        words += ["usual"] * rng.choice([0] * 8 + [1, 2])
        words += rng.choices(["filler", "more", "text"], k=rng.randint(0, 60))
        rng.shuffle(words)
        heading = rng.choice(["", "", "", "common", rng.choice(words)])
        passages.append((heading, " ".join(words)))
    connection.execute(
        "INSERT INTO files (id, path, size, mtime_ns, digest, format, title, lines, status, note)"
        " VALUES (1, 'all.md', 1, 1, 'x', 'md', 'All', 800, 'ok', '')"
    )
    connection.executemany(
        "INSERT INTO passages (file_id, start_line, end_line, section, heading, text)"
        " VALUES (1, 1, 1, '', ?, ?)",
        passages,
    )
    yield connection
    connections.close_all()


def whole_query(db: sqlite3.Connection, terms: list[str], count: int) -> list[tuple[int, float]]:
    return [(row[0], row[1]) for row in db.execute(WHOLE, (" OR ".join(terms), count))]


QUERIES = [
    ["word12", "common"],
    ["word30", "word41", "common"],
    ["word5", "word50", "common", "usual"],
    [f"word{number}" for number in range(40)] + ["common"],
    ["usual", "common"],
    ["word3", "word4", "usual", "common"],
    ["common"],
    ["nowhere", "common"],
    ["word7", "word8"],
]


def ranked_statements(
    db: sqlite3.Connection,
    terms: list[str],
    count: int,
    rank: Callable[[sqlite3.Connection, list[str], int], object] = best_by_words,
) -> list[str]:
    """The ranking statements ``rank`` runs for ``terms``."""
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    try:
        rank(db, terms, count)
    finally:
        db.set_trace_callback(None)
    return [line for line in statements if "MATCH" in line and "rank" in line]


@pytest.fixture
def few_rows_are_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaving a common word out is tried on this small index too."""
    monkeypatch.setattr(keyword_rank, "FEW_ROWS", 0)


@pytest.mark.parametrize("words", QUERIES, ids=" ".join)
@pytest.mark.parametrize("count", [1, 5, 24, 48])
@pytest.mark.usefixtures("few_rows_are_many")
def test_the_best_rows_are_those_of_the_whole_or_query(
    db: sqlite3.Connection, words: list[str], count: int
) -> None:
    terms = [f'"{word}"' for word in words]
    found = best_by_words(db, terms, count)
    expected = whole_query(db, terms, count)
    assert [rank for _, rank in found] == pytest.approx([rank for _, rank in expected])
    # Rows of equal score may come in either order; any other difference is a wrong answer.
    assert {(row, round(rank, 9)) for row, rank in found} == {
        (row, round(rank, 9)) for row, rank in expected
    }


@pytest.mark.usefixtures("few_rows_are_many")
def test_a_common_word_is_scored_only_on_the_rows_with_a_rarer_one(
    db: sqlite3.Connection,
) -> None:
    ranked = ranked_statements(db, ['"word30"', '"word41"', '"common"'], 5)
    assert len(ranked) == 2, ranked
    assert 'AND "common"' in ranked[0]
    assert 'NOT "common"' in ranked[1]


@pytest.mark.parametrize("rank", [keyword_scores, best_passages])
@pytest.mark.usefixtures("few_rows_are_many")
def test_searches_by_words_rank_this_way(
    db: sqlite3.Connection, rank: Callable[[sqlite3.Connection, list[str], int], object]
) -> None:
    """The words as written and their stems, each ranked leaving the common word out."""
    ranked = ranked_statements(db, ['"usual"', '"common"'], 5, rank)
    assert len(ranked) == 4, ranked
    assert sum("passages_fts" in line for line in ranked) == 2
    assert sum("passages_stems" in line for line in ranked) == 2


def test_words_in_few_rows_are_ranked_by_the_whole_query_at_once(db: sqlite3.Connection) -> None:
    ranked = ranked_statements(db, ['"word30"', '"word41"', '"common"'], 5)
    assert len(ranked) == 1, ranked
    assert '"word30" OR "word41" OR "common"' in ranked[0]


@pytest.mark.usefixtures("few_rows_are_many")
def test_when_a_row_without_the_rarer_words_could_be_among_the_best_the_whole_query_runs(
    db: sqlite3.Connection,
) -> None:
    # word7 is in fewer rows than are asked for: rows with only "common" are among the best.
    ranked = ranked_statements(db, ['"word7"', '"common"'], 24)
    assert len(ranked) == 3, ranked
    assert '"word7" OR "common"' in ranked[-1]


def test_a_word_adds_at_most_its_bound_however_often_a_row_has_it(
    db: sqlite3.Connection,
) -> None:
    rows = db.execute("SELECT count(*) FROM passages").fetchone()[0]
    having = db.execute(
        "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH '\"common\"'"
    ).fetchone()[0]
    (best,) = db.execute(WHOLE, ('"common"', 1)).fetchall()
    assert 0 < -best[1] < most_added(rows, having)
    assert most_added(10, 9) == pytest.approx(2.2e-6)  # FTS5's floor for a word in most rows


@pytest.mark.usefixtures("few_rows_are_many")
def test_a_ranking_reads_one_state_of_the_index(tmp_path: Path) -> None:
    """Passages an update commits while a ranking runs are not half seen by it."""
    connections = Connections(tmp_path / "index.sqlite3", tmp_path)
    db = connections.get()
    db.execute(
        "INSERT INTO files (id, path, size, mtime_ns, digest, format, title, lines, status, note)"
        " VALUES (1, 'a.md', 1, 1, 'x', 'md', '', 1, 'ok', '')"
    )
    texts = ["common filler"] * 60 + ["rare common"] * 3 + ["rare"] * 3
    db.executemany(
        "INSERT INTO passages (file_id, start_line, end_line, section, heading, text)"
        " VALUES (1, 1, 1, '', '', ?)",
        [(text,) for text in texts],
    )
    terms = ['"rare"', '"common"']
    before = whole_query(db, terms, 4)
    writer = sqlite3.connect(tmp_path / "index.sqlite3", isolation_level=None)

    def write_once(statement: str) -> None:
        # Once the ranking has read (its first count), before it ranks.
        if 'AND "common"' in statement and not added:
            writer.executemany(
                "INSERT INTO passages (file_id, start_line, end_line, section, heading, text)"
                " VALUES (1, 1, 1, '', 'rare rare', 'rare rare rare common')",
                [()] * 5,
            )
            added.append(True)

    added: list[bool] = []
    db.set_trace_callback(write_once)
    try:
        found = best_by_words(db, terms, 4)
    finally:
        db.set_trace_callback(None)
        writer.close()
    assert added
    assert found == before
    assert whole_query(db, terms, 4) != before  # the update is seen by the next ranking
    connections.close_all()


def orchard(root: Path) -> Path:
    """Every note names the Tarrow orchard; one says when its Russet is picked."""
    for number, topic in enumerate(["pruning", "hedges", "bees", "cider", "ladders", "frost"]):
        write(root, f"note-{number}.md", f"# Tarrow {topic}\n\nAt Tarrow the {topic} came first.\n")
    write(root, "varieties.md", "# Varieties\n\nThe Tarrow Russet is picked in late October.\n")
    write(root, "russets.md", "# Keeping\n\nRussets keep in the cool barn until spring.\n")
    return root


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_word_most_passages_hold_earns_no_place(tmp_path: Path, mode: SearchMode) -> None:
    """ "Tarrow" is in more than half the passages (BM25 about 0): those that share only it did
    not match, and are not ranked above what meaning or the rarer words found."""
    with WorkspaceIndex(orchard(tmp_path / "w")) as index:
        index.update()
        found = [hit.path for hit in index.search("tarrow russet picked", 3, mode)]
    assert found[0] == "varieties.md", found
    if mode is SearchMode.KEYWORD:
        assert not any(path.startswith("note-") for path in found), found


def test_word_forms_match_by_their_stems_and_the_exact_word_ranks_first(tmp_path: Path) -> None:
    with WorkspaceIndex(orchard(tmp_path / "w")) as index:
        index.update()
        # "russet" is exact in varieties.md, a stem of "Russets" in russets.md.
        by_stem = [hit.path for hit in index.search("russet", 5, SearchMode.KEYWORD)]
        assert by_stem[:2] == ["varieties.md", "russets.md"], by_stem
        by_plural = [hit.path for hit in index.search("russets", 5, SearchMode.KEYWORD)]
        assert by_plural[:2] == ["russets.md", "varieties.md"], by_plural
        picking = [hit.path for hit in index.search("picking", 5, SearchMode.KEYWORD)]
        assert picking == ["varieties.md"]  # "picked"
