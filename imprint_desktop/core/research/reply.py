"""What one reply runs under and keeps: its settings, budgets and evidence, and where its events go.

Every part of the engine (:mod:`.rounds`, :mod:`.calls`, :mod:`.requests`, :mod:`.final`,
:mod:`.ending`) works on the one :class:`Reply` the engine makes for a question. The reply calls
none of them: it holds the state they share, reports events to the one sink the window, the trace
and the history are fed from, and says when Stop or the research time ends research.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import Config
from imprint_desktop.core.providers.base import Phase, Provider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import sources
from imprint_desktop.core.research.budgets import Patience, ResearchClock, TokenBudget
from imprint_desktop.core.research.ledger import EvidenceLedger
from imprint_desktop.core.research.stop import ResearchStop

log = logging.getLogger(__name__)

EventSink = Callable[[ev.Event], None]


#: How long the final request may take, outside the research budgets (DESIGN §1; not a setting).
FINAL_DEADLINE_SEC = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ResearchSettings:
    """What one reply runs under (DESIGN §3): the settings snapshot, read through the properties
    below — the ``[chat]`` budgets and answer settings, and the size cap of a tool result, which
    the seed's passages keep to as well. The research time is the engine's own value, so a test
    may go below what the setting allows (a research time under a second)."""

    config: Config
    """The whole snapshot the reply runs under, as the trace and the history record it."""
    timeout_sec: float
    final_deadline_sec: float = FINAL_DEADLINE_SEC

    @classmethod
    def from_config(cls, config: Config) -> ResearchSettings:
        return cls(config=config, timeout_sec=float(config.chat.research_timeout_sec))

    @property
    def token_budget(self) -> int:
        return self.config.chat.research_token_budget

    @property
    def no_progress_rounds(self) -> int:
        return self.config.chat.research_no_progress_rounds

    @property
    def max_tokens(self) -> int:
        return self.config.chat.max_tokens

    @property
    def research_max_output_tokens(self) -> int:
        return self.config.chat.research_max_output_tokens

    @property
    def temperature(self) -> float:
        return self.config.chat.temperature

    @property
    def seed(self) -> int:
        return self.config.chat.seed

    @property
    def system_prompt(self) -> str:
        return self.config.chat.system_prompt

    @property
    def research_first(self) -> bool:
        """The engine searches before the first request (:mod:`.seed`)."""
        return self.config.chat.research_first

    @property
    def first_request_tools(self) -> str:
        """Whether the first request offers the tools after the search found passages."""
        return self.config.chat.first_request_tools

    @property
    def answer_without_evidence(self) -> bool:
        """Ask the model even when nothing was found."""
        return self.config.chat.answer_without_evidence

    @property
    def max_result_chars(self) -> int:
        return self.config.tools.max_result_chars


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
        # The questions a follow-up follows (seed.earlier_questions; none in a new conversation).
        self.earlier: tuple[str, ...] = ()
        self.rounds = 0  # reply-wide: the coordinator's and every section worker's
        self.patience = Patience(settings.no_progress_rounds)  # the coordinator's
        self.looked = sources.LookedAt()  # what research searched and read, for "not found"
        self.stopped_as: ev.StopReason | None = None  # the reason of the stop line, once sent
        self._final_sent = False
        self._stop_with_final: tuple[ev.StopReason, str] | None = None

    # --- events ---------------------------------------------------------------------------------

    def stop_with_final(self, reason: ev.StopReason, detail: str = "") -> None:
        """Research stopped for ``reason`` and a final stage follows: the stop line is sent with
        the final line, just before it, once Stop can no longer change the reply's reason (Stop
        pressed during the final stage makes it ``cancelled``: cancellation wins)."""
        self._stop_with_final = (reason, detail)

    def emit(self, event: ev.Event) -> None:
        """Send ``event`` to the sink. A reply has exactly one ``stop`` and one ``final`` line
        (DESIGN §5): a second of either (an ending that failed after writing one) is dropped."""
        if isinstance(event, ev.FinalFinished) and self._stop_with_final is not None:
            reason, detail = self._stop_with_final
            self._stop_with_final = None
            if self.stopped_as is None:
                reason = "cancelled" if self.cancel.cancelled else reason
                self.emit(ev.ResearchStopped(event.t, reason, detail))
        if isinstance(event, ev.ResearchStopped):
            if self.stopped_as is not None:
                log.warning("a second stop line (%s) dropped", event.reason)
                return
            self.stopped_as = event.reason
        elif isinstance(event, ev.FinalFinished):
            if self._final_sent:
                log.warning("a second final line (%s) dropped", event.mode)
                return
            self._final_sent = True
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

    def check_cancel_and_time(self) -> None:
        """Raise the stop that Stop or the research time calls for now, if any."""
        if self.cancel.cancelled:
            raise ResearchStop("cancelled")
        if self.clock.expired:
            raise ResearchStop("time_budget", "the research time ran out between tool calls")
