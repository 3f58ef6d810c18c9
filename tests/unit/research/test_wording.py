"""How research went, in words (issue 18): every stop reason, phase, call status and final mode is
worded in each form a view reads, in one place, and the words are those the views always showed."""

from __future__ import annotations

from typing import get_args

import pytest

from imprint_desktop.core.research import wording as w
from imprint_desktop.core.vocabulary import CallStatus, FinalMode, Phase, StopReason

#: What the views said before their tables became one (window, record, ``imprint ask``, the final
#: answer's fallback, a skipped call's result): a stop reason's forms must not drift.
SAID_BEFORE: dict[str, tuple[str, str, str, str, str]] = {
    "answered": (
        "The model answered.",
        "research is over",
        "answered",
        "answered",
        "research is over",
    ),
    "no_progress": (
        "Research stopped: recent rounds found no new evidence.",
        "research stopped finding new evidence",
        "research stopped finding new evidence",
        "stopped: no new evidence",
        "research stopped making progress",
    ),
    "time_budget": (
        "Research stopped: the research time ran out.",
        "the research time budget ran out",
        "the research time budget ran out",
        "stopped: time ran out",
        "research time budget exhausted",
    ),
    "token_budget": (
        "Research stopped: the research token budget ran out.",
        "the research token budget ran out",
        "the research token budget ran out",
        "stopped: tokens ran out",
        "research token budget exhausted",
    ),
    "context_full": (
        "Research stopped: the model's context window is full.",
        "the conversation no longer fits the model's context window",
        "the context window filled up",
        "stopped: context full",
        "the context window is full",
    ),
    "cancelled": (
        "Stopped.",
        "you stopped the reply",
        "stopped",
        "stopped: by you",
        "the reply was stopped",
    ),
    "error": (
        "The model failed.",
        "the model failed",
        "the model failed",
        "stopped: model failed",
        "the model failed",
    ),
}


@pytest.mark.parametrize("reason", get_args(StopReason))
def test_every_stop_reason_is_worded_in_every_form(reason: StopReason) -> None:
    words = w.stop_words(reason)
    assert (words.sentence, words.why, words.brief, words.mark, words.to_model) == SAID_BEFORE[
        reason
    ]
    assert words.sentence.endswith(".") and words.sentence[0].isupper()
    for part in (words.why, words.brief, words.to_model):  # read inside a sentence
        assert part and part[0].islower() and not part.endswith(".")
    assert words.mark == "answered" or words.mark.startswith("stopped: ")
    assert w.stop_sentence(reason) == words.sentence and w.stop_mark(reason) == words.mark


def test_no_two_stop_reasons_read_alike_on_their_own() -> None:
    reasons = get_args(StopReason)
    assert set(SAID_BEFORE) == set(reasons)
    for form in ("sentence", "brief", "mark"):
        said = [getattr(w.stop_words(reason), form) for reason in reasons]
        assert len(set(said)) == len(said), form


@pytest.mark.parametrize("reason", [None, "", "Answered", "interrupted", "stop"])
def test_a_stop_reason_read_back_that_is_not_known_is_said_as_none(reason: str | None) -> None:
    assert w.stop_sentence(reason) == ""
    assert w.stop_mark(reason) == "stopped: interrupted"


@pytest.mark.parametrize("phase", get_args(Phase))
def test_every_phase_has_its_request_row_and_its_status_line(phase: Phase) -> None:
    words = w.phase_words(phase)
    assert words.request.endswith("request") and w.request_words(phase) == words.request
    assert words.now[0].isupper() and words.now.endswith("…")


def test_the_phases_say_what_they_always_said() -> None:
    said = {phase: w.phase_words(phase) for phase in get_args(Phase)}
    assert said["research"] == w.PhaseWords("model request", "Thinking…")
    assert said["worker"] == w.PhaseWords("section request", "Working on a section…")
    assert said["condense"] == w.PhaseWords("condensing request", "Condensing the evidence…")
    assert said["final"] == w.PhaseWords("final answer request", "Writing the final answer…")
    assert w.request_words("planning") is None


def test_each_phase_has_its_own_status_line() -> None:
    lines = [w.phase_words(phase).now for phase in get_args(Phase)]
    assert len(set(lines)) == len(lines)


@pytest.mark.parametrize("status", get_args(CallStatus))
def test_every_call_status_is_worded(status: CallStatus) -> None:
    words = w.call_status_words(status)
    assert words and w.status_words(status) == words
    assert words == {"empty": "nothing found", "running": "running…"}.get(
        status, status.replace("_", " ")
    )


def test_a_call_status_read_back_that_is_not_known_is_shown_in_words() -> None:
    assert w.status_words("timed_out") == "timed out"
    assert w.status_words("") == ""


def test_every_final_mode_is_worded_for_the_record_and_the_panel() -> None:
    said = {mode: w.final_mode_words(mode) for mode in get_args(FinalMode)}
    assert said == {
        "model": w.FinalModeWords("written by the model", "written by the model"),
        "fallback": w.FinalModeWords(
            "the evidence, unanswered (no final answer could be written)",
            "the evidence, unanswered",
        ),
        "no_evidence": w.FinalModeWords(
            "nothing was found in the documents",
            "nothing was found, so the model was not asked",
        ),
    }
