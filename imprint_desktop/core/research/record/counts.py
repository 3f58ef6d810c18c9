"""How far a server's token counts and Imprint's estimates of them diverged over one reply.

A remote provider's budget is charged by an estimate before each request (its prompt counted at
conservative bytes-per-token rates, :mod:`~imprint_desktop.core.providers.estimate`), then settled
by the usage the server reports. The estimate is what the budget can rely on before a request is
sent; how close it came is what the person sees here, in the research record and in ``imprint ask
--json`` (``token_counts``): the prompt tokens Imprint estimated and the server reported, summed
over the requests the server reported usage for. From trace lines alone (DESIGN §5): each
``request`` line holds the engine's count (``prompt_tokens``) and the server's raw usage
(``provider_usage``). A local model counts exactly and reports no usage: nothing to compare.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.trace import trace_line


@dataclass(frozen=True, slots=True)
class CountsCheck:
    """The prompt tokens of ``requests`` requests, as Imprint estimated and the server counted."""

    requests: int
    estimated: int
    reported: int

    @property
    def ratio(self) -> float:
        """The estimate over the server's count (above 1: the budget was charged more first)."""
        return self.estimated / self.reported if self.reported else 0.0

    def words(self) -> str:
        """ "estimated 1,410 prompt tokens, the server counted 1,234 (1.14×) over 3 requests"."""
        requests = f"{self.requests} request{'' if self.requests == 1 else 's'}"
        return (
            f"estimated {self.estimated:,} prompt tokens, the server counted {self.reported:,} "
            f"({self.ratio:.2f}×) over {requests}"
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "requests": self.requests,
            "estimated_prompt_tokens": self.estimated,
            "reported_prompt_tokens": self.reported,
            "ratio": round(self.ratio, 3),
        }


def counts_check(lines: Iterable[Mapping[str, object]]) -> CountsCheck | None:
    """The check over the ``request`` lines of a trace whose server reported prompt tokens;
    None when none did (a local model, or a server that reports no usage)."""
    requests = estimated = reported = 0
    for line in lines:
        if line.get("type") != "request":
            continue
        usage = line.get("provider_usage")
        if not isinstance(usage, Mapping):
            continue
        counted, own = usage.get("prompt_tokens"), line.get("prompt_tokens")
        if not _count(counted) or not _count(own):
            continue
        requests += 1
        estimated += own
        reported += counted
    return CountsCheck(requests, estimated, reported) if requests else None


def _count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a count of some tokens (a positive int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass
class RequestLines:
    """An event sink that keeps the trace's ``request`` lines of a reply as it runs (for
    :func:`counts_check` where no trace file is written)."""

    lines: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.RequestFinished) and (line := trace_line(event)) is not None:
            self.lines.append(line)

    def check(self) -> CountsCheck | None:
        return counts_check(self.lines)
