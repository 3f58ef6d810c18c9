"""End-to-end runs: the real `imprint` as a subprocess, with its own config folder."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.openai_server import openai_server

__all__ = ["openai_server"]

Imprint = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def imprint_env(isolated_dirs: Path) -> dict[str, str]:
    """The environment of the subprocess: the test's private folders, no IMPRINT_* of ours."""
    return {name: value for name, value in os.environ.items() if not name.startswith("PYTEST")}


@pytest.fixture
def scripted_first_step(imprint_env: dict[str, str]) -> None:
    """For scenarios that script every request (``pytest.mark.usefixtures`` in their module): the
    engine's own search before answering (chat.research_first) is off; test_ask_grounded.py tests
    it on its own."""
    imprint_env["IMPRINT_CHAT_RESEARCH_FIRST"] = "false"


@pytest.fixture
def imprint(imprint_env: dict[str, str]) -> Imprint:
    def run(
        *args: str, env: dict[str, str] | None = None, stdin: str = "", timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imprint_desktop", *args],
            env={**imprint_env, **(env or {})},
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )

    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Two small documents about one light: what the `imprint ask` tests research."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "keepers.md").write_text(
        "# Keepers\n\nThe last keeper of Greyness Point was Ada Quill, who left in 1971.\n\n"
        "Her logbook recorded 212 fog days in 1968.\n",
        encoding="utf-8",
    )
    (root / "signals.md").write_text(
        "# Fog signals\n\nThe diaphone at Greyness Point sounded two blasts every minute.\n",
        encoding="utf-8",
    )
    return root


def write_notes(root: Path, count: int) -> Path:
    """``count`` small notes in the new folder ``root``, each with the word "locktest" and a word
    of its own ("word7"): a folder for the tests of several processes on one index."""
    root.mkdir()
    for number in range(count):
        (root / f"n{number:03}.md").write_text(f"# Note {number}\n\nlocktest word{number}\n")
    return root
