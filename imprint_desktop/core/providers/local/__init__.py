"""Local GGUF models through llama.cpp, behind the engine's provider interface.

:func:`load_local_provider` (blocking) or :func:`open_local_provider` (async) load a model file —
the ``model.path`` setting or the starter model by default — and return a :class:`LocalProvider`.
The modules, one job each: :mod:`.loader` (checks and loading), :mod:`.template` (the sandboxed chat
template), :mod:`.sandbox` (the bounded Jinja environment it runs in, its limits, operators and
filters), :mod:`.grammar` (the grammar that keeps a model without tool support to an answer or
valid calls; reading calls is :mod:`imprint_desktop.core.providers.call_markup`'s, which loads no
llama.cpp), :mod:`.session` (prefix reuse, chunked prefill, generation, abort) and
:mod:`.provider` (the async facade).
"""

from __future__ import annotations

from imprint_desktop.core.providers.local.loader import LoadProgress
from imprint_desktop.core.providers.local.provider import (
    LocalProvider,
    load_local_provider,
    open_local_provider,
    resolve_model_path,
)

__all__ = [
    "LoadProgress",
    "LocalProvider",
    "load_local_provider",
    "open_local_provider",
    "resolve_model_path",
]
