"""The model store: find GGUF models on the hub, download and verify them, manage installed ones.

Pure Python (no Qt), shared by the window's download workers and the ``imprint models`` command:

* :mod:`.hub` — search and file listings through huggingface-hub (:class:`HubClient`)
* :mod:`.download` — resumable, verified downloads (:class:`ModelDownloader`)
* :mod:`.library` — installed models, imports, removal, use (:class:`ModelLibrary`)
* :mod:`.layout`, :mod:`.journal` — where files live and what survives a restart
* :mod:`.gguf`, :mod:`.naming`, :mod:`.fit` — what a file is, what its name says, whether it fits
* :mod:`.machine`, :mod:`.recommended` — this computer, and the curated models judged for it
* :mod:`.gpu` — the layers of a model to put on the GPU found (``model.n_gpu_layers`` "auto")
"""

from __future__ import annotations

from imprint_desktop.core.models.download import DownloadControl, ModelDownloader
from imprint_desktop.core.models.fit import Fit, FitHint, ModelFit, Verdict, human_size
from imprint_desktop.core.models.gguf import GgufInfo, inspect_gguf
from imprint_desktop.core.models.hub import (
    HubClient,
    HubFile,
    RemoteModel,
    RepoModels,
    RepoSummary,
    SearchPage,
    Sort,
)
from imprint_desktop.core.models.journal import DownloadRecord, Journal
from imprint_desktop.core.models.layout import ModelLayout, hf_cache_dir
from imprint_desktop.core.models.library import InstalledModel, ModelLibrary, Removal, Source
from imprint_desktop.core.models.machine import Gpu, Machine
from imprint_desktop.core.models.network import HubConfig
from imprint_desktop.core.models.progress import DownloadProgress, Phase
from imprint_desktop.core.models.recommended import (
    Recommendation,
    Recommendations,
    RecommendedModel,
    Role,
    TemplateFamily,
    load_catalogue,
    recommend_here,
)
from imprint_desktop.core.models.transfer import DownloadOptions

__all__ = [
    "DownloadControl",
    "DownloadOptions",
    "DownloadProgress",
    "DownloadRecord",
    "Fit",
    "FitHint",
    "GgufInfo",
    "Gpu",
    "HubClient",
    "HubConfig",
    "HubFile",
    "InstalledModel",
    "Journal",
    "Machine",
    "ModelDownloader",
    "ModelFit",
    "ModelLayout",
    "ModelLibrary",
    "Phase",
    "Recommendation",
    "Recommendations",
    "RecommendedModel",
    "RemoteModel",
    "Removal",
    "RepoModels",
    "RepoSummary",
    "Role",
    "SearchPage",
    "Sort",
    "Source",
    "TemplateFamily",
    "Verdict",
    "hf_cache_dir",
    "human_size",
    "inspect_gguf",
    "load_catalogue",
    "recommend_here",
]
