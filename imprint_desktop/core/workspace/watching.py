"""Watching a workspace's folders: which paths changed, as soon as they settle.

:class:`FolderWatch` watches every folder of a workspace, all the way down, in a thread of its own,
with ``watchfiles`` (the Rust ``notify`` library: inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows): each folder the index walks is watched on its own, never one
behind a link, and a folder that appears is taken in by watching again (its files are told with it:
an update of a folder's path reads everything under it; a file changed elsewhere in the moment the
folders are watched again, tens of milliseconds, is missed until the folder's next whole update).
Changes are gathered until none came for :data:`SETTLE_MS` (an editor's save is a write, a rename
and a delete), then handed over as one batch: the folder's index and the paths that changed in it,
in the workspace's text form (:func:`~.files.name_text`), folder-relative. A rename arrives as both
its paths in one batch, so the update that follows sees the file leave one path and appear at the
other and keeps its passages (:mod:`.update`). What the index never reads (hidden names, tooling
folders) is left out here already.

On Linux each watched folder takes one inotify watch of the person's
``fs.inotify.max_user_watches`` (files take none): ``bench/bench_folders.py`` measures a
100,000-file tree. A watch that fails (a name that is not UTF-8, which the library cannot hand
over; a folder gone) starts again and has every folder looked at whole (:data:`WHOLE`); one that
keeps failing (the limit of watches reached) ends with :attr:`FolderWatch.problem` set and
``ended`` called: the folders are then brought up to date before each question, as without
watching.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from imprint_desktop.core.workspace.files import (
    SKIPPED_FOLDERS,
    is_hidden,
    is_link,
    is_stream_name,
    name_text,
)

log = logging.getLogger(__name__)

#: How long changes must have stopped coming before they are handed over (milliseconds).
SETTLE_MS = 200

#: How long the watch waits for a change before it looks at its stop event again (milliseconds).
_QUIET_MS = 250

Changed = Callable[[int, frozenset[str]], None]
"""Told, on the watching thread, the folder (its place in the roots given) and the paths that
changed in it (:data:`WHOLE` when the watch cannot say which)."""

#: The paths told when the watch cannot say what changed (it failed and started again, for one on
#: a name it could not decode): the whole folder is to be looked at.
WHOLE = frozenset({""})
#: How often in a minute the watch starts again after a failure before it gives up.
_RETRIES = 5


class FolderWatch:
    """A watch of ``roots`` (resolved folders, none inside another) that tells ``changed`` what
    changed, until :meth:`stop`. ``ended`` is called once when the watch ends by itself (a
    problem: :attr:`problem`)."""

    def __init__(
        self,
        roots: Sequence[Path],
        changed: Changed,
        *,
        ended: Callable[[], None] | None = None,
    ) -> None:
        self._roots = [str(root) for root in roots]
        self._changed = changed
        self._ended = ended
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="imprint-watch", daemon=True)
        #: Why the watch ended by itself ("" while it runs, or when it was stopped).
        self.problem = ""

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the watch; the thread ends within a step (50 ms)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wait_ready(self, timeout: float) -> bool:
        """Wait until every folder is watched (a change made after this is seen); False when
        ``timeout`` passed first, or the watch ended."""
        self._ready.wait(timeout)
        return self._ready.is_set() and self.running

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        import watchfiles  # noqa: PLC0415 - a native module, loaded when watching starts

        failures: list[float] = []
        while not self._stop.is_set():
            try:
                if not self._watch(watchfiles, self._folders()):
                    break  # stopped
                self._ready.clear()  # watching again, a folder more
            except Exception as error:  # a name it cannot decode, the limit of watches, …
                log.warning("watching the workspace's folders failed: %s", error)
                now = time.monotonic()
                failures = [*(when for when in failures if now - when < 60), now]
                if len(failures) > _RETRIES:
                    self.problem = str(error) or type(error).__name__
                    break
                # What changed meanwhile is not known: every folder is looked at whole.
                self._ready.clear()
                for number in range(len(self._roots)):
                    self._changed(number, WHOLE)
        self._ready.set()  # (the watch ended: nobody waits for it any longer)
        if self._ended is not None and not self._stop.is_set():
            self._ended()

    def _folders(self) -> list[str]:
        """Every folder the index walks (:func:`~.files.scan`'s rules): the roots and their
        folders, never through a link, a hidden name or a tooling folder. Each is watched alone:
        the library, told to watch a tree, would follow its links (a link to ``/`` would watch
        the whole disk). A folder whose name is not UTF-8 is left to its parent's watch (which
        sees it come and go) and to whole updates."""
        found: list[str] = []
        for root in self._roots:
            stack = [root]
            while stack:
                folder = stack.pop()
                found.append(folder)
                try:
                    with os.scandir(folder) as entries:
                        listed = list(entries)
                except OSError:
                    continue
                for entry in listed:
                    name = entry.name
                    if is_hidden(name) or is_stream_name(name) or name in SKIPPED_FOLDERS:
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if is_link(info) or not stat.S_ISDIR(info.st_mode):
                        continue
                    if name_text(entry.path) == entry.path:  # (not UTF-8: see above)
                        stack.append(entry.path)
        return found

    def _watch(self, watchfiles: Any, folders: list[str]) -> bool:
        """Watch ``folders`` until stopped (False) or until a folder appears, which the watch
        must take in (True)."""
        new: set[str] = set()
        for batch in watchfiles.watch(
            *folders,
            watch_filter=self._wanted,
            debounce=SETTLE_MS,
            step=50,
            stop_event=self._stop,
            # An empty batch after a quiet quarter second: the first says the watches are in
            # place.
            rust_timeout=_QUIET_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            ignore_permission_denied=True,
            recursive=False,
        ):
            self._ready.set()
            by_folder: dict[int, set[str]] = {}
            for _, path in batch:
                found = self._place(path)
                if found is not None:
                    by_folder.setdefault(found[0], set()).add(found[1])
                    if _is_folder(path):
                        new.add(path)
            for folder, paths in by_folder.items():
                self._changed(folder, frozenset(paths))
            if new:
                return True
        return False

    def _place(self, path: str) -> tuple[int, str] | None:
        """The folder ``path`` is in and its path there, in the text form, or None for a path
        the index never reads."""
        best = -1
        for number, root in enumerate(self._roots):
            inside = path.startswith(root) and path[len(root) : len(root) + 1] in ("/", "\\")
            if inside and (best < 0 or len(root) > len(self._roots[best])):
                best = number
        if best < 0:
            return None
        parts = Path(path[len(self._roots[best]) + 1 :]).parts
        if not parts or any(is_hidden(part) for part in parts):
            return None
        if any(part in SKIPPED_FOLDERS for part in parts):
            return None
        return best, name_text("/".join(parts))

    def _wanted(self, change: object, path: str) -> bool:
        return self._place(path) is not None


def _is_folder(path: str) -> bool:
    """Is ``path`` a folder now (not a link to one)?"""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
