"""The download journal: what was being downloaded, so a download survives the app and the machine.

One small JSON file per download in ``<data dir>/downloads/``, written atomically whenever the state
changes and at every checkpoint. A checkpoint records the bytes of each partial file that were
flushed to disk (fsync) and the boot they were written in. After the app is killed the page cache
still holds every byte written, so the whole partial is trusted; after the *machine* restarted only
the checkpointed bytes are (a crash can leave zeros or garbage past them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from imprint_desktop.core import paths

log = logging.getLogger(__name__)

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """An identifier of this boot of the machine, or ``""`` where the system has none."""
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class DownloadRecord:
    """A download that has started and not yet finished or been cancelled."""

    download_id: str
    repo_id: str
    commit: str
    name: str
    files: tuple[FileRecord, ...]
    destination: str  # the layout root: the HF cache or the models folder
    state: str = "queued"  # queued | downloading | paused | failed
    message: str = ""
    boot: str = ""
    checkpoints: Mapping[str, int] = field(default_factory=dict)  # repo path -> synced bytes

    @property
    def total_bytes(self) -> int:
        return sum(file.size for file in self.files)

    def with_state(self, state: str, message: str = "") -> DownloadRecord:
        return replace(self, state=state, message=message)

    def with_checkpoint(self, path: str, synced: int) -> DownloadRecord:
        return replace(self, checkpoints={**self.checkpoints, path: synced}, boot=boot_id())


def download_id(repo_id: str, name: str, destination: Path) -> str:
    """Stable across runs: the same model to the same place is the same download."""
    return hashlib.sha256(f"{repo_id}\0{name}\0{destination}".encode()).hexdigest()[:20]


class Journal:
    """Reads and writes download records. Safe across threads for different downloads."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else paths.data_dir() / "downloads"

    def _file(self, download: str) -> Path:
        return self.folder / f"{download}.json"

    def save(self, record: DownloadRecord) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = asdict(record)
        target = self._file(record.download_id)
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with staged.open("w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        staged.replace(target)

    def load(self, download: str) -> DownloadRecord | None:
        try:
            data = json.loads(self._file(download).read_text(encoding="utf-8"))
            data["files"] = tuple(FileRecord(**item) for item in data["files"])
            data["checkpoints"] = dict(data.get("checkpoints") or {})
            return DownloadRecord(**data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError) as error:
            log.warning("ignoring unreadable download record %s: %s", download, error)
            return None

    def remove(self, download: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._file(download).unlink()

    def all(self) -> list[DownloadRecord]:
        if not self.folder.is_dir():
            return []
        records = (self.load(path.stem) for path in sorted(self.folder.glob("*.json")))
        return [record for record in records if record is not None]
