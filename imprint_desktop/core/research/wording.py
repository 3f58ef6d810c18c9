"""How research went, in words: why it stopped, what a request is doing, how a call ended, how the
answer was made — for every view that says so (the window, ``imprint ask``, the research record,
the fallback answer) and for the model, which reads why a call was not run.

One place, so that no two views word the same thing two ways, and every form of a word sits beside
the others. Each function matches every value of its :mod:`~imprint_desktop.core.vocabulary` type
and ends in ``assert_never``: mypy fails when a value is added and left unworded. Text read back
from a trace or the history is a plain string; :func:`stop_sentence`, :func:`stop_mark`,
:func:`status_words` and :func:`request_words` word it when it is a known value.
"""

from __future__ import annotations

from typing import NamedTuple, assert_never

from imprint_desktop.core.tools.tool import OUT_OF_TIME
from imprint_desktop.core.vocabulary import (
    CALL_STATUSES,
    CallStatus,
    FinalMode,
    Phase,
    StopReason,
    is_phase,
    is_stop_reason,
)

# The forms of a word are NamedTuples rather than dataclasses: the window loads this module at
# startup, and a NamedTuple is made in a tenth of the time.


class StopWords(NamedTuple):
    """Why research stopped, in each form it is read in."""

    sentence: str  # on its own: the window's stop line, the record's summary
    why: str  # within a sentence for the person: the fallback answer, a section's result
    brief: str  # the first item of ``imprint ask``'s closing line
    mark: str  # the budget chart's stop mark
    to_model: str  # a call not run, after "not executed: " (the model reads it)


def stop_words(reason: StopReason) -> StopWords:  # noqa: PLR0911 - one per reason
    match reason:
        case "answered":
            return StopWords(
                sentence="The model answered.",
                why="research is over",
                brief="answered",
                mark="answered",
                to_model="research is over",
            )
        case "no_progress":
            return StopWords(
                sentence="Research stopped: recent rounds found no new evidence.",
                why="research stopped finding new evidence",
                brief="research stopped finding new evidence",
                mark="stopped: no new evidence",
                to_model="research stopped making progress",
            )
        case "time_budget":
            return StopWords(
                sentence="Research stopped: the research time ran out.",
                why="the research time budget ran out",
                brief="the research time budget ran out",
                mark="stopped: time ran out",
                to_model=OUT_OF_TIME,
            )
        case "token_budget":
            return StopWords(
                sentence="Research stopped: the research token budget ran out.",
                why="the research token budget ran out",
                brief="the research token budget ran out",
                mark="stopped: tokens ran out",
                to_model="research token budget exhausted",
            )
        case "context_full":
            return StopWords(
                sentence="Research stopped: the model's context window is full.",
                why="the conversation no longer fits the model's context window",
                brief="the context window filled up",
                mark="stopped: context full",
                to_model="the context window is full",
            )
        case "cancelled":
            return StopWords(
                sentence="Stopped.",
                why="you stopped the reply",
                brief="stopped",
                mark="stopped: by you",
                to_model="the reply was stopped",
            )
        case "error":
            return StopWords(
                sentence="The model failed.",
                why="the model failed",
                brief="the model failed",
                mark="stopped: model failed",
                to_model="the model failed",
            )
        case _:
            assert_never(reason)


def stop_sentence(reason: str | None) -> str:
    """Why research stopped, or "" for no reason (a reply that never got that far)."""
    return stop_words(reason).sentence if is_stop_reason(reason) else ""


def stop_mark(reason: str | None) -> str:
    """The chart's stop mark, "stopped: interrupted" for a reply that never said why."""
    return stop_words(reason).mark if is_stop_reason(reason) else "stopped: interrupted"


class PhaseWords(NamedTuple):
    """What a model request is for, in each form it is read in."""

    request: str  # the request's row in the activity
    now: str  # what research is doing while it runs (the status line)


def phase_words(phase: Phase) -> PhaseWords:
    match phase:
        case "research":
            return PhaseWords(request="model request", now="Thinking…")
        case "worker":
            return PhaseWords(request="section request", now="Working on a section…")
        case "condense":
            return PhaseWords(request="condensing request", now="Condensing the evidence…")
        case "final":
            return PhaseWords(request="final answer request", now="Writing the final answer…")
        case _:
            assert_never(phase)


def request_words(phase: str) -> str | None:
    """A request's row words for a phase read from a trace, None for one that is not known."""
    return phase_words(phase).request if is_phase(phase) else None


def call_status_words(status: CallStatus) -> str:
    """How a tool call ended (or that it is still running), as the activity's Status column."""
    match status:
        case "ok":
            return "ok"
        case "empty":
            return "nothing found"
        case "error":
            return "error"
        case "not_executed":
            return "not executed"
        case "denied":
            return "denied"
        case "running":
            return "running…"
        case _:
            assert_never(status)


# Asked for every time a view paints a Status cell: worded once.
_STATUS_WORDS: dict[str, str] = {status: call_status_words(status) for status in CALL_STATUSES}


def status_words(status: str) -> str:
    """A call's status as read from a trace; one not known is shown as it is, in words."""
    return _STATUS_WORDS.get(status) or status.replace("_", " ")


class FinalModeWords(NamedTuple):
    """How the answer was made, in each form it is read in."""

    answer: str  # the record's "Answer" figure
    done: str  # the research panel's final-answer line, after "Done in 4.2 s: "


def final_mode_words(mode: FinalMode) -> FinalModeWords:
    match mode:
        case "model":
            return FinalModeWords(answer="written by the model", done="written by the model")
        case "fallback":
            return FinalModeWords(
                answer="the evidence, unanswered (no final answer could be written)",
                done="the evidence, unanswered",
            )
        case "no_evidence":
            return FinalModeWords(
                answer="nothing was found in the documents",
                done="nothing was found, so the model was not asked",
            )
        case _:
            assert_never(mode)
