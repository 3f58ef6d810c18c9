"""What the research engine reports while it works: one stream of immutable events.

The GUI (through the bridge), the trace writer and the history store all consume the same events,
so the window, the trace and the saved conversation cannot disagree. Events are frozen dataclasses:
safe to hand from the loop thread to the GUI thread as they are.

``t`` on every event is research-independent wall time since the reply started (seconds, from the
monotonic clock), which is what the trace format records. Their words — why research stopped, a
request's phase, how a call ended — are the Literals of :mod:`imprint_desktop.core.vocabulary`.

A consumer reacts to them through :func:`dispatch` and an
:class:`~imprint_desktop.core.research.handler.EventHandler`, or with its own ``match`` over
:data:`AnyEvent` ending in ``assert_never`` (the trace, which must decide about every event): either
way, an event type added without its case fails mypy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, assert_never

from imprint_desktop.core.config import Config
from imprint_desktop.core.consent import Decision

# The words events are made of (:mod:`imprint_desktop.core.vocabulary`), named here too for the
# code that builds events (``ev.StopReason``); ``X as X`` is how mypy reads a re-export.
from imprint_desktop.core.vocabulary import FinalMode as FinalMode  # noqa: PLC0414
from imprint_desktop.core.vocabulary import Phase as Phase  # noqa: PLC0414
from imprint_desktop.core.vocabulary import PrefixSource, RequestEnd
from imprint_desktop.core.vocabulary import StopReason as StopReason  # noqa: PLC0414
from imprint_desktop.core.vocabulary import ToolOrigin as ToolOrigin  # noqa: PLC0414
from imprint_desktop.core.vocabulary import ToolStatus as ToolStatus  # noqa: PLC0414

if TYPE_CHECKING:
    from imprint_desktop.core.research.handler import EventHandler


@dataclass(frozen=True, slots=True)
class Event:
    t: float


@dataclass(frozen=True, slots=True)
class ReplyStarted(Event):
    question: str
    config: Config  # the settings the reply runs under (the trace writes them all)
    provider: str


@dataclass(frozen=True, slots=True)
class RoundStarted(Event):
    round: int
    worker: str | None = None  # the section a worker researches, None for the coordinator


@dataclass(frozen=True, slots=True)
class RequestStarted(Event):
    phase: Phase
    round: int
    prompt_tokens: int
    reserved: int


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    phase: Phase
    text: str


@dataclass(frozen=True, slots=True)
class RequestFinished(Event):
    """One model request and its accounting, exactly as the trace's ``request`` line."""

    phase: Phase
    round: int
    prompt_tokens: int
    reserved: int
    reused_prefix: int
    charged_prompt: int
    output_tokens: int
    charged: int
    refunded: int
    budget_left: int
    estimated: bool
    provider_usage: Mapping[str, Any] | None
    stop: RequestEnd
    # Where reused_prefix comes from: "kv_cache" (local model), "server" (its cached_tokens) or
    # "estimate" (the prompt shared with the previous request); None for a request that failed.
    prefix_source: PrefixSource | None = None


@dataclass(frozen=True, slots=True)
class ToolStarted(Event):
    round: int
    call_id: str
    name: str
    kind: str
    summary: str  # what it is doing, in words: "Searching 'quarry'"
    origin: ToolOrigin = "model"
    arguments: str = ""  # the call's arguments as the model sent them (untrusted JSON text)


@dataclass(frozen=True, slots=True)
class EvidenceItemView:
    """One new piece of evidence as the person sees it (and as ``--json`` reports it)."""

    id: int
    source: str
    location: str
    excerpt: str
    title: str = ""  # the document's title, where the tool knows it
    #: How its document stands ("dated 2026-02-10; looks superseded: …"), where the tool knows it.
    currency: str = ""


@dataclass(frozen=True, slots=True)
class ToolFinished(Event):
    round: int
    call_id: str
    name: str
    kind: str
    status: ToolStatus
    new_evidence: int
    repeated_evidence: int
    seconds: float
    evidence: tuple[EvidenceItemView, ...] = ()
    origin: ToolOrigin = "model"
    #: Research seconds past the deadline when the call returned (0.0 within it).
    past_deadline: float = 0.0


