"""Benchmark of the workspace index (issue 3): indexing speed, re-index cost, query latency, memory.

Generates Markdown documents of about 3 KB in a temporary folder, indexes them in-process and
measures, against targets:

- first index, documents per second (>= 300/s);
- an unchanged re-index, as a share of the first index time (< 10%);
- a warm in-process query, 95th percentile (< 20 ms), and how many times faster a search is than
  ``grep -rl WORD`` for the same words over the same files, measured in the same run (>= 20x; the
  ratio against the query p95 is printed too);
- peak RSS of a process that only indexes 3,000 and then 30,000 documents (the second may be at
  most 1.5x the first: memory stays flat because each file is committed on its own);
- PDFs per second: copies of the sample workspace's PDF report, each a little different, read in
  the index's reader worker process (issue 14; printed for comparison, no target), and the same
  PDFs' text taken in-process by pypdf and by pypdfium2 (issue 25: why the index uses PDFium);
- a mixed-format corpus (issue 25): ``--per-format`` files of each format the index reads, written
  by the format's own library (python-docx, openpyxl, python-pptx, odfpy, ebooklib, fpdf2, and
  RTF by hand), each about the size of the Markdown documents, indexed format by format in a fresh
  process: documents per second, and the peak memory of the indexing process and of its reader
  worker, each against the same figures for as many Markdown files measured in the same run.

``--markitdown`` also times markitdown (when installed) on the same files, against the readers the
index uses, in this process.

Retrieval (issue 26), on a real corpus shipped in ``bench/retrieval/`` (Flask 3.1.0's documentation,
BSD-3-Clause, see ``SOURCE.md`` there) with questions written for it in two wordings (the
documents' own words; paraphrases without the key term) and translated into German, French,
Spanish and Dutch:

- recall@5: the share of questions whose answering document is among the first five documents
  the search returns for the engine's query (the question's content words, as the search before
  the model sends it), by keyword, meaning and hybrid search; and the share whose answer is in the
  passages that search puts before the model. Paraphrase recall@5, hybrid, at least 30 points
  above keyword; own-words recall not lower than keyword; a translated question not worse than
  keyword alone. Thirty more paraphrases (``heldout.toml``), written without looking at what the
  search returns for them, show whether a choice fitted the first thirty: a ranking setting is
  kept only when it pays on both sets;
- indexing with the default embedder, documents per second, as a share of indexing by words only
  (>= 0.5) in the same run (the faster of two alternating runs of each); index size per 1,000
  passages, with and without vectors, and the vectors kept beside the index for searches
  (``.vector_file``); the same for the Flask documents with the embedder chosen (``--embedder``,
  a ``workspace.embedder`` value: ``all-minilm-l6-v2`` for the sentence encoder);
- a hybrid query's 95th percentile at ``--large-docs`` documents (<= 50 ms).

Measured for issue 26 and not kept, because it did not pay on both question sets (recall@5
hybrid, paraphrase / held-out, with the sentence encoder; keyword 20 / 20): the fusion weight of
meaning 0.5, 1 or 2 (25-26 / 25), the constant K 20 instead of 60 (no gain held out), a
passage's nearness without its document's (23 / 24 against 25 / 25); the built-in embedder's
top 20 to 80 passages reordered by the encoder (21-22 / 22-23, and a query would embed them);
the encoder through llama.cpp as a GGUF file (the same vectors, 6 to 10 times slower here).
Measured later and not kept either (paraphrase / held-out, hybrid; built-in embedder 21 / 21,
encoder 25 / 25 as kept): the whole question for the meaning half instead of its content words
(built-in 21 / 21, encoder 27 / 25); K 20 (built-in 20 / 23, encoder 26 / 25) or 30 (built-in
20 / 23) or 100 (21 / 21); the built-in's weight 0.35, 0.75 or 1 (21 / 21 each); the query vector
moved towards the first 3 or 5 fused passages' (built-in 19-20 / 21-23, encoder 24 / 25, and a
Spanish question lost); each query word's nearest words among the index's own (by the built-in
embedder, similarity 0.6 to 0.7, one or two a word) as a third ranking (16-20 / 21-23) or in the
keyword query (20-21 / 21); documents ranked by the sum of their best 2, 3 or 5 passages' fused
scores (built-in 22 / 21, 18 / 21, 15 / 20; encoder 26 / 24, 27 / 24, 25 / 22).

Run ``python bench/bench_workspace.py`` (``--docs``, ``--large-docs`` to change the corpus sizes,
``--large-docs 0`` to skip the memory run, ``--pdfs 0`` to skip the PDFs, ``--per-format 0`` to
skip the mixed formats). Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_DOCS_PER_SECOND = 300.0
TARGET_REINDEX_SHARE = 0.10
TARGET_QUERY_P95_SECONDS = 0.020
TARGET_GREP_RATIO = 20.0
TARGET_RSS_GROWTH = 1.5
TARGET_PARAPHRASE_GAIN = 0.30
TARGET_EMBEDDED_SPEED_SHARE = 0.5
TARGET_HYBRID_P95_SECONDS = 0.050

RETRIEVAL = Path(__file__).resolve().parent / "retrieval"

_SYLLABLES = "ka lo mi ne ru ta so vi pe da fu gi ho ja ze qu bri stra mon tel var dun esk ol"


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES.split()) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate(folder: Path, count: int, *, seed: int = 3) -> list[str]:
    """``count`` Markdown files of about 3 KB with Zipf-like word frequencies; returns the words."""
    rng = random.Random(seed)
    words = vocabulary(6000, rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    for number in range(count):
        sub = folder / f"part{number % 30:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        parts = [f"# Report {number}: {' '.join(rng.choices(words, weights, k=3))}", ""]
        size = len(parts[0])
        while size < 3000:
            sentence = " ".join(rng.choices(words, weights, k=rng.randint(40, 90))) + "."
            parts.extend([sentence.capitalize(), ""])
            size += len(sentence) + 2
        (sub / f"doc{number:05d}.md").write_text("\n".join(parts), encoding="utf-8")
    return words


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def index_only(folder: Path, db_path: Path) -> None:
    """Child process for the memory figure: import, index, report peak RSS as JSON."""
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415

    with WorkspaceIndex(folder, db_path=db_path) as index:
        report = index.update()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the reader worker, ended
    scale = 1 if sys.platform == "darwin" else 1024
    print(
        json.dumps(
            {
                "documents": report.documents,
                "problems": len(report.problems),
                "seconds": report.seconds,
                "peak_rss_mb": peak_rss_mb(),
                "worker_rss_mb": children * scale / 2**20,
            }
        )
    )


def index_in_child(folder: Path, scratch: Path) -> dict[str, float]:
    """Index ``folder`` in a fresh process; its documents, seconds and peak memory figures."""
    db_path = scratch / f"rss-{folder.name}.sqlite3"
    output = subprocess.run(
        [sys.executable, __file__, "--index-only", str(folder), str(db_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {key: float(value) for key, value in json.loads(output).items()}


def measure_rss(folder: Path, scratch: Path) -> float:
    return index_in_child(folder, scratch)["peak_rss_mb"]


def database_bytes(path: Path) -> int:
    """The index database's size on disk, with its write-ahead log written back first."""
    import sqlite3  # noqa: PLC0415

    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def kept_vectors_bytes(db_path: Path) -> int:
    """The size of the vectors kept beside the index at ``db_path`` (written by a search)."""
    from imprint_desktop.core.workspace import vector_file  # noqa: PLC0415

    kept = vector_file.path_for(db_path)
    return kept.stat().st_size if kept.is_file() else 0


