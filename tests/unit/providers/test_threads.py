"""How many threads llama.cpp gets: the cores other work leaves free (issue: threads that fight)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imprint_desktop.core.providers.local import loader
from tests.support.settings import make_config


@pytest.mark.parametrize(
    ("cores", "logical", "busy", "threads"),
    [
        (2, 2, 0, 2),  # an idle machine: one a core
        (2, 2, 1, 1),  # another program holds a core: do not wait for it at every barrier
        (2, 2, 5, 1),  # a crowded machine: still one
        (4, 8, 2, 4),  # hyper-threads: two busy logical CPUs leave four cores free
        (4, 8, 6, 2),
        (2, 2, None, 2),  # the platform does not tell: one a core, as before
    ],
)
def test_automatic_threads_use_the_cores_other_work_leaves_free(
    monkeypatch: pytest.MonkeyPatch, cores: int, logical: int, busy: int | None, threads: int
) -> None:
    monkeypatch.setattr(loader, "physical_cores", lambda: cores)
    monkeypatch.setattr(loader, "busy_elsewhere", lambda: busy)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(logical)))
    options = make_config({"model.n_threads": 0}).model
    assert loader.threads_for_now(options) == threads


def test_a_thread_count_that_was_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "busy_elsewhere", lambda: 1)
    assert loader.threads_for_now(make_config({"model.n_threads": 3}).model) == 3


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux tells through /proc/stat")
def test_a_program_that_keeps_a_core_busy_is_seen() -> None:
    spinner = subprocess.Popen(
        [sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert spinner.stdout is not None
    try:
        assert spinner.stdout.readline() == "spinning\n"
        busy = loader.busy_elsewhere()
        assert busy is not None and busy >= 1
    finally:
        spinner.kill()
        spinner.wait()
        spinner.stdout.close()
