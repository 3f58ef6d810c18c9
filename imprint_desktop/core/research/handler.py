"""The one way to react to research events: a handler overrides the ``on_…`` methods of the events
it cares about, and :func:`~imprint_desktop.core.research.events.dispatch` calls them.

``dispatch`` matches every event type and ends in ``assert_never``, so an event added to the stream
fails mypy until it has its case there and its method here. A method that is not overridden passes
the event on to :meth:`EventHandler.on_event`, which does nothing unless the handler wants every
event (the history keeps the trace line of each, say).

Kept apart from :mod:`.events`, which it names only for type checking, so that the window's views —
handlers themselves — start without loading the events (they load with the first reply).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev


class EventHandler:
    """Reacts to research events: one method per event type, each passing the event on to
    :meth:`on_event`, which does nothing; a handler overrides those it needs."""

    __slots__ = ()

    def on_event(self, event: ev.Event) -> None:
        """Any event whose own method is not overridden."""

    def on_reply_started(self, event: ev.ReplyStarted) -> None:
        self.on_event(event)

    def on_round_started(self, event: ev.RoundStarted) -> None:
        self.on_event(event)

    def on_request_started(self, event: ev.RequestStarted) -> None:
        self.on_event(event)

    def on_text_delta(self, event: ev.TextDelta) -> None:
        self.on_event(event)

    def on_request_finished(self, event: ev.RequestFinished) -> None:
        self.on_event(event)

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        self.on_event(event)

    def on_tool_finished(self, event: ev.ToolFinished) -> None:
        self.on_event(event)

    def on_question_asked(self, event: ev.QuestionAsked) -> None:
        self.on_event(event)

    def on_user_wait(self, event: ev.UserWait) -> None:
        self.on_event(event)

    def on_consent_decided(self, event: ev.ConsentDecided) -> None:
        self.on_event(event)

    def on_round_ended(self, event: ev.RoundEnded) -> None:
        self.on_event(event)

    def on_budget_update(self, event: ev.BudgetUpdate) -> None:
        self.on_event(event)

    def on_research_stopped(self, event: ev.ResearchStopped) -> None:
        self.on_event(event)

    def on_final_started(self, event: ev.FinalStarted) -> None:
        self.on_event(event)

    def on_final_finished(self, event: ev.FinalFinished) -> None:
        self.on_event(event)

    def on_reply_finished(self, event: ev.ReplyFinished) -> None:
        self.on_event(event)