def hybrid_p95(index: Any, asked: list[str]) -> float:
    """The 95th percentile of hybrid searches for ``asked`` (after a warm-up)."""
    for query in asked[:20]:
        index.search(query, 8)
    latencies = []
    for query in asked:
        began = time.perf_counter()
        index.search(query, 8)
        latencies.append(time.perf_counter() - began)
    return statistics.quantiles(latencies, n=20)[-1]


def index_again(
    corpus: Path, scratch: Path, embedder: Path | None, words: float, embedded: float
) -> tuple[float, float]:
    """The seconds to index ``corpus`` by words alone and with vectors: the faster of the runs
    already timed (``words``, ``embedded``) and one more of each, the two alternating. The share
    compares runs of a few seconds on a shared machine, and a single pair of them swung by half."""
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415

    with WorkspaceIndex(corpus, db_path=scratch / "words-again.sqlite3") as index:
        words = min(words, index.update(embed=False).seconds)
    with WorkspaceIndex(corpus, db_path=scratch / "again.sqlite3", embedder=embedder) as index:
        index.embedder()
        embedded = min(embedded, index.update().seconds)
    return words, embedded


def measure_speed(
    corpus: Path, words: list[str], scratch: Path, queries: int, embedder: Path | None = None
) -> list[str]:
    """Index, re-index and query in this process; print the figures, return the missed targets."""
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415
    from imprint_desktop.core.workspace.search import SearchMode  # noqa: PLC0415

    rng = random.Random(11)
    # Words from the whole frequency range: the common ones make the slow queries.
    asked = [" ".join(rng.sample(words[:3000], rng.randint(1, 3))) for _ in range(50)]
    asked += [rng.choice(words) for _ in range(queries - len(asked))]
    compared = rng.sample(words[:3000], 15)  # the same single words through the index and grep
    latencies: list[float] = []
    index_times: list[float] = []
    keyword = SearchMode.KEYWORD
    with WorkspaceIndex(corpus, db_path=scratch / "index.sqlite3") as index:
        first = index.update(embed=False)  # as before passages had vectors: by words alone
        second = index.update(embed=False)
        for query in asked[:20]:
            index.search(query, 8, keyword)
        for query in asked:
            began = time.perf_counter()
            index.search(query, 8, keyword)
            latencies.append(time.perf_counter() - began)
        for word in compared:
            runs = []
            for _ in range(5):
                began = time.perf_counter()
                index.search(word, 8, keyword)
                runs.append(time.perf_counter() - began)
            index_times.append(statistics.median(runs))
        words_only_bytes = database_bytes(index.db_path)
    grep_times = []
    for word in compared:
        began = time.perf_counter()
        subprocess.run(["grep", "-rl", word, str(corpus)], capture_output=True, check=False)
        grep_times.append(time.perf_counter() - began)

    rate = first.documents / first.seconds
    share = second.seconds / first.seconds
    p95 = statistics.quantiles(latencies, n=20)[-1]
    grep_median, index_median = statistics.median(grep_times), statistics.median(index_times)
    ratio = grep_median / index_median
    print(
        f"first index:        {first.documents} documents in {first.seconds:.2f} s = "
        f"{rate:.0f} docs/s (target >= {TARGET_DOCS_PER_SECOND:.0f})"
    )
    print(
        f"unchanged re-index: {second.seconds * 1000:.1f} ms = {share:.1%} of the first "
        f"(target < {TARGET_REINDEX_SHARE:.0%})"
    )
    print(
        f"query p95:          {p95 * 1000:.2f} ms over {len(latencies)} queries (median "
        f"{statistics.median(latencies) * 1000:.2f} ms; target < "
        f"{TARGET_QUERY_P95_SECONDS * 1000:.0f} ms)"
    )
    print(
        f"grep -rl median:    {grep_median * 1000:.1f} ms vs index {index_median * 1000:.2f} ms "
        f"for the same {len(compared)} words: {ratio:.0f}x faster (target >= "
        f"{TARGET_GREP_RATIO:.0f}x; {grep_median / p95:.0f}x against the query p95)"
    )
    with WorkspaceIndex(corpus, db_path=scratch / "embedded.sqlite3", embedder=embedder) as index:
        index.embedder()  # loaded once per process, like the window's first update
        embedded = index.update()
        hybrid = hybrid_p95(index, asked)
        with_vectors_bytes = database_bytes(index.db_path)
        kept_bytes = kept_vectors_bytes(index.db_path)
    words_seconds, embedded_seconds = index_again(
        corpus, scratch, embedder, first.seconds, embedded.seconds
    )
    embedded_rate = embedded.documents / embedded_seconds
    speed_share = words_seconds / embedded_seconds
    per_thousand = 1000 / embedded.embedded
    print(
        f"index with meaning: {embedded.documents} documents ({embedded.embedded} passages) in "
        f"{embedded_seconds:.2f} s = {embedded_rate:.0f} docs/s, {speed_share:.2f}x of by words "
        f"alone in {words_seconds:.2f} s (faster of two runs each; target >= "
        f"{TARGET_EMBEDDED_SPEED_SHARE}x)"
    )
    print(
        f"index size:         {words_only_bytes * per_thousand / 2**20:.2f} MB per 1,000 passages "
        f"by words alone, {with_vectors_bytes * per_thousand / 2**20:.2f} MB with vectors, "
        f"and {kept_bytes * per_thousand / 2**20:.2f} MB of vectors kept beside it for searches"
    )
    print(f"hybrid query p95:   {hybrid * 1000:.2f} ms at {embedded.documents} documents")
    checks = {
        "indexing speed with meaning": speed_share >= TARGET_EMBEDDED_SPEED_SHARE,
        "indexing speed": rate >= TARGET_DOCS_PER_SECOND,
        "unchanged re-index": share < TARGET_REINDEX_SHARE,
        "query p95": p95 < TARGET_QUERY_P95_SECONDS,
        "ratio to grep": ratio >= TARGET_GREP_RATIO,
    }
    return [name for name, met in checks.items() if not met]


