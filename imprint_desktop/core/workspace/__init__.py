"""A workspace: the person's folder of documents, its full-text index, and safe access to its files.

Pure Python (no Qt), shared by the research engine's tools, the GUI and ``imprint workspace``.
"""

from __future__ import annotations

from imprint_desktop.core.workspace.database import index_path_for
from imprint_desktop.core.workspace.extract import Extracted, Format, extract
from imprint_desktop.core.workspace.files import clean_relative, read_inside, resolve_inside
from imprint_desktop.core.workspace.index import (
    DEFAULT_MAX_FILE_BYTES,
    DocumentInfo,
    IndexProblem,
    IndexProgress,
    IndexReport,
    SearchHit,
    WorkspaceIndex,
)
from imprint_desktop.core.workspace.isolation import ExtractionLimits
from imprint_desktop.core.workspace.workspace import Workspace

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DocumentInfo",
    "Extracted",
    "ExtractionLimits",
    "Format",
    "IndexProblem",
    "IndexProgress",
    "IndexReport",
    "SearchHit",
    "Workspace",
    "WorkspaceIndex",
    "clean_relative",
    "extract",
    "index_path_for",
    "read_inside",
    "resolve_inside",
]
