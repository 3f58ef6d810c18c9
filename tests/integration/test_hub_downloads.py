"""Downloads against a hub on 127.0.0.1 serving the starter model's real bytes, with faults.

Every test runs the real downloader (ranged httpx streams, the journal, the SHA-256 pipe, the
Hugging Face cache layout) against :mod:`tests.support.hub_server`; the full-disk tests mount a
small tmpfs (we run as root in CI).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import huggingface_hub
import pytest

from imprint_desktop.core.errors import (
    Cancelled,
    ChecksumMismatchError,
    DiskFullError,
    HubNotFoundError,
    HubUnavailableError,
)
from imprint_desktop.core.models import (
    DownloadControl,
    DownloadOptions,
    DownloadProgress,
    Fit,
    HubClient,
    HubConfig,
    Journal,
    ModelDownloader,
    ModelLayout,
    ModelLibrary,
    Phase,
    RemoteModel,
    Sort,
    Source,
)
from imprint_desktop.core.models.gguf import inspect_gguf
from imprint_desktop.core.resources import starter_model_path
from tests.support.hub_server import STARTER_FILE, STARTER_REPO, HubServer, starter_hub

pytestmark = pytest.mark.integration

MB = 1 << 20
FAST_RETRY = DownloadOptions(backoff_initial=0.01, backoff_max=0.05, checkpoint_seconds=0.2)
TRANSFER_LOG = "imprint_desktop.core.models.transfer"


def wait_until(predicate: Callable[[], bool], timeout: float = 30) -> bool:
    """Check ``predicate`` until it holds or ``timeout`` passes (short waits on an event)."""
    pause = threading.Event()
    deadline = timeout / 0.02
    for _ in range(int(deadline)):
        if predicate():
            return True
        pause.wait(0.02)
    return predicate()


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with starter_hub() as server:
        yield server


@pytest.fixture
def size() -> int:
    path = starter_model_path()
    assert path is not None
    return path.stat().st_size


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


def client(hub: HubServer, read_timeout: float = 30) -> HubClient:
    return HubClient(HubConfig(endpoint=hub.url, read_timeout=read_timeout))


def downloader(
    hub: HubServer, root: Path, *, folder: bool = False, read_timeout: float = 30
) -> ModelDownloader:
    layout = ModelLayout(root if folder else None, root)
    return ModelDownloader(client(hub, read_timeout), layout, Journal(), FAST_RETRY)


def starter(hub: HubServer) -> RemoteModel:
    return client(hub).resolve_model(STARTER_REPO, STARTER_FILE, n_ctx=2048)


class Background:
    """Runs one download on a thread and keeps how it ended."""

    def __init__(self, loader: ModelDownloader, model: RemoteModel) -> None:
        self.control = DownloadControl()
        self.events: list[DownloadProgress] = []
        self.result: Path | BaseException | None = None
        record = loader.record_for(model)
        self.thread = threading.Thread(
            target=self._run, args=(loader, record), name="test-download"
        )
        self.thread.start()

    def _run(self, loader: ModelDownloader, record: object) -> None:
        try:
            self.result = loader.run(record, self.control, self.events.append)  # type: ignore[arg-type]
        except BaseException as error:
            self.result = error

    def join(self, timeout: float = 60) -> Path | BaseException | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the download did not stop"
        return self.result


# --- search and listing ------------------------------------------------------------------------


def test_search_finds_gguf_repositories_sorted_and_paged(hub: HubServer) -> None:
    hub_client = client(hub)
    by_downloads = hub_client.search("", Sort.DOWNLOADS, page=0, page_size=1)
    assert [r.repo_id for r in by_downloads.results] == [STARTER_REPO]
    assert by_downloads.has_more
    second = hub_client.search("", Sort.DOWNLOADS, page=1, page_size=1)
    assert [r.repo_id for r in second.results] == ["example/Tiny-Split-GGUF"]
    assert not second.has_more
    recent = hub_client.search("", Sort.RECENT)
    assert [r.repo_id for r in recent.results] == ["example/Tiny-Split-GGUF", STARTER_REPO]
    # A repository without the gguf tag is never offered, whatever its name.
    assert [r.repo_id for r in hub_client.search("smol").results] == [STARTER_REPO]


def test_file_list_has_quantization_size_checksum_and_fit(hub: HubServer, size: int) -> None:
    listing = client(hub).repo_models(STARTER_REPO, n_ctx=8192)
    [model] = listing.models  # the README is not a model
    assert model.name == STARTER_FILE
    assert model.quantization == "Q4_1"
    assert model.size == size
    assert model.files[0].sha256 == hub.repos[STARTER_REPO].files[STARTER_FILE].sha256
    # The KV cache came from the real header (30 layers, 3 KV heads of 64): 180 MiB at 8192.
    assert model.fit.kv_known
    assert model.fit.needed_bytes >= size + 180 * MB
    assert model.fit.fit is Fit.FITS


def test_split_files_are_listed_as_one_model(hub: HubServer) -> None:
    listing = client(hub).repo_models("example/Tiny-Split-GGUF", n_ctx=512)
    by_name = {model.name: model for model in listing.models}
    split = by_name["tiny-Q8_0.gguf"]
    assert [f.path for f in split.files] == [
        "tiny-Q8_0-00001-of-00002.gguf",
        "tiny-Q8_0-00002-of-00002.gguf",
    ]
    assert split.size == 128
    assert split.quantization == "Q8_0"
    assert by_name["tiny-Q2_K.gguf"].quantization == "Q2_K"


def test_missing_repository_is_a_clear_404(hub: HubServer) -> None:
    with pytest.raises(HubNotFoundError, match="no such repository"):
        client(hub).repo_models("nobody/nothing-GGUF", n_ctx=512)
    with pytest.raises(HubNotFoundError, match="no GGUF file named"):
        client(hub).resolve_model(STARTER_REPO, "missing.Q4_0.gguf")


# --- complete downloads --------------------------------------------------------------------------


def test_download_into_the_cache_then_load_with_llama_cpp(
    hub: HubServer, cache: Path, size: int
) -> None:
    loader = downloader(hub, cache)
    events: list[DownloadProgress] = []
    path = loader.run(loader.record_for(starter(hub)), DownloadControl(), events.append)

    assert path.stat().st_size == size
    assert path.is_symlink(), "the cache layout links the snapshot to the blob"
    assert hub.bytes_served == size
    assert events[-1].phase is Phase.DONE and events[-1].done_bytes == size
    # Other tools that read the Hugging Face cache find the same file.
    found = huggingface_hub.try_to_load_from_cache(STARTER_REPO, STARTER_FILE, cache_dir=cache)
    assert found == str(path)
    assert Journal().all() == []

    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=256, verbose=False)
    try:
        assert llm.n_ctx() == 256
    finally:
        llm.close()

    installed = ModelLibrary(ModelLayout(None, cache)).installed()
    cached = [model for model in installed if model.source is Source.CACHE]
    assert [model.path for model in cached] == [path]
    assert cached[0].usable


def test_a_file_huggingface_hub_downloaded_is_reused_not_fetched(
    hub: HubServer, cache: Path, size: int
) -> None:
    path = huggingface_hub.hf_hub_download(
        STARTER_REPO, STARTER_FILE, cache_dir=cache, endpoint=hub.url
    )
    served = hub.bytes_served
    assert served == size
    result = downloader(hub, cache).run(
        downloader(hub, cache).record_for(starter(hub)), DownloadControl()
    )
    assert str(result) == path
    assert hub.bytes_served == served, "an intact cached file is verified, not downloaded again"


def test_download_into_the_models_folder(hub: HubServer, tmp_path: Path, size: int) -> None:
    folder = tmp_path / "models"
    loader = downloader(hub, folder, folder=True)
    path = loader.run(loader.record_for(starter(hub)), DownloadControl())
    assert path == folder / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF" / STARTER_FILE
    assert not path.is_symlink()
    assert not list(folder.rglob("*.part"))
    inspect_gguf(path)


# --- interruptions -------------------------------------------------------------------------------


def test_killed_process_resumes_with_a_range_request(
    hub: HubServer, cache: Path, tmp_path: Path, size: int
) -> None:
    hub.faults.stall_after = 30 * MB
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        "HF_ENDPOINT": hub.url,
        "HF_HUB_CACHE": str(cache),
    }
    command = [
        sys.executable,
        "-m",
        "imprint_desktop",
        "models",
        "download",
        STARTER_REPO,
        STARTER_FILE,
    ]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert hub.faults.stalled.wait(60), "the first run never got 30 MB"
        partials = lambda: list(cache.rglob("*.incomplete"))  # noqa: E731
        assert wait_until(lambda: bool(partials()) and partials()[0].stat().st_size >= 26 * MB)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    assert first.returncode == -signal.SIGKILL
    kept = partials()[0].stat().st_size
    hub.faults.release.set()
    before = hub.bytes_served

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "Verified" in second.stdout
    assert "Resuming" in second.stderr
    ranges = [served.range for served in hub.byte_requests()]
    assert ranges[0] is None
    assert ranges[-1] == f"bytes={kept}-"
    assert hub.bytes_served - before == size - kept, "the resumed run fetched only what was missing"
    assert hub.bytes_served <= size + 4 * MB
    assert not partials()


def test_pause_then_resume_continues_where_it_stopped(
    hub: HubServer, cache: Path, size: int
) -> None:
    hub.faults.stall_after = 10 * MB
    loader = downloader(hub, cache)
    model = starter(hub)
    run = Background(loader, model)
    assert hub.faults.stalled.wait(30)
    [partial] = cache.rglob("*.incomplete")
    assert wait_until(lambda: partial.stat().st_size == 10 * MB), "the client drains the socket"
    run.control.pause()  # wakes the read blocked on the stalled socket
    assert isinstance(run.join(), Cancelled)
    assert partial.stat().st_size == 10 * MB, "every byte received is kept"
    [record] = Journal().all()
    assert record.state == "paused"
    hub.faults.release.set()
    before = hub.bytes_served

    path = loader.run(loader.record_for(model), DownloadControl())
    assert path.stat().st_size == size
    assert hub.byte_requests()[-1].range == f"bytes={10 * MB}-"
    assert hub.bytes_served - before == size - 10 * MB, "only the missing bytes were fetched"
    assert Journal().all() == []


def test_cancel_removes_the_partial(hub: HubServer, cache: Path) -> None:
    hub.faults.stall_after = 8 * MB
    run = Background(downloader(hub, cache), starter(hub))
    assert hub.faults.stalled.wait(30)
    run.control.cancel()
    assert isinstance(run.join(), Cancelled)
    assert not list(cache.rglob("*.incomplete"))
    assert Journal().all() == []


def test_corrupted_bytes_are_detected_and_quarantined(
    hub: HubServer, cache: Path, isolated_dirs: Path
) -> None:
    hub.faults.corrupt_at = 5 * MB + 17
    loader = downloader(hub, cache)
    with pytest.raises(ChecksumMismatchError, match="quarantine") as caught:
        loader.run(loader.record_for(starter(hub)), DownloadControl())
    quarantined = Path(caught.value.quarantined)
    assert quarantined.is_file()
    assert quarantined.is_relative_to(isolated_dirs / "data" / "quarantine")
    assert "SHA-256" in quarantined.with_name(quarantined.name + ".txt").read_text()
    assert not list(cache.rglob("*.gguf")), "a damaged file is never offered"
    assert not list(cache.rglob("*.incomplete"))
    assert Journal().all() == []


def test_server_errors_are_retried_with_backoff(hub: HubServer, cache: Path, size: int) -> None:
    hub.faults.statuses = [500, 503, 502]
    loader = downloader(hub, cache)
    events: list[DownloadProgress] = []
    path = loader.run(loader.record_for(starter(hub)), DownloadControl(), events.append)
    assert path.stat().st_size == size
    assert sum(1 for event in events if event.phase is Phase.RETRYING) == 3
    assert any("HTTP 503" in event.detail for event in events)


def test_the_hub_is_asked_again_when_its_retry_after_says(
    hub: HubServer, cache: Path, size: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Retry-After in seconds or as an HTTP date (core.net.retry_after_seconds) instead of the
    backoff, which here would wait seconds."""
    hub.faults.statuses = [503, 429]
    hub.faults.retry_after = ["0", format_datetime(datetime.now(UTC) - timedelta(minutes=1))]
    slow = DownloadOptions(backoff_initial=5.0, backoff_max=30.0, checkpoint_seconds=0.2)
    loader = ModelDownloader(client(hub), ModelLayout(None, cache), Journal(), slow)
    with caplog.at_level(logging.INFO, logger=TRANSFER_LOG):
        path = loader.run(loader.record_for(starter(hub)), DownloadControl())
    assert path.stat().st_size == size
    assert retry_delays(caplog) == ["0.0s", "0.0s"]


