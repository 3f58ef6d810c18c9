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
  into text. Each refuses a result over :data:`~.limits.MAX_VALUE` characters, estimated
  *before* the work is done. All the output of one render, text captured by ``{% set %}`` blocks
  included, is capped as a whole;
* **depth** — calls nest at most :data:`~.limits.MAX_CALL_DEPTH` deep, so recursion cannot
  pile up copies of big values.

Filters are an allow-list of what chat templates use (``wordwrap``, ``urlize``, ``pprint``… and the
``lipsum`` global are gone). A refusal raises :class:`~.limits.TemplateLimitError`, a
:class:`~jinja2.sandbox.SecurityError`: a template that asks for that much is hostile, not broken.

This module is the environment: one render's meter (steps, call depth, output), the rewriting of
loops and ``~``, and the interception of operators, calls and printed values. The limits and the
measure of a value's size are :mod:`.limits`, the checks of operators and text methods
:mod:`.operators`, the bounded filters :mod:`.filters`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import update_wrapper
from typing import Any, cast

from jinja2 import nodes
from jinja2.runtime import Context
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
)
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from imprint_desktop.core.providers.local.sandbox.filters import bounded_filters
from imprint_desktop.core.providers.local.sandbox.limits import (
    MAX_CALL_DEPTH,
    MAX_ITEMS,
    MAX_OUTPUT,
    MAX_RANGE,
    MAX_STEPS,
    TemplateLimitError,
    refuse_if_over,
    weight,
)
from imprint_desktop.core.providers.local.sandbox.operators import (
    ARITHMETIC,
    bounded_method,
    check_binop,
    check_format_spec,
)

#: The clock is read once every this many steps.
_CHECK_EVERY = 256
#: List methods a template may call on a list it made itself, although the sandbox is immutable:
#: real templates keep a queue of call ids with them (Kimi K2). The lists it was given (the
#: messages, the tools) stay immutable, and what is appended counts against the output limit.
_LIST_METHODS = frozenset({"append", "pop"})
#: What Jinja adds to every call made inside a loop or a block (it hands the variables set there
#: to functions that take the context); a stand-in for a text method takes no such arguments.
_JINJA_CALL_KEYWORDS = ("_loop_vars", "_block_vars")


