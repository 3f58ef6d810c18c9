"""What this computer offers a local model: free memory, a usable GPU, CPU cores, free disk.

:func:`probe_machine` reads it once (``/proc``, ``nvidia-smi`` or ``vulkaninfo``, the disk), which
takes a few milliseconds to a second, so it runs on a worker thread or in the CLI, never on the GUI
thread. The result is a frozen :class:`Machine` that :mod:`.fit` judges models against; tests build
one by hand.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

NVIDIA_SMI_TIMEOUT = 5.0
#: Where Linux lists graphics cards, each with its PCI vendor and, for some drivers, its memory.
DRM_CLASS = Path("/sys/class/drm")
_VENDORS = {"0x1002": "AMD", "0x8086": "Intel", "0x10de": "NVIDIA"}


@dataclass(frozen=True)
class Gpu:
    name: str
    free_bytes: int
    unified: bool = False  # Apple silicon: the GPU shares the main memory


@dataclass(frozen=True)
class Machine:
    """The parts of a computer that decide how well a model runs on it."""

    available_memory: int | None  # bytes a new process can use now; None when unknown
    cpu_cores: int  # cores llama.cpp computes on (``model.n_threads``, or the physical cores)
    fast_cpu: bool  # AVX2 on x86, or an ARM core: llama.cpp's fast paths
    gpu: Gpu | None  # a GPU llama.cpp can offload to, when this build of it can
    disk_free: int | None  # bytes free where models are downloaded
    models_folder: str = ""
    #: A GPU that is there but not counted, and why, in a sentence ("" when there is none).
    unseen_gpu: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "available_memory": self.available_memory,
            "cpu_cores": self.cpu_cores,
            "fast_cpu": self.fast_cpu,
            "gpu": (
                {
                    "name": self.gpu.name,
                    "free_bytes": self.gpu.free_bytes,
                    "unified": self.gpu.unified,
                }
                if self.gpu is not None
                else None
            ),
            "disk_free": self.disk_free,
            "models_folder": self.models_folder,
            "unseen_gpu": self.unseen_gpu or None,
        }


def probe_machine(models_folder: Path, *, threads: int = 0) -> Machine:
    """This computer now; ``threads`` is ``model.n_threads`` (0: the physical cores)."""
    gpu, unseen = find_gpu()
    return Machine(
        available_memory=available_memory(),
        cpu_cores=threads if threads > 0 else physical_cores(),
        fast_cpu=_fast_cpu(),
        gpu=gpu,
        disk_free=disk_free(models_folder),
        models_folder=str(models_folder),
        unseen_gpu=unseen,
    )


def available_memory() -> int | None:
    """Bytes of memory available to a new process now, or None when the system will not say."""
    meminfo = Path("/proc/meminfo")
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    return int(pages) * int(page_size) if pages > 0 and page_size > 0 else None


def physical_cores() -> int:
    """Physical cores this process may run on, hyper-threads of one core counted once (Linux
    sysfs; elsewhere every CPU the system reports): llama.cpp's thread count, and the machine a
    model's fit is judged for."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)
    siblings = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        try:
            siblings.add(topology.read_text().strip())
        except OSError:
            return max(1, len(cpus))
    return max(1, len(siblings))


