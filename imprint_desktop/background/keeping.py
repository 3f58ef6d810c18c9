"""Keeping a workspace's indexes current while the window is open (issue 44, item 2).

:class:`IndexKeeper` watches the workspace's folders (:class:`~imprint_desktop.core.workspace.
watching.FolderWatch`, ``workspace.watch``) and indexes what changed in the background, one
folder's update at a time, on a thread of its own whose scheduling priority is lowered on Linux
(:func:`lower_priority`, and so is the reader worker it starts): a folder just opened gets a
whole update (one walk, then the new and changed files), a change the watch saw gets an update of
the paths it names alone (:meth:`WorkspaceIndex.update` with ``paths``), before any whole
update: one under way gives way to it and goes on after. Each update reports its
progress and its end as :class:`~.payloads.IndexStatus` (the files done, the step, and the
changes waiting behind it: ``pending``), and what it committed is embedded after it (the
``updated`` it is given); a whole update first tells ``busy`` (the better embedder stops until
the passages are in).

A question never waits for a whole folder (:meth:`IndexKeeper.ready`): it waits while at most
:data:`WAIT_FOR_FILES` files are left to read (what was saved just before it was asked), and
otherwise is answered from the index as it stands, with a sentence saying so
(:attr:`~imprint_desktop.core.workspace.Workspace.standing`, which the search tool hands the
model, and :class:`~.payloads.IndexStanding` for the window). Without watching (the setting off,
or a watch that broke) each question checks every folder again the same way.

Everything here but :meth:`IndexKeeper._seen` (the watching thread) runs on the loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from imprint_desktop.background import payloads as p
from imprint_desktop.core.workspace.update import NOT_WAITED

if TYPE_CHECKING:
    from imprint_desktop.core.cancel import CancelToken
    from imprint_desktop.core.workspace import IndexReport, Workspace
    from imprint_desktop.core.workspace.watching import FolderWatch

log = logging.getLogger(__name__)

#: The most changed files a question waits for; with more left, it is answered from the index as
#: it stands (a file saved just before asking is read first).
WAIT_FOR_FILES = 32
#: How much lower than the window the background indexing runs (``nice`` steps, on Linux).
NICENESS = 10


def lower_priority() -> None:
    """Lower the calling thread's scheduling priority by :data:`NICENESS` where a thread has its
    own, on Linux (elsewhere a thread's id is no process's, and nothing changes). A reader worker
    process started from the thread inherits it."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):  # a container may refuse it
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)


