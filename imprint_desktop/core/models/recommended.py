"""The models Imprint recommends (``resources/models.toml``), judged for the computer at hand.

The list is curated by hand: instruct models from known publishers whose chat templates and
tool-call formats the local provider speaks (:class:`TemplateFamily`), in order of preference.
:func:`recommend` judges every entry with :func:`~.fit.assess_fit` and picks the *best fit* — the
first entry that runs well, or failing that the quickest one that fits at all — and two
alternatives beside it: the nearest more capable one and the nearest smaller one. The welcome, the
model manager's *Recommended* tab and ``imprint models recommended`` all show this one result.

:func:`recommend_here` reads the disk, ``/proc`` and perhaps ``nvidia-smi``: call it on a worker
thread or from the CLI.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imprint_desktop.core import resources
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import ModelStoreError
from imprint_desktop.core.models.embedders import (
    EmbedderRecommendation,
    file_fields,
    judge_embedders,
    load_embedders,
)
from imprint_desktop.core.models.fit import ModelFit, Verdict, assess_fit
from imprint_desktop.core.models.layout import ModelLayout
from imprint_desktop.core.models.library import ModelLibrary
from imprint_desktop.core.models.machine import Machine, probe_machine
from imprint_desktop.core.models.naming import quantization

SCHEMA = 1
_ID = re.compile(r"^[a-z0-9][a-z0-9.-]{0,40}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class TemplateFamily(enum.StrEnum):
    """How a model's chat template offers tools and how the model writes a call."""

    HERMES = "hermes"  # <tool_call>{"name": …, "arguments": …}</tool_call> (Qwen2.5, Hermes)
    QWEN3 = "qwen3"  # the hermes format, with a <think> block that Imprint switches off
    LLAMA3 = "llama3"  # a bare {"name": …, "parameters": …}, one call per assistant turn
    MISTRAL = "mistral"  # [TOOL_CALLS][{"name": …, "arguments": …}], 9-character call ids


@dataclass(frozen=True)
class RecommendedModel:
    """One entry of the curated list (see the field notes at the top of ``models.toml``)."""

    id: str
    name: str
    publisher: str
    repo: str
    file: str
    quantization: str
    size: int
    parameters: float  # billions
    context_length: int
    license: str
    template_family: TemplateFamily
    layers: int
    kv_heads: int
    head_dim: int
    good_at: str

    @property
    def installed_name(self) -> str:
        """The name :class:`~.library.ModelLibrary` gives this model once it is downloaded."""
        return f"{self.repo}/{self.file}"

    @property
    def bits_per_weight(self) -> float:
        return self.size * 8 / (self.parameters * 1e9)

    def kv_cache_bytes(self, n_ctx: int) -> int:
        """An f16 K and V cache for ``n_ctx`` tokens (capped at what the model was trained on)."""
        tokens = min(n_ctx, self.context_length)
        return self.layers * tokens * self.kv_heads * self.head_dim * 2 * 2


_FIELDS: Mapping[str, type | tuple[type, ...]] = {
    "id": str,
    "name": str,
    "publisher": str,
    "repo": str,
    "file": str,
    "quantization": str,
    "size": int,
    "parameters": (int, float),
    "context_length": int,
    "license": str,
    "template_family": str,
    "layers": int,
    "kv_heads": int,
    "head_dim": int,
    "good_at": str,
}


def catalogue_path() -> Path:
    return resources.resource("models.toml")


def load_catalogue(path: Path | None = None) -> tuple[RecommendedModel, ...]:
    """The curated list, checked entry by entry; :class:`ModelStoreError` says what is wrong."""
    source = path or catalogue_path()
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ModelStoreError(
            f"The list of recommended models ({source}) cannot be read: {error}"
        ) from error
    except tomllib.TOMLDecodeError as error:
        raise ModelStoreError(
            f"The list of recommended models ({source}) is not TOML: {error}"
        ) from error
    if data.get("schema") != SCHEMA:
        raise ModelStoreError(f"{source}: schema must be {SCHEMA}, not {data.get('schema')!r}.")
    entries = data.get("model")
    if not isinstance(entries, list) or not entries:
        raise ModelStoreError(f"{source} lists no [[model]] entries.")
    models: list[RecommendedModel] = []
    for index, entry in enumerate(entries, 1):
        label = f"{source}: model {index}"
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            label += f" ({entry['id']})"
        try:
            models.append(_entry(entry))
        except ValueError as error:
            raise ModelStoreError(f"{label}: {error}") from None
    for key in ("id", "installed_name"):
        seen = [getattr(model, key) for model in models]
        doubles = sorted({value for value in seen if seen.count(value) > 1})
        if doubles:
            raise ModelStoreError(f"{source}: more than one entry has {key} {doubles[0]!r}.")
    return tuple(models)