def measure_pdfs(count: int, scratch: Path) -> None:
    """Index ``count`` distinct copies of the sample report PDF; print PDFs per second."""
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415

    sample = Path(__file__).resolve().parents[1] / "resources/sample-workspace/reports"
    report = (sample / "annual-report-1998.pdf").read_bytes()
    folder = scratch / "pdfs"
    folder.mkdir()
    for number in range(count):  # a comment after %%EOF: other bytes, the same document
        (folder / f"report{number:03d}.pdf").write_bytes(report + f"\n%copy {number}\n".encode())
    with WorkspaceIndex(folder, db_path=scratch / "pdfs.sqlite3") as index:
        result = index.update()
    print(
        f"PDFs:               {result.documents} in {result.seconds:.2f} s = "
        f"{result.documents / result.seconds:.1f} PDFs/s ({len(result.problems)} skipped)"
    )
    compare_pdf_libraries([path.read_bytes() for path in sorted(folder.iterdir())])


def compare_pdf_libraries(pdfs: list[bytes]) -> None:
    """The text of the same PDFs taken in this process by pypdf and by pypdfium2."""
    import io  # noqa: PLC0415

    import pypdf  # noqa: PLC0415
    import pypdfium2  # noqa: PLC0415

    def with_pypdf(data: bytes) -> int:
        return sum(
            len(page.extract_text() or "") for page in pypdf.PdfReader(io.BytesIO(data)).pages
        )

    def with_pdfium(data: bytes) -> int:
        document = pypdfium2.PdfDocument(data)
        try:
            return sum(
                len(document[number].get_textpage().get_text_range())
                for number in range(len(document))
            )
        finally:
            document.close()

    timings = {}
    for name, read in (("pypdf", with_pypdf), ("pypdfium2", with_pdfium)):
        read(pdfs[0])  # imports and first-use costs out of the measure
        began = time.perf_counter()
        characters = sum(read(data) for data in pdfs)
        timings[name] = time.perf_counter() - began
        print(
            f"  text by {name:<10} {len(pdfs) / timings[name]:6.1f} PDFs/s "
            f"({characters // len(pdfs)} characters each)"
        )
    print(f"  pypdfium2 is {timings['pypdf'] / timings['pypdfium2']:.1f}x as fast as pypdf")


