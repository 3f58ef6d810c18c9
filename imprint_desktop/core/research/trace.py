"""The reply trace: JSON Lines, one event per line (DESIGN §5).

Written from the same events the window shows, so a trace is what the person saw. Each line is
``{"t": seconds since the reply started, "type": ..., ...}``; the types are ``run_start``,
``request``, ``tool``, ``user_wait``, ``consent``, ``round_end``, ``stop`` and ``final``, with
exactly the fields DESIGN §5 lists, plus where a ``request``'s reused prefix came from
(``prefix_source``) and how far past the research deadline a ``tool`` call returned
(``past_deadline``, seconds; 0 within it; docs/research-decisions.md); a ``round_end`` the engine
researched on the model's behalf is marked ``"origin": "engine"``, like its own calls. Secrets
never appear: the settings snapshot holds no secret settings (they live in the keyring), no event
carries one, a password written into a URL the model asked to fetch is replaced by ``***``, and
URLs in settings (a server or proxy address may hold ``user:password@`` or a key in its query)
are written without credentials or query values (:mod:`imprint_desktop.core.urls` holds that
policy). Lines are flushed as they are written, so a trace of a killed process ends at the last
event.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, assert_never

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.urls import redacted_url, without_password


def trace_line(event: ev.Event) -> dict[str, Any] | None:  # noqa: PLR0911 - one per type
    """The trace record of ``event``, or None for events the trace does not keep; a new event
    type fails mypy here until it is decided which."""
    if not isinstance(event, ev.AnyEvent):
        return None
    t = round(event.t, 4)
    match event:
        case ev.ReplyStarted():
            return {
                "t": t,
                "type": "run_start",
                "question": event.question,
                "settings": {
                    key: _without_credentials(value)
                    for key, value in event.config.as_values().items()
                },
            }
        case ev.RequestFinished():
            return {
                "t": t,
                "type": "request",
                "phase": event.phase,
                "round": event.round,
                "prompt_tokens": event.prompt_tokens,
                "reserved": event.reserved,
                "reused_prefix": event.reused_prefix,
                "charged_prompt": event.charged_prompt,
                "output_tokens": event.output_tokens,
                "charged": event.charged,
                "refunded": event.refunded,
                "budget_left": event.budget_left,
                "estimated": event.estimated,
                "provider_usage": dict(event.provider_usage) if event.provider_usage else None,
                "prefix_source": event.prefix_source,
            }
        case ev.ToolFinished():
            return {
                "t": t,
                "type": "tool",
                "round": event.round,
                "call_id": event.call_id,
                "name": event.name,
                "kind": event.kind,
                "status": event.status,
                "new_evidence": event.new_evidence,
                "repeated_evidence": event.repeated_evidence,
                "seconds": round(event.seconds, 4),
                "past_deadline": round(event.past_deadline, 4),
            } | ({"origin": event.origin} if event.origin != "model" else {})
        case ev.UserWait():
            return {"t": t, "type": "user_wait", "seconds": round(event.seconds, 4)}
        case ev.ConsentDecided():
            return {
                "t": t,
                "type": "consent",
                "call_id": event.call_id,
                "url": without_password(event.url),
                "decision": event.decision.value,
                "seconds": round(event.seconds, 4),
            }
        case ev.RoundEnded():
            return {
                "t": t,
                "type": "round_end",
                "round": event.round,
                "progress": event.progress,
                "excluded": event.excluded,
                "no_progress_rounds": event.no_progress_rounds,
            } | ({"origin": event.origin} if event.origin != "model" else {})
        case ev.ResearchStopped():
            return {"t": t, "type": "stop", "reason": event.reason}
        case ev.FinalFinished():
            return {"t": t, "type": "final", "mode": event.mode, "seconds": round(event.seconds, 4)}
        case (
            ev.RoundStarted()
            | ev.RequestStarted()
            | ev.TextDelta()
            | ev.ToolStarted()
            | ev.QuestionAsked()
            | ev.BudgetUpdate()
            | ev.FinalStarted()
            | ev.ReplyFinished()
        ):  # what the window shows as it happens; the trace keeps what came of it
            return None
        case _:
            assert_never(event)


def trace_json(line: dict[str, Any]) -> str:
    """One trace line as strict JSON: a NaN or infinity a server reported becomes null."""
    try:
        return json.dumps(line, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(line), ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _without_credentials(value: Any) -> Any:
    """A setting's value, where a URL (a server or proxy address) is redacted as a record keeps
    a configured address (:func:`~imprint_desktop.core.urls.redacted_url`)."""
    if not isinstance(value, str) or "://" not in value:
        return value
    return redacted_url(value)


class TraceWriter:
    """An event sink that appends trace lines to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("w", encoding="utf-8")

    def __call__(self, event: ev.Event) -> None:
        line = trace_line(event)
        if line is None or self._file is None:
            return
        self._file.write(trace_json(line) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_trace(path: Path) -> list[dict[str, Any]]:
    """All lines of a trace file (a torn last line from a killed process is left out)."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def fan_out(sinks: Iterable[Callable[[ev.Event], None] | None]) -> Callable[[ev.Event], None]:
    """One sink that passes every event to each of ``sinks`` in turn."""
    targets = [sink for sink in sinks if sink is not None]

    def sink(event: ev.Event) -> None:
        for target in targets:
            target(event)

    return sink