def _entry(entry: object) -> RecommendedModel:
    if not isinstance(entry, dict):
        raise ValueError("is not a table")  # noqa: TRY004 - reported as a sentence, not a type
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    for key, kind in _FIELDS.items():
        value = entry.get(key)
        if value is None:
            raise ValueError(f"{key} is missing")
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{key} must be a {_kind_name(kind)}, not {value!r}")  # noqa: TRY004
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{key} is empty")
        if isinstance(value, int | float) and value <= 0:
            raise ValueError(f"{key} must be positive, not {value!r}")
    values: dict[str, Any] = dict(entry)
    if not _ID.match(values["id"]):
        raise ValueError("id must be lower-case letters, digits, '.' and '-'")
    if not _REPO.match(values["repo"]):
        raise ValueError(f"repo {values['repo']!r} is not owner/name")
    if not values["file"].lower().endswith(".gguf") or "/" in values["file"]:
        raise ValueError(f"file {values['file']!r} is not a GGUF file at the top of the repository")
    if quantization(values["file"]) != values["quantization"]:
        raise ValueError(
            f"quantization {values['quantization']!r} differs from the file name's "
            f"{quantization(values['file'])!r}"
        )
    try:
        values["template_family"] = TemplateFamily(values["template_family"])
    except ValueError:
        families = ", ".join(family.value for family in TemplateFamily)
        raise ValueError(
            f"template_family {values['template_family']!r} is not one of {families}"
        ) from None
    values["parameters"] = float(values["parameters"])
    return RecommendedModel(**values)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return "number" if isinstance(kind, tuple) else {str: "string", int: "whole number"}[kind]


class Role(enum.Enum):
    """Why an entry is one of the three shown first."""

    BEST = "best"
    MORE_CAPABLE = "more_capable"
    LIGHTER = "lighter"
    ALSO = "also"

    @property
    def words(self) -> str:
        return {
            Role.BEST: "Best fit",
            Role.MORE_CAPABLE: "More capable, slower",
            Role.LIGHTER: "Lighter, faster",
            Role.ALSO: "Also fits",
        }[self]


@dataclass(frozen=True)
class Recommendation:
    model: RecommendedModel
    fit: ModelFit
    installed: Path | None = None  # the file, when this model is already on the computer
    role: Role | None = None

    def to_json(self) -> dict[str, object]:
        model = self.model
        return {
            **file_fields(model),
            "parameters_billions": model.parameters,
            "context_length": model.context_length,
            "license": model.license,
            "publisher": model.publisher,
            "template_family": model.template_family.value,
            "good_at": model.good_at,
            "fit": self.fit.verdict.value,
            "fit_reason": self.fit.reason,
            "memory_needed": self.fit.memory_needed,
            "on_gpu": self.fit.on_gpu,
            "role": self.role.value if self.role is not None else None,
            "installed": str(self.installed) if self.installed is not None else None,
        }


@dataclass(frozen=True)
class Recommendations:
    """Every entry judged for one computer, in the list's order, with the three picks marked."""

    machine: Machine
    n_ctx: int
    entries: tuple[Recommendation, ...] = field(default=())
    #: The embedding models for search by meaning (``workspace.embedder``), judged too.
    embedders: tuple[EmbedderRecommendation, ...] = field(default=())

    @property
    def best(self) -> Recommendation | None:
        return next((entry for entry in self.entries if entry.role is Role.BEST), None)

    @property
    def picks(self) -> tuple[Recommendation, ...]:
        """The best fit first, then its alternatives (what the welcome offers)."""
        best = self.best
        if best is None:
            return ()
        at = self.entries.index(best)
        others = sorted(  # nearest to the best fit first; the more capable one before a tie
            (i for i, entry in enumerate(self.entries) if entry.role not in (None, Role.BEST)),
            key=lambda i: (abs(i - at), i > at),
        )
        return (best, *(self.entries[i] for i in others))

    def find(self, model_id: str) -> Recommendation:
        for entry in self.entries:
            if entry.model.id == model_id:
                return entry
        ids = ", ".join(entry.model.id for entry in self.entries)
        raise ModelStoreError(f"No recommended model is called {model_id!r}; the list has {ids}.")

    def to_json(self) -> dict[str, object]:
        best = self.best
        return {
            "best": best.model.id if best is not None else None,
            "alternatives": [entry.model.id for entry in self.picks[1:]],
            "n_ctx": self.n_ctx,
            "computer": self.machine.to_json(),
            "models": [entry.to_json() for entry in self.entries],
            "embedders": [entry.to_json() for entry in self.embedders],
        }


