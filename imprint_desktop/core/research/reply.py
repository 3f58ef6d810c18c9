"""What one reply runs under and keeps: its settings, budgets and evidence, and where its events go.

Every part of the engine (:mod:`.rounds`, :mod:`.calls`, :mod:`.requests`, :mod:`.final`,
:mod:`.ending`) works on the one :class:`Reply` the engine makes for a question. The reply calls
none of them: it holds the state they share, reports events to the one sink the window, the trace
and the history are fed from, and says when Stop or the research time ends research.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.providers.base import Phase, Provider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import sources
from imprint_desktop.core.research.budgets import Patience, ResearchClock, TokenBudget
from imprint_desktop.core.research.ledger import EvidenceLedger
from imprint_desktop.core.research.stop import ResearchStop

log = logging.getLogger(__name__)

EventSink = Callable[[ev.Event], None]


@dataclass(frozen=True)
class ResearchSettings:
    """The settings one reply runs under (DESIGN §3), taken from a settings snapshot."""

    timeout_sec: float = 300
    token_budget: int = 65536
    no_progress_rounds: int = 4
    max_tokens: int = 2048
    research_max_output_tokens: int = 1024
    temperature: float = 0.2
    system_prompt: str = ""
    final_deadline_sec: float = 120.0
    research_first: bool = True  # the engine searches before the first request (seed.py)
    answer_without_evidence: bool = False  # ask the model even when nothing was found
    max_result_chars: int = 6000  # the tool result cap, which the seed's passages also keep to
    snapshot: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> ResearchSettings:
        return cls(
            timeout_sec=float(settings["chat.research_timeout_sec"]),
            token_budget=int(settings["chat.research_token_budget"]),
            no_progress_rounds=int(settings["chat.research_no_progress_rounds"]),
            max_tokens=int(settings["chat.max_tokens"]),
            research_max_output_tokens=int(settings["chat.research_max_output_tokens"]),
            temperature=float(settings["chat.temperature"]),
            system_prompt=str(settings["chat.system_prompt"]),
            research_first=bool(settings.get("chat.research_first", True)),
            answer_without_evidence=bool(settings.get("chat.answer_without_evidence", False)),
            max_result_chars=int(settings.get("tools.max_result_chars", 6000)),
            snapshot=dict(settings),
        )


class Reply:
    """The state of one reply, shared by the engine's parts (see the module docstring)."""

    def __init__(
        self,
        provider: Provider,
        settings: ResearchSettings,
        *,
        cancel: CancelToken,
        sink: EventSink | None,
        clock: Callable[[], float],
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.cancel = cancel
        self._sink = sink
        self.clock_now = clock
        self._started = clock()
        self.clock = ResearchClock(settings.timeout_sec, clock)
        self.tokens = TokenBudget(settings.token_budget)
        self.ledger = EvidenceLedger()
        self.question = ""
        self.rounds = 0  # reply-wide: the coordinator's and every section worker's
        self.patience = Patience(settings.no_progress_rounds)  # the coordinator's
        self.looked = sources.LookedAt()  # what research searched and read, for "not found"

    # --- events ---------------------------------------------------------------------------------

    def emit(self, event: ev.Event) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:  # a broken listener must not break the reply
            log.exception("event sink failed on %s", type(event).__name__)

    def now_t(self) -> float:
        """Seconds since the reply started (the ``t`` of events and trace lines)."""
        return self.clock_now() - self._started

    def text_sink(self, phase: Phase) -> Callable[[str], None]:
        return lambda text: self.emit(ev.TextDelta(self.now_t(), phase, text))

    def emit_budget(self) -> None:
        self.emit(
            ev.BudgetUpdate(
                self.now_t(),
                self.clock.elapsed,
                self.clock.limit,
                self.clock.paused,
                self.tokens.charged,
                self.tokens.reserved,
                self.tokens.total,
                self.patience.rounds_without_progress,
                self.patience.limit,
                self.rounds,
                len(self.ledger.items),
            )
        )

    # --- Stop and the research time ---------------------------------------------------------

    def pending_stop(self) -> ResearchStop | None:
        """The stop that Stop or the research time calls for now, if any."""
        if self.cancel.cancelled:
            return ResearchStop("cancelled")
        if self.clock.expired:
            return ResearchStop("time_budget", "the research time ran out between tool calls")
        return None

    def check_cancel_and_time(self) -> None:
        stop = self.pending_stop()
        if stop is not None:
            raise stop
