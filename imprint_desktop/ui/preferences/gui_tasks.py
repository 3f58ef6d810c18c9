"""Short asynchronous work started from a window, run on the GUI thread's qasync loop.

The app runs an asyncio loop on the GUI thread (:mod:`imprint_desktop.app`, DESIGN §6) for short
work a window starts and waits on without blocking, such as asking the keyring whether a key is
stored. A window that starts such coroutines owns one :class:`GuiTasks`, which

* keeps a strong reference to every task until it ends: asyncio (and qasync 0.28) hold only weak
  ones, and a task nobody holds can be collected in the middle of an ``await``;
* cancels them all when the window closes (:meth:`GuiTasks.cancel_all`), so no task touches a
  window that is gone;
* turns an error no one expected into a sentence the window shows (the log keeps the detail).

A blocking call inside such a coroutine goes through :func:`off_thread`. It is not
``asyncio.to_thread``: qasync's default executor is a pool of QThreads joined when the loop
closes, so a call that never returns (a locked keyring waiting for its unlock prompt) would hold
up quitting. :func:`off_thread` runs the call on a daemon thread instead and, when the awaiting
task is cancelled, drops whatever the call returns later.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class GuiTasks:
    """The coroutines one window started: held, cancelled with the window, errors in words."""

    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[None], tuple[str, Callable[[str], None]]] = {}

    def start(
        self, work: Coroutine[Any, Any, None], *, what: str, failed: Callable[[str], None]
    ) -> asyncio.Task[None]:
        """Run ``work`` on the GUI thread's loop. Should it raise, ``failed`` gets a sentence
        saying that Imprint could not ``what`` (e.g. "check the keyring")."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks[task] = (what, failed)
        task.add_done_callback(self._ended)
        return task

    @property
    def idle(self) -> bool:
        """No task of this window is running (or still winding down after a cancel)."""
        return not self._tasks

    def cancel_all(self) -> None:
        """The window is closing: every task stops at its next ``await``."""
        for task in list(self._tasks):
            task.cancel()

    def _ended(self, task: asyncio.Task[None]) -> None:
        what, failed = self._tasks.pop(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("could not %s", what, exc_info=error)
            failed(
                f"Imprint could not {what}: something went wrong inside it "
                f"({type(error).__name__}). Try again; if it keeps happening, report it."
            )


async def off_thread(call: Callable[[], T], *, name: str) -> T:
    """``call()`` on a daemon thread named ``name``, awaited on the GUI thread's loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():  # done: the awaiting task was cancelled, nobody wants the answer
            outcome()

    def run() -> None:
        try:
            result = call()
        except BaseException as error:  # handed to the awaiting task, which decides
            outcome = functools.partial(future.set_exception, error)
        else:
            outcome = functools.partial(future.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app has quit
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
