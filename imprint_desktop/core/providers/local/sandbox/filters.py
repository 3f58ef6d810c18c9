"""The filters a chat template may use, each bounded like the operators.

Filters are an allow-list of what chat templates use (``wordwrap``, ``urlize``, ``pprint``… are
gone). Those over a whole sequence check its length first; those that can make text much longer
than their input (``center``, ``indent``, ``replace``, ``format``, ``join``, ``escape``…) are
replaced by checked versions that estimate the result before Jinja's own filter makes it; and
``tojson`` writes JSON as model templates expect it, stopped as soon as it grows too long.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2 import filters as jinja_filters
from markupsafe import escape, soft_str

from imprint_desktop.core.providers.local.sandbox.limits import (
    MAX_ITEMS,
    MAX_WIDTH,
    bounded_list,
    is_int,
    refuse_if_over,
    weight,
)
from imprint_desktop.core.providers.local.sandbox.operators import check_printf, replaced

#: The filters chat templates use; the others are left out.
_ALLOWED_FILTERS = frozenset(
    {
        *("abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort"),
        *("e", "escape", "first", "float", "format", "groupby", "indent", "int", "items", "join"),
        *("last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr"),
        *("replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort"),
        *("string", "striptags", "sum", "title", "tojson", "trim", "truncate", "unique", "upper"),
        "wordcount",
    }
)
#: Filters over a whole sequence: its length is checked first.
_SEQUENCE_FILTERS = frozenset(
    {
        *("dictsort", "groupby", "map", "max", "min", "reject", "rejectattr", "reverse"),
        *("select", "selectattr", "sort", "unique"),
    }
)


def bounded_filters(defaults: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja's ``defaults`` cut to the allow-list, each bounded, with :func:`tojson` added."""
    chosen = {name: function for name, function in defaults.items() if name in _ALLOWED_FILTERS}
    for name in _SEQUENCE_FILTERS & chosen.keys():
        chosen[name] = _with_length_check(chosen[name], name)
    chosen.update(_CHECKED_FILTERS)
    chosen["tojson"] = tojson
    return chosen


def tojson(value: Any, indent: int | str | None = None, **_: Any) -> str:
    """JSON as model templates expect it (no HTML escaping, unlike Jinja's own filter), built piece
    by piece so that a structure that would print too long is stopped before it is all made."""
    if indent is not None:
        refuse_if_over(indent if isinstance(indent, int) else len(str(indent)), "an indent", 64)
    encoder = json.JSONEncoder(ensure_ascii=False, indent=indent, default=_json_list)
    pieces: list[str] = []
    size = 0
    for piece in encoder.iterencode(value):
        size += len(piece)
        refuse_if_over(size, "tojson")
        pieces.append(piece)
    return "".join(pieces)


def _json_list(value: Any) -> list[Any]:
    """What ``tojson`` writes for a sequence that is no list (``map`` and ``select`` give
    generators): its items, as other template engines do; anything else is refused as JSON."""
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        return bounded_list(value, "tojson")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _with_length_check(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    pass_arg = getattr(function, "jinja_pass_arg", None)

    def checked(*args: Any, **kwargs: Any) -> Any:
        value = args[1] if pass_arg is not None else args[0]
        if hasattr(value, "__len__") and not isinstance(value, str | bytes):
            refuse_if_over(len(value), name, MAX_ITEMS)
        return function(*args, **kwargs)

    if pass_arg is not None:
        checked.jinja_pass_arg = pass_arg  # type: ignore[attr-defined]
    return checked


def _center(value: Any, width: int = 80) -> str:
    refuse_if_over(width if is_int(width) else 0, "center")
    return jinja_filters.do_center(value, width)


def _indent(value: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(value)
    pad = width if isinstance(width, int) else len(str(width))
    refuse_if_over(pad, "indent", MAX_WIDTH)
    refuse_if_over(len(text) + (text.count("\n") + 1) * pad, "indent")
    return jinja_filters.do_indent(text, width, first, blank)


def _replace(eval_ctx: Any, value: Any, old: Any, new: Any, count: int | None = None) -> str:
    replaced(str(value), str(old), str(new), -1 if count is None else count)
    return jinja_filters.do_replace(eval_ctx, value, old, new, count)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    check_printf(str(value), kwargs or args)
    return jinja_filters.do_format(value, *args, **kwargs)


def _join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    collected = bounded_list(value, "join")
    refuse_if_over(sum(weight(item) for item in collected) + len(d) * len(collected), "join")
    return jinja_filters.sync_do_join(eval_ctx, collected, d, attribute)


def _string(value: Any) -> str:
    refuse_if_over(weight(value), "string")
    return soft_str(value)


def _escape(value: Any) -> Any:
    refuse_if_over(weight(value) * 6, "escape")  # "&quot;" is six characters for one
    return escape(value)


def _list(value: Iterable[Any]) -> list[Any]:
    return bounded_list(value, "list")


def _batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Any:
    refuse_if_over(linecount if is_int(linecount) else 0, "batch", MAX_ITEMS)
    if fill_with is not None:
        refuse_if_over(weight(fill_with) * linecount, "batch")
    return jinja_filters.do_batch(bounded_list(value, "batch"), linecount, fill_with)


def _slice(value: Iterable[Any], slices: int, fill_with: Any = None) -> Any:
    refuse_if_over(slices if is_int(slices) else 0, "slice", MAX_ITEMS)
    if fill_with is not None:
        refuse_if_over(weight(fill_with) * slices, "slice")
    return jinja_filters.sync_do_slice(bounded_list(value, "slice"), slices, fill_with)


def _sum(environment: Any, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    items = bounded_list(iterable, "sum")
    if not isinstance(start, int | float):  # lists or text: each step copies all so far
        refuse_if_over(weight(start) + sum(weight(item) for item in items), "sum")
        refuse_if_over(len(items), "sum (items)", 1000)
    return jinja_filters.sync_do_sum(environment, items, attribute, start)


# Jinja passes the eval context or environment first to the filters marked so.
_replace.jinja_pass_arg = jinja_filters.do_replace.jinja_pass_arg  # type: ignore[attr-defined]
_join.jinja_pass_arg = jinja_filters.sync_do_join.jinja_pass_arg  # type: ignore[attr-defined]
_sum.jinja_pass_arg = jinja_filters.sync_do_sum.jinja_pass_arg  # type: ignore[attr-defined]

_CHECKED_FILTERS: dict[str, Callable[..., Any]] = {
    "center": _center,
    "indent": _indent,
    "replace": _replace,
    "format": _format,
    "join": _join,
    "string": _string,
    "e": _escape,
    "escape": _escape,
    "list": _list,
    "batch": _batch,
    "slice": _slice,
    "sum": _sum,
}
