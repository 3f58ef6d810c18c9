"""The Jinja sandbox a model's chat template runs in, with its work bounded.

Jinja's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` keeps a template away from Python
internals, but not from the machine's time and memory: ``{{ 10 ** (10 ** 10) }}`` is computed by
the compiler's constant folding before anything renders, ``'x' * 10 ** 10`` asks for ten
gigabytes, and nested loops that print nothing run for hours. A chat template ships inside a model
file written by a stranger, so here every way a template does work is metered:

* **steps** — every loop iteration and every call (macro, method, global) takes a step, and the
  clock is read every few hundred steps, so no loop or recursion outlives the render's deadline,
  whatever it prints. Loops are metered by rewriting the template's syntax tree before it is
  compiled (each ``for`` iterates through :meth:`BoundedSandbox.metered`, an environment attribute
  the template can neither shadow nor avoid);
* **sizes** — every arithmetic operator is intercepted (which also keeps the compiler from folding
  it), and so are ``~``, the text methods and filters that make text longer than their input
  (``center``, ``replace``, ``join``, ``format``…), ``range``, and everything that turns a value
  into text. Each refuses a result over :data:`MAX_VALUE` characters, estimated *before* the work
  is done. All the output of one render, text captured by ``{% set %}`` blocks included, is capped
  as a whole;
* **depth** — calls nest at most :data:`MAX_CALL_DEPTH` deep, so recursion cannot pile up copies of
  big values.

Filters are an allow-list of what chat templates use (``wordwrap``, ``urlize``, ``pprint``… and the
``lipsum`` global are gone). A refusal raises :class:`TemplateLimitError`, a
:class:`~jinja2.sandbox.SecurityError`: a template that asks for that much is hostile, not broken.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from jinja2 import filters as jinja_filters
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer
from markupsafe import escape, soft_str

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
_CHECK_EVERY = 256
#: A reference inside a list or dict counts as this many characters when sizing a structure.
_REFERENCE = 8

_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_WIDTH = re.compile(r"\d{5,}")


class TemplateLimitError(SecurityError):
    """The template asked for more time or memory than any real chat template needs."""


def weight(value: Any, limit: int = MAX_VALUE) -> int:
    """About how many characters ``str(value)`` has, counted only until it passes ``limit``.

    Cheap on purpose: strings count their length, containers their items plus a few characters per
    reference, so sizing a structure visits at most ``limit / 8`` items.
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
        elif _integer(item):
            total += item.bit_length() // 3 + 1
        else:
            total += _REFERENCE
        if total > limit:
            return total
    return total


