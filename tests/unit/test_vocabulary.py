"""The words research is reported in: one set, shared by events, tools and providers."""

from __future__ import annotations

from typing import get_args

import pytest

from imprint_desktop.core import vocabulary as v
from imprint_desktop.core.providers import base as providers_base
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.tools import tool as tools_tool


def test_the_call_statuses_are_the_tool_statuses_and_the_two_of_the_activity() -> None:
    assert (*get_args(v.ToolStatus), "denied", "running") == v.CALL_STATUSES


def test_events_providers_and_tools_name_the_vocabulary_not_a_copy() -> None:
    assert (ev.StopReason, ev.FinalMode, ev.ToolOrigin) == (v.StopReason, v.FinalMode, v.ToolOrigin)
    assert (ev.Phase, ev.ToolStatus) == (v.Phase, v.ToolStatus)
    assert providers_base.Phase is v.Phase and tools_tool.ToolStatus is v.ToolStatus


@pytest.mark.parametrize(
    ("guard", "values"),
    [
        (v.is_stop_reason, v.STOP_REASONS),
        (v.is_phase, v.PHASES),
        (v.is_call_status, v.CALL_STATUSES),
        (v.is_final_mode, v.FINAL_MODES),
    ],
)
def test_a_guard_takes_its_words_and_nothing_else(guard: object, values: tuple[str, ...]) -> None:
    assert callable(guard)
    assert values and all(guard(value) for value in values)
    assert not any(guard(other) for other in ("", None, "Answered", "stop", 1, "not executed"))
