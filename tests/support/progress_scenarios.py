"""Five ways research makes no progress (DESIGN §1), each declared once: what the model calls in
each round, what each search finds, and what the engine must judge of each round.

The engine's unit tests play them on scripted tools (``tests/unit/research/test_engine.py``: a
search finds :data:`FOUND`'s passages), its integration tests over real HTTP on the real
two-document workspace (``tests/integration/test_engine_remote_progress.py``: the index finds
them, and they check that it finds what :data:`FOUND` says).
"""

from __future__ import annotations

from dataclasses import dataclass

#: ("search", query) | ("read", a path that is not in the workspace) | ("write", "")
Call = tuple[str, str]

#: The passages of the two documents (``harbour.md``, ``keepers.md``), as a search returns them.
LIGHT = ("harbour.md", "The harbour light was first lit on 3 March 1862.")
KEEPERS = ("keepers.md", "Four keepers served in shifts until automation in 1971.")

#: What each query of the scenarios finds, in the order the index ranks it.
FOUND: dict[str, tuple[tuple[str, str], ...]] = {
    "harbour light": (LIGHT,),
    "harbour lens": (LIGHT,),
    "harbour": (LIGHT,),
    "keepers shifts": (KEEPERS,),
    "keepers": (KEEPERS,),
    "shifts": (KEEPERS,),
    "automation paris": (KEEPERS, LIGHT),
    "served workshop": (KEEPERS, LIGHT),
    "zeppelin1 quasar1": (),
    "zeppelin3 quasar3": (),
}

NOTE = ("write", "")


@dataclass(frozen=True)
class ProgressScenario:
    """Rounds the model plays (one tuple of calls a round) under ``patience``, and what the engine
    judges of each: (progress, excluded)."""

    patience: int
    rounds: tuple[tuple[Call, ...], ...]
    judged: tuple[tuple[bool, bool], ...]

    def calls(self, number: int) -> tuple[Call, ...]:
        """The calls of round ``number`` (from 0)."""
        return self.rounds[number]


def _searches(*queries: str) -> tuple[tuple[Call, ...], ...]:
    return tuple((("search", query),) for query in queries)


NEW, SAME, LEFT_OUT = (True, False), (False, False), (False, True)

#: The same search finding the same passage: one round of progress, then patience runs out.
UNCHANGED = ProgressScenario(3, _searches(*["harbour light"] * 4), (NEW, SAME, SAME, SAME))

#: Two queries taking turns, each finding its own passage: new twice, then never again.
ALTERNATING = ProgressScenario(
    4, _searches(*["harbour lens", "keepers shifts"] * 3), (NEW, NEW, SAME, SAME, SAME, SAME)
)

#: Other words finding passages already found, one at a time and both together.
SAME_PASSAGES = ProgressScenario(
    3,
    _searches("keepers", "harbour lens", "shifts", "automation paris", "served workshop"),
    (NEW, NEW, SAME, SAME, SAME),
)

#: Errors that change (another missing file each time) and searches that find nothing.
ERRORS_AND_EMPTY = ProgressScenario(
    4,
    (
        (("read", "missing-0.md"),),
        (("search", "zeppelin1 quasar1"),),
        (("read", "missing-2.md"),),
        (("search", "zeppelin3 quasar3"),),
    ),
    (SAME, SAME, SAME, SAME),
)

#: Rounds with a write are left out of the count; every write is carried out, however alike.
WRITES = ProgressScenario(
    2,
    (
        (("search", "harbour"),),
        (NOTE,),
        (NOTE,),
        (NOTE, ("search", "harbour")),
        (("search", "harbour"),),
        (NOTE,),
        (("search", "harbour"),),
    ),
    (NEW, LEFT_OUT, LEFT_OUT, LEFT_OUT, SAME, LEFT_OUT, SAME),
)
