"""``imprint models`` without a hub: one line on stderr, soon, and exit 1 (issue 41, item 7).

Before, a search with no network took 24 seconds of huggingface-hub's retries and printed about
twenty warnings before its one clear line. How soon is measured in the process itself
(tests/unit/models/test_hub_unreachable.py: within 3 seconds); here, that the command as a person
runs it is quiet and far from those 24 seconds, Python's start included.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Imprint
from tests.support.dead_hosts import DEAD_HOSTS

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("how", sorted(DEAD_HOSTS))
@pytest.mark.parametrize(
    ("command", "doing"),
    [
        (("models", "search", "qwen"), "search the model hub"),
        (("models", "files", "Qwen/Qwen3-4B-GGUF"), "list the files of Qwen/Qwen3-4B-GGUF"),
    ],
)
def test_without_the_hub_one_line_soon(
    imprint: Imprint, tmp_path: Path, how: str, command: tuple[str, ...], doing: str
) -> None:
    with DEAD_HOSTS[how]() as url:
        env = {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "hf-cache")}
        started = time.monotonic()
        done = imprint(*command, env=env, timeout=60)
        elapsed = time.monotonic() - started
    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"imprint: Could not {doing}: 127.0.0.1:")
    assert line.endswith("Check the network and the proxy settings.")
    assert elapsed < 10, f"{elapsed:.1f} s"
