"""The download queue's rows: what each event does to a download's row, without threads or Qt."""

from __future__ import annotations

from imprint_desktop.background.downloads.book import DownloadBook, DownloadState, DownloadTotals
from imprint_desktop.core.models import DownloadProgress, DownloadRecord, Phase
from imprint_desktop.core.models.journal import FileRecord

MB = 1 << 20


def record(ident: str = "d1", state: str = "queued", message: str = "") -> DownloadRecord:
    files = (FileRecord("a.gguf", 60 * MB, "0" * 64), FileRecord("b.gguf", 40 * MB, "1" * 64))
    return DownloadRecord(
        ident, "org/Model-GGUF", "c0ffee", "model.Q4_K_M", files, "/cache", state, message
    )


def progress(done: int, rate: float, phase: Phase = Phase.DOWNLOADING) -> DownloadProgress:
    return DownloadProgress("d1", done, 100 * MB, rate, eta=12.0, phase=phase, detail="")


def test_a_queued_download_runs_and_is_verified() -> None:
    book = DownloadBook()
    item, known = book.queue(record())
    assert not known
    assert (item.repo_id, item.name, item.total_bytes) == (
        "org/Model-GGUF",
        "model.Q4_K_M",
        100 * MB,
    )
    assert item.state is DownloadState.QUEUED and item.active

    running = book.progressed("d1", progress(25 * MB, 2.0 * MB))
    assert running.state is DownloadState.DOWNLOADING
    assert (running.done_bytes, running.rate, running.eta) == (25 * MB, 2.0 * MB, 12.0)
    assert book.totals() == DownloadTotals(1, done_bytes=25 * MB, total_bytes=100 * MB, rate=2 * MB)

    done = book.finished("d1", "/cache/model.Q4_K_M.gguf")
    assert done.state is DownloadState.DONE and done.phase is Phase.DONE
    assert (done.done_bytes, done.rate, done.eta) == (100 * MB, 0.0, None)
    assert (done.message, done.path) == ("Verified", "/cache/model.Q4_K_M.gguf")
    assert book.totals() == DownloadTotals(active=0, done_bytes=0, total_bytes=0, rate=0)
    assert book.items() == [done] and book.item("d1") == done


def test_paused_and_failed_downloads_stop_counting_and_keep_their_progress() -> None:
    book = DownloadBook()
    book.queue(record())
    book.progressed("d1", progress(30 * MB, 1.0 * MB))
    paused = book.paused("d1")
    assert (paused.state, paused.message, paused.done_bytes) == (
        DownloadState.PAUSED,
        "Paused",
        30 * MB,
    )
    assert (paused.rate, paused.eta, paused.active) == (0.0, None, False)

    again, known = book.queue(record())
    assert known, "the same download started again"
    assert (again.state, again.message, again.done_bytes) == (DownloadState.QUEUED, "", 30 * MB)

    failed = book.failed("d1", "The hub answered 503.")
    assert (failed.state, failed.message, failed.active) == (
        DownloadState.FAILED,
        "The hub answered 503.",
        False,
    )
    requeued = book.requeue("d1")
    assert (requeued.state, requeued.message) == (DownloadState.QUEUED, "")


def test_downloads_a_previous_run_left_come_back_once() -> None:
    book = DownloadBook()
    paused = book.restore(record("p1"), 10 * MB)
    failed = book.restore(record("f1", state="failed", message="Disk full."), 5 * MB)
    assert paused is not None and failed is not None
    assert (paused.state, paused.message, paused.done_bytes) == (
        DownloadState.PAUSED,
        "Paused; resume to continue",
        10 * MB,
    )
    assert (failed.state, failed.message) == (DownloadState.FAILED, "Disk full.")
    assert book.restore(record("p1"), 10 * MB) is None, "a row the queue shows is not restored"
    assert [item.download_id for item in book.items()] == ["p1", "f1"]


def test_a_forgotten_download_gives_back_its_record_to_discard() -> None:
    book = DownloadBook()
    queued = record()
    book.queue(queued)
    assert book.record("d1") == queued
    assert book.forget("d1") == queued
    assert book.items() == [] and book.record("d1") is None
    assert book.forget("d1") is None