@dataclass(frozen=True, slots=True)
class QuestionAsked(Event):
    call_id: str
    question: str


@dataclass(frozen=True, slots=True)
class UserWait(Event):
    seconds: float
    answer: str


@dataclass(frozen=True, slots=True)
class ConsentDecided(Event):
    """What became of a ``fetch_url`` that needed the person's consent (DESIGN §2, §5)."""

    call_id: str
    url: str
    decision: Decision
    seconds: float  # how long the person took (not research time)


@dataclass(frozen=True, slots=True)
class RoundEnded(Event):
    round: int
    progress: bool
    excluded: bool
    no_progress_rounds: int
    #: "engine": a round the engine researched on the model's behalf (:mod:`.driven`).
    origin: ToolOrigin = "model"


@dataclass(frozen=True, slots=True)
class BudgetUpdate(Event):
    """Everything the budget widgets show, sent whenever any of it changes."""

    research_seconds: float
    time_budget: float
    time_paused: bool
    tokens_charged: int
    tokens_reserved: int
    token_budget: int
    no_progress_rounds: int
    patience: int
    rounds: int
    evidence: int


@dataclass(frozen=True, slots=True)
class ResearchStopped(Event):
    reason: StopReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FinalStarted(Event):
    allowance: int
    deadline_seconds: float


@dataclass(frozen=True, slots=True)
class FinalFinished(Event):
    mode: FinalMode
    seconds: float


@dataclass(frozen=True, slots=True)
class TokenTotals:
    budget: int
    charged: int
    refunded: int
    final_charged: int


@dataclass(frozen=True, slots=True)
class SourceView:
    """One entry of the Sources under an answer: a cited item, or a top passage found (with the
    part of it that best matches the question)."""

    id: int
    source: str
    location: str
    title: str
    cited: bool
    excerpt: str = ""  # for a passage found but not cited: what of it is quoted


#: How far an answer stands on its passages (:mod:`~.grounding`): every claim checked is held by a
#: passage sentence about the question; some are; none is; or the reply says nothing was found.
GroundingVerdict: TypeAlias = Literal["supported", "partly", "unsupported", "not_found"]
GROUNDING_VERDICTS: tuple[GroundingVerdict, ...] = (
    "supported",
    "partly",
    "unsupported",
    "not_found",
)


@dataclass(frozen=True, slots=True)
class ClaimView:
    """One sentence of an answer: the passages (citation numbers) whose sentences hold what it
    says, and — when no passage holds a number, date or name of it, or only a passage about
    something else does — a note saying so ("“1986”: the passage says this of Gannet Point")."""

    text: str
    supported_by: tuple[int, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class GroundingView:
    """What an answer stands on (DESIGN §6, "Answers are accountable"). ``offered`` is the
    passage sentence (of passage ``offered_from``) that answers the question's terms, offered
    when the answer is not supported ("" when none does)."""

    verdict: GroundingVerdict
    claims: tuple[ClaimView, ...] = ()
    offered: str = ""
    offered_from: int = 0

    @property
    def flagged(self) -> tuple[ClaimView, ...]:
        """The claims a person should check: what no passage about the question holds."""
        return tuple(claim for claim in self.claims if claim.note)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "claims": [
                {"text": c.text, "supported_by": list(c.supported_by), "note": c.note}
                for c in self.claims
            ],
            "offered": (
                {"text": self.offered, "source": self.offered_from} if self.offered else None
            ),
        }

    @classmethod
    def from_json(cls, kept: object) -> GroundingView | None:
        """A grounding as :meth:`to_json` wrote it (None for anything else: older replies)."""
        if not isinstance(kept, dict) or kept.get("verdict") not in GROUNDING_VERDICTS:
            return None
        claims = tuple(
            ClaimView(
                str(c.get("text", "")),
                tuple(int(n) for n in c.get("supported_by", ()) if isinstance(n, int)),
                str(c.get("note", "")),
            )
            for c in kept.get("claims", ())
            if isinstance(c, dict)
        )
        offered = kept.get("offered")
        text, source = "", 0
        if isinstance(offered, dict):
            text, number = str(offered.get("text", "")), offered.get("source", 0)
            source = number if isinstance(number, int) else 0
        verdict: GroundingVerdict = kept["verdict"]
        return cls(verdict, claims, text, source)


