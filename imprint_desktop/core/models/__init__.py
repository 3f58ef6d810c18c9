"""The model store: find GGUF models on the hub, download and verify them, manage installed ones.

Pure Python (no Qt), shared by the engine's download workers and the ``imprint models`` command:

* :mod:`.hub` — search and file listings through huggingface-hub (:class:`HubClient`)
* :mod:`.download` — resumable, verified downloads (:class:`ModelDownloader`)
* :mod:`.library` — installed models, imports, removal, use (:class:`ModelLibrary`)
* :mod:`.layout`, :mod:`.journal` — where files live and what survives a restart
* :mod:`.gguf`, :mod:`.naming`, :mod:`.fit` — what a file is, what its name says, whether it fits
"""

from __future__ import annotations

from imprint_desktop.core.models.download import DownloadControl, ModelDownloader
from imprint_desktop.core.models.fit import Fit, FitHint, human_size
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
from imprint_desktop.core.models.network import HubConfig
from imprint_desktop.core.models.progress import DownloadProgress, Phase
from imprint_desktop.core.models.transfer import DownloadOptions

__all__ = [
    "DownloadControl",
    "DownloadOptions",
    "DownloadProgress",
    "DownloadRecord",
    "Fit",
    "FitHint",
    "GgufInfo",
    "HubClient",
    "HubConfig",
    "HubFile",
    "InstalledModel",
    "Journal",
    "ModelDownloader",
    "ModelLayout",
    "ModelLibrary",
    "Phase",
    "RemoteModel",
    "Removal",
    "RepoModels",
    "RepoSummary",
    "SearchPage",
    "Sort",
    "Source",
    "hf_cache_dir",
    "human_size",
    "inspect_gguf",
]