class _Meter:
    """One render's meter: its deadline, steps, output so far and call depth."""

    __slots__ = ("appended", "deadline", "depth", "given", "output", "seconds", "steps")

    def __init__(self, seconds: float, given: frozenset[int] = frozenset()) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.steps = 0
        self.output = 0
        self.depth = 0
        self.appended = 0
        self.given = given  # ids of the lists in the render's inputs


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every operation metered (see the module docstring).

    Compile with :meth:`parse_bounded` and ``from_string``, and render inside :meth:`metering`;
    outside it only the size limits apply (as while Jinja folds constants during compilation).
    """

    intercepted_binops = ARITHMETIC

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=self._finalize, **options)
        self._local = threading.local()
        self.globals["range"] = self._range
        self.globals.pop("lipsum", None)
        self.filters = bounded_filters(self.filters)
        self.concat = self._concat  # type: ignore[method-assign]

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, list) and attr in _LIST_METHODS:
            meter = self._meter()
            if meter is not None and id(obj) not in meter.given:
                return SandboxedEnvironment.is_safe_attribute(self, obj, attr, value)
        return super().is_safe_attribute(obj, attr, value)

    # --- metering -----------------------------------------------------------------------------

    def metering(self, seconds: float, inputs: object = None) -> _Metering:
        """A context in which this thread's render is metered, with ``seconds`` to finish.
        The lists in ``inputs`` (what the render is given) stay immutable."""
        return _Metering(self, _Meter(seconds, _list_ids(inputs)))

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

    def bounded_literal(self, value: Any) -> Any:
        """A list, tuple or dict written in the template: refused when what it holds (everything
        it reaches, so a chain of lists each holding the one before) is too big."""
        refuse_if_over(weight(value), "a list or dict")
        return value

    def bounded_concat(self, values: list[Any]) -> str:
        """``a ~ b ~ c``: refused before joining when the result would be too long."""
        refuse_if_over(sum(weight(value) for value in values), "joining text with '~'")
        return "".join(str(value) for value in values)

    # --- operators, calls and output ----------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.step()
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's own signature, safe for any keyword
        __self.step()
        meter = __self._meter()
        if meter is not None:
            if meter.depth >= MAX_CALL_DEPTH:
                raise TemplateLimitError(f"its calls nest more than {MAX_CALL_DEPTH} deep")
            meter.depth += 1
        try:
            if isinstance(getattr(__obj, "__self__", None), list):
                __self._check_list_call(__obj, args)
            bounded = bounded_method(__obj)
            if bounded is not None:
                for keyword in _JINJA_CALL_KEYWORDS:
                    kwargs.pop(keyword, None)
                result = bounded(*args, **kwargs)
            else:
                result = super().call(__context, __obj, *args, **kwargs)
        finally:
            if meter is not None:
                meter.depth -= 1
        if not isinstance(result, str):  # text was checked before it was made
            refuse_if_over(weight(result), "a call's result")
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` and ``format_map`` as Jinja's sandbox runs them, with each field checked
        before it is formatted: its spec (once nested fields like ``{0:>{1}}`` are filled in) may
        not ask for a huge width or precision, and the fields together may not make too much."""
        name = getattr(value, "__name__", None)
        owner = getattr(value, "__self__", None)
        if name not in ("format", "format_map") or not isinstance(owner, str):
            return None
        formatter: _BoundedFormatter = (
            _BoundedEscapeFormatter(self, escape=owner.escape)
            if isinstance(owner, Markup)
            else _BoundedFormatter(self)
        )
        make = type(owner)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if name == "format_map":
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            return make(formatter.vformat(owner, args, kwargs))

        return update_wrapper(wrapper, value)

    def _check_list_call(self, method: Any, args: tuple[Any, ...]) -> None:
        """``list.append``: the list may not pass :data:`MAX_ITEMS`, nor what all appends of the
        render keep alive the output limit."""
        if getattr(method, "__name__", "") != "append":
            return
        refuse_if_over(len(method.__self__) + 1, "append (items)", MAX_ITEMS)
        meter = self._meter()
        if meter is not None:
            meter.appended += sum(weight(value) for value in args) + 8
            refuse_if_over(meter.appended, "appending to lists", MAX_OUTPUT)

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


def _list_ids(value: object) -> frozenset[int]:
    """The ids of every list in ``value``, a structure of lists, tuples and dicts."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            if isinstance(item, list):
                found.add(id(item))
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
    return frozenset(found)


class _BoundedFormatter(SandboxedFormatter):
    """The sandbox's formatter, checking each field before it is formatted."""

    _made = 0

    def vformat(self, format_string: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        self._made = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> Any:
        self._made += check_format_spec(format_spec, value)
        refuse_if_over(self._made, "format()")
        return super().format_field(value, format_spec)


class _BoundedEscapeFormatter(_BoundedFormatter, SandboxedEscapeFormatter):
    pass


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

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return self._call("bounded_literal", [node], node.lineno)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return self._call("bounded_literal", [node], node.lineno)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        if node.ctx != "load":  # a target: ``{% for a, b in pairs %}``, ``{% set a, b = … %}``
            return node
        return self._call("bounded_literal", [node], node.lineno)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        pieces = nodes.List(node.nodes, lineno=node.lineno)
        return self._call("bounded_concat", [pieces], node.lineno)

    def _call(self, name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
        target = nodes.EnvironmentAttribute(name, lineno=lineno)
        call = nodes.Call(target, args, [], None, None, lineno=lineno)
        call.set_environment(self._sandbox)
        return call
