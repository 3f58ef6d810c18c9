"""Scripted tools for engine unit tests: the test decides what every call returns.

The real toolbox is exercised in the workspace tests and in the engine's integration tests; here the
point is exact control over evidence (repeated, alternating, erroring) and timing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from imprint_desktop.core.consent import Decision, RedirectConsent
from imprint_desktop.core.tools.tool import EvidenceItem, ToolKind, ToolResult

#: The toolbox's tools (``ask_user`` and ``research_sections`` are the engine's own).
KINDS = {
    "search_workspace": ToolKind.READ,
    "read_document": ToolKind.READ,
    "list_documents": ToolKind.READ,
    "fetch_url": ToolKind.READ,
    "write_note": ToolKind.WRITE,
}

Respond = Callable[[str, dict[str, Any]], ToolResult | Awaitable[ToolResult]]


def passage(text: str, source: str = "doc.md", location: str = "lines 1-3") -> ToolResult:
    """A read result with one evidence item."""
    return ToolResult(
        "search_workspace", "ok", f"[n] {source}: {text}", (EvidenceItem(source, location, text),)
    )


class FakeTools:
    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.writes: list[dict[str, Any]] = []

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {"name": name, "description": name, "parameters": {"type": "object"}},
            }
            for name in KINDS
        ]

    def kind(self, name: str) -> ToolKind | None:
        return KINDS.get(name)

    @property
    def scope(self) -> str:
        return "the test workspace"

    def needs_consent(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
    ) -> str | None:
        return None  # no fetch here asks the person (tests/integration/test_fetch_consent.py)

    async def execute(
        self,
        name: str,
        arguments: str | Mapping[str, object] | None,
        *,
        timeout: float | None = None,
        first_citation: int = 1,
        max_chars: int | None = None,
        consent: Decision | None = None,
        redirect_consent: RedirectConsent | None = None,
    ) -> ToolResult:
        values = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        self.calls.append((name, values))
        if timeout is not None and timeout <= 0:
            return ToolResult.not_executed(name, "research time budget exhausted")
        if name == "write_note":
            self.writes.append(values)
        outcome = self.respond(name, values)
        if isinstance(outcome, ToolResult):
            return outcome
        try:
            return await asyncio.wait_for(outcome, timeout)
        except TimeoutError:
            return ToolResult.error(name, "the tool did not finish in the research time left.")
