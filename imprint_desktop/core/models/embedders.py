"""The embedding models Imprint recommends for search by meaning (``[[embedder]]`` in
``resources/models.toml``), judged for the computer at hand.

The built-in embedder works everywhere with nothing to download; one of these, run by llama.cpp in
embedding mode (``workspace.embedder``), finds more paraphrases at the cost of slower indexing. An
embedding model is small beside a chat model, so its fit is its memory and disk alone. The model
manager's *Recommended* tab lists these under the chat models, and an entry's prefixes tell the
embedder what the model was trained to see before a question and a passage.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from imprint_desktop.core import resources
from imprint_desktop.core.errors import ModelStoreError
from imprint_desktop.core.models.fit import (
    WORKING_MEMORY,
    ModelFit,
    Verdict,
    human_size,
    memory_refusal,
)
from imprint_desktop.core.models.machine import Machine

#: The context an embedder runs with: passages are shorter than this many tokens.
EMBEDDING_CONTEXT = 512


@dataclass(frozen=True)
class RecommendedEmbedder:
    id: str
    name: str
    publisher: str
    repo: str
    file: str
    quantization: str
    size: int
    parameters: float  # billions
    dimensions: int
    license: str
    query_prefix: str
    document_prefix: str
    good_at: str

    @property
    def installed_name(self) -> str:
        return f"{self.repo}/{self.file}"


_TEXT = ("id", "name", "publisher", "repo", "file", "quantization", "license", "good_at")


def load_embedders(path: Path | None = None) -> tuple[RecommendedEmbedder, ...]:
    """The ``[[embedder]]`` entries of the curated list; :class:`ModelStoreError` says what is
    wrong with one."""
    source = path or resources.resource("models.toml")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ModelStoreError(
            f"The list of recommended models ({source}) cannot be read: {error}"
        ) from error
    entries = data.get("embedder", [])
    if not isinstance(entries, list):
        raise ModelStoreError(f"{source}: [[embedder]] must be a list of tables.")
    return tuple(
        _entry(entry, f"{source}: embedder {index}") for index, entry in enumerate(entries, 1)
    )


def _entry(entry: object, label: str) -> RecommendedEmbedder:
    if not isinstance(entry, dict):
        raise ModelStoreError(f"{label} is not a table")
    values: dict[str, Any] = {"query_prefix": "", "document_prefix": "", **entry}
    problem = _problem(values)
    if problem:
        raise ModelStoreError(f"{label}: {problem}")
    values["parameters"] = float(values["parameters"])
    try:
        return RecommendedEmbedder(**values)
    except TypeError as error:  # a field too many
        raise ModelStoreError(f"{label}: {error}") from None


def _problem(values: Mapping[str, Any]) -> str:
    """What is wrong with an entry's values, or nothing."""
    for key in _TEXT:
        if not isinstance(values.get(key), str) or not values[key].strip():
            return f"{key} must be a non-empty string"
    for key in ("query_prefix", "document_prefix"):
        if not isinstance(values[key], str):
            return f"{key} must be a string"
    for key in ("size", "dimensions"):
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            return f"{key} must be a positive whole number"
    parameters = values.get("parameters")
    if isinstance(parameters, bool) or not isinstance(parameters, int | float) or parameters <= 0:
        return "parameters must be a positive number"
    if not values["file"].lower().endswith(".gguf"):
        return f"file {values['file']!r} is not a GGUF file"
    return ""


class CatalogueFile(Protocol):
    """What every entry of a curated list says of its file."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def repo(self) -> str: ...

    @property
    def file(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def quantization(self) -> str: ...


def file_fields(model: CatalogueFile) -> dict[str, object]:
    """The first fields of an entry's JSON form, the same for models and embedders."""
    return {
        "id": model.id,
        "name": model.name,
        "repo": model.repo,
        "file": model.file,
        "size": model.size,
        "size_text": human_size(model.size),
        "quantization": model.quantization,
    }


@dataclass(frozen=True)
class EmbedderRecommendation:
    model: RecommendedEmbedder
    fit: ModelFit
    installed: Path | None = None

    def to_json(self) -> dict[str, object]:
        model = self.model
        return {
            **file_fields(model),
            "dimensions": model.dimensions,
            "license": model.license,
            "publisher": model.publisher,
            "good_at": model.good_at,
            "fit": self.fit.verdict.value,
            "fit_reason": self.fit.reason,
            "memory_needed": self.fit.memory_needed,
            "installed": str(self.installed) if self.installed is not None else None,
        }


def judge_embedders(
    catalogue: Sequence[RecommendedEmbedder],
    machine: Machine,
    installed: Mapping[str, Path] | None = None,
) -> tuple[EmbedderRecommendation, ...]:
    """Each entry with its fit on ``machine``: memory and disk (an embedder is quick to run)."""
    have = installed or {}
    return tuple(
        EmbedderRecommendation(
            model,
            embedder_fit(model, machine, installed=model.installed_name in have),
            have.get(model.installed_name),
        )
        for model in catalogue
    )


def embedder_fit(model: RecommendedEmbedder, machine: Machine, *, installed: bool) -> ModelFit:
    needed = model.size + WORKING_MEMORY // 4  # a small context, a small compute graph
    if not installed and machine.disk_free is not None and model.size > machine.disk_free:
        return ModelFit(
            Verdict.DOES_NOT_FIT,
            f"Needs {human_size(model.size)} of disk space; {human_size(machine.disk_free)} is "
            "free where models are saved.",
            needed,
        )
    if (short := memory_refusal(needed, machine)) is not None:
        return short
    return ModelFit(
        Verdict.RUNS_WELL,
        f"Needs about {human_size(needed)} of memory while the workspace is indexed; indexing "
        "takes longer than with the built-in embedder.",
        needed,
    )


def prefixes_for(file_name: str, catalogue: Sequence[RecommendedEmbedder]) -> tuple[str, str]:
    """The query and document prefixes of the recommended embedder whose file is ``file_name``
    (none for a file not on the list)."""
    for model in catalogue:
        if model.file == file_name:
            return model.query_prefix, model.document_prefix
    return "", ""
