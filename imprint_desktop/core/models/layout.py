"""Where model files live on disk: the Hugging Face cache layout, or ``downloads.models_dir``.

By default downloads go into the Hugging Face cache exactly as huggingface-hub lays it out::

    <cache>/models--<owner>--<name>/blobs/<sha256>                     the bytes
    <cache>/models--<owner>--<name>/snapshots/<commit>/<file.gguf>     a relative symlink to them
    <cache>/models--<owner>--<name>/refs/main                          the commit ``main`` was
    <cache>/.locks/models--<owner>--<name>/<sha256>.lock               held while writing

so a model fetched here is found by every other tool that reads the cache, and one they fetched is
offered here. The partial file is ``blobs/<sha256>.incomplete``; the lock is huggingface-hub's own,
so the two never write the same blob at once. With ``downloads.models_dir`` set, files go to
``<dir>/<owner>/<name>/<file.gguf>`` (the layout LM Studio uses) with ``<file>.part`` while partial.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from imprint_desktop.core import paths
from imprint_desktop.core.config import DownloadsConfig


def hf_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache, resolved as huggingface-hub resolves it (read at call time)."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    cache_home = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache_home).expanduser() / "huggingface" / "hub"


def repo_folder(repo_id: str) -> str:
    return "--".join(["models", *repo_id.split("/")])


@dataclass(frozen=True)
class FileTarget:
    """Where one file of a download is written while partial and where it ends up."""

    repo_id: str
    path: str  # the path inside the repository
    commit: str
    sha256: str
    size: int
    final: Path  # what llama.cpp opens (in the cache, the snapshot symlink)
    partial: Path
    lock: Path
    blob: Path | None  # the cache blob the symlink points to; None outside the cache


@dataclass(frozen=True)
class ModelLayout:
    """The download destination chosen by settings; frozen, so workers can share it."""

    models_dir: Path | None
    cache_dir: Path

    @classmethod
    def from_config(
        cls, settings: DownloadsConfig, environ: Mapping[str, str] | None = None
    ) -> ModelLayout:
        """``downloads.models_dir``, else the Hugging Face cache ``environ`` names."""
        folder = settings.models_dir
        return cls(Path(folder).expanduser() if folder else None, hf_cache_dir(environ))

    @property
    def root(self) -> Path:
        return self.models_dir if self.models_dir is not None else self.cache_dir

    def target(self, repo_id: str, path: str, commit: str, sha256: str, size: int) -> FileTarget:
        if self.models_dir is None:
            repo = self.cache_dir / repo_folder(repo_id)
            blob = repo / "blobs" / sha256
            return FileTarget(
                repo_id,
                path,
                commit,
                sha256,
                size,
                final=repo / "snapshots" / commit / path,
                partial=blob.with_name(f"{sha256}.incomplete"),
                lock=self.cache_dir / ".locks" / repo_folder(repo_id) / f"{sha256}.lock",
                blob=blob,
            )
        final = self.models_dir.joinpath(*repo_id.split("/"), *path.split("/"))
        key = hashlib.sha256(str(final).encode()).hexdigest()[:24]
        return FileTarget(
            repo_id,
            path,
            commit,
            sha256,
            size,
            final=final,
            partial=final.with_name(final.name + ".part"),
            lock=paths.data_dir() / "downloads" / "locks" / f"{key}.lock",
            blob=None,
        )

    def finalize(self, target: FileTarget) -> Path:
        """Move a verified partial into place (and link it into the snapshot); returns the path."""
        target.final.parent.mkdir(parents=True, exist_ok=True)
        if target.blob is None:
            target.partial.replace(target.final)
            return target.final
        target.partial.replace(target.blob)
        self.link_snapshot(target)
        return target.final

    def link_snapshot(self, target: FileTarget) -> None:
        """Point the snapshot path at the blob and record ``refs/main``, as huggingface-hub does."""
        assert target.blob is not None
        target.final.parent.mkdir(parents=True, exist_ok=True)
        relative = os.path.relpath(target.blob, target.final.parent)
        with contextlib.suppress(FileNotFoundError):
            target.final.unlink()
        try:
            target.final.symlink_to(relative)
        except OSError:
            # No symlinks (Windows without developer mode): huggingface-hub then keeps a copy.
            shutil.copyfile(target.blob, target.final)
        ref = target.blob.parent.parent / "refs" / "main"
        ref.parent.mkdir(parents=True, exist_ok=True)
        staged = ref.with_name(f"main.{os.getpid()}.tmp")
        staged.write_text(target.commit)
        staged.replace(ref)


def quarantine(path: Path, reason: str) -> Path:
    """Move a file that failed verification out of the way, beside a note saying why.

    Quarantined files are kept (not deleted) so a person or a bug report can look at them; they live
    in ``<data dir>/quarantine`` where nothing offers them as models.
    """
    folder = paths.data_dir() / "quarantine"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    destination = folder / f"{stamp}-{path.name}"
    shutil.move(path, destination)
    destination.with_name(destination.name + ".txt").write_text(reason + "\n", encoding="utf-8")
    return destination
