"""A template's operators and text methods, checked before they do their work.

The sandbox intercepts every arithmetic operator and every call; before Python computes
``10 ** 10 ** 10``, ``'x' * 10 ** 10``, ``'%99999999s' % x`` or ``'{:>99999999}'.format(x)`` —
each a line of template asking for hours or gigabytes — the size of the result is estimated here
from the operands and refused when it is over its limit (:mod:`.sandbox_limits`). The text methods
that can make text much longer than their input (``center``, ``replace``, ``join``, ``format``…)
get a checked stand-in (:func:`bounded_method`); the filters of the same name reuse these checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from imprint_desktop.core.providers.local.sandbox_limits import (
    MAX_ITEMS,
    MAX_WIDTH,
    TemplateLimitError,
    bounded_list,
    is_int,
    refuse_if_over,
    weight,
)

#: The operators the sandbox intercepts (which also keeps the compiler from folding them).
ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_WIDTH = re.compile(r"\d{5,}")


# --- operators ----------------------------------------------------------------------------------


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``left operator right`` when its result would be too big to make."""
    if operator == "**":
        _check_power(left, right)
    elif operator == "*":
        _check_product(left, right)
    elif operator == "+":
        if isinstance(left, str | bytes | list | tuple) and isinstance(right, type(left)):
            refuse_if_over(weight(left) + weight(right), "'+'")
    elif operator == "%" and isinstance(left, str | bytes):
        check_printf(left, right)


def _check_power(base: Any, exponent: Any) -> None:
    if is_int(base) and is_int(exponent):
        if exponent > 0 and abs(base) > 1:
            refuse_if_over(exponent * abs(base).bit_length() // 3, "'**' (digits)", MAX_WIDTH)
    elif isinstance(exponent, int | float) and abs(exponent) > MAX_WIDTH:
        raise TemplateLimitError(f"'**' with an exponent of {exponent!r}")


def _check_product(left: Any, right: Any) -> None:
    if is_int(left) and is_int(right):
        digits = (left.bit_length() + right.bit_length()) // 3
        refuse_if_over(digits, "'*' (digits)", MAX_WIDTH)
        return
    sequence, count = (left, right) if is_int(right) else (right, left)
    if isinstance(sequence, str | bytes | list | tuple) and is_int(count) and count > 0:
        refuse_if_over(weight(sequence) * count, "'*'")
        if isinstance(sequence, list | tuple):
            refuse_if_over(len(sequence) * count, "'*' (items)", MAX_ITEMS)


def check_printf(template: str | bytes, values: Any) -> None:
    """Refuse ``template % values`` (or the ``format`` filter) when a width or the result is too
    big."""
    text = template if isinstance(template, str) else template.decode("latin-1")
    arguments = values if isinstance(values, tuple) else (values,)
    for width, precision in _PRINTF_SPEC.findall(text):
        for number in (width, precision):
            if number == "*":
                if any(is_int(value) and abs(value) > MAX_WIDTH for value in arguments):
                    raise TemplateLimitError("a '%' format with a huge width")
            elif number:
                refuse_if_over(int(number), "a '%' format width", MAX_WIDTH)
    fields = text.count("%")
    refuse_if_over(len(text) + fields * weight(values), "a '%' format")


# --- text methods -------------------------------------------------------------------------------

_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


def bounded_method(obj: Any) -> Callable[..., Any] | None:
    """A checked stand-in for a text method that can make text much longer than its input."""
    target = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format in a function
    owner = getattr(target, "__self__", None)
    if not isinstance(owner, str | bytes):
        return None
    name = getattr(target, "__name__", "")
    stand_ins: dict[str, Callable[..., Any]] = {
        "expandtabs": lambda tabsize=8: _expanded(owner, tabsize),
        "replace": lambda old, new, count=-1: replaced(owner, old, new, count),
        "join": lambda items: _joined(owner, items),
        "translate": lambda table: _translated(owner, table),
        "format": lambda *args, **kwargs: _formatted(obj, owner, args, kwargs),
        "format_map": lambda *args, **kwargs: _formatted(obj, owner, args, kwargs),
    }
    if name in _WIDTH_METHODS:
        return lambda width, *rest: _widened(obj, owner, width, rest)
    return stand_ins.get(name)


def _widened(method: Any, text: str | bytes, width: Any, rest: tuple[Any, ...]) -> Any:
    if is_int(width):
        refuse_if_over(max(len(text), width), "padding text")
    return method(width, *rest)


def _expanded(text: Any, tabsize: Any) -> Any:
    if is_int(tabsize):
        tabs = text.count("\t" if isinstance(text, str) else b"\t")
        refuse_if_over(len(text) + tabs * max(tabsize, 0), "expandtabs")
    return text.expandtabs(tabsize)


def replaced(text: Any, old: Any, new: Any, count: Any = -1) -> Any:
    """``text.replace(old, new, count)``, refused first when the result would be too long."""
    if isinstance(old, type(text)) and isinstance(new, type(text)) and is_int(count):
        found = text.count(old) if old else len(text) + 1
        if count >= 0:
            found = min(found, count)
        refuse_if_over(len(text) + found * max(len(new) - len(old), 0), "replace")
    return text.replace(old, new, count)


def _joined(separator: Any, items: Iterable[Any]) -> Any:
    collected = bounded_list(items, "join")
    size = sum(weight(item) for item in collected) + len(separator) * len(collected)
    refuse_if_over(size, "join")
    return separator.join(collected)


def _translated(text: Any, table: Any) -> Any:
    if isinstance(table, Mapping):
        longest = max((weight(value) for value in table.values()), default=1)
        refuse_if_over(len(text) * max(longest, 1), "translate")
    return text.translate(table)


def _formatted(method: Any, text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if isinstance(text, str) and _FORMAT_WIDTH.search(text):
        raise TemplateLimitError("a format() field with a huge width")
    if any(is_int(value) and abs(value) > MAX_WIDTH for value in (*args, *kwargs.values())):
        raise TemplateLimitError("a format() argument too big to be a width")
    fields = text.count("{" if isinstance(text, str) else b"{")
    refuse_if_over(len(text) + fields * weight((args, kwargs)), "format()")
    return method(*args, **kwargs)
