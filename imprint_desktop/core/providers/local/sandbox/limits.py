"""How much work a chat template may do, and how the size of what it makes is estimated.

The limits of :mod:`.environment` in one place, with the two measures every check shares:
:func:`weight` (about how long a value is as text, counted cheaply and only until it passes the
limit) and :func:`refuse_if_over`, which raises :class:`TemplateLimitError`, a
:class:`~jinja2.sandbox.SecurityError`: a template that asks for that much is hostile, not broken.
:func:`bounded_list` collects an iterable the template hands over, refused as soon as it grows too
big, so no check has to make the whole list first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.utils import Cycler, Joiner, Namespace

#: The longest text (in characters) or the biggest structure a template may make in one operation.
MAX_VALUE = 4 * 1024 * 1024
#: All the text one render may produce, counting text captured into variables.
MAX_OUTPUT = 4 * MAX_VALUE
#: The most items a template may make a list of; the longest ``range``.
MAX_ITEMS = 100_000
MAX_RANGE = 10_000
#: Loop iterations plus calls in one render: real templates take a few thousand.
MAX_STEPS = 2_000_000
MAX_CALL_DEPTH = 64
#: Widths, indents, exponents and the digits of a number: far above any real use.
MAX_WIDTH = 10_000
#: A reference inside a list or dict counts as this many characters when sizing a structure.
_REFERENCE = 8


class TemplateLimitError(SecurityError):
    """The template asked for more time or memory than any real chat template needs."""


def weight(value: Any, limit: int = MAX_VALUE) -> int:
    """About how many characters ``str(value)`` has, counted only until it passes ``limit``.

    Cheap on purpose: strings count their length, containers their items plus a few characters per
    reference, so sizing a structure visits at most ``limit / 8`` items. Jinja's ``namespace``,
    ``cycler`` and ``joiner`` count what they hold: a chain of them, each holding the one before,
    is as big as everything in it.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + _REFERENCE * len(item)
            if total <= limit:
                stack.extend(item)
        elif isinstance(item, Mapping):
            total += 2 + 2 * _REFERENCE * len(item)
            if total <= limit:
                stack.extend(itertools.chain.from_iterable(item.items()))
        elif is_int(item):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, Namespace | Cycler | Joiner):
            total += _REFERENCE
            stack.append(_held(item))
        else:
            total += _REFERENCE
        if total > limit:
            return total
    return total


def _held(holder: Namespace | Cycler | Joiner) -> Any:
    if isinstance(holder, Namespace):
        return object.__getattribute__(holder, "_Namespace__attrs")
    if isinstance(holder, Cycler):
        return holder.items
    return holder.sep


def refuse_if_over(size: int, what: str, limit: int = MAX_VALUE) -> None:
    if size > limit:
        raise TemplateLimitError(f"{what} would make about {size:,} (the limit is {limit:,})")


def is_int(value: Any) -> bool:
    """An integer, not a bool: the values a width, a count or an exponent is checked as."""
    return isinstance(value, int) and not isinstance(value, bool)


def bounded_list(items: Iterable[Any], what: str) -> list[Any]:
    """``list(items)``, refused as soon as it passes :data:`MAX_ITEMS` items or
    :data:`MAX_VALUE` in size."""
    collected: list[Any] = []
    size = 0
    for item in items:
        size += _REFERENCE + weight(item, MAX_VALUE - size)
        refuse_if_over(size, what)
        collected.append(item)
        refuse_if_over(len(collected), f"{what} (items)", MAX_ITEMS)
    return collected
