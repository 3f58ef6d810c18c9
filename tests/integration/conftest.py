"""Fixtures of the integration tests: scripted OpenAI-compatible servers and the real one, and
the workspaces the engine scenarios research."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint_desktop.core.workspace import Workspace
from tests.support.llama_server import real_llama_server
from tests.support.openai_server import openai_server
from tests.support.remote_reply import HARBOUR, KEEPERS, LIGHTS, lighthouse_text, open_workspace

__all__ = ["library", "openai_server", "real_llama_server", "workspace"]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """Two short documents: the harbour light and its keepers."""
    with open_workspace(
        tmp_path / "docs", {"harbour.md": HARBOUR, "keepers.md": KEEPERS}
    ) as opened:
        yield opened


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Workspace]:
    """Sixteen distinct documents, one per light in :data:`LIGHTS`."""
    files = {f"{name.lower()}.md": lighthouse_text(i, name) for i, name in enumerate(LIGHTS)}
    with open_workspace(tmp_path / "docs", files) as opened:
        yield opened
