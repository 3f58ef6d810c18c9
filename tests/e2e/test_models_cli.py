"""``imprint models`` as a subprocess against a hub on 127.0.0.1 (``HF_ENDPOINT``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint_desktop.core.models.recommended import load_catalogue
from imprint_desktop.core.resources import starter_model_path
from tests.e2e.conftest import Imprint
from tests.support.hub_server import (
    STARTER_FILE,
    STARTER_REPO,
    HubServer,
    serve_recommended,
    starter_hub,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with starter_hub() as server:
        yield server


@pytest.fixture
def env(hub: HubServer, tmp_path: Path) -> dict[str, str]:
    return {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "hf-cache")}


def test_search_and_files(imprint: Imprint, env: dict[str, str]) -> None:
    found = imprint("models", "search", "smol", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert [row["repo_id"] for row in json.loads(found.stdout)["results"]] == [STARTER_REPO]

    plain = imprint("models", "search", "", env=env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.index(STARTER_REPO) < plain.stdout.index("example/Tiny-Split-GGUF")

    files = imprint("models", "files", STARTER_REPO, "--json", env=env)
    assert files.returncode == 0, files.stderr
    [model] = json.loads(files.stdout)["models"]
    assert (model["name"], model["quantization"]) == (STARTER_FILE, "Q4_1")
    assert model["fit"] == "fits"

    split = imprint("models", "files", "example/Tiny-Split-GGUF", env=env)
    assert split.returncode == 0, split.stderr
    assert "tiny-Q8_0.gguf  Q8_0  128 B, 2 parts" in split.stdout


def test_download_list_remove(imprint: Imprint, env: dict[str, str], hub: HubServer) -> None:
    done = imprint("models", "download", STARTER_REPO, STARTER_FILE, "--json", env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"] is True
    assert Path(result["path"]).stat().st_size == result["size"]

    listed = imprint("models", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["source"]: row for row in json.loads(listed.stdout)}
    assert rows["hf-cache"]["path"] == result["path"]
    assert rows["hf-cache"]["usable"] is True

    again = imprint("models", "download", STARTER_REPO, STARTER_FILE, env=env, timeout=120)
    assert again.returncode == 0 and "Verified" in again.stdout

    starter = imprint("models", "remove", rows["starter"]["name"], env=env)
    assert starter.returncode == 1 and "not removed" in starter.stderr

    removed = imprint("models", "remove", rows["hf-cache"]["name"], env=env)
    assert removed.returncode == 0, removed.stderr
    assert "freeing 93.8 MiB" in removed.stdout
    assert not Path(result["path"]).exists()


def test_import_links_in_place_and_remove_forgets(
    imprint: Imprint, env: dict[str, str], tmp_path: Path
) -> None:
    original = starter_model_path()
    assert original is not None
    copy = tmp_path / "mine.Q4_1.gguf"
    copy.symlink_to(original)
    imported = imprint("models", "import", str(copy), env=env)
    assert imported.returncode == 0, imported.stderr
    listing = imprint("models", "list", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    listed = json.loads(listing.stdout)
    assert any(row["source"] == "imported" for row in listed)

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"<html>404</html>")
    refused = imprint("models", "import", str(broken), env=env)
    assert refused.returncode == 1 and "not a GGUF" in refused.stderr

    forgot = imprint("models", "remove", str(copy), env=env)
    assert forgot.returncode == 0, forgot.stderr
    assert "stays" in forgot.stdout and copy.exists() and original.exists()
    listing = imprint("models", "list", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    listed = json.loads(listing.stdout)
    assert not any(row["source"] == "imported" for row in listed)


def test_missing_repository_and_corrupted_bytes_exit_1(
    imprint: Imprint, env: dict[str, str], hub: HubServer, tmp_path: Path
) -> None:
    missing = imprint("models", "download", "nobody/nothing", "x.gguf", env=env)
    assert missing.returncode == 1
    assert "no such repository" in missing.stderr

    hub.faults.corrupt_at = 1234567
    damaged = imprint("models", "download", STARTER_REPO, STARTER_FILE, env=env, timeout=120)
    assert damaged.returncode == 1
    assert "quarantine" in damaged.stderr
    assert not list((tmp_path / "hf-cache").rglob("*.gguf"))


def test_bad_usage_exits_2(imprint: Imprint, env: dict[str, str]) -> None:
    assert imprint("models", "search", "x", "--page", "0", env=env).returncode == 2
    assert imprint("models", "frobnicate", env=env).returncode == 2


def test_models_dir_setting_is_honoured(
    imprint: Imprint, env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "my models"
    done = imprint(
        "models",
        "download",
        STARTER_REPO,
        STARTER_FILE,
        env={**env, "IMPRINT_DOWNLOADS_MODELS_DIR": str(folder)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (folder / STARTER_REPO / STARTER_FILE).is_file()
    shutil.rmtree(folder)


def test_recommended_lists_every_entry_with_its_fit_here(
    imprint: Imprint, env: dict[str, str]
) -> None:
    listed = imprint("models", "recommended", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    catalogue = load_catalogue()
    rows = found["models"]
    assert [(row["repo"], row["file"], row["size"]) for row in rows] == [
        (model.repo, model.file, model.size) for model in catalogue
    ]
    assert {row["fit"] for row in rows} <= {"runs_well", "runs_slowly", "does_not_fit"}
    assert all(row["fit_reason"].endswith(".") for row in rows)
    roles = {row["id"]: row["role"] for row in rows if row["role"]}
    if found["best"] is not None:
        assert roles[found["best"]] == "best"
        assert set(roles) == {found["best"], *found["alternatives"]}
        assert all(r["fit"] != "does_not_fit" for r in rows if r["id"] in roles)
    assert found["computer"]["cpu_cores"] >= 1

    text = imprint("models", "recommended", env=env)
    assert text.returncode == 0 and text.stdout.startswith("Recommended for this computer (")
    for model in catalogue:
        assert f"{model.id}  {model.name}" in text.stdout


def test_download_recommended_takes_the_best_fit(
    imprint: Imprint, env: dict[str, str], hub: HubServer
) -> None:
    serve_recommended(hub)
    recommended = imprint("models", "recommended", "--json", env=env)
    assert recommended.returncode == 0, recommended.stderr
    found = json.loads(recommended.stdout)
    if found["best"] is None:  # a computer too small for any of them
        refused = imprint("models", "download", "--recommended", env=env)
        assert refused.returncode == 1 and "None of the recommended models" in refused.stderr
        return
    best = next(row for row in found["models"] if row["id"] == found["best"])

    done = imprint("models", "download", "--recommended", "--json", env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"] is True
    assert Path(result["path"]).name == best["file"]
    assert f"/models--{best['repo'].replace('/', '--')}/" in result["path"]

    recommended = imprint("models", "recommended", "--json", env=env)
    assert recommended.returncode == 0, recommended.stderr
    again = json.loads(recommended.stdout)
    row = next(row for row in again["models"] if row["id"] == best["id"])
    assert row["installed"] == result["path"]


def test_download_recommended_by_id_and_its_usage(
    imprint: Imprint, env: dict[str, str], hub: HubServer
) -> None:
    serve_recommended(hub)
    chosen = load_catalogue()[1]
    done = imprint("models", "download", "--recommended", chosen.id, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"Verified {chosen.file}" in done.stdout
    assert done.stderr.startswith(f"{chosen.name}: ")

    unknown = imprint("models", "download", "--recommended", "nope", env=env)
    assert unknown.returncode == 1 and "No recommended model is called 'nope'" in unknown.stderr
    neither = imprint("models", "download", env=env)
    assert neither.returncode == 2 and "give REPO and FILE, or --recommended" in neither.stderr
    both = imprint("models", "download", STARTER_REPO, STARTER_FILE, "--recommended", env=env)
    assert both.returncode == 2 and "--recommended takes no REPO or FILE" in both.stderr