def generate_formats(folder: Path, count: int, words: list[str]) -> dict[str, Path]:
    """``count`` files of each format, about 3 KB of text each, in a folder per format."""
    from tests.support import documents  # noqa: PLC0415

    rng = random.Random(5)

    def sentence() -> str:
        return " ".join(rng.choices(words[:3000], k=rng.randint(12, 24))).capitalize() + "."

    def paragraphs(total: int = 2800) -> list[str]:
        out: list[str] = []
        while sum(map(len, out)) < total:
            out.append(" ".join(sentence() for _ in range(4)))
        return out

    def rows(number: int) -> list[tuple[object, ...]]:
        header: list[tuple[object, ...]] = [("Region", "Item", "Amount", "Note")]
        return header + [
            (rng.choice(words), rng.choice(words), rng.randint(1, 99_999), sentence())
            for _ in range(number)
        ]

    writers = {
        "md": lambda path: path.write_text(
            "# " + sentence() + "\n\n" + "\n\n".join(paragraphs()) + "\n", encoding="utf-8"
        ),
        "docx": lambda path: documents.docx_file(
            path, sentence(), [(sentence(), text) for text in paragraphs()], rows(5)
        ),
        "odt": lambda path: documents.odt_file(
            path, sentence(), [(sentence(), text) for text in paragraphs()], rows(5)
        ),
        "xlsx": lambda path: documents.xlsx_file(
            path, [("Revenue", rows(20)), ("Costs", rows(10))]
        ),
        "ods": lambda path: documents.ods_file(path, [("Revenue", rows(20)), ("Costs", rows(10))]),
        "pptx": lambda path: documents.pptx_file(
            path, [(sentence(), text, sentence()) for text in paragraphs()]
        ),
        "odp": lambda path: documents.odp_file(path, [(sentence(), text) for text in paragraphs()]),
        "epub": lambda path: documents.epub_file(
            path, sentence(), [(sentence(), text) for text in paragraphs()]
        ),
        "rtf": lambda path: documents.rtf_file(path, paragraphs()),
        "pdf": lambda path: documents.pdf_file(
            path, sentence(), [(sentence(), text) for text in paragraphs()]
        ),
    }
    folders = {}
    for suffix, write in writers.items():
        target = folder / suffix
        target.mkdir(parents=True)
        for number in range(count):
            write(target / f"doc{number:04d}.{suffix}")
        folders[suffix] = target
    return folders


