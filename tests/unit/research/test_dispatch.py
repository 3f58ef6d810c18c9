"""One typed dispatch over the research events (issue 18): every event type reaches its own
handler method, and a method not overridden passes the event on to ``on_event``."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.trace import trace_line


def _every_event_type() -> set[type[ev.Event]]:
    return {
        kind
        for kind in vars(ev).values()
        if isinstance(kind, type) and issubclass(kind, ev.Event) and kind is not ev.Event
    }


EVENT_TYPES = sorted(get_args(ev.AnyEvent), key=lambda kind: kind.__name__)


def _method_of(kind: type[ev.Event]) -> str:
    return "on_" + re.sub(r"(?<!^)([A-Z])", r"_\1", kind.__name__).lower()


def _bare(kind: type[ev.Event]) -> ev.Event:
    """An event of ``kind`` whose fields do not matter here (dispatch looks at its type only)."""
    return object.__new__(kind)


class Recording(EventHandler):
    """Records which of its methods were called, and with what."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ev.Event]] = []

    def on_event(self, event: ev.Event) -> None:
        self.calls.append(("on_event", event))


def _recorded(name: str) -> object:
    def record(self: Recording, event: ev.Event) -> None:
        self.calls.append((name, event))

    return record


class RecordingEach(Recording):
    """Overrides every method of its own type."""


for _name in dir(EventHandler):
    if _name.startswith("on_") and _name != "on_event":
        setattr(RecordingEach, _name, _recorded(_name))


def test_the_union_is_every_event_type_there_is() -> None:
    assert set(EVENT_TYPES) == _every_event_type()
    assert {_method_of(kind) for kind in EVENT_TYPES} | {"on_event"} == {
        name for name in dir(EventHandler) if name.startswith("on_")
    }


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_each_event_reaches_its_own_method_and_no_other(kind: type[ev.Event]) -> None:
    event = _bare(kind)
    handler = RecordingEach()
    ev.dispatch(event, handler)
    assert handler.calls == [(_method_of(kind), event)]


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_a_method_not_overridden_passes_the_event_to_on_event(kind: type[ev.Event]) -> None:
    event = _bare(kind)
    handler = Recording()
    ev.dispatch(event, handler)
    assert handler.calls == [("on_event", event)]


def test_an_event_of_no_known_type_goes_to_on_event_and_is_not_traced() -> None:
    event = ev.Event(1.0)
    handler = RecordingEach()
    ev.dispatch(event, handler)
    assert handler.calls == [("on_event", event)]
    assert trace_line(event) is None