def disk_free(folder: Path) -> int | None:
    """Free bytes on the disk that holds ``folder`` (or its nearest existing parent)."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            try:
                return shutil.disk_usage(candidate).free
            except OSError:
                return None
    return None


def _fast_cpu() -> bool:
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return True
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # not Linux: nearly every x86 CPU sold since 2013 has AVX2
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return " avx2" in flags or not flags


def find_gpu(
    *, drm: Path = DRM_CLASS, can_offload: Callable[[], bool] | None = None
) -> tuple[Gpu | None, str]:
    """The GPU llama.cpp (as built here) can put layers on, with its free memory; or None and, when
    a GPU is there all the same, a sentence saying why it is not counted.

    ``drm`` is the kernel's list of cards and ``can_offload`` asks llama.cpp (tests give both).
    """
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        memory = available_memory()
        found = [Gpu("Apple GPU (Metal)", memory, unified=True)] if memory else []
        unreadable: list[str] = []
    else:
        found, unreadable = _drm_gpus(drm)
        nvidia = _nvidia_gpu()
        if nvidia is not None:
            found = [gpu for gpu in found if not gpu.name.startswith("NVIDIA")] + [nvidia]
            unreadable = [name for name in unreadable if not name.startswith("NVIDIA")]
        if not found:  # Windows, or a card whose driver keeps its memory to itself
            vulkan = _vulkan_gpu()
            found, unreadable = ([vulkan], []) if vulkan is not None else (found, unreadable)
    if not found:
        if not unreadable:
            return None, ""
        names = " and ".join(dict.fromkeys(unreadable))
        return None, f"The free memory of the {names} cannot be read, so only the CPU is counted."
    best = max(found, key=lambda gpu: gpu.free_bytes)
    if not (can_offload or _llama_can_offload)():
        return None, (
            f"This build of llama.cpp cannot use the {best.name} (it was built for the CPU only), "
            f"so only the CPU is counted. {gpu_build_hint(best.name)}"
        )
    return best, ""


def gpu_build_hint(gpu_name: str) -> str:
    """How to build llama.cpp for ``gpu_name``, in the words of llama-cpp-python's README: CUDA
    for NVIDIA cards, Vulkan for every vendor (README, "Using a GPU")."""
    flags = "-DGGML_CUDA=on" if gpu_name.startswith("NVIDIA") else "-DGGML_VULKAN=on"
    return (
        f'To use it, build llama.cpp again with CMAKE_ARGS="{flags}" pip install '
        "--force-reinstall --no-cache-dir --no-deps llama-cpp-python (the README's "
        '"Using a GPU").'
    )


def _drm_gpus(drm: Path) -> tuple[list[Gpu], list[str]]:
    """The cards the kernel lists under ``drm``: those whose memory it reports, with their free
    memory, and the names of those whose memory it does not."""
    counted: dict[Path, Gpu] = {}
    unreadable: dict[Path, str] = {}
    try:
        cards = sorted(drm.glob("card[0-9]*"))
    except OSError:
        return [], []
    for card in cards:
        device = card / "device"
        try:
            vendor = (device / "vendor").read_text(encoding="ascii").strip().lower()
            key = device.resolve()
        except (OSError, UnicodeDecodeError):
            continue  # a connector (card0-HDMI-A-1) or no PCI device
        if vendor not in _VENDORS or key in counted or key in unreadable:
            continue
        name = _card_name(device, _VENDORS[vendor])
        try:
            total = int((device / "mem_info_vram_total").read_text(encoding="ascii"))
            used = int((device / "mem_info_vram_used").read_text(encoding="ascii"))
        except (OSError, ValueError, UnicodeDecodeError):
            unreadable[key] = name
            continue
        counted[key] = Gpu(name, max(total - used, 0))
    return list(counted.values()), list(unreadable.values())


def _card_name(device: Path, vendor: str) -> str:
    try:
        product = (device / "product_name").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        product = ""
    if not product:
        return f"{vendor} GPU"
    return product if product.startswith(vendor) else f"{vendor} {product}"


def _nvidia_gpu() -> Gpu | None:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        done = subprocess.run(
            [tool, "--query-gpu=name,memory.free", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        log.info("nvidia-smi failed: %s", error)
        return None
    return nvidia_smi_gpu(done.stdout)


def nvidia_smi_gpu(output: str) -> Gpu | None:
    """The card with the most free memory in ``nvidia-smi --query-gpu=name,memory.free
    --format=csv,noheader,nounits`` output (one ``name, MiB`` line a card), or None."""
    best: Gpu | None = None
    for line in output.splitlines():
        name, _, free = line.rpartition(",")
        try:
            free_bytes = int(float(free.strip()) * 1024 * 1024)
        except ValueError:
            continue
        if best is None or free_bytes > best.free_bytes:
            best = Gpu(name.strip() or "NVIDIA GPU", free_bytes)
    return best


def _vulkan_gpu() -> Gpu | None:
    tool = shutil.which("vulkaninfo")
    if tool is None:
        return None
    try:
        done = subprocess.run(
            [tool], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as error:
        log.info("vulkaninfo failed: %s", error)
        return None
    return vulkaninfo_gpu(done.stdout)


def vulkaninfo_gpu(output: str) -> Gpu | None:
    """The graphics card with the most free video memory in ``vulkaninfo``'s text output, or None.

    Free memory is a device-local heap's ``budget`` less its ``usage``, which vulkaninfo prints
    when the driver has the memory-budget extension; without them nothing is counted. Software
    renderers (``PHYSICAL_DEVICE_TYPE_CPU``, such as llvmpipe) are not graphics cards.
    """
    found: list[Gpu] = []
    name = kind = ""
    heap: dict[str, int] = {}
    local = False
    for line in [*output.splitlines(), "GPU (the end)"]:
        key, _, value = (part.strip() for part in line.partition("="))
        if key == "deviceName":
            name = value
        elif key == "deviceType":
            kind = value
        elif key.startswith(("memoryHeaps[", "memoryTypes")) or line.strip().startswith("GPU"):
            free = heap.get("budget", 0) - heap.get("usage", 0)  # of the heap that ends here
            if local and "budget" in heap and kind != "PHYSICAL_DEVICE_TYPE_CPU" and free > 0:
                found.append(Gpu(name or "Vulkan GPU", free))
            heap, local = {}, False
        elif key in ("budget", "usage") and value.split(" ", 1)[0].isdigit():
            heap[key] = int(value.split(" ", 1)[0])
        elif "MEMORY_HEAP_DEVICE_LOCAL_BIT" in line:
            local = True
    return max(found, key=lambda gpu: gpu.free_bytes, default=None)


def _llama_can_offload() -> bool:
    try:
        import llama_cpp  # noqa: PLC0415 - loads the native library; only when a GPU is there

        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as error:  # a broken native build must not break a listing
        log.info("could not ask llama.cpp about GPU offload: %s", error)
        return False
