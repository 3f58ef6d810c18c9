"""`imprint workspace index` and `search` as a person runs them: the sample, then a new corpus."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from imprint_desktop.core.resources import resource
from tests.e2e.conftest import Imprint
from tests.support import documents
from tests.unit.workspace.hostile_files import slow_pdf

pytestmark = pytest.mark.e2e


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(resource("sample-workspace"), target)
    return target


def test_index_then_search_the_sample_workspace(imprint: Imprint, sample: Path) -> None:
    indexed = imprint("workspace", "index", str(sample), "--json")
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert report["documents"] >= 12
    assert report["problems"] == []

    found = imprint("workspace", "search", str(sample), "last station automated", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["path"] == "stations/skerry-rock.rst"
    assert {"path", "start_line", "end_line", "score", "text"} <= set(hits[0])
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    lines = (sample / hits[0]["path"]).read_text().split("\n")
    assert "1994" in "\n".join(lines[hits[0]["start_line"] - 1 : hits[0]["end_line"]])

    searched = imprint("workspace", "search", str(sample), "generator fault", "--json")
    assert searched.returncode == 0, searched.stderr
    pdf = json.loads(searched.stdout)
    assert pdf[0]["path"] == "reports/annual-report-1998.pdf"


def test_search_updates_a_fresh_corpus_and_honours_limit(imprint: Imprint, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    for number in range(12):
        (corpus / "sub" / f"n{number}.md").write_text(f"# Note {number}\n\nmarmalade {number}\n")
    (corpus / "bad.pdf").write_bytes(b"%PDF-1.4 truncated")
    (corpus / "weird.txt").write_bytes(b"\xff\xfe\xfa marmalade in an odd encoding \x81")

    result = imprint("workspace", "search", str(corpus), "marmalade", "--json", "--limit", "5")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert len(hits) == 5
    assert all("marmalade" in hit["text"] for hit in hits)

    human = imprint("workspace", "index", str(corpus))
    assert human.returncode == 0
    assert "13 documents indexed" in human.stdout
    assert "0 added" in human.stdout and "14 unchanged" in human.stdout
    assert "bad.pdf" in human.stderr

    nothing = imprint("workspace", "search", str(corpus), "zanzibar", "--json")
    assert (nothing.returncode, json.loads(nothing.stdout)) == (0, [])


def test_a_missing_folder_is_a_usage_error(imprint: Imprint, tmp_path: Path) -> None:
    result = imprint("workspace", "index", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert "is not a folder" in result.stderr


def test_links_leading_outside_are_neither_indexed_nor_searchable(
    imprint: Imprint, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "inside.md").write_text("# Inside\n\nThe harbour log.\n")
    outside = tmp_path / "outside"
    (outside / "private").mkdir(parents=True)
    (outside / "secret.md").write_text("# Secret\n\nswordfish\n")
    (outside / "private" / "diary.md").write_text("# Diary\n\nswordfish again\n")
    (corpus / "secret.md").symlink_to(outside / "secret.md")
    (corpus / "private").symlink_to(outside / "private")

    indexed = imprint("workspace", "index", str(corpus), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["documents"] == 1
    found = imprint("workspace", "search", str(corpus), "swordfish", "--json")
    assert (found.returncode, json.loads(found.stdout)) == (0, [])


def test_a_pdf_that_reads_for_minutes_is_skipped_with_its_reason_and_not_retried(
    imprint: Imprint, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "note.md").write_text("# Note\n\nThe tide tables.\n")
    # Minutes of PDFium's time on any machine (about half a second a page here), so it cannot
    # finish inside the 15 s limit on a fast one either.
    (corpus / "endless.pdf").write_bytes(slow_pdf(pages=200))

    started = time.monotonic()
    first = imprint("workspace", "index", str(corpus), timeout=120)
    assert first.returncode == 0, first.stderr
    assert time.monotonic() - started < 60  # the PDF's own time limit, not minutes
    assert "1 documents indexed" in first.stdout and "1 skipped" in first.stdout
    assert "skipped endless.pdf: reading it took longer than" in first.stderr

    started = time.monotonic()
    second = imprint("workspace", "index", str(corpus), "--json")
    assert time.monotonic() - started < 10  # not read again: it has not changed
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["unchanged"] == 2
    assert [problem["path"] for problem in report["problems"]] == ["endless.pdf"]
    found = imprint("workspace", "search", str(corpus), "tide", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["note.md"]


def test_search_modes_find_a_paraphrase_by_meaning_only(imprint: Imprint, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pets.md").write_text(
        "# Pets\n\nDogs and cats share our houses; a puppy needs walks, a kitten a post.\n"
    )
    (corpus / "bank.md").write_text(
        "# Rates\n\nThe central bank raised interest rates again to slow inflation.\n"
    )
    query = "animals people keep at home"
    found = {}
    for mode in ("keyword", "meaning", "hybrid"):
        result = imprint("workspace", "search", str(corpus), query, "--json", "--mode", mode)
        assert result.returncode == 0, result.stderr
        found[mode] = [hit["path"] for hit in json.loads(result.stdout)]
    assert found["keyword"] == []
    assert found["meaning"][:1] == found["hybrid"][:1] == ["pets.md"]
    default = imprint("workspace", "search", str(corpus), query, "--json")
    assert [hit["path"] for hit in json.loads(default.stdout)] == found["hybrid"]

    indexed = imprint("workspace", "index", str(corpus), "--json")
    report = json.loads(indexed.stdout)
    assert (report["embedded_passages"], report["embedder_problem"]) == (2, None)
    wrong = imprint("workspace", "search", str(corpus), query, "--mode", "sideways")
    assert wrong.returncode == 2


def test_a_made_up_word_finds_nothing_in_any_mode(imprint: Imprint, sample: Path) -> None:
    """By meaning, a made-up word once found passages that shared a few letters with it."""
    assert imprint("workspace", "index", str(sample), "--embed").returncode == 0
    for mode in ("keyword", "meaning", "hybrid"):
        result = imprint("workspace", "search", str(sample), "zqxjkv", "--json", "--mode", mode)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [], mode


def test_index_reports_scans_and_search_shows_dates_and_superseded_versions(
    imprint: Imprint, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    documents.docx_file(
        corpus / "brief.docx",
        "Falcon brief",
        [("", "Date: 10 February 2026"), ("Price", "The Falcon costs 56,000 dollars.")],
    )
    (corpus / "archive").mkdir()
    (corpus / "archive/brief.md").write_text("# Falcon brief\n\nThe Falcon costs 52,000 dollars.\n")
    documents.scanned_pdf(corpus / "scan.pdf", [["Invoice 4471"]])
    no_ocr = {"IMPRINT_WORKSPACE_OCR": "false"}

    indexed = imprint("workspace", "index", str(corpus), env=no_ocr)
    assert indexed.returncode == 0, indexed.stderr
    assert "2 documents indexed" in indexed.stdout and "1 without text" in indexed.stdout
    assert (
        "no text in scan.pdf: it has no text layer (a scan?); OCR is turned off (workspace.ocr)"
        in indexed.stderr
    )
    report = json.loads(imprint("workspace", "index", str(corpus), "--json", env=no_ocr).stdout)
    assert [(p["path"], p["kind"]) for p in report["problems"]] == [("scan.pdf", "no_text")]

    found = imprint("workspace", "search", str(corpus), "Falcon costs", "--json", env=no_ocr)
    assert found.returncode == 0, found.stderr
    hits = {hit["path"]: hit for hit in json.loads(found.stdout)}
    assert (hits["brief.docx"]["date"], hits["brief.docx"]["dated"]) == ("2026-02-10", "label")
    assert hits["brief.docx"]["superseded"] == ""
    assert hits["archive/brief.md"]["superseded"] == 'its folder says "archive"'
    shown = imprint("workspace", "search", str(corpus), "Falcon costs", env=no_ocr)
    assert "dated 2026-02-10" in shown.stdout
    assert 'looks superseded: its folder says "archive"' in shown.stdout


def test_the_sentence_encoder_chosen_in_the_settings_finds_what_the_built_in_one_misses(
    imprint: Imprint, tmp_path: Path
) -> None:
    """``workspace.embedder = all-minilm-l6-v2``, set as a person sets it: the index is embedded
    by the sentence encoder, and a question without one word of its answer finds the answer."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "errors.md").write_text(
        "# Error pages\n\nRegister a handler for 404 Not Found responses to render a custom "
        "template when a URL matches no route.\n"
    )
    (corpus / "db.md").write_text(
        "# Databases\n\nOpen a sqlite3 connection per request and close it in a teardown.\n"
    )
    query = "show my own screen when a visitor asks for something that isn't there"
    built_in = imprint("workspace", "search", str(corpus), query, "--json", "--mode", "meaning")
    assert built_in.returncode == 0, built_in.stderr
    assert json.loads(built_in.stdout) == []

    chosen = imprint("settings", "set", "workspace.embedder", "all-minilm-l6-v2")
    assert chosen.returncode == 0, chosen.stderr
    indexed = imprint("workspace", "index", str(corpus), "--json")
    report = json.loads(indexed.stdout)
    assert (report["embedded_passages"], report["embedder_problem"]) == (2, None)
    found = imprint("workspace", "search", str(corpus), query, "--json", "--mode", "meaning")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)][:1] == ["errors.md"]