def test_a_download_waits_at_most_a_minute_whatever_the_hub_asks(
    hub: HubServer, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hub.faults.statuses = [503]
    hub.faults.retry_after = ["86400"]
    patient = DownloadOptions(backoff_initial=0.01, backoff_max=3600.0, checkpoint_seconds=0.2)
    loader = ModelDownloader(client(hub), ModelLayout(None, cache), Journal(), patient)
    control = DownloadControl()

    def stop_while_waiting(event: DownloadProgress) -> None:
        if event.phase is Phase.RETRYING:
            control.cancel()

    with caplog.at_level(logging.INFO, logger=TRANSFER_LOG), pytest.raises(Cancelled):
        loader.run(loader.record_for(starter(hub)), control, stop_while_waiting)
    assert retry_delays(caplog) == ["60.0s"]


def retry_delays(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The waits the transfer logged before each retry, as logged ("0.0s")."""
    return [
        record.getMessage().rpartition("retrying in ")[2]
        for record in caplog.records
        if record.name == TRANSFER_LOG and "retrying in" in record.getMessage()
    ]


def test_persistent_server_errors_fail_and_keep_the_partial(hub: HubServer, cache: Path) -> None:
    hub.faults.stall_after = 3 * MB  # 3 MB arrive, then the hub stalls and answers only 500s
    loader = downloader(hub, cache, read_timeout=0.5)
    model = starter(hub)
    record = loader.record_for(model)

    def break_after_reset(event: DownloadProgress) -> None:
        if event.phase is Phase.RETRYING and not hub.faults.statuses:
            hub.faults.statuses = [500] * 50

    with pytest.raises(HubUnavailableError, match="partial file is kept"):
        loader.run(record, DownloadControl(), break_after_reset)
    [partial] = cache.rglob("*.incomplete")
    assert partial.stat().st_size == 3 * MB
    [saved] = Journal().all()
    assert saved.state == "failed"
    assert saved.checkpoints[STARTER_FILE] == 3 * MB


def test_file_missing_on_the_hub_fails_without_retrying(hub: HubServer, cache: Path) -> None:
    loader = downloader(hub, cache)
    record = loader.record_for(starter(hub))
    del hub.repos[STARTER_REPO].files[STARTER_FILE]
    with pytest.raises(HubNotFoundError, match="HTTP 404"):
        loader.run(record, DownloadControl())
    assert len([r for r in hub.requests if "/resolve/" in r.path]) == 1


def test_connection_reset_mid_body_resumes(hub: HubServer, cache: Path, size: int) -> None:
    hub.faults.reset_after = 20 * MB
    loader = downloader(hub, cache)
    path = loader.run(loader.record_for(starter(hub)), DownloadControl())
    assert path.stat().st_size == size
    ranges = [served.range for served in hub.byte_requests()]
    assert len(ranges) == 2 and ranges[0] is None and ranges[1] is not None
    resumed_from = int(ranges[1].removeprefix("bytes=").rstrip("-"))
    # A reset discards what sat unread in the socket buffers: that much is fetched again.
    assert 0 < resumed_from <= 20 * MB
    assert hub.bytes_served == 20 * MB + size - resumed_from


def test_stalled_connection_times_out_and_resumes(hub: HubServer, cache: Path, size: int) -> None:
    hub.faults.stall_after = 5 * MB
    loader = downloader(hub, cache, read_timeout=0.5)
    path = loader.run(loader.record_for(starter(hub)), DownloadControl())
    assert hub.faults.stalled.is_set()
    assert path.stat().st_size == size
    assert hub.byte_requests()[-1].range is not None


# --- full disks ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        point = tmp_path / f"disk-{len(mounts)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.fail(f"cannot mount a tmpfs for the full-disk test: {done.stderr.strip()}")
        mounts.append(point)
        return point

    yield mount
    for point in reversed(mounts):
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_not_enough_space_is_refused_before_any_byte(
    hub: HubServer, small_disk: Callable[[str], Path]
) -> None:
    disk = small_disk("20m")
    loader = downloader(hub, disk / "cache")
    with pytest.raises(DiskFullError, match="Not enough free space"):
        loader.run(loader.record_for(starter(hub)), DownloadControl())
    assert hub.bytes_served == 0


def test_a_disk_that_fills_up_stops_cleanly_and_resumes(
    hub: HubServer, small_disk: Callable[[str], Path], size: int
) -> None:
    disk = small_disk("160m")
    cache = disk / "cache"
    hub.faults.stall_after = 20 * MB
    loader = downloader(hub, cache)
    model = starter(hub)
    run = Background(loader, model)
    assert hub.faults.stalled.wait(30)
    # Something else fills the disk while the download is under way.
    filler = disk / "filler"
    with filler.open("wb") as handle:
        block = bytes(MB)
        try:
            while True:
                handle.write(block)
                handle.flush()
        except OSError:
            pass
    hub.faults.release.set()
    error = run.join()
    assert isinstance(error, DiskFullError), error
    assert "partial file is kept" in str(error)
    [partial] = cache.rglob("*.incomplete")
    kept = partial.stat().st_size
    assert 0 < kept < size
    [record] = Journal().all()
    assert record.checkpoints[STARTER_FILE] == kept

    filler.unlink()
    path = loader.run(loader.record_for(model), DownloadControl())
    assert path.stat().st_size == size
    assert hub.byte_requests()[-1].range == f"bytes={kept}-"
