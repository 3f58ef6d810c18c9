"""A guard against PySide6 6.12.0 losing references to ``None`` on Python 3.11.

PySide6 6.12.0 returns ``None`` from every void method (``QLabel.setText``, ``QWidget.update``,
``QTextCursor.insertText``…) without giving the caller a new reference. On Python 3.12 and later
``None`` is immortal, so nothing shows; on 3.11 each call takes one reference from ``None``, which
starts with about 5,000. A window that streams text and ticks its clocks makes that many calls in a
minute, and the process then dies with "Fatal Python error: none_dealloc" — during use or at exit.

:func:`protect_singletons` adds a very large number of references to ``None``, ``True`` and
``False`` once: they are never freed anyway, so this changes nothing but the crash. It is a no-op on
Python 3.12+. Remove it when the project requires Python 3.12 or pins a PySide6 with the fix.
"""

from __future__ import annotations

import ctypes
import sys

_EXTRA_REFERENCES = 1 << 40
_done = False


def protect_singletons() -> None:
    """Make ``None``, ``True`` and ``False`` effectively immortal (CPython < 3.12 only)."""
    global _done  # noqa: PLW0603 - once per process
    if _done or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    for singleton in (None, True, False):
        # In CPython the reference count is the first field of every object, at its id().
        ctypes.c_ssize_t.from_address(id(singleton)).value += _EXTRA_REFERENCES
    _done = True