class IndexKeeper:
    """Keeps ``workspace``'s indexes current (see the module docstring); :meth:`start` it, and
    :meth:`close` it before the workspace is closed."""

    def __init__(
        self,
        workspace: Workspace,
        emit: p.Emit,
        *,
        watch: bool,
        updated: Callable[[], None],
        busy: Callable[[], None] = lambda: None,
    ) -> None:
        self._workspace = workspace
        self._emit = emit
        self._updated = updated
        self._busy = busy
        self._want_watch = watch
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(
            1, thread_name_prefix="imprint-index", initializer=lower_priority
        )
        count = len(workspace.indexes)
        self._whole = [True] * count  # a folder not looked at since it was opened
        self._pending: list[set[str]] = [set() for _ in range(count)]
        self._running: int | None = None  # the folder being updated
        self._left: int | None = None  # its files left to read (None: still walking)
        self._other = False  # it waits for another Imprint's update of the folder
        self._running_whole = False  # it is a whole folder's update
        self._giving_way = False  # it was told to stop for files saved meanwhile
        self._job_stop = threading.Event()  # ends the update under way
        self._tick = asyncio.Event()  # set (and replaced) on every change of the above
        self._stop = threading.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: FolderWatch | None = None

    @property
    def watching(self) -> bool:
        return self._watch is not None and self._watch.running

    @property
    def watch_problem(self) -> str:
        """Why watching stopped by itself ("" while it runs, or when it was never on)."""
        return self._watch.problem if self._watch is not None else ""

    def start(self) -> None:
        """Start watching (when asked) and the first update of every folder."""
        if self._want_watch:
            from imprint_desktop.core.workspace.watching import (  # noqa: PLC0415 - loop thread
                FolderWatch,
            )

            roots = [folder.root for folder in self._workspace.folders]
            self._watch = FolderWatch(roots, self._seen, ended=self._watch_ended)
            self._watch.start()
        self._kick()

    def check_again(self) -> None:
        """Look at every folder again (a whole update each): what a question does when nothing
        watches them, and what "Index now" does."""
        self._whole = [True] * len(self._whole)
        self._kick()

    def halt(self) -> None:
        """Tell the update under way and the watch to end (any thread: the app closes)."""
        self._stop.set()
        self._job_stop.set()
        if self._watch is not None:
            self._watch.stop(timeout=0)

    def close(self) -> None:
        """Stop watching and end the update under way (it keeps what it committed)."""
        self._stop.set()
        self._job_stop.set()
        if self._watch is not None:
            self._watch.stop()
        if self._task is not None:
            self._task.cancel()
        self._executor.shutdown(wait=False)

    async def ready(self, cancel: CancelToken | None = None) -> str:
        """Wait until the index is current or until too much is left to wait for
        (:data:`WAIT_FOR_FILES`): "" when it is current, else the sentence that says what the
        question is answered from. Stop (``cancel``) ends the wait with
        :class:`~imprint_desktop.core.errors.Cancelled`; the indexing goes on."""
        if not self.watching:
            self.check_again()

        def wake() -> None:
            self._loop.call_soon_threadsafe(self._changed)

        remove = cancel.on_cancel(wake) if cancel is not None else None
        try:
            return await self._ready(cancel)
        finally:
            if remove is not None:
                remove()

    async def _ready(self, cancel: CancelToken | None) -> str:
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            tick = self._tick
            standing = self._standing()
            if standing is not None:
                self._workspace.standing = standing
                if standing:
                    self._emit(p.IndexStanding(standing))
                return standing
            await tick.wait()

    @property
    def idle(self) -> bool:
        """Nothing to index: no update under way, none waiting."""
        return self._running is None and not self.pending() and not any(self._whole)

    def pending(self) -> int:
        """Changed paths the watch saw that no update has taken yet."""
        return sum(len(paths) for paths in self._pending)

    # --- on the loop thread ---------------------------------------------------------------------

    def _standing(self) -> str | None:
        """ "" when nothing is left, a sentence when more is left than a question waits for, None
        while it cannot be told yet (a folder being walked) or little is left."""
        waiting = self.pending()
        running = self._running is not None
        if not running and not waiting and not any(self._whole):
            return ""
        if running and self._other:
            return NOT_WAITED
        if self._giving_way or (running and self._left is None):
            return None  # changed files go first; or walking a folder: how much is not known yet
        left = (self._left or 0) + waiting
        if left <= WAIT_FOR_FILES:
            return None
        return (
            f"{left:,} new or changed files are still being indexed in the background: the "
            "index is searched as it stands, without them"
        )

    def _changed(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    def _seen(self, folder: int, paths: frozenset[str]) -> None:
        """The watch saw ``paths`` change in ``folder`` (on the watching thread)."""
        if not self._stop.is_set():
            self._loop.call_soon_threadsafe(self._add, folder, paths)

    def _add(self, folder: int, paths: frozenset[str]) -> None:
        if self._stop.is_set():
            return
        if "" in paths:  # the watch could not say what changed (WHOLE)
            self._whole[folder] = True
        self._pending[folder] |= paths - {""}
        running = self._running
        if (
            running is not None
            and self._running_whole
            and (self._left is None or self._left > WAIT_FOR_FILES)
        ):
            # A folder's whole update gives way to what was just saved, and goes on after it
            # (what it committed is kept; it walks the folder again, a second for 100,000 files).
            self._giving_way = True
            self._whole[running] = True
            self._job_stop.set()
        self._changed()
        self._kick()

    def _watch_ended(self) -> None:
        """The watch broke (the limit of watches, a folder gone): said once; every question
        checks the folders from now on."""
        problem = self.watch_problem

        def tell() -> None:
            self._emit(
                p.JobProblem(
                    "Imprint stopped watching the workspace's folders"
                    + (f" ({problem})" if problem else "")
                    + ": they are brought up to date before each question instead."
                )
            )

        self._loop.call_soon_threadsafe(tell)

    def _kick(self) -> None:
        if self._stop.is_set():
            return
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._work())

    async def _work(self) -> None:
        """Update the folders, one at a time, until nothing is left."""
        while not self._stop.is_set():
            count = len(self._whole)
            # What the watch saw first: a whole folder's update waits for it.
            folder = next((n for n in range(count) if self._pending[n]), None)
            whole = folder is None
            if folder is None:
                folder = next((n for n in range(count) if self._whole[n]), None)
            if folder is None:
                break
            paths = None if whole else frozenset(self._pending[folder])
            if whole:
                self._whole[folder] = False
            self._pending[folder] = set()  # (a whole update takes them too)
            self._running, self._left = folder, None if whole else len(paths or ())
            self._running_whole, self._giving_way = whole, False
            self._job_stop = threading.Event()
            if whole:
                self._busy()
            self._changed()
            try:
                await self._update(folder, paths)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.exception("updating the index of a workspace folder failed")
                root = str(self._workspace.indexes[folder][0].root)
                self._emit(p.IndexStatus(root, 0, 0, outcome=p.Outcome.FAILED, message=str(error)))
            finally:
                self._running, self._left, self._other = None, None, False
                self._running_whole = self._giving_way = False
                self._changed()

    async def _update(self, folder: int, paths: frozenset[str] | None) -> None:
        from imprint_desktop.core.workspace import problem_summary  # noqa: PLC0415 - loop thread
        from imprint_desktop.core.workspace.update import WAITING  # noqa: PLC0415

        place, index = self._workspace.indexes[folder]
        root, emit, loop = str(place.root), self._emit, self._loop
        last = [0.0]

        def report(event: Any) -> None:  # on the indexing thread; emit is thread-safe
            loop.call_soon_threadsafe(self._progress, event.total - event.done, event.waiting)
            now = loop.time()
            if event.waiting or event.done == event.total or now - last[0] >= 0.05:
                last[0] = now
                waiting = WAITING if event.waiting else ""
                emit(
                    p.IndexStatus(
                        root,
                        event.done,
                        event.total,
                        event.path,
                        message=waiting,
                        pending=self.pending(),
                    )
                )

        work = functools.partial(
            index.update, progress=report, cancel=self._job_stop, embed=False, paths=paths
        )
        result: IndexReport = await self._loop.run_in_executor(self._executor, work)
        if result.cancelled and self._giving_way and not self._stop.is_set():
            return  # it goes on once the files saved meanwhile are read
        outcome = p.Outcome.CANCELLED if result.cancelled else p.Outcome.FINISHED
        emit(
            p.IndexStatus(
                root,
                result.documents,
                result.documents,
                outcome=outcome,
                problems=problem_summary(result.problems),
                details=tuple(f"{item.path}: {item.reason}" for item in result.problems),
                pending=self.pending(),
                more=not result.cancelled and (self._whole[folder] or bool(self._pending[folder])),
            )
        )
        if not result.cancelled:
            self._updated()

    def _progress(self, left: int, waiting: bool) -> None:
        if self._running is not None:
            self._left, self._other = (None if waiting else left), waiting
            self._changed()
