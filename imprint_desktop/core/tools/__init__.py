"""The tools the model researches with (DESIGN §2), for the research engine.

Pure Python (no Qt). The engine's whole API is :class:`Toolbox` (``schemas``, ``kind``,
``execute``) and the result types below; see :mod:`imprint_desktop.core.tools.toolbox`.
"""

from __future__ import annotations

from imprint_desktop.core.tools.base import (
    EvidenceItem,
    ToolKind,
    ToolResult,
    ToolSpec,
    ToolStatus,
)
from imprint_desktop.core.tools.specs import SPECS
from imprint_desktop.core.tools.toolbox import Toolbox, ToolSettings

__all__ = [
    "SPECS",
    "EvidenceItem",
    "ToolKind",
    "ToolResult",
    "ToolSettings",
    "ToolSpec",
    "ToolStatus",
    "Toolbox",
]
