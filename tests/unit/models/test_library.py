"""Installed models, imports, removal and the download journal, on real files in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imprint_desktop.core.errors import InvalidModelFileError, ModelStoreError, ProtectedModelError
from imprint_desktop.core.models import ModelLayout, ModelLibrary, Source
from imprint_desktop.core.models.journal import DownloadRecord, FileRecord, Journal, boot_id
from imprint_desktop.core.models.layout import hf_cache_dir
from imprint_desktop.core.resources import starter_model_path
from tests.support.settings import make_config

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def _cache_file(
    cache: Path, repo: str, commit: str, name: str, *, blob_name: str, source: Path
) -> Path:
    folder = cache / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / blob_name
    blob.parent.mkdir(parents=True, exist_ok=True)
    if not blob.exists():
        blob.write_bytes(source.read_bytes())
    pointer = folder / "snapshots" / commit / name
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.symlink_to(os.path.relpath(blob, pointer.parent))
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    return pointer


@pytest.fixture
def starter() -> Path:
    path = starter_model_path()
    assert path is not None
    return path


def test_cache_models_are_listed_and_a_shared_blob_survives_until_its_last_link(
    tmp_path: Path, starter: Path
) -> None:
    cache = tmp_path / "cache"
    first = _cache_file(
        cache, "o/m-GGUF", COMMIT_A, "m.Q4_1.gguf", blob_name="f" * 64, source=starter
    )
    second = _cache_file(
        cache, "o/m-GGUF", COMMIT_B, "copy.Q4_1.gguf", blob_name="f" * 64, source=starter
    )
    (cache / "models--o--m-GGUF" / "snapshots" / COMMIT_A / "README.md").write_text("hi")
    library = ModelLibrary(ModelLayout(None, cache))
    cached = [m for m in library.installed() if m.source is Source.CACHE]
    assert {m.name for m in cached} == {"o/m-GGUF/m.Q4_1.gguf", "o/m-GGUF/copy.Q4_1.gguf"}
    assert all(m.usable and m.quantization == "Q4_1" for m in cached)

    removal = library.remove(library.find("o/m-GGUF/m.Q4_1.gguf"))
    assert removal.freed_bytes == 0, "the blob is still linked from the other snapshot"
    assert not first.exists() and second.exists()
    removal = library.remove(library.find("copy.Q4_1.gguf"))
    assert removal.freed_bytes == starter.stat().st_size
    assert not (cache / "models--o--m-GGUF" / "blobs" / ("f" * 64)).exists()


def test_the_starter_model_is_never_removed(tmp_path: Path, starter: Path) -> None:
    library = ModelLibrary(ModelLayout(None, tmp_path / "cache"))
    model = library.find(starter.name)
    assert model.source is Source.STARTER and not model.removable
    with pytest.raises(ProtectedModelError):
        library.remove(model)
    assert starter.exists()


def test_imports_are_linked_in_place_and_removal_only_forgets(
    tmp_path: Path, starter: Path
) -> None:
    mine = tmp_path / "elsewhere" / "mine.gguf"
    mine.parent.mkdir()
    mine.write_bytes(starter.read_bytes())
    library = ModelLibrary(ModelLayout(None, tmp_path / "cache"))
    imported = library.import_file(mine)
    assert imported.source is Source.IMPORTED and imported.path == mine
    assert library.find("mine.gguf").path == mine
    removal = library.remove(imported)
    assert removal.freed_bytes == 0 and mine.exists()
    assert all(m.source is not Source.IMPORTED for m in library.installed())

    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model")
    with pytest.raises(InvalidModelFileError):
        library.import_file(junk)
    second_part = tmp_path / "x-00002-of-00002.gguf"
    second_part.write_bytes(starter.read_bytes()[:64])
    with pytest.raises(ModelStoreError, match="first part"):
        library.import_file(second_part)


def test_models_folder_listing_skips_partials_and_flags_broken_files(
    tmp_path: Path, starter: Path
) -> None:
    folder = tmp_path / "models"
    good = folder / "o" / "r" / "good.Q4_1.gguf"
    good.parent.mkdir(parents=True)
    good.write_bytes(starter.read_bytes())
    (folder / "o" / "r" / "next.gguf.part").write_bytes(b"GGUF")
    (folder / "o" / "r" / "broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    library = ModelLibrary(ModelLayout(folder, tmp_path / "cache"))
    listed = {m.name: m for m in library.installed() if m.source is Source.FOLDER}
    assert set(listed) == {"o/r/good.Q4_1.gguf", "o/r/broken.gguf"}
    assert listed["o/r/good.Q4_1.gguf"].usable and listed["o/r/good.Q4_1.gguf"].repo_id == "o/r"
    assert not listed["o/r/broken.gguf"].usable
    with pytest.raises(InvalidModelFileError):
        ModelLibrary.use(listed["o/r/broken.gguf"])
    assert ModelLibrary.use(listed["o/r/good.Q4_1.gguf"]) == {
        "model.path": str(good),
        "model.provider": "local",
    }
    removal = library.remove(listed["o/r/good.Q4_1.gguf"])
    assert removal.freed_bytes == starter.stat().st_size
    with pytest.raises(ModelStoreError, match="No installed model"):
        library.find("o/r/good.Q4_1.gguf")


def test_journal_round_trip_and_checkpoints(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal")
    record = DownloadRecord(
        "id1", "o/r", COMMIT_A, "m.gguf", (FileRecord("m.gguf", 10, "0" * 64),), "/x"
    )
    journal.save(record.with_checkpoint("m.gguf", 5).with_state("paused"))
    [loaded] = journal.all()
    assert loaded.state == "paused" and loaded.checkpoints == {"m.gguf": 5}
    assert loaded.boot == boot_id()
    (tmp_path / "journal" / "broken.json").write_text("{not json")
    assert [r.download_id for r in journal.all()] == ["id1"]
    journal.remove("id1")
    assert journal.load("id1") is None


def test_cache_dir_follows_huggingface_hub_variables(tmp_path: Path) -> None:
    assert hf_cache_dir({"HF_HUB_CACHE": str(tmp_path)}) == tmp_path
    assert hf_cache_dir({"HF_HOME": str(tmp_path)}) == tmp_path / "hub"
    assert hf_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "huggingface" / "hub"
    settings = make_config({"downloads.models_dir": str(tmp_path / "m")}).downloads
    layout = ModelLayout.from_config(settings, {})
    target = layout.target("o/r", "sub/f.gguf", COMMIT_A, "1" * 64, 3)
    assert target.final == tmp_path / "m" / "o" / "r" / "sub" / "f.gguf"
    assert target.partial.name == "f.gguf.part" and target.blob is None
