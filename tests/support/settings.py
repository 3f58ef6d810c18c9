"""Settings for tests: the schema's defaults with a test's overrides, typed or by key.

A test states only the settings it is about; the rest are the defaults, taken from the schema (the
one place they live), so a test never repeats a default.
"""

from __future__ import annotations

from collections.abc import Mapping

from imprint_desktop.core.config import Config
from imprint_desktop.settings import schema


def setting_values(overrides: Mapping[str, object] | None = None) -> dict[str, object]:
    """Every non-secret setting by key: the defaults, with ``overrides`` (known keys only).

    Values are not checked against the bounds, so a test can go past them on purpose.
    """
    values: dict[str, object] = dict(schema.default_values())
    for key, value in (overrides or {}).items():
        schema.get(key)  # a misspelt key fails here rather than being ignored
        values[key] = value
    return values


def make_config(overrides: Mapping[str, object] | None = None) -> Config:
    """The typed snapshot of :func:`setting_values`."""
    return Config.from_values(setting_values(overrides))
