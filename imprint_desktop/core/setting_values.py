"""Reading one setting's value, checked for its kind, into the typed snapshot of :mod:`.config`.

Written by hand (the snapshot itself is generated from the schema): the generated classes call
these to take each value out of the store's complete, validated values, so a value of the wrong
kind fails loudly here instead of travelling on as ``Any``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

#: A setting's value as the store keeps it.
Value = int | float | bool | str
_Choice = TypeVar("_Choice", bound=str)


def read_int(values: Mapping[str, object], key: str) -> int:
    value = values[key]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # as the schema takes 300.0 for 300
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key} must be a whole number (got {value!r})")
    return value


def read_float(values: Mapping[str, object], key: str) -> float:
    value = values[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{key} must be a number (got {value!r})")
    return float(value)


def read_bool(values: Mapping[str, object], key: str) -> bool:
    value = values[key]
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false (got {value!r})")
    return value


def read_str(values: Mapping[str, object], key: str) -> str:
    value = values[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} must be text (got {value!r})")
    return value


def read_choice(values: Mapping[str, object], key: str, allowed: tuple[_Choice, ...]) -> _Choice:
    value = values[key]
    for choice in allowed:
        if value == choice:
            return choice
    raise ValueError(f"{key} must be one of {', '.join(allowed)} (got {value!r})")
