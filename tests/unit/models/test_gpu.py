"""AMD and Intel GPUs count toward the model fit, or the fit says it could not see them (issue 28).

Linux lists graphics cards under ``/sys/class/drm``; the tests build that tree by hand, with the
files the kernel's drivers write (``amdgpu`` reports its memory, Intel's drivers mostly do not), and
ask llama.cpp nothing: whether it can offload is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core.models import machine as machine_module
from imprint_desktop.core.models.fit import Verdict, assess_fit
from imprint_desktop.core.models.machine import Gpu, Machine, find_gpu

GB = 1 << 30


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_module, "_nvidia_gpu", lambda: None)
    monkeypatch.setattr(machine_module, "_vulkan_gpu", lambda: None)


def card(drm: Path, name: str, vendor: str, *, total: int | None = None, used: int = 0) -> Path:
    """``/sys/class/drm/NAME`` of a PCI card; ``total`` bytes of VRAM when the driver says."""
    device = drm / f"{name}-device"
    device.mkdir(parents=True)
    (device / "vendor").write_text(f"{vendor}\n", encoding="ascii")
    if total is not None:
        (device / "mem_info_vram_total").write_text(f"{total}\n", encoding="ascii")
        (device / "mem_info_vram_used").write_text(f"{used}\n", encoding="ascii")
    (drm / name).mkdir()
    (drm / name / "device").symlink_to(device)
    connector = drm / f"{name}-DP-1"  # connectors are listed too, without a PCI vendor
    connector.mkdir()
    return device


def judged(gpu: Gpu | None, unseen: str) -> tuple[Verdict, str, bool]:
    """How a 7 GiB model fits a laptop with 16 GiB free and 2 cores, and this GPU."""
    computer = Machine(
        available_memory=16 * GB,
        cpu_cores=2,
        fast_cpu=True,
        gpu=gpu,
        disk_free=200 * GB,
        unseen_gpu=unseen,
    )
    fit = assess_fit(
        size=7 * GB, parameters=8.0, kv_cache_bytes=GB // 2, machine=computer, time_budget=300
    )
    return fit.verdict, fit.reason, fit.on_gpu


def test_an_amd_card_counts_with_its_free_memory(tmp_path: Path) -> None:
    card(tmp_path, "card0", "0x1002", total=16 * GB, used=2 * GB)
    gpu, unseen = find_gpu(drm=tmp_path, can_offload=lambda: True)
    assert gpu == Gpu("AMD GPU", 14 * GB) and unseen == ""
    verdict, reason, on_gpu = judged(gpu, unseen)
    assert on_gpu and verdict is Verdict.RUNS_WELL, reason
    assert reason.startswith("Runs on the AMD GPU"), reason


def test_the_card_with_the_most_free_memory_is_the_one_counted(tmp_path: Path) -> None:
    card(tmp_path, "card0", "0x8086")  # an integrated Intel GPU: no memory of its own reported
    amd = card(tmp_path, "card1", "0x1002", total=8 * GB, used=GB)
    (amd / "product_name").write_text("Radeon RX 7600\n", encoding="utf-8")
    card(tmp_path, "card2", "0x1002", total=4 * GB)
    gpu, unseen = find_gpu(drm=tmp_path, can_offload=lambda: True)
    assert gpu == Gpu("AMD Radeon RX 7600", 7 * GB) and unseen == ""


def test_an_intel_gpu_whose_memory_cannot_be_read_is_named_in_the_fit(tmp_path: Path) -> None:
    card(tmp_path, "card0", "0x8086")
    gpu, unseen = find_gpu(drm=tmp_path, can_offload=lambda: True)
    assert gpu is None
    assert "Intel GPU" in unseen and "only the CPU is counted" in unseen
    verdict, reason, on_gpu = judged(gpu, unseen)
    assert not on_gpu and verdict is Verdict.RUNS_SLOWLY
    assert reason.endswith(unseen), reason
    assert "CPU core" in reason


def test_a_gpu_this_llama_cpp_cannot_use_is_named_in_the_fit(tmp_path: Path) -> None:
    card(tmp_path, "card0", "0x1002", total=16 * GB)
    gpu, unseen = find_gpu(drm=tmp_path, can_offload=lambda: False)
    assert gpu is None
    assert "cannot use the AMD GPU" in unseen and "built for the CPU only" in unseen
    _, reason, on_gpu = judged(gpu, unseen)
    assert not on_gpu and unseen in reason


def test_no_gpu_at_all_says_nothing_more(tmp_path: Path) -> None:
    assert find_gpu(drm=tmp_path / "no-drm-here", can_offload=lambda: True) == (None, "")
    _, reason, _ = judged(None, "")
    assert "GPU" not in reason


def test_nvidia_smi_still_speaks_for_nvidia_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card(tmp_path, "card0", "0x10de")  # the kernel lists it; nvidia-smi knows its memory
    card(tmp_path, "card1", "0x8086")
    monkeypatch.setattr(machine_module, "_nvidia_gpu", lambda: Gpu("NVIDIA RTX 4070", 11 * GB))
    assert find_gpu(drm=tmp_path, can_offload=lambda: True) == (Gpu("NVIDIA RTX 4070", 11 * GB), "")


def test_the_machine_says_what_it_could_not_see() -> None:
    computer = Machine(16 * GB, 2, True, None, 200 * GB, unseen_gpu="An Intel GPU is unseen.")
    assert computer.to_json()["unseen_gpu"] == "An Intel GPU is unseen."
