"""PyInstaller hook for llama-cpp-python.

``llama_cpp`` opens ``libllama`` (and ``libmtmd``) with ctypes from its own ``lib/`` folder, so
PyInstaller's import analysis never sees them. Collect that folder into ``llama_cpp/lib`` of the
bundle, where the package looks for it when frozen.

The Linux wheel ships each library three times (``libX.so``, ``libX.so.0``, ``libX.so.0.25.3``,
plain copies rather than symlinks). Keep only the names something opens: the unversioned names
ctypes asks for, and the ``.so.0`` sonames of libllama and ggml that the libraries name in their
``NEEDED`` entries (they find each other through ``RUNPATH=$ORIGIN``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from PyInstaller.utils.hooks import get_package_paths

_CTYPES_LOADED = {"libllama.so", "libmtmd.so"}
_NEEDED_SONAME = re.compile(r"lib(?:llama|ggml[\w-]*)\.so\.\d+")
_LIBRARY_SUFFIXES = {".dll", ".dylib"}


def _wanted(name: str) -> bool:
    if sys.platform.startswith("linux"):
        return name in _CTYPES_LOADED or _NEEDED_SONAME.fullmatch(name) is not None
    return Path(name).suffix in _LIBRARY_SUFFIXES


_LIB_DIR = Path(get_package_paths("llama_cpp")[1]) / "lib"
binaries = [
    (str(path), "llama_cpp/lib") for path in sorted(_LIB_DIR.iterdir()) if _wanted(path.name)
]

# The OpenAI-compatible server is a development tool of ours (integration tests), not the app.
excludedimports = ["llama_cpp.server"]
