"""A read given up on at the research deadline leaves no worker thread running on (issue 42,
item 3): the document's reader is told, and its worker process ends with the thread.

The document is a PDF whose reader (in the isolated worker process) never returns, as a parser
stuck in a loop would; the reader's own limit is far past the test's bounds, so only the toolbox
giving up can end it in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import shutil
import threading
import time
from pathlib import Path

from imprint_desktop.core.tools import Toolbox
from imprint_desktop.core.workspace import Extracted, ExtractionLimits, Workspace
from tests.support.settings import make_config
from tests.unit.workspace import hostile_files
from tests.unit.workspace.conftest import SAMPLE

#: The reader's own limit: longer than the test waits for anything.
READER_SECONDS = 30.0
DEADLINE = 0.5
#: How long the worker thread may take to notice, once the call was given up on.
WIND_DOWN = 5.0


_SIGNAL = b"%SIGNAL "


def hanging_and_saying_so(name: str, data: bytes, max_chars: int) -> Extracted:
    """In the reader's worker: mark the file named after :data:`_SIGNAL` in ``data`` as read,
    then hang as :func:`hostile_files.hanging` does."""
    start = data.find(_SIGNAL)
    if start >= 0:
        Path(data[start + len(_SIGNAL) :].split(b"\n", 1)[0].decode()).touch()
    return hostile_files.hanging(name, data, max_chars)


def test_a_read_blocking_past_the_deadline_leaves_no_thread_running(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "stuck.pdf").write_bytes(b"%PDF-1.4\n" + hostile_files.MARKER + b"\n%%EOF\n")
    limits = ExtractionLimits(
        base_seconds=READER_SECONDS, seconds_per_mb=0.0, reader=hostile_files.hanging
    )
    shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", folder / "report.pdf")
    loop = asyncio.new_event_loop()
    try:
        with Workspace(folder, extraction=limits) as workspace:
            # A document read well first: what the reader keeps for every read (its process
            # launcher) is running before the threads are counted.
            assert workspace.read("report.pdf")[1].lines
            threads_before = set(threading.enumerate())
            toolbox = Toolbox(workspace, make_config().tools, None)
            started = time.monotonic()
            result = loop.run_until_complete(
                toolbox.execute("read_document", {"path": "stuck.pdf"}, timeout=DEADLINE)
            )
            returned = time.monotonic() - started
            assert result.status == "error" and "did not finish" in result.content
            assert returned < DEADLINE + 1.0, returned
            # Every worker thread of the loop ends: shutting the pool down waits for them, and
            # a thread still blocked in the read would hold it past the bound.
            loop.run_until_complete(asyncio.wait_for(loop.shutdown_default_executor(), WIND_DOWN))
            assert multiprocessing.active_children() == []
    finally:
        loop.close()
    left = set(threading.enumerate()) - threads_before
    assert not left, [thread.name for thread in left]


def test_a_read_stopped_while_it_blocks_leaves_no_thread_running(tmp_path: Path) -> None:
    """Stop (the caller's task cancelled) gives the read up just as the deadline does."""
    folder = tmp_path / "w"
    folder.mkdir()
    started = tmp_path / "reading"
    (folder / "stuck.pdf").write_bytes(
        b"%PDF-1.4\n" + hostile_files.MARKER + b"\n" + _SIGNAL + str(started).encode() + b"\n"
    )
    shutil.copy(SAMPLE / "reports/annual-report-1998.pdf", folder / "report.pdf")
    limits = ExtractionLimits(
        base_seconds=READER_SECONDS, seconds_per_mb=0.0, reader=hanging_and_saying_so
    )
    loop = asyncio.new_event_loop()
    try:
        with Workspace(folder, extraction=limits) as workspace:
            assert workspace.read("report.pdf")[1].lines
            threads_before = set(threading.enumerate())
            toolbox = Toolbox(workspace, make_config().tools, None)

            async def stopped_while_reading() -> None:
                read = asyncio.ensure_future(
                    toolbox.execute("read_document", {"path": "stuck.pdf"}, timeout=None)
                )
                until = time.monotonic() + WIND_DOWN
                while not started.exists():  # until the reader is at work on it
                    assert time.monotonic() < until, "the reader never started"
                    await asyncio.sleep(0.01)
                read.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await read

            loop.run_until_complete(stopped_while_reading())
            loop.run_until_complete(asyncio.wait_for(loop.shutdown_default_executor(), WIND_DOWN))
            assert multiprocessing.active_children() == []
    finally:
        loop.close()
    left = set(threading.enumerate()) - threads_before
    assert not left, [thread.name for thread in left]
