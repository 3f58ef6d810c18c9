"""A research conversation — the coordinator's, or a section worker's — and what its rounds found.

The round loop (:mod:`.rounds`) runs every conversation the same way; what differs is here: the
messages so far, the tools it may call, its own patience, and what the engine searches for before
its first request. Every call of a conversation gets an id no earlier call had, so each result
pairs with exactly one call (DESIGN §1: protocol completeness).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from imprint_desktop.core.providers.base import Message, Phase, ToolCall
from imprint_desktop.core.research.budgets import Patience
from imprint_desktop.core.tools.tool import ToolKind


@dataclass
class Conversation:
    """One research conversation: the coordinator's, or a section worker's."""

    messages: list[Message]
    phase: Phase
    worker: str | None  # the section a worker researches; None for the coordinator
    patience: Patience
    tool_schemas: tuple[Mapping[str, Any], ...]
    allowed: frozenset[ToolKind]
    seed: str = ""  # what the engine searches for before the first request ("": no search)
    # The questions a follow-up follows ("it" and "there" refer to their subject).
    earlier: tuple[str, ...] = ()
    round: int = 0  # the reply-wide number of this conversation's current round
    call_ids: set[str] = field(default_factory=set)  # every tool call id in the conversation

    def offers(self, name: str) -> bool:
        """Whether this conversation's requests declare the tool ``name``."""
        return any(schema.get("function", {}).get("name") == name for schema in self.tool_schemas)

    def new_calls(self, calls: Sequence[ToolCall], round_number: int) -> tuple[ToolCall, ...]:
        """``calls`` with ids no earlier call of the conversation had (and none twice).

        A model may reuse ``call_0`` in every round, and a server may send no id at all; the
        conversation sent back must still pair every result with exactly one call.
        """
        unique: list[ToolCall] = []
        for index, call in enumerate(calls):
            call_id = call.id or f"call_{round_number}_{index}"
            if call_id in self.call_ids:
                call_id = f"{call_id}_r{round_number}_{index}"
                while call_id in self.call_ids:
                    call_id += "_"
            self.call_ids.add(call_id)
            unique.append(call if call_id == call.id else replace(call, id=call_id))
        return tuple(unique)


@dataclass
class Batch:
    """What the finished calls of one round found."""

    progress: bool = False
    excluded: bool = False  # a write was carried out

    @property
    def counts_out(self) -> bool:
        """Left out of the no-progress count: a write, and nothing new beside it (ADR 0159)."""
        return self.excluded and not self.progress
