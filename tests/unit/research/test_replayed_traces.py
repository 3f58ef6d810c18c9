"""Real replies replayed against the novelty code (issue 42, item 2; ADR 0102, invalidation 1).

Each reply in ``tests/data/traces/`` was asked of the starter model through ``imprint ask`` (the
README there says how). Its trace records every tool call's new and repeated evidence; beside it,
``*.evidence.jsonl`` holds what the calls returned, in full and in order. Replaying that evidence
through a fresh :class:`~imprint_desktop.core.research.ledger.EvidenceLedger` must give every
call the judgement the trace recorded, item by item, and every round the progress it recorded: a
change to the novelty rules that makes useful evidence look repeated (or old evidence look new)
fails here on replies a person could have asked.

One verdict in them is known to be wrong, and either verdict is accepted for it
(:data:`KNOWN_GAPS`), so that fixing it does not fail here; one the reply got wrong is right now
and must stay so (:data:`FIXED`); every other item must keep its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core.research.ledger import EvidenceLedger, Judged
from imprint_desktop.core.tools.tool import EvidenceItem

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
NAMES = sorted(path.name.removesuffix(".trace.jsonl") for path in TRACES.glob("*.trace.jsonl"))

#: (reply, call, item index) of a verdict known to be wrong, and why.
KNOWN_GAPS = {
    (
        "server-railway-01",
        "call__0_search_workspace_cmpl-653567d0-27f2-446f-92ed-dae239a97815",
        9,
    ): "judged new: stations/lakeside.md lines 1-10, seen in round 0, again with its white space "
    "flattened and its end cut at the result size cap",
}
#: (reply, call, item index) of a verdict the reply got wrong and the engine now gets right:
#: replayed, it must come out the other way.
FIXED = {
    (
        "server-share-00",
        "call__0_list_documents_cmpl-52eff59b-c081-44b4-8cd7-787fc3b79cda",
        6,
    ): "judged repeated: the listing line 'Budget (230 bytes)' of finance/budget-2026.md, after "
    "'Budget (219 bytes)' of finance/budget-2025.md (a listed document is judged with its path)",
}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class Call:
    """One tool call as replayed: what the ledger made of the evidence it returned."""

    id: str
    name: str
    items_before: int
    judged: Judged | None = None
    verdicts: list[bool] = field(default_factory=list)  # each item: new?
    recorded: list[bool] = field(default_factory=list)  # each item: new, as the reply judged it

    def counts(self, ledger: EvidenceLedger) -> tuple[int, int]:
        """(new, repeated) as a trace line counts them; a coordinator's new evidence is what its
        workers kept."""
        if self.judged is None:  # answered without running (a stop, a tool not offered)
            return 0, 0
        new = len(self.judged.new)
        if self.name == "research_sections":
            new = len(ledger.items) - self.items_before
        return new, self.judged.repeated


def replay(steps: list[dict[str, Any]]) -> list[tuple[Call, tuple[int, int]]]:
    """Every tool call of a recorded reply, in the order it finished, with its replayed counts."""
    ledger = EvidenceLedger()
    running: list[Call] = []
    done: list[tuple[Call, tuple[int, int]]] = []
    for step in steps:
        match step["step"]:
            case "started":
                running.append(Call(step["call_id"], step["name"], len(ledger.items)))
            case "record":
                items = [EvidenceItem(**item) for item in step["items"]]
                first = ledger.next_citation
                judged = ledger.record(items, judge=step["judge"])
                new = {view.id for view in judged.new}
                call = running[-1]
                call.judged = judged
                call.verdicts = [first + offset in new for offset in range(len(items))]
                call.recorded = list(step["new"])
            case "learn":
                ledger.learn(step["texts"])
            case "finished":
                call = running.pop()
                assert call.id == step["call_id"]
                done.append((call, call.counts(ledger)))
            case other:
                raise AssertionError(f"unknown step {other!r}")
    assert not running
    return done


def gaps(name: str, call: Call, known: dict[tuple[str, str, int], str] = KNOWN_GAPS) -> set[int]:
    """The items of ``call`` whose verdict is a known gap (either verdict is accepted), or with
    ``known=FIXED`` one fixed since the reply."""
    return {index for (reply, call_id, index) in known if (reply, call_id) == (name, call.id)}


@pytest.mark.parametrize("name", NAMES)
def test_each_call_is_judged_as_the_reply_judged_it(name: str) -> None:
    trace = lines(TRACES / f"{name}.trace.jsonl")
    replayed = replay(lines(TRACES / f"{name}.evidence.jsonl"))
    tools = [event for event in trace if event["type"] == "tool"]
    assert [call.id for call, _ in replayed] == [event["call_id"] for event in tools]
    for (call, counts), event in zip(replayed, tools, strict=True):
        where = f"{name}: {call.id} ({call.name}), round {event['round']}"
        if call.name != "research_sections":  # the evidence beside the trace is the trace's
            recorded = (sum(call.recorded), len(call.recorded) - sum(call.recorded))
            assert recorded == (event["new_evidence"], event["repeated_evidence"]), where
        known, fixed = gaps(name, call), gaps(name, call, FIXED)
        for index, (verdict, then) in enumerate(zip(call.verdicts, call.recorded, strict=True)):
            judged = "new" if verdict else "repeated"
            if index in fixed:
                assert verdict != then, f"{where}, item {index}: judged {judged} again"
            elif index not in known:
                assert verdict == then, f"{where}, item {index}: judged {judged}"
        if not known and not fixed:
            assert counts == (event["new_evidence"], event["repeated_evidence"]), where


def test_the_known_gaps_are_in_the_traces() -> None:
    """Each known wrong verdict names an item the reply judged as its reason says."""
    for (name, call_id, index), why in {**KNOWN_GAPS, **FIXED}.items():
        steps = lines(TRACES / f"{name}.evidence.jsonl")
        replayed = {call.id: call for call, _ in replay(steps)}
        assert replayed[call_id].recorded[index] is why.startswith("judged new"), (name, why)


@pytest.mark.parametrize("name", NAMES)
def test_each_round_makes_the_progress_the_reply_made(name: str) -> None:
    """A round is progress when a read in it kept new evidence, or the person answered."""
    trace = lines(TRACES / f"{name}.trace.jsonl")
    replayed = replay(lines(TRACES / f"{name}.evidence.jsonl"))
    tools = [event for event in trace if event["type"] == "tool"]
    progress: dict[int, bool] = {}
    for (_, (new, _)), event in zip(replayed, tools, strict=True):
        made = (event["kind"] == "read" and new > 0) or (
            event["kind"] == "ask" and event["status"] == "ok"
        )
        progress[event["round"]] = progress.get(event["round"], False) or made
    for end in (event for event in trace if event["type"] == "round_end"):
        if not end["excluded"]:
            assert progress.get(end["round"], False) == end["progress"], (name, end)


def kept() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    return {
        name: (
            lines(TRACES / f"{name}.trace.jsonl"),
            lines(TRACES / f"{name}.evidence.jsonl"),
        )
        for name in NAMES
    }


def test_the_traces_hold_a_later_find_and_a_patience_stop() -> None:
    """The set keeps a reply whose useful evidence came after round 0 (the model's own calls
    found what the engine's search had not) and one that stopped on patience."""
    replies = kept()
    later = [
        name
        for name, (trace, _) in replies.items()
        if any(e["type"] == "tool" and e["round"] > 0 and e["new_evidence"] > 0 for e in trace)
    ]
    patience = [
        name
        for name, (trace, _) in replies.items()
        if any(e["type"] == "stop" and e["reason"] == "no_progress" for e in trace)
    ]
    assert later, "no kept reply found new evidence after round 0"
    assert patience, "no kept reply stopped on patience"


def test_evidence_seen_before_the_reply_fails_the_replay() -> None:
    """The replay can fail: a ledger that had already seen a reply's evidence judges its first
    finds repeated, and the counts no longer match the trace."""
    name = next(n for n, (trace, _) in kept().items() if any(e.get("new_evidence") for e in trace))
    steps = lines(TRACES / f"{name}.evidence.jsonl")
    once = replay(steps)
    twice = replay(steps + steps)[len(once) :]
    assert [counts for _, counts in once] != [counts for _, counts in twice]
