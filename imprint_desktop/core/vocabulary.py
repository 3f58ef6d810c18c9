"""The words research is reported in: why it stopped, what a model request is for, how a tool call
ended, how the answer was made and who made a call.

Each is a ``Literal`` of the exact strings the engine puts in its events, its trace and
``imprint ask --json``, so string call sites keep type-checking and the trace format is the
vocabulary itself. They live here, at the bottom of ``core``, because the providers (a request's
phase) and the tools (a result's status) speak them too, below the research engine that reports
them. :mod:`imprint_desktop.core.research.wording` words each of them for people, checked by mypy
to cover every value; text from a trace or the history is checked with the ``is_…`` guards first.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

#: Why research stopped (DESIGN §1).
StopReason = Literal[
    "answered", "no_progress", "time_budget", "token_budget", "context_full", "cancelled", "error"
]
#: What a model request is for: a research round, a section worker's round, condensing the
#: evidence for the final answer, or the final answer itself.
Phase = Literal["research", "worker", "condense", "final"]
#: How a tool call ended: it ran ("empty" when it found nothing), it failed, or the engine answered
#: it without running it (research was over).
ToolStatus = Literal["ok", "empty", "error", "not_executed"]
#: A tool call as the activity shows it: how it ended, still running, or a fetch the person denied
#: (a denied fetch ends as an "error" result, which the consent decision explains).
CallStatus = Literal[ToolStatus, "denied", "running"]
#: How the reply's answer was made: by the model, as the labelled evidence fallback, or as the
#: engine's own "nothing was found" message when research ended on a budget with no evidence.
FinalMode = Literal["model", "fallback", "no_evidence"]
#: Who made a tool call: the model, or the engine itself (the search before answering).
ToolOrigin = Literal["model", "engine"]
#: Why a model's completion ended, as the provider reports it.
StopKind = Literal["stop", "tool_calls", "length", "deadline", "cancelled"]
#: How a model request ended in the trace's ``request`` line: the completion's own end, or the
#: reason research stopped while it ran (a failed or stopped request).
RequestEnd = Literal[StopKind, StopReason]
#: Where a completion's ``reused_prefix`` comes from: the local model's KV cache, the server's
#: ``cached_tokens``, or the provider's estimate of the prefix shared with the previous prompt.
PrefixSource = Literal["kv_cache", "server", "estimate"]

STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)
PHASES: tuple[Phase, ...] = get_args(Phase)
CALL_STATUSES: tuple[CallStatus, ...] = get_args(CallStatus)
FINAL_MODES: tuple[FinalMode, ...] = get_args(FinalMode)


def is_stop_reason(value: object) -> TypeGuard[StopReason]:
    return value in STOP_REASONS


def is_phase(value: object) -> TypeGuard[Phase]:
    return value in PHASES


def is_call_status(value: object) -> TypeGuard[CallStatus]:
    return value in CALL_STATUSES


def is_final_mode(value: object) -> TypeGuard[FinalMode]:
    return value in FINAL_MODES