def measure_formats(count: int, words: list[str], scratch: Path) -> dict[str, Path]:
    """Documents per second and peak memory per format, against Markdown in the same run."""
    started = time.perf_counter()
    folders = generate_formats(scratch / "formats", count, words)
    written = time.perf_counter() - started
    print(f"mixed formats:      {count} files of each, written in {written:.1f} s")
    baseline = index_in_child(folders.pop("md"), scratch)
    base_rate = baseline["documents"] / baseline["seconds"]
    print(
        f"  {'md':<5} {base_rate:8.1f} docs/s  peak {baseline['peak_rss_mb']:5.0f} MB "
        f"(the Markdown baseline)"
    )
    for suffix, folder in folders.items():
        figures = index_in_child(folder, scratch)
        rate = figures["documents"] / figures["seconds"]
        memory = figures["peak_rss_mb"] / baseline["peak_rss_mb"]
        print(
            f"  {suffix:<5} {rate:8.1f} docs/s ({rate / base_rate:.2f}x Markdown)  "
            f"peak {figures['peak_rss_mb']:5.0f} MB ({memory:.2f}x), "
            f"reader worker {figures['worker_rss_mb']:4.0f} MB"
            + (f", {figures['problems']:.0f} not read" if figures["problems"] else "")
        )
    return folders


def compare_markitdown(folders: dict[str, Path]) -> None:
    """Milliseconds per file for the index's readers and for markitdown, in this process."""
    import warnings  # noqa: PLC0415

    from markitdown import MarkItDown  # noqa: PLC0415

    from imprint_desktop.core.workspace import extract  # noqa: PLC0415

    converter = MarkItDown()
    readers = {
        "index": lambda path: "\n".join(extract(path.name, path.read_bytes()).lines),
        "markitdown": lambda path: converter.convert(str(path)).text_content,
    }
    print("markitdown against the index's readers, in this process:")
    for suffix, folder in folders.items():
        files = sorted(folder.iterdir())
        figures = []
        for name, read in readers.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    read(files[0])
                    began = time.perf_counter()
                    for path in files:
                        read(path)
                figures.append(
                    f"{name} {(time.perf_counter() - began) / len(files) * 1000:6.1f} ms"
                )
            except Exception as error:  # a format it cannot read
                figures.append(f"{name} cannot read it ({type(error).__name__})")
        print(f"  {suffix:<5} " + "   ".join(figures))


def measure_memory(
    corpus: Path, words: list[str], small: int, large: int, scratch: Path
) -> list[str]:
    """Peak RSS of a process indexing ``small`` and then ``large`` documents."""
    small_rss = measure_rss(corpus, scratch)
    bigger = scratch / "large"
    generate(bigger, large)
    large_rss = measure_rss(bigger, scratch)
    growth = large_rss / small_rss
    print(
        f"peak RSS indexing:  {small_rss:.0f} MB for {small} documents, {large_rss:.0f} MB for "
        f"{large} ({growth:.2f}x; target <= {TARGET_RSS_GROWTH}x)"
    )
    failures = [] if growth <= TARGET_RSS_GROWTH else ["flat memory"]
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415

    rng = random.Random(12)
    asked = [" ".join(rng.sample(words[:3000], rng.randint(1, 3))) for _ in range(200)]
    with WorkspaceIndex(bigger, db_path=scratch / f"rss-{bigger.name}.sqlite3") as index:
        passages = index.embed().embedded
        p95 = hybrid_p95(index, asked)
    print(
        f"hybrid query p95:   {p95 * 1000:.2f} ms at {large} documents ({passages} passages; "
        f"target <= {TARGET_HYBRID_P95_SECONDS * 1000:.0f} ms)"
    )
    return failures + ([] if p95 <= TARGET_HYBRID_P95_SECONDS else ["hybrid query p95"])


def recall_at(paths: list[str], answers: list[str], documents: int) -> bool:
    """Whether one of ``answers`` is among the first ``documents`` distinct paths."""
    return bool(set(list(dict.fromkeys(paths))[:documents]) & set(answers))