def refuse_if_over(size: int, what: str, limit: int = MAX_VALUE) -> None:
    if size > limit:
        raise TemplateLimitError(f"{what} would make about {size:,} (the limit is {limit:,})")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Meter:
    """One render's meter: its deadline, steps, output so far and call depth."""

    __slots__ = ("deadline", "depth", "output", "seconds", "steps")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.steps = 0
        self.output = 0
        self.depth = 0


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every operation metered (see the module docstring).

    Compile with :meth:`parse_bounded` and ``from_string``, and render inside :meth:`metering`;
    outside it only the size limits apply (as while Jinja folds constants during compilation).
    """

    intercepted_binops = _ARITHMETIC

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=self._finalize, **options)
        self._local = threading.local()
        self.globals["range"] = self._range
        self.globals.pop("lipsum", None)
        self.filters = _bounded_filters(self.filters)
        self.filters["tojson"] = tojson
        self.concat = self._concat  # type: ignore[method-assign]

    # --- metering -----------------------------------------------------------------------------

    def metering(self, seconds: float) -> _Metering:
        """A context in which this thread's render is metered, with ``seconds`` to finish."""
        return _Metering(self, _Meter(seconds))

    def _meter(self) -> _Meter | None:
        meter: _Meter | None = getattr(self._local, "meter", None)
        return meter

    def step(self) -> None:
        meter = self._meter()
        if meter is None:
            return
        meter.steps += 1
        if meter.steps % _CHECK_EVERY == 0:
            if meter.steps > MAX_STEPS:
                raise TemplateLimitError(f"it took more than {MAX_STEPS:,} steps")
            if time.monotonic() > meter.deadline:
                raise TemplateLimitError(f"it ran for more than {meter.seconds:g} s")

    def metered(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """What every ``for`` loop iterates through: the same items, one step each."""
        for item in iterable:
            self.step()
            yield item

    def parse_bounded(self, source: str) -> nodes.Template:
        """``source`` parsed, with every loop metered and every ``~`` bounded."""
        tree = _Metered(self).visit(self.parse(source))
        assert isinstance(tree, nodes.Template)
        return tree

    def bounded_concat(self, values: list[Any]) -> str:
        """``a ~ b ~ c``: refused before joining when the result would be too long."""
        refuse_if_over(sum(weight(value) for value in values), "joining text with '~'")
        return "".join(str(value) for value in values)

    # --- operators, calls and output ----------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.step()
        _check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's own signature, safe for any keyword
        __self.step()
        meter = __self._meter()
        if meter is not None:
            if meter.depth >= MAX_CALL_DEPTH:
                raise TemplateLimitError(f"its calls nest more than {MAX_CALL_DEPTH} deep")
            meter.depth += 1
        try:
            bounded = _bounded_method(__obj)
            if bounded is not None:
                result = bounded(*args, **kwargs)
            else:
                result = super().call(__context, __obj, *args, **kwargs)
        finally:
            if meter is not None:
                meter.depth -= 1
        if not isinstance(result, str):  # text was checked before it was made
            refuse_if_over(weight(result), "a call's result")
        return result

    def _finalize(self, value: Any) -> Any:
        """Every ``{{ value }}`` before it becomes text, printed or captured."""
        size = weight(value)
        refuse_if_over(size, "printing a value")
        meter = self._meter()
        if meter is not None:
            meter.output += size
            refuse_if_over(meter.output, "its output", MAX_OUTPUT)
        return value

    def _concat(self, pieces: Iterable[str]) -> str:
        """How Jinja joins captured output (``{% set %}`` blocks, macros): bounded first."""
        collected = list(pieces)
        refuse_if_over(sum(len(piece) for piece in collected), "captured output")
        return "".join(collected)

    def _range(self, *args: int) -> range:
        numbers = range(*args)
        if len(numbers) > MAX_RANGE:
            raise TemplateLimitError(f"range() of {len(numbers):,} numbers (limit {MAX_RANGE:,})")
        return numbers


class _Metering:
    def __init__(self, sandbox: BoundedSandbox, meter: _Meter) -> None:
        self._local = sandbox._local
        self._meter = meter

    def __enter__(self) -> _Meter:
        self._local.meter = self._meter
        return self._meter

    def __exit__(self, *exc_info: object) -> None:
        self._local.meter = None


class _Metered(NodeTransformer):
    """Rewrites a parsed template: each ``for`` iterates through ``environment.metered`` and each
    ``~`` goes through ``environment.bounded_concat``."""

    def __init__(self, sandbox: BoundedSandbox) -> None:
        self._sandbox = sandbox

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._call("metered", [cast(nodes.Expr, node.iter)], node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        pieces = nodes.List(node.nodes, lineno=node.lineno)
        return self._call("bounded_concat", [pieces], node.lineno)

    def _call(self, name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
        target = nodes.EnvironmentAttribute(name, lineno=lineno)
        call = nodes.Call(target, args, [], None, None, lineno=lineno)
        call.set_environment(self._sandbox)
        return call


# --- operators ----------------------------------------------------------------------------------


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "**":
        _check_power(left, right)
    elif operator == "*":
        _check_product(left, right)
    elif operator == "+":
        if isinstance(left, str | bytes | list | tuple) and isinstance(right, type(left)):
            refuse_if_over(weight(left) + weight(right), "'+'")
    elif operator == "%" and isinstance(left, str | bytes):
        _check_printf(left, right)


def _check_power(base: Any, exponent: Any) -> None:
    if _integer(base) and _integer(exponent):
        if exponent > 0 and abs(base) > 1:
            refuse_if_over(exponent * abs(base).bit_length() // 3, "'**' (digits)", MAX_WIDTH)
    elif isinstance(exponent, int | float) and abs(exponent) > MAX_WIDTH:
        raise TemplateLimitError(f"'**' with an exponent of {exponent!r}")


def _check_product(left: Any, right: Any) -> None:
    if _integer(left) and _integer(right):
        digits = (left.bit_length() + right.bit_length()) // 3
        refuse_if_over(digits, "'*' (digits)", MAX_WIDTH)
        return
    sequence, count = (left, right) if _integer(right) else (right, left)
    if isinstance(sequence, str | bytes | list | tuple) and _integer(count) and count > 0:
        refuse_if_over(weight(sequence) * count, "'*'")
        if isinstance(sequence, list | tuple):
            refuse_if_over(len(sequence) * count, "'*' (items)", MAX_ITEMS)


def _check_printf(template: str | bytes, values: Any) -> None:
    text = template if isinstance(template, str) else template.decode("latin-1")
    arguments = values if isinstance(values, tuple) else (values,)
    for width, precision in _PRINTF_SPEC.findall(text):
        for number in (width, precision):
            if number == "*":
                if any(_integer(value) and abs(value) > MAX_WIDTH for value in arguments):
                    raise TemplateLimitError("a '%' format with a huge width")
            elif number:
                refuse_if_over(int(number), "a '%' format width", MAX_WIDTH)
    fields = text.count("%")
    refuse_if_over(len(text) + fields * weight(values), "a '%' format")


# --- text methods -------------------------------------------------------------------------------

_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


def _bounded_method(obj: Any) -> Callable[..., Any] | None:
    """A checked stand-in for a text method that can make text much longer than its input."""
    target = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format in a function
    owner = getattr(target, "__self__", None)
    if not isinstance(owner, str | bytes):
        return None
    name = getattr(target, "__name__", "")
    stand_ins: dict[str, Callable[..., Any]] = {
        "expandtabs": lambda tabsize=8: _expanded(owner, tabsize),
        "replace": lambda old, new, count=-1: _replaced(owner, old, new, count),
        "join": lambda items: _joined(owner, items),
        "translate": lambda table: _translated(owner, table),
        "format": lambda *args, **kwargs: _formatted(obj, owner, args, kwargs),
        "format_map": lambda *args, **kwargs: _formatted(obj, owner, args, kwargs),
    }
    if name in _WIDTH_METHODS:
        return lambda width, *rest: _widened(obj, owner, width, rest)
    return stand_ins.get(name)


def _widened(method: Any, text: str | bytes, width: Any, rest: tuple[Any, ...]) -> Any:
    if _integer(width):
        refuse_if_over(max(len(text), width), "padding text")
    return method(width, *rest)


def _expanded(text: Any, tabsize: Any) -> Any:
    if _integer(tabsize):
        tabs = text.count("\t" if isinstance(text, str) else b"\t")
        refuse_if_over(len(text) + tabs * max(tabsize, 0), "expandtabs")
    return text.expandtabs(tabsize)


def _replaced(text: Any, old: Any, new: Any, count: Any = -1) -> Any:
    if isinstance(old, type(text)) and isinstance(new, type(text)) and _integer(count):
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
    if any(_integer(value) and abs(value) > MAX_WIDTH for value in (*args, *kwargs.values())):
        raise TemplateLimitError("a format() argument too big to be a width")
    fields = text.count("{" if isinstance(text, str) else b"{")
    refuse_if_over(len(text) + fields * weight((args, kwargs)), "format()")
    return method(*args, **kwargs)


# --- filters ------------------------------------------------------------------------------------

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


def tojson(value: Any, indent: int | str | None = None, **_: Any) -> str:
    """JSON as model templates expect it (no HTML escaping, unlike Jinja's own filter), built piece
    by piece so that a structure that would print too long is stopped before it is all made."""
    if indent is not None:
        refuse_if_over(indent if isinstance(indent, int) else len(str(indent)), "an indent", 64)
    encoder = json.JSONEncoder(ensure_ascii=False, indent=indent)
    pieces: list[str] = []
    size = 0
    for piece in encoder.iterencode(value):
        size += len(piece)
        refuse_if_over(size, "tojson")
        pieces.append(piece)
    return "".join(pieces)


def _bounded_filters(defaults: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    chosen = {name: function for name, function in defaults.items() if name in _ALLOWED_FILTERS}
    for name in _SEQUENCE_FILTERS & chosen.keys():
        chosen[name] = _with_length_check(chosen[name], name)
    chosen.update(_CHECKED_FILTERS)
    return chosen


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
    refuse_if_over(width if _integer(width) else 0, "center")
    return jinja_filters.do_center(value, width)


def _indent(value: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(value)
    pad = width if isinstance(width, int) else len(str(width))
    refuse_if_over(pad, "indent", MAX_WIDTH)
    refuse_if_over(len(text) + (text.count("\n") + 1) * pad, "indent")
    return jinja_filters.do_indent(text, width, first, blank)


def _replace(eval_ctx: Any, value: Any, old: Any, new: Any, count: int | None = None) -> str:
    _replaced(str(value), str(old), str(new), -1 if count is None else count)
    return jinja_filters.do_replace(eval_ctx, value, old, new, count)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    _check_printf(str(value), kwargs or args)
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
    refuse_if_over(linecount if _integer(linecount) else 0, "batch", MAX_ITEMS)
    if fill_with is not None:
        refuse_if_over(weight(fill_with) * linecount, "batch")
    return jinja_filters.do_batch(bounded_list(value, "batch"), linecount, fill_with)


def _slice(value: Iterable[Any], slices: int, fill_with: Any = None) -> Any:
    refuse_if_over(slices if _integer(slices) else 0, "slice", MAX_ITEMS)
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