@dataclass(frozen=True, slots=True)
class RunawayView:
    """Why an answer was cut while it streamed (:mod:`~.runaway`): ``kind`` ``loop`` (it began
    repeating itself) or ``echo`` (it began copying its request back), and ``why`` in words."""

    kind: Literal["loop", "echo"]
    why: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "why": self.why}


@dataclass(frozen=True, slots=True)
class ReplyResult:
    """The end of a reply, whatever ended it (also for ``imprint ask --json``).

    ``answer`` is the answer's text alone; its ``sources`` are a field of their own, which each
    view renders (:func:`~.sources.with_sources` as text)."""

    answer: str
    final_mode: FinalMode
    stop_reason: StopReason
    rounds: int
    evidence: tuple[EvidenceItemView, ...]
    tokens: TokenTotals
    research_seconds: float
    user_wait_seconds: float
    error: str | None = None
    trace: str | None = None
    sources: tuple[SourceView, ...] = ()
    #: What the answer stands on; None when no answer was written (the labelled fallback).
    grounding: GroundingView | None = None
    #: Why the answer was cut as it streamed; None when it ran to its end.
    runaway: RunawayView | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "final_mode": self.final_mode,
            "stop_reason": self.stop_reason,
            "rounds": self.rounds,
            "evidence": [
                {
                    "id": item.id,
                    "source": item.source,
                    "location": item.location,
                    "excerpt": item.excerpt,
                    "currency": item.currency,
                }
                for item in self.evidence
            ],
            "tokens": {
                "budget": self.tokens.budget,
                "charged": self.tokens.charged,
                "refunded": self.tokens.refunded,
                "final_charged": self.tokens.final_charged,
            },
            "research_seconds": round(self.research_seconds, 3),
            "user_wait_seconds": round(self.user_wait_seconds, 3),
            "error": self.error,
            "trace": self.trace,
            "sources": [
                {
                    "id": item.id,
                    "source": item.source,
                    "location": item.location,
                    "title": item.title,
                    "cited": item.cited,
                    "excerpt": item.excerpt,
                }
                for item in self.sources
            ],
            "grounding": self.grounding.to_json() if self.grounding is not None else None,
            "runaway": self.runaway.to_json() if self.runaway is not None else None,
        }


@dataclass(frozen=True, slots=True)
class ReplyFinished(Event):
    result: ReplyResult = field(compare=False)


#: Every event the engine sends. :func:`dispatch`, and any ``match`` over events, covers them all.
AnyEvent: TypeAlias = (
    ReplyStarted
    | RoundStarted
    | RequestStarted
    | TextDelta
    | RequestFinished
    | ToolStarted
    | ToolFinished
    | QuestionAsked
    | UserWait
    | ConsentDecided
    | RoundEnded
    | BudgetUpdate
    | ResearchStopped
    | FinalStarted
    | FinalFinished
    | ReplyFinished
)


def dispatch(event: Event, handler: EventHandler) -> None:  # noqa: PLR0912 - one case per event
    """Call ``handler``'s method for the type of ``event``."""
    if not isinstance(event, AnyEvent):  # not one of the engine's: no method of its own
        handler.on_event(event)
        return
    match event:
        case TextDelta():
            handler.on_text_delta(event)
        case ReplyStarted():
            handler.on_reply_started(event)
        case RoundStarted():
            handler.on_round_started(event)
        case RequestStarted():
            handler.on_request_started(event)
        case RequestFinished():
            handler.on_request_finished(event)
        case ToolStarted():
            handler.on_tool_started(event)
        case ToolFinished():
            handler.on_tool_finished(event)
        case QuestionAsked():
            handler.on_question_asked(event)
        case UserWait():
            handler.on_user_wait(event)
        case ConsentDecided():
            handler.on_consent_decided(event)
        case RoundEnded():
            handler.on_round_ended(event)
        case BudgetUpdate():
            handler.on_budget_update(event)
        case ResearchStopped():
            handler.on_research_stopped(event)
        case FinalStarted():
            handler.on_final_started(event)
        case FinalFinished():
            handler.on_final_finished(event)
        case ReplyFinished():
            handler.on_reply_finished(event)
        case _:
            assert_never(event)