def measure_recall(scratch: Path, embedder: Path | None = None) -> list[str]:
    """Recall@5 of each search mode on the shipped corpus and questions, with ``embedder`` (a
    ``workspace.embedder`` value; None: the built-in one); the missed targets."""
    import tomllib  # noqa: PLC0415

    from imprint_desktop.core.research.seed import SEED_LIMIT, seed_query  # noqa: PLC0415
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415
    from imprint_desktop.core.workspace.search import SearchMode  # noqa: PLC0415

    data = tomllib.loads((RETRIEVAL / "questions.toml").read_text(encoding="utf-8"))
    sets: dict[str, list[tuple[str, list[str]]]] = {"words": [], "paraphrase": []}
    for question in data["question"]:
        for wording, questions in sets.items():
            questions.append((question[wording], question["answers"]))
    for question in data.get("translated", []):
        sets.setdefault(f"translated ({question['language']})", []).append(
            (question["text"], question["answers"])
        )
    heldout = tomllib.loads((RETRIEVAL / "heldout.toml").read_text(encoding="utf-8"))
    sets["held-out paraphrase"] = [(q["paraphrase"], q["answers"]) for q in heldout["question"]]
    results: dict[tuple[str, SearchMode], float] = {}
    with WorkspaceIndex(
        RETRIEVAL / "flask-docs", db_path=scratch / "recall.sqlite3", embedder=embedder
    ) as index:
        by_words = index.update(embed=False)
        words_bytes = database_bytes(index.db_path)
        name = index.embedder().name  # loaded once per process, like the window's first update
        report = index.embed()
        per_thousand = 1000 / max(report.embedded, 1)
        print(
            f"retrieval corpus:   {report.documents} documents of Flask's documentation, "
            f"{report.embedded} passages; indexed by words in {by_words.seconds:.2f} s, "
            f"embedded by {name} in {report.seconds:.1f} s: "
            f"{by_words.seconds / (by_words.seconds + report.seconds):.3f}x the speed of by "
            f"words alone, {report.embedded / report.seconds:.1f} passages/s; "
            f"{words_bytes * per_thousand / 2**20:.2f} MB per 1,000 passages by words alone, "
            f"{database_bytes(index.db_path) * per_thousand / 2**20:.2f} MB with vectors"
        )
        for wording, questions in sets.items():
            cells = []
            for mode in SearchMode:
                found = seeded = 0
                for text, answers in questions:
                    query = seed_query(text)
                    paths = [hit.path for hit in index.search(query, 20, mode)]
                    found += recall_at(paths, answers, 5)
                    # The engine's own search before the model, as it asks it.
                    seed = [hit.path for hit in index.search(query, SEED_LIMIT, mode)]
                    seeded += bool(set(seed) & set(answers))
                results[wording, mode] = found / len(questions)
                cells.append(f"{mode.value} {found:2d}/{len(questions)} ({seeded:2d} seeded)")
            print(f"recall@5 {wording + ':':<21} " + ", ".join(cells))
    keyword, hybrid = SearchMode.KEYWORD, SearchMode.HYBRID
    gain = results["paraphrase", hybrid] - results["paraphrase", keyword]
    held_out = results["held-out paraphrase", hybrid] - results["held-out paraphrase", keyword]
    print(
        f"paraphrase gain:    {gain * 100:+.0f} points hybrid over keyword "
        f"(target >= +{TARGET_PARAPHRASE_GAIN * 100:.0f}); held out {held_out * 100:+.0f}"
    )
    checks = {
        "paraphrase recall": gain >= TARGET_PARAPHRASE_GAIN - 1e-9,
        "own-words recall": results["words", hybrid] >= results["words", keyword],
        "translated recall": all(
            results[wording, hybrid] >= results[wording, keyword]
            for wording in sets
            if wording.startswith("translated")
        ),
    }
    return [name for name, met in checks.items() if not met]


def _encoder_installed() -> bool:
    from imprint_desktop.core.workspace.embedding import encoder_installed  # noqa: PLC0415

    return encoder_installed()


def question_sets() -> dict[str, list[tuple[str, list[str]]]]:
    """The paraphrase question sets of the shipped corpus (the ones the encoder is for)."""
    import tomllib  # noqa: PLC0415

    data = tomllib.loads((RETRIEVAL / "questions.toml").read_text(encoding="utf-8"))
    heldout = tomllib.loads((RETRIEVAL / "heldout.toml").read_text(encoding="utf-8"))
    return {
        "paraphrase": [(q["paraphrase"], q["answers"]) for q in data["question"]],
        "held-out paraphrase": [(q["paraphrase"], q["answers"]) for q in heldout["question"]],
        "words": [(q["words"], q["answers"]) for q in data["question"]],
    }


