"""The curated list of recommended models, and how each one fits a computer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from imprint_desktop.core.errors import ModelStoreError
from imprint_desktop.core.models.fit import WORKING_MEMORY, ModelFit, Verdict, assess_fit
from imprint_desktop.core.models.machine import Gpu, Machine, physical_cores, probe_machine
from imprint_desktop.core.models.recommended import (
    RecommendedModel,
    Role,
    TemplateFamily,
    catalogue_path,
    load_catalogue,
    recommend,
    recommend_here,
)
from imprint_desktop.core.resources import starter_model_path
from tests.support.settings import make_config

GB = 1 << 30
#: Bits per weight a GGUF file of each quantization really has (the embedding and output tensors
#: are often kept at higher precision, so small models sit at the top of the range).
BITS_PER_WEIGHT = {
    "Q4_K_M": (4.5, 6.0),
    "Q5_K_M": (5.4, 7.0),
    "Q6_K": (6.5, 7.5),
    "Q8_0": (8.4, 9.0),
}
KNOWN_LICENSES = {"apache-2.0", "mit", "llama3.1", "llama3.2", "qwen-research", "gemma"}
CATALOGUE = load_catalogue()


def machine(**changes: object) -> Machine:
    """A mid-range laptop unless told otherwise: 16 GiB free, 8 fast cores, no GPU, 200 GiB free."""
    values: dict[str, object] = {
        "available_memory": 16 * GB,
        "cpu_cores": 8,
        "fast_cpu": True,
        "gpu": None,
        "disk_free": 200 * GB,
    }
    values.update(changes)
    return Machine(**values)  # type: ignore[arg-type]


# --- the list itself ------------------------------------------------------------------------------


def test_the_list_is_a_handful_of_instruct_models_from_known_publishers() -> None:
    assert 5 <= len(CATALOGUE) <= 10
    assert len({model.id for model in CATALOGUE}) == len(CATALOGUE)
    assert {model.template_family for model in CATALOGUE} == set(TemplateFamily)
    publishers = {model.repo.split("/")[0] for model in CATALOGUE}
    assert publishers <= {
        "Qwen",
        "bartowski",
        "meta-llama",
        "mistralai",
        "microsoft",
        "NousResearch",
    }


@pytest.mark.parametrize("model", CATALOGUE, ids=lambda model: model.id)
def test_each_entry_is_well_formed_and_its_size_is_realistic(model: RecommendedModel) -> None:
    assert 0.5 <= model.parameters <= 8.5, "the list is for models a personal computer runs"
    low, high = BITS_PER_WEIGHT[model.quantization]
    assert low <= model.bits_per_weight <= high, (
        f"{model.size:,} bytes is {model.bits_per_weight:.2f} bits per weight for "
        f"{model.parameters}B parameters, not what {model.quantization} makes"
    )
    assert model.file.endswith(".gguf") and model.quantization.lower() in model.file.lower()
    assert model.context_length >= 8192
    assert model.license in KNOWN_LICENSES
    assert model.publisher and model.name and model.repo.count("/") == 1
    assert 40 <= len(model.good_at) <= 100 and model.good_at.endswith("."), "one line"
    assert model.head_dim in (64, 128, 256) and 12 <= model.layers <= 64
    assert 1 <= model.kv_heads <= 32
    # The attention shape gives a KV cache in the range real models of this size have.
    per_token = model.kv_cache_bytes(1)
    assert 8 * 1024 <= per_token <= 256 * 1024


def test_the_order_is_most_capable_first() -> None:
    sizes = [model.parameters for model in CATALOGUE]
    assert sizes[0] == max(sizes) and sizes[-1] == min(sizes)


def test_the_list_is_found_beside_the_code() -> None:
    assert catalogue_path().is_file() and catalogue_path().parent.name == "resources"


GOOD = """schema = 1
[[model]]
id = "tiny"
name = "Tiny"
publisher = "Someone"
repo = "someone/Tiny-GGUF"
file = "tiny-Q4_K_M.gguf"
quantization = "Q4_K_M"
size = 1_000_000_000
parameters = 1.5
context_length = 32768
license = "apache-2.0"
template_family = "hermes"
layers = 28
kv_heads = 2
head_dim = 128
good_at = "Tests."
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("schema = 1", "schema = 2"), "schema must be 1"),
        (lambda text: text.replace('id = "tiny"\n', ""), "id is missing"),
        (
            lambda text: text.replace("size = 1_000_000_000", 'size = "1 GB"'),
            "size must be a whole",
        ),
        (lambda text: text.replace("size = 1_000_000_000", "size = 0"), "size must be positive"),
        (lambda text: text.replace('good_at = "Tests."', 'good_at = " "'), "good_at is empty"),
        (lambda text: text + 'colour = "blue"\n', "unknown field 'colour'"),
        (lambda text: text.replace('"hermes"', '"chatml"'), "template_family 'chatml'"),
        (lambda text: text.replace('"Q4_K_M"', '"Q8_0"'), "differs from the file name"),
        (lambda text: text.replace('"someone/Tiny-GGUF"', '"Tiny-GGUF"'), "is not owner/name"),
        (lambda text: text.replace('id = "tiny"', 'id = "Tiny Model"'), "id must be lower-case"),
        (lambda text: text + text.removeprefix("schema = 1\n"), "more than one entry"),
        (lambda text: text.replace("[[model]]", "[model"), "is not TOML"),
        (lambda text: "schema = 1\n", r"lists no \[\[model\]\]"),
    ],
)
def test_a_broken_list_is_refused_with_the_reason(
    tmp_path: Path, edit: object, message: str
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert load_catalogue(path)[0].id == "tiny"
    path.write_text(edit(GOOD), encoding="utf-8")  # type: ignore[operator]
    with pytest.raises(ModelStoreError, match=message):
        load_catalogue(path)


# --- fit on a computer ----------------------------------------------------------------------------

QWEN3_8B = next(model for model in CATALOGUE if model.id == "qwen3-8b")


def fit_of(model: RecommendedModel, on: Machine, *, installed: bool = False) -> Verdict:
    return assess(model, on, installed=installed).verdict


def assess(model: RecommendedModel, on: Machine, *, installed: bool = False) -> ModelFit:
    return assess_fit(
        size=model.size,
        parameters=model.parameters,
        kv_cache_bytes=model.kv_cache_bytes(8192),
        machine=on,
        time_budget=300,
        installed=installed,
    )


def test_memory_needed_is_the_file_the_context_and_working_buffers() -> None:
    result = assess(QWEN3_8B, machine())
    assert result.memory_needed == QWEN3_8B.size + 36 * 8192 * 8 * 128 * 4 + WORKING_MEMORY


def test_a_graphics_card_with_room_runs_it_well() -> None:
    result = assess(QWEN3_8B, machine(gpu=Gpu("NVIDIA RTX 4070", 11 * GB), cpu_cores=2))
    assert result.verdict is Verdict.RUNS_WELL and result.on_gpu
    assert "Runs on the NVIDIA RTX 4070" in result.reason
    small_card = machine(gpu=Gpu("NVIDIA GT 1030", 2 * GB), cpu_cores=2)
    assert not assess(QWEN3_8B, small_card).on_gpu, "too big for the card: the CPU runs it"


def test_too_little_memory_does_not_fit_and_says_how_much() -> None:
    result = assess(QWEN3_8B, machine(available_memory=4 * GB))
    assert result.verdict is Verdict.DOES_NOT_FIT
    assert result.reason.startswith("Needs about 6.") and "4.0 GiB is free now" in result.reason


def test_too_little_disk_does_not_fit_unless_it_is_already_here() -> None:
    crowded = machine(disk_free=3 * GB)
    result = assess(QWEN3_8B, crowded)
    assert result.verdict is Verdict.DOES_NOT_FIT and "disk space" in result.reason
    assert fit_of(QWEN3_8B, crowded, installed=True) is not Verdict.DOES_NOT_FIT


def test_memory_that_is_only_just_enough_runs_slowly() -> None:
    result = assess(QWEN3_8B, machine(available_memory=int(6.6 * GB), cpu_cores=32))
    assert result.verdict is Verdict.RUNS_SLOWLY
    assert result.reason.startswith("Leaves little memory for other programs")


def test_speed_decides_between_well_and_slowly() -> None:
    lightest = CATALOGUE[-1]
    assert fit_of(QWEN3_8B, machine(cpu_cores=16)) is Verdict.RUNS_WELL
    two_cores = assess(QWEN3_8B, machine(cpu_cores=2))
    assert two_cores.verdict is Verdict.RUNS_SLOWLY
    assert "per research reply on 2 CPU cores (research time limit: 5 min)" in two_cores.reason
    assert fit_of(lightest, machine(cpu_cores=2)) is Verdict.RUNS_WELL
    old_cpu = assess(lightest, machine(cpu_cores=2, fast_cpu=False))
    assert old_cpu.verdict is Verdict.RUNS_SLOWLY
    assert (old_cpu.reply_seconds or 0) > (
        assess(lightest, machine(cpu_cores=2)).reply_seconds or 0
    )


# --- the picks ------------------------------------------------------------------------------------


def roles(on: Machine) -> dict[str, Role]:
    result = recommend(CATALOGUE, on, n_ctx=8192, time_budget=300)
    return {entry.model.id: entry.role for entry in result.entries if entry.role is not None}


def test_a_fast_computer_gets_the_most_capable_model_and_two_lighter_ones() -> None:
    picked = roles(machine(cpu_cores=16))
    ids = [model.id for model in CATALOGUE]
    assert picked == {ids[0]: Role.BEST, ids[1]: Role.LIGHTER, ids[2]: Role.LIGHTER}


def test_a_slow_computer_gets_the_first_that_runs_well_and_its_neighbours() -> None:
    on = machine(cpu_cores=2)
    result = recommend(CATALOGUE, on, n_ctx=8192, time_budget=300)
    best = result.best
    assert best is not None and best.fit.verdict is Verdict.RUNS_WELL
    index = list(CATALOGUE).index(best.model)
    assert all(e.fit.verdict is not Verdict.RUNS_WELL for e in result.entries[:index])
    picks = result.picks
    assert picks[0] is best and len(picks) == 3
    assert {pick.role for pick in picks[1:]} <= {Role.MORE_CAPABLE, Role.LIGHTER}
    assert all(pick.fit.verdict is not Verdict.DOES_NOT_FIT for pick in picks)
    nearest_above = max(i for i in range(index))
    assert result.entries[nearest_above].role is Role.MORE_CAPABLE


def test_when_none_runs_well_the_quickest_that_fits_is_best() -> None:
    result = recommend(CATALOGUE, machine(cpu_cores=1, fast_cpu=False), n_ctx=8192, time_budget=60)
    assert all(entry.fit.verdict is not Verdict.RUNS_WELL for entry in result.entries)
    best = result.best
    assert best is not None
    assert best.fit.reply_seconds == min(e.fit.reply_seconds or 1e9 for e in result.entries)


def test_when_nothing_fits_there_is_no_best() -> None:
    result = recommend(CATALOGUE, machine(available_memory=GB), n_ctx=8192, time_budget=300)
    assert result.best is None and result.picks == ()
    assert result.to_json()["best"] is None


def test_json_has_what_the_command_line_promises() -> None:
    data = recommend(CATALOGUE, machine(cpu_cores=16), n_ctx=8192, time_budget=300).to_json()
    row = data["models"][0]  # type: ignore[index]
    assert {"repo", "file", "size", "fit", "fit_reason", "role", "installed"} <= set(row)
    assert data["best"] == CATALOGUE[0].id
    assert data["computer"]["cpu_cores"] == 16  # type: ignore[index]


# --- this computer --------------------------------------------------------------------------------


def test_this_computer_is_probed(tmp_path: Path) -> None:
    here = probe_machine(tmp_path / "not-yet-made" / "models")
    assert here.available_memory is not None and here.available_memory > 0
    assert 1 <= here.cpu_cores <= (os.cpu_count() or 1)
    assert here.disk_free == shutil.disk_usage(tmp_path).free or here.disk_free
    assert physical_cores() <= (os.cpu_count() or 1)
    assert probe_machine(tmp_path, threads=3).cpu_cores == 3, "model.n_threads is what runs"


def test_a_model_already_downloaded_is_marked_installed(tmp_path: Path) -> None:
    starter = starter_model_path()
    assert starter is not None
    lightest = CATALOGUE[-1]
    folder = tmp_path / "models"
    target = folder.joinpath(*lightest.repo.split("/"), lightest.file)
    target.parent.mkdir(parents=True)
    target.symlink_to(starter)
    settings = make_config({"downloads.models_dir": str(folder), "model.n_ctx": 4096})

    def probe(root: Path, threads: int) -> Machine:
        assert root == folder and threads == 0
        return machine(disk_free=0)

    result = recommend_here(settings, {"HF_HUB_CACHE": str(tmp_path / "cache")}, probe=probe)
    assert result.n_ctx == 4096
    entry = result.find(lightest.id)
    assert entry.installed == target
    assert entry.fit.verdict is not Verdict.DOES_NOT_FIT, "already here: no disk needed"
    others = [e for e in result.entries if e.model.id != lightest.id]
    assert all(e.fit.verdict is Verdict.DOES_NOT_FIT and e.installed is None for e in others)
    assert result.best is entry
    with pytest.raises(ModelStoreError, match="No recommended model is called 'nope'"):
        result.find("nope")


def test_alternatives_are_labelled_by_what_they_are() -> None:
    ranked = list(CATALOGUE)
    for cores in (2, 3, 4, 6, 8, 12, 16, 32):
        result = recommend(CATALOGUE, machine(cpu_cores=cores), n_ctx=8192, time_budget=300)
        best = result.best
        assert best is not None
        assert len(result.picks) == 3
        for pick in result.picks[1:]:
            if pick.role is Role.MORE_CAPABLE:
                assert ranked.index(pick.model) < ranked.index(best.model)
                assert (pick.fit.reply_seconds or 0) > (best.fit.reply_seconds or 0)
            else:
                assert ranked.index(pick.model) > ranked.index(best.model)
                assert (pick.role is Role.LIGHTER) == (pick.model.size < best.model.size)