def recommend(
    catalogue: Sequence[RecommendedModel],
    machine: Machine,
    *,
    n_ctx: int,
    time_budget: float,
    installed: Mapping[str, Path] | None = None,
) -> Recommendations:
    """Judge every entry for ``machine`` and mark the best fit and two alternatives.

    ``installed`` maps :attr:`RecommendedModel.installed_name` to the file of models already here.
    """
    have = installed or {}
    judged = [
        Recommendation(
            model,
            assess_fit(
                size=model.size,
                parameters=model.parameters,
                kv_cache_bytes=model.kv_cache_bytes(n_ctx),
                machine=machine,
                time_budget=time_budget,
                installed=model.installed_name in have,
            ),
            have.get(model.installed_name),
        )
        for model in catalogue
    ]
    roles = _roles(judged)
    entries = tuple(
        Recommendation(entry.model, entry.fit, entry.installed, roles.get(index))
        for index, entry in enumerate(judged)
    )
    return Recommendations(machine, n_ctx, entries)


def _roles(judged: Sequence[Recommendation]) -> dict[int, Role]:
    """The best fit and two alternatives: the nearest better-ranked one, the nearest smaller one.

    The list is in order of preference, so an entry ranked above the best fit is more capable but
    did not run well here (slower); one ranked below and smaller is lighter and faster. When one
    of those is missing, the next nearest of either kind fills in.
    """
    fitting = [i for i, entry in enumerate(judged) if entry.fit.verdict is not Verdict.DOES_NOT_FIT]
    if not fitting:
        return {}
    well = [i for i in fitting if judged[i].fit.verdict is Verdict.RUNS_WELL]
    best = (
        well[0] if well else min(fitting, key=lambda i: judged[i].fit.reply_seconds or float("inf"))
    )
    size = judged[best].model.size
    above = [i for i in reversed(fitting) if i < best]  # nearest first
    lighter = [i for i in fitting if i > best and judged[i].model.size < size]
    other = [i for i in fitting if i > best and i not in lighter]
    roles = {best: Role.BEST}
    for queue, role in ((above, Role.MORE_CAPABLE), (lighter, Role.LIGHTER)):
        if queue:
            roles[queue.pop(0)] = role
    fill = [(i, Role.MORE_CAPABLE) for i in above] + [(i, Role.LIGHTER) for i in lighter]
    fill += [(i, Role.ALSO) for i in other]
    for index, role in fill:
        if len(roles) >= 3:
            break
        roles[index] = role
    return roles


MachineProbe = Callable[[Path, int], Machine]


def _probe(folder: Path, threads: int) -> Machine:
    return probe_machine(folder, threads=threads)


def recommend_here(
    config: Config,
    environ: Mapping[str, str] | None = None,
    *,
    probe: MachineProbe = _probe,
    catalogue: Sequence[RecommendedModel] | None = None,
) -> Recommendations:
    """:func:`recommend` for this computer, the settings' context window and its models folder."""
    layout = ModelLayout.from_config(config.downloads, environ)
    machine = probe(layout.root, config.model.n_threads)
    installed = {
        model.name: model.path
        for model in ModelLibrary(layout).installed()
        if model.usable and model.repo_id
    }
    found = recommend(
        catalogue if catalogue is not None else load_catalogue(),
        machine,
        n_ctx=config.model.n_ctx,
        time_budget=float(config.chat.research_timeout_sec),
        installed=installed,
    )
    embedders = judge_embedders(load_embedders(), machine, installed)
    return dataclasses.replace(found, embedders=embedders)