def measure_coverage(scratch: Path) -> None:
    """Recall@5 (hybrid, and seeded) under ``workspace.embedder`` = auto while the sentence
    encoder covers a growing share of the Flask corpus's passages (in the order it embeds them),
    mixed with the built-in embedder for the rest (:mod:`.meaning`); waiting instead (the
    built-in alone until the encoder covers every passage) finds what 0 % does until 100 %."""
    import threading  # noqa: PLC0415

    from imprint_desktop.core.research.seed import SEED_LIMIT, seed_query  # noqa: PLC0415
    from imprint_desktop.core.workspace import WorkspaceIndex, meaning  # noqa: PLC0415
    from imprint_desktop.core.workspace.embedding import AUTO  # noqa: PLC0415
    from imprint_desktop.core.workspace.vectors import EmbedProgress  # noqa: PLC0415

    sets = question_sets()
    kept = meaning.TAKES_OVER
    with WorkspaceIndex(
        RETRIEVAL / "flask-docs", db_path=scratch / "coverage.sqlite3", embedder=Path(AUTO)
    ) as index:
        index.update()
        total = index.coverage().total
        for share in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
            target = int(share * total)
            stop = threading.Event()

            def enough(
                event: EmbedProgress, target: int = target, stop: threading.Event = stop
            ) -> None:
                if event.done >= target:
                    stop.set()

            if target:
                index.improve(progress=enough, cancel=stop)
            coverage = index.coverage()
            for takes_over in (kept, 0.0):
                meaning.TAKES_OVER = takes_over  # what is kept, then mixing from the first batch
                cells = []
                for wording, questions in sets.items():
                    found = seeded = 0
                    for text, answers in questions:
                        query = seed_query(text)
                        paths = [hit.path for hit in index.search(query, 20)]
                        found += recall_at(paths, answers, 5)
                        seed = [hit.path for hit in index.search(query, SEED_LIMIT)]
                        seeded += bool(set(seed) & set(answers))
                    cells.append(f"{wording} {found:2d}/{len(questions)} ({seeded:2d} seeded)")
                print(
                    f"encoder covers {coverage.better_done:4d}/{coverage.total} "
                    f"({coverage.better_done / coverage.total:4.0%}), takes over at "
                    f"{takes_over:3.0%}, hybrid: " + ", ".join(cells)
                )
            meaning.TAKES_OVER = kept


