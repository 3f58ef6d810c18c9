"""The tools the model researches with (DESIGN §2), for the research engine.

Pure Python (no Qt). The engine's whole API is :class:`Toolbox` (``schemas``, ``kind``,
``needs_consent``, ``execute``) and the result types below; see
:mod:`imprint_desktop.core.tools.toolbox`. The tools' declarations and wording (:mod:`.specs`,
:mod:`.words`) load with the window; the toolbox, which loads the HTTP client and the workspace,
only when it is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imprint_desktop.core.tools.specs import SPECS
from imprint_desktop.core.tools.tool import (
    EvidenceItem,
    ToolKind,
    ToolResult,
    ToolSpec,
    ToolStatus,
)

if TYPE_CHECKING:
    from imprint_desktop.core.tools.toolbox import Toolbox

__all__ = [
    "SPECS",
    "EvidenceItem",
    "ToolKind",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "Toolbox",
]


def __getattr__(name: str) -> Any:
    if name == "Toolbox":
        from imprint_desktop.core.tools import toolbox  # noqa: PLC0415 - loads httpx

        return getattr(toolbox, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
