"""Every recommended model as the real Hugging Face hub lists it (skipped without a network).

``resources/models.toml`` is written by hand; this checks it against the hub: the repository and
the file exist, the size is the exact byte count, the hub has the SHA-256 a download is verified
against, and the file's own GGUF header agrees on the attention shape (what the fit's KV-cache
estimate rests on) and the context length. Only the first half megabyte of each file is read.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from imprint_desktop.core.models import HubClient, HubConfig, RecommendedModel, load_catalogue
from imprint_desktop.core.models.gguf import parse_header_prefix
from imprint_desktop.core.models.hub import HEADER_PREFIX_BYTES
from imprint_desktop.core.models.network import DEFAULT_ENDPOINT

pytestmark = pytest.mark.integration

HUB_HOST = "huggingface.co"


def _reachable() -> bool:
    if os.environ.get("HF_HUB_OFFLINE"):
        return False
    try:
        socket.create_connection((HUB_HOST, 443), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def real_hub() -> Iterator[HubClient]:
    if not _reachable():
        pytest.skip(f"{HUB_HOST} cannot be reached from here")
    yield HubClient(HubConfig(endpoint=DEFAULT_ENDPOINT))


@pytest.mark.parametrize("model", load_catalogue(), ids=lambda model: model.id)
def test_the_entry_matches_the_hub(real_hub: HubClient, model: RecommendedModel) -> None:
    listing = real_hub.repo_models(model.repo, 8192, probe_header=False)
    found = {remote.name: remote for remote in listing.models}
    assert model.file in found, f"{model.repo} has no {model.file}; it has {sorted(found)}"
    remote = found[model.file]
    assert remote.complete and len(remote.files) == 1
    assert remote.size == model.size, f"the hub says {remote.size:,} bytes"
    assert remote.files[0].sha256, "the hub gives the SHA-256 a download is checked against"
    assert remote.quantization == model.quantization

    url = real_hub.file_url(model.repo, model.file, listing.commit)
    headers = {**real_hub.request_headers(), "Range": f"bytes=0-{HEADER_PREFIX_BYTES - 1}"}
    with real_hub.config.download_client() as client:
        response = client.get(url, headers=headers)
        response.raise_for_status()
    header = parse_header_prefix(response.content[:HEADER_PREFIX_BYTES])
    heads = header.arch_int("attention.head_count") or 1
    embedding = header.arch_int("embedding_length") or 0
    assert header.arch_int("block_count") == model.layers
    assert (header.arch_int("attention.head_count_kv") or heads) == model.kv_heads
    assert (header.arch_int("attention.key_length") or embedding // heads) == model.head_dim
    assert header.context_length == model.context_length
    assert header.kv_cache_bytes(4096) == model.kv_cache_bytes(4096)
