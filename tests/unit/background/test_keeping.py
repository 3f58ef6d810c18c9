"""The background indexing's thread runs at a lower priority than the window's, and only it."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from imprint_desktop.background.keeping import NICENESS, lower_priority


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads have a priority on Linux")
def test_the_indexing_thread_alone_runs_at_a_lower_priority() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []

    def indexing() -> None:
        lower_priority()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=indexing)
    thread.start()
    thread.join(10)
    assert seen == [min(19, before + NICENESS)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