def encoder_only(folder: Path, db_path: Path) -> None:
    """Child process: index ``folder`` (words and built-in vectors, as a first answer waits for),
    then give every passage the encoder's vector too (as the window does in the background);
    report both times and the peak RSS with the encoder loaded, as JSON."""
    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415
    from imprint_desktop.core.workspace.embedding import AUTO  # noqa: PLC0415

    with WorkspaceIndex(folder, db_path=db_path, embedder=Path(AUTO)) as index:
        index.embedder()  # loaded once per process, as in the window
        report = index.update()
        before = peak_rss_mb()
        loading = time.perf_counter()
        index.better_embedder()
        loaded = time.perf_counter() - loading
        improved = index.improve()
    print(
        json.dumps(
            {
                "passages": report.embedded,
                "builtin_seconds": report.seconds,
                "encoder_load_seconds": loaded,
                "encoder_seconds": improved.seconds,
                "encoder_passages": improved.done,
                "rss_before_encoder_mb": before,
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )


def measure_encoder(scratch: Path, sizes: list[int]) -> None:
    """For about each of ``sizes`` passages: indexing with the built-in embedder (what a first
    answer waits for) and the encoder's background embedding of the same passages, each in a
    fresh process, with that process's peak RSS once the encoder is loaded."""
    for passages in sizes:
        folder = scratch / f"encoder-{passages}"
        generate(folder, max(1, passages * 10 // 54))  # about 5.4 passages a document
        output = subprocess.run(
            [
                sys.executable,
                __file__,
                "--encoder-only",
                str(folder),
                str(scratch / f"{folder.name}.db"),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        got = json.loads(output)
        print(
            f"encoder indexing:   {got['passages']} passages: words and built-in vectors in "
            f"{got['builtin_seconds']:.2f} s ({got['passages'] / got['builtin_seconds']:.0f} "
            f"passages/s); the encoder in the background {got['encoder_seconds']:.1f} s "
            f"({got['encoder_passages'] / got['encoder_seconds']:.1f} passages/s, loaded in "
            f"{got['encoder_load_seconds']:.2f} s); peak RSS {got['rss_before_encoder_mb']:.0f} MB "
            f"before the encoder, {got['peak_rss_mb']:.0f} MB with it"
        )


def measure_encoder_queries(folder: Path, db_path: Path, words: list[str]) -> None:
    """Hybrid query p95 under ``workspace.embedder`` = auto on the large index (``db_path``,
    made by :func:`measure_memory`) with encoder vectors for half the passages and then for all
    of them. Encoding 160,000 passages would take hours, so the vectors are random unit rows of
    the encoder's width: what a query costs does not depend on what they say."""
    import sqlite3  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from imprint_desktop.core.workspace import WorkspaceIndex  # noqa: PLC0415
    from imprint_desktop.core.workspace.embedding import AUTO  # noqa: PLC0415

    rng = random.Random(13)
    asked = [" ".join(rng.sample(words[:3000], rng.randint(1, 3))) for _ in range(200)]
    vectors = np.random.default_rng(13)
    with contextlib.closing(sqlite3.connect(db_path, isolation_level=None)) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM passages ORDER BY id")]
        db.execute("UPDATE meta SET value = 'all-minilm-l6-v2' WHERE key = 'better_embedder'")
    for share in (0.5, 1.0):
        with contextlib.closing(sqlite3.connect(db_path, isolation_level=None)) as db:
            db.execute("BEGIN")
            db.execute("DELETE FROM passage_vectors_better")
            chosen = ids[: int(share * len(ids))]
            rows = vectors.standard_normal((len(chosen), 384)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            db.executemany(
                "INSERT INTO passage_vectors_better (passage_id, vector) VALUES (?, ?)",
                [
                    (passage, rows[at].astype(np.float16).tobytes())
                    for at, passage in enumerate(chosen)
                ],
            )
            db.execute("COMMIT")
        with WorkspaceIndex(folder, db_path=db_path, embedder=Path(AUTO)) as index:
            p95 = hybrid_p95(index, asked)
            coverage = index.coverage()
        print(
            f"hybrid query p95:   {p95 * 1000:.2f} ms with the encoder covering "
            f"{coverage.better_done:,} of {coverage.total:,} passages ({share:.0%})"
        )


def add_encoder_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the encoder's figures (issue 39): each runs alone."""
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="only recall under workspace.embedder = auto as the encoder covers more passages",
    )
    parser.add_argument(
        "--encoder-passages",
        type=int,
        nargs="*",
        default=None,
        metavar="N",
        help="only indexing time and memory with the encoder for about N passages (each N)",
    )
    parser.add_argument("--encoder-only", nargs=2, metavar=("FOLDER", "DB"), help=argparse.SUPPRESS)


def run_encoder_figures(args: argparse.Namespace) -> int | None:
    """Run what the encoder's options ask for, alone (an exit code), or None when none is given."""
    if args.encoder_only:
        encoder_only(Path(args.encoder_only[0]), Path(args.encoder_only[1]))
        return 0
    if args.coverage or args.encoder_passages is not None:
        scratch = Path(tempfile.mkdtemp(prefix="imprint-bench-"))
        try:
            if args.coverage:
                measure_coverage(scratch)
            if args.encoder_passages is not None:
                measure_encoder(scratch, args.encoder_passages or [1000, 10000])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--large-docs", type=int, default=30000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pdfs", type=int, default=40)
    parser.add_argument("--recall-only", action="store_true", help="only the retrieval figures")
    parser.add_argument(
        "--embedder",
        type=Path,
        default=None,
        help="a workspace.embedder value (default: the built-in one), e.g. all-minilm-l6-v2",
    )
    parser.add_argument("--per-format", type=int, default=40)
    parser.add_argument("--markitdown", action="store_true", help="time markitdown too")
    parser.add_argument("--index-only", nargs=2, metavar=("FOLDER", "DB"), help=argparse.SUPPRESS)
    add_encoder_arguments(parser)
    args = parser.parse_args()
    if args.index_only:
        index_only(Path(args.index_only[0]), Path(args.index_only[1]))
        return 0
    if (ran := run_encoder_figures(args)) is not None:
        return ran
    scratch = Path(tempfile.mkdtemp(prefix="imprint-bench-"))
    if args.recall_only:
        try:
            failures = measure_recall(scratch, args.embedder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"MISSED: {', '.join(failures)}" if failures else "all targets met")
        return 1 if failures else 0
    try:
        corpus = scratch / "corpus"
        started = time.perf_counter()
        words = generate(corpus, args.docs)
        print(f"generated {args.docs} documents in {time.perf_counter() - started:.1f} s")
        failures = measure_speed(corpus, words, scratch, args.queries, args.embedder)
        failures += measure_recall(scratch, args.embedder)
        if args.pdfs:
            measure_pdfs(args.pdfs, scratch)
        if args.per_format:
            folders = measure_formats(args.per_format, words, scratch)
            if args.markitdown:
                compare_markitdown(folders)
        if args.large_docs:
            failures += measure_memory(corpus, words, args.docs, args.large_docs, scratch)
            if _encoder_installed():
                large = scratch / f"rss-{(scratch / 'large').name}.sqlite3"
                measure_encoder_queries(scratch / "large", large, words)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"MISSED: {', '.join(failures)}")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    os.environ.setdefault("IMPRINT_DATA_DIR", tempfile.gettempdir())
    sys.exit(main())
