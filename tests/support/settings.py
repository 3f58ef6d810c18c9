"""Settings for tests: the schema's defaults with a test's overrides, typed or by key.

A test states only the settings it is about; the rest are the defaults, taken from the schema (the
one place they live), so a test never repeats a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from imprint_desktop.core.config import Config
from imprint_desktop.core.research.reply import ResearchSettings
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


def research_settings(
    overrides: Mapping[str, object] | None = None, *, timeout_sec: float | None = None
) -> ResearchSettings:
    """What a reply runs under for :func:`make_config`, as the engine reads it; ``timeout_sec`` is
    a research time below the setting's whole seconds, for a test that runs on the real clock."""
    settings = ResearchSettings.from_config(make_config(overrides))
    return settings if timeout_sec is None else replace(settings, timeout_sec=timeout_sec)
