"""A template's operators and text methods, checked before they do their work.

The sandbox intercepts every arithmetic operator and every call; before Python computes
``10 ** 10 ** 10``, ``'x' * 10 ** 10``, ``'%99999999s' % x`` or ``'{:>99999999}'.format(x)`` —
each a line of template asking for hours or gigabytes — the size of the result is estimated here
from the operands and refused when it is over its limit (:mod:`.limits`). The text methods
that can make text much longer than their input (``center``, ``replace``, ``join``, ``format``…)
get a checked stand-in (:func:`bounded_method`); the filters of the same name reuse these checks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from imprint_desktop.core.providers.local.sandbox.limits import (
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

# The parts of a ``%`` conversion, each read at most once: a mapping key stops at the first
# parenthesis, and the possessive ``*+`` never gives back what it took (no backtracking between
# the flags and the digits), so a search is linear in the text.
_PRINTF_HEAD = r"%(?:\([^()]*+\))?[-#0 +]*+"
_PRINTF_HUGE = re.compile(_PRINTF_HEAD + r"(?:[0-9]{5,}|(?:\*|[0-9]*+)\.[0-9]{5,})")
_PRINTF_STAR = re.compile(_PRINTF_HEAD + r"(?:[0-9]*+\.)?\*")
#: Python lets a key hold parentheses in pairs; real templates never do, and the patterns above
#: would misread it.
_PRINTF_NESTED_KEY = re.compile(r"%\([^()]*+\(")
_FORMAT_WIDTH = re.compile(r"\d{5,}")
#: The start of a ``format()`` spec up to its precision: ``[[fill]align][sign][z][#][0][width]
#: [grouping][.precision]``. Anchored, and without nested repetition: linear in the spec.
_FORMAT_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?([0-9]*)[,_]?(?:\.([0-9]*))?", re.DOTALL)
#: The longest format spec a template may use: real ones are a few characters.
MAX_SPEC = 256


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
    refuse_if_over(len(text) + text.count("%") * weight(values), "a '%' format")
    if _PRINTF_NESTED_KEY.search(text):
        raise TemplateLimitError("a '%' format key with parentheses inside")
    if _PRINTF_HUGE.search(text):
        raise TemplateLimitError("a '%' format with a width or precision of five digits or more")
    if _PRINTF_STAR.search(text) and any(
        is_int(value) and abs(value) > MAX_WIDTH for value in arguments
    ):
        raise TemplateLimitError("a '%' format with a huge width")


def _check_width(digits: str, what: str) -> None:
    """Refuse a width or precision written as ``digits`` (compared by length first: a width of
    a million digits is refused without turning it into a number)."""
    refuse_if_over(MAX_WIDTH + 1 if len(digits) > 6 else int(digits or 0), what, MAX_WIDTH)


def check_format_spec(spec: str, value: Any) -> int:
    """Refuse a ``format()`` field whose spec (after its nested fields are filled in) asks for a
    huge width or precision; the size of the field's text otherwise, at most."""
    refuse_if_over(len(spec), "a format() spec", MAX_SPEC)
    match = _FORMAT_SPEC.match(spec)
    width = precision = ""
    if match is not None:
        width, precision = match.group(1), match.group(2) or ""
    _check_width(width, "a format() width")
    _check_width(precision, "a format() precision")
    return max(weight(value), int(width or 0)) + int(precision or 0) + len(spec)


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
        "split": lambda sep=None, maxsplit=-1: _split(owner, "split", sep, maxsplit),
        "rsplit": lambda sep=None, maxsplit=-1: _split(owner, "rsplit", sep, maxsplit),
        "splitlines": lambda keepends=False: _split(owner, "splitlines", keepends, -1),
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
    """``text.translate(table)``, its length counted first: each distinct character is looked up
    once, so a table mapping a character to long text is refused before any is made."""
    if isinstance(text, str):
        size = 0
        for char, count in Counter(text).items():
            try:
                mapped = table[ord(char)]
            except LookupError:
                mapped = char
            size += count * (len(mapped) if isinstance(mapped, str) else int(mapped is not None))
            refuse_if_over(size, "translate")
    return text.translate(table)


#: What ``str.split()`` without a separator, and ``splitlines()``, cut at.
_SPACES = "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
_SPACES += "\u2028\u2029\u202f\u205f\u3000"
_LINE_ENDS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _split(text: Any, method: str, separator: Any, maxsplit: Any) -> Any:
    """``text.split()`` and its kin, refused first when they would make too many pieces (at most
    one more than the separators in the text)."""
    if method == "splitlines":
        refuse_if_over(_count_any(text, _LINE_ENDS), "splitlines (items)", MAX_ITEMS)
        return text.splitlines(separator)
    if isinstance(separator, str | bytes) and separator:
        pieces = text.count(separator)
    else:
        pieces = _count_any(text, _SPACES)
    if is_int(maxsplit) and maxsplit >= 0:
        pieces = min(pieces, maxsplit)
    refuse_if_over(pieces, f"{method} (items)", MAX_ITEMS)
    return getattr(text, method)(separator, maxsplit)


def _count_any(text: str | bytes, characters: str) -> int:
    if isinstance(text, bytes):
        return sum(text.count(bytes([ord(char)])) for char in characters if ord(char) < 128)
    return sum(text.count(char) for char in characters)


def _formatted(method: Any, text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if isinstance(text, str) and _FORMAT_WIDTH.search(text):
        raise TemplateLimitError("a format() field with a huge width")
    if any(is_int(value) and abs(value) > MAX_WIDTH for value in (*args, *kwargs.values())):
        raise TemplateLimitError("a format() argument too big to be a width")
    fields = text.count("{" if isinstance(text, str) else b"{")
    refuse_if_over(len(text) + fields * weight((args, kwargs)), "format()")
    return method(*args, **kwargs)
