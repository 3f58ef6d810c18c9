"""Checking a tool call's arguments against its declaration, with errors the model can act on.

The same :class:`~imprint_desktop.core.tools.tool.ToolSpec` properties that the model sees as JSON
schema drive the checks, so the two cannot drift apart. Only the small part of JSON schema the tools
use is understood: ``string``, ``integer``, ``array`` of strings, a nullable integer, ``minimum``,
``maximum``, ``minLength``, ``maxLength``, ``minItems`` and ``maxItems``.

Every message names the tool, the argument and what was expected, because a model fixes a call far
more reliably from "limit must be an integer from 1 to 50, got 'ten'" than from "invalid arguments".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from imprint_desktop.core.errors import ToolArgumentError
from imprint_desktop.core.tools.tool import ToolSpec


def loose_arguments(arguments: object) -> Mapping[str, object]:
    """Whatever a call's arguments hold, as a mapping ({} when they are not one).

    For describing a call in words (the status line, the activity list, "what was searched"),
    never for running it: :func:`parse_arguments` does that, and says what is wrong.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return {}
    return arguments if isinstance(arguments, Mapping) else {}


def parse_arguments(spec: ToolSpec, arguments: str | Mapping[str, object] | None) -> dict[str, Any]:
    """The validated arguments, defaults filled in; :class:`ToolArgumentError` otherwise."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        values: object = {}
    elif isinstance(arguments, str):
        try:
            values = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError) as error:
            raise ToolArgumentError(
                f"{spec.name}: the arguments are not valid JSON ({error}). "
                f"Send a JSON object such as {_example(spec)}."
            ) from None
    else:
        values = arguments
    if not isinstance(values, Mapping):
        raise ToolArgumentError(
            f"{spec.name}: the arguments must be a JSON object such as {_example(spec)}, "
            f"not {_describe(values)}."
        )
    unknown = sorted(str(key) for key in values if key not in spec.properties)
    if unknown:
        allowed = ", ".join(spec.properties) or "none"
        raise ToolArgumentError(
            f"{spec.name}: unknown argument(s) {', '.join(unknown)}; the arguments are: {allowed}."
        )
    missing = [key for key in spec.required if key not in values]
    if missing:
        raise ToolArgumentError(
            f"{spec.name}: missing required argument(s) {', '.join(missing)}. "
            f"Example: {_example(spec)}."
        )
    result: dict[str, Any] = dict(spec.defaults)
    for key, value in values.items():
        result[str(key)] = _check(spec.name, str(key), spec.properties[str(key)], value)
    return result


def _check(tool: str, key: str, rule: Mapping[str, Any], value: object) -> object:
    types = rule.get("type", "string")
    allowed = [types] if isinstance(types, str) else list(types)
    if value is None and "null" in allowed:
        return None
    if "integer" in allowed:
        number = _as_integer(value)
        low, high = rule.get("minimum"), rule.get("maximum")
        if (
            number is None
            or (low is not None and number < low)
            or (high is not None and number > high)
        ):
            raise ToolArgumentError(
                f"{tool}: {key} must be {_expected(allowed, rule)}, got {_describe(value)}."
            )
        return number
    if "string" in allowed:
        if not isinstance(value, str):
            raise ToolArgumentError(f"{tool}: {key} must be a string, got {_describe(value)}.")
        _check_length(tool, key, rule, value.strip(), "characters")
        return value
    if "array" in allowed:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ToolArgumentError(
                f"{tool}: {key} must be a list of strings, got {_describe(value)}."
            )
        _check_length(tool, key, rule, value, "items")
        item_rule = rule.get("items", {})
        for item in value:
            _check_length(tool, f"each item of {key}", item_rule, item.strip(), "characters")
        return list(value)
    raise ToolArgumentError(f"{tool}: {key} has a type this tool cannot check.")


def _check_length(
    tool: str, key: str, rule: Mapping[str, Any], value: str | list[str], unit: str
) -> None:
    low = rule.get("minLength", rule.get("minItems"))
    high = rule.get("maxLength", rule.get("maxItems"))
    if low is not None and len(value) < low:
        what = "must not be empty" if low == 1 else f"needs at least {low} {unit}"
        raise ToolArgumentError(f"{tool}: {key} {what}.")
    if high is not None and len(value) > high:
        raise ToolArgumentError(f"{tool}: {key} is too long ({len(value)} {unit}; at most {high}).")


def _as_integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _expected(types: list[str], rule: Mapping[str, Any]) -> str:
    low, high = rule.get("minimum"), rule.get("maximum")
    text = "an integer"
    if low is not None and high is not None:
        text += f" from {low} to {high}"
    elif low is not None:
        text += f" of at least {low}"
    if "null" in types:
        text += " or null"
    return text


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = {str: "string", int: "integer", float: "number", list: "list", dict: "object"}
    return f"{kind.get(type(value), type(value).__name__)} {text}"


def _example(spec: ToolSpec) -> str:
    sample: dict[str, object] = {}
    for key in spec.required or tuple(spec.properties)[:1]:
        types = spec.properties[key].get("type", "string")
        first = types if isinstance(types, str) else types[0]
        sample[key] = {"string": "...", "integer": 1, "array": ["..."]}.get(first, "...")
    return json.dumps(sample)
