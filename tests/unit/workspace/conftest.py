"""Fixtures for the workspace and tool tests: a small corpus on disk and a workspace over it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.resources import resource
from imprint_desktop.core.tools import Toolbox, ToolResult
from imprint_desktop.core.workspace import Workspace

SAMPLE = resource("sample-workspace")


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write(root, "alpha.md", "# Alpha\n\nThe harbour wall was rebuilt in granite.\n")
    write(root, "beta.txt", "Beta notes.\n\nThe harbour master kept a ledger of ships.\n")
    write(root, "deep/gamma.md", "# Gamma\n\nA quokka was seen near the harbour once.\n")
    return root


@pytest.fixture
def workspace(corpus: Path) -> Iterator[Workspace]:
    with Workspace(corpus) as opened:
        yield opened


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the shipped sample workspace (tests may change it)."""
    target = tmp_path / "sample"
    shutil.copytree(SAMPLE, target)
    return target


def run_tool(
    toolbox: Toolbox,
    name: str,
    arguments: str | Mapping[str, Any] | None,
    *,
    timeout: float | None = 10.0,
) -> ToolResult:
    return asyncio.run(toolbox.execute(name, arguments, timeout=timeout))
