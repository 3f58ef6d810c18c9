"""DESIGN §1 case by case, over real HTTP on 127.0.0.1 (issue 4, "Tests").

Each reply runs in-process through the real :class:`RemoteProvider`, the real toolbox and a real
:class:`Workspace`, against the scripted OpenAI-compatible server of ``tests/support``. The model is
a function of the request the server received, so every test can assert both what the engine
decided (the :class:`ReplyResult`, its events, its trace) and every request the server got: each
tool call answered exactly once, research requests offering tools with the research output
allowance, the final request tools-free with ``chat.max_tokens``.

Nothing sleeps: time limits are small budgets that run out on their own, and stalled streams are
released (or Stop is pressed) from ``wait_for_stall``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from imprint_desktop.core import assistant
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.remote import RemoteProvider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.engine import ResearchEngine, ResearchSettings
from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.research.sources import written
from imprint_desktop.core.research.trace import TraceWriter, fan_out, read_trace
from imprint_desktop.core.tools.toolbox import Toolbox
from imprint_desktop.core.workspace import Workspace
from imprint_desktop.settings.store import SettingsStore
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, Usage

pytestmark = pytest.mark.integration

QUESTION = "What do the keepers' logs say about the lights?"

# --- workspaces ---------------------------------------------------------------------------------

HARBOUR = (
    "# Harbour light\n\nThe harbour light was first lit on 3 March 1862.\n\n"
    "Its lens came from a Paris workshop and weighed two tonnes.\n"
)
KEEPERS = "# Keepers\n\nFour keepers served in shifts until automation in 1971.\n"

# One lighthouse per document; each name occurs in its own document only.
LIGHTS = [
    "Alderney",
    "Bressay",
    "Corsewall",
    "Dunnet",
    "Eddystone",
    "Flamborough",
    "Godrevy",
    "Hartland",
    "Inchkeith",
    "Jura",
    "Kinnaird",
    "Lizard",
    "Muckle",
    "Noss",
    "Orfordness",
    "Pladda",
]
_SYLLABLES = [
    "ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "qui", "ro", "su",
    "ta", "ve", "wi", "xo", "yu", "za", "bre", "clo", "dra", "fli", "gro",
]  # fmt: skip


def lighthouse_text(index: int, name: str, words: int = 90) -> str:
    """A document about one light: its name, then words of its own (no shared passages)."""
    rng = random.Random(index)
    body = " ".join(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(words)
    )
    return f"# {name}\n\nThe {name} light log: {body}.\n"


def open_workspace(root: Path, files: dict[str, str]) -> Workspace:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    workspace = Workspace(root)
    workspace.index.update()
    return workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """Two short documents: the harbour light and its keepers."""
    with open_workspace(
        tmp_path / "docs", {"harbour.md": HARBOUR, "keepers.md": KEEPERS}
    ) as opened:
        yield opened


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Workspace]:
    """Sixteen distinct documents, one per light in :data:`LIGHTS`."""
    files = {f"{name.lower()}.md": lighthouse_text(i, name) for i, name in enumerate(LIGHTS)}
    with open_workspace(tmp_path / "docs", files) as opened:
        yield opened


# --- running one reply ---------------------------------------------------------------------------


def settings(**overrides: Any) -> dict[str, Any]:
    values = dict(SettingsStore(environ={}).snapshot())
    # These scenarios script every request; the engine's own first search is tested on its own.
    values["chat.research_first"] = False
    values.update(overrides)
    return values


@dataclass
class Run:
    result: ev.ReplyResult
    events: list[ev.Event]
    trace: list[dict[str, Any]]

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def lines(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        """Trace lines of type ``kind`` whose fields match ``fields``."""
        return [
            line
            for line in self.trace
            if line["type"] == kind and all(line.get(k) == v for k, v in fields.items())
        ]


def run_reply(
    server: OpenAIServer,
    workspace: Workspace,
    *,
    context_window: int = 32_768,
    cancel: CancelToken | None = None,
    ask: Callable[[str], Any] | None = None,
    clock: Callable[[], float] | None = None,
    extra_sink: Callable[[ev.Event], None] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Run:
    """One reply through ``assistant.research`` (or, with ``clock``, the same engine and toolbox
    built by hand) under the default settings updated with ``config``, recording its events and
    writing its trace next to the workspace."""
    values = settings(**(config or {}))
    events: list[ev.Event] = []
    trace_path = workspace.root.parent / "trace.jsonl"
    writer = TraceWriter(trace_path)
    sink = fan_out([events.append, writer, extra_sink])

    async def reply() -> ev.ReplyResult:
        async with make_async_client(values) as http:
            provider = RemoteProvider(http, server.base_url, "", None, context_window)
            if clock is None:
                return await assistant.research(
                    QUESTION,
                    provider=provider,
                    settings=values,
                    workspace=workspace,
                    http=http,
                    cancel=cancel or CancelToken(),
                    ask=ask,
                    sink=sink,
                )
            engine = ResearchEngine(
                provider,
                ResearchSettings.from_mapping(values),
                cancel=cancel,
                ask=ask,
                sink=sink,
                clock=clock,
            )
            toolbox = Toolbox(workspace, values, http)
            return await engine.run(QUESTION, toolbox)

    try:
        result = asyncio.run(reply())
    finally:
        writer.close()
    return Run(result, events, read_trace(trace_path))


def stop_on_stall(watched: OpenAIServer, cancel: CancelToken, reply: Callable[[], Run]) -> Run:
    """Run ``reply``, pressing Stop (from another thread) once ``watched`` stalls."""
    stalled: list[bool] = []

    def press_stop() -> None:
        stalled.append(watched.wait_for_stall(timeout=20))
        cancel.cancel()

    stopper = threading.Thread(target=press_stop, name="press-stop")
    stopper.start()
    try:
        return reply()
    finally:
        stopper.join()
        assert stalled == [True], "the scripted stall was never reached"


@contextmanager
def stalled_page() -> Iterator[tuple[OpenAIServer, str]]:
    """A local web page that sends its first bytes and then hangs until the test ends."""
    with OpenAIServer() as pages:
        pages.script(Reply.stall("<p>The slow page begins"), path="/slow")
        yield pages, f"{pages.url}/slow"


# --- the scripted model ------------------------------------------------------------------------


def phase_of(request: RecordedRequest) -> str:
    """What the engine asked for, judged from the messages alone (not from ``tools``)."""
    messages = request.messages
    system = messages[0]["content"] if messages else ""
    last = messages[-1] if messages else {}
    if system == prompts.CONDENSE:
        return "condense"
    if system == prompts.WORKER:
        return "worker"
    content = last.get("content") or ""
    if last.get("role") == "user" and content.endswith(
        (prompts.FINAL, prompts.FINAL_WITHOUT_EVIDENCE)
    ):
        return "final"
    return "research"


def turn(request: RecordedRequest) -> int:
    """How many assistant messages the conversation already holds (0 for its first request)."""
    return sum(1 for message in request.messages if message["role"] == "assistant")


def call(request: RecordedRequest, index: int, name: str, **arguments: Any) -> ToolCall:
    """A tool call with an id unique within the conversation the request carries."""
    tag = phase_of(request)[0]
    return ToolCall(f"{tag}{turn(request)}_{index}", name, json.dumps(arguments))


def search(request: RecordedRequest, query: str, index: int = 0) -> ToolCall:
    return call(request, index, "search_workspace", query=query)


Model = Callable[[RecordedRequest], Reply]


def serve(server: OpenAIServer, model: Model, count: int = 80) -> None:
    """Answer the next ``count`` chat requests with ``model``."""
    server.script(*[model] * count)


def research_then_final(research: Model, final: str = "Final from the evidence [1].") -> Model:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.text(final)
        return research(request)

    return model


def tool_messages(request: RecordedRequest) -> list[dict[str, Any]]:
    return [message for message in request.messages if message["role"] == "tool"]


def check_requests(
    server: OpenAIServer, *, research_max_tokens: int, final_max_tokens: int | None = None
) -> dict[str, list[RecordedRequest]]:
    """Every request the server received, checked; returns them by phase."""
    server.assert_protocol_complete()
    by_phase: dict[str, list[RecordedRequest]] = {}
    for number, request in enumerate(server.chat_requests(), start=1):
        body = request.json
        phase = phase_of(request)
        by_phase.setdefault(phase, []).append(request)
        where = f"request {number} ({phase})"
        assert body["stream"] is True, where
        assert body["stream_options"] == {"include_usage": True}, where
        asked = [
            tool_call["id"]
            for message in request.messages
            if message["role"] == "assistant"
            for tool_call in message.get("tool_calls") or ()
        ]
        answered = Counter(message["tool_call_id"] for message in tool_messages(request))
        assert answered == Counter(asked), f"{where}: every call answered exactly once"
        if phase == "final":
            assert not request.tools or body.get("tool_choice") == "none", where
            assert body["max_tokens"] == final_max_tokens, where
        elif phase == "condense":
            assert not request.tools, where
            assert body["max_tokens"] == research_max_tokens, where
        else:
            # No request forces a tool call: the model may always answer (DESIGN §1).
            assert request.tools and body.get("tool_choice") == "auto", where
            assert body["max_tokens"] == research_max_tokens, where
    return by_phase


def stops(run: Run, phase: str) -> list[str]:
    """How each request of ``phase`` ended, as the engine saw it."""
    return [event.stop for event in run.of(ev.RequestFinished) if event.phase == phase]


def tool_names(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.tools or ()}


# --- 1. no round limit ---------------------------------------------------------------------------


def test_research_continues_past_twelve_rounds_while_evidence_is_new(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    def model(request: RecordedRequest) -> Reply:
        done = turn(request)
        if done < 15:
            return Reply.tool_calls(search(request, LIGHTS[done]))
        return Reply.text("Fifteen lights, fifteen logs [1].")

    serve(openai_server, model)
    run = run_reply(
        openai_server,
        library,
        config={
            "chat.research_no_progress_rounds": 2,
            "chat.research_token_budget": 2_000_000,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert result.stop_reason == "answered" and result.final_mode == "model"
    assert result.rounds == 15 and written(result.answer) == "Fifteen lights, fifteen logs [1]."
    assert [item.source for item in result.evidence] == [f"{n.lower()}.md" for n in LIGHTS[:15]]
    assert [event.progress for event in run.of(ev.RoundEnded)] == [True] * 15
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert set(by_phase) == {"research"}, "an answer completes at once: no final request"
    last = by_phase["research"][-1]
    assert len(by_phase["research"]) == 16
    for name, message in zip(LIGHTS[:15], tool_messages(last), strict=True):
        assert f"The {name} light log" in message["content"]
    assert [line["reason"] for line in run.lines("stop")] == ["answered"]


# --- 2-5. what is not progress -------------------------------------------------------------------


def test_unchanged_evidence_stops_after_patience_then_a_tools_free_final(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    serve(
        openai_server,
        research_then_final(
            lambda request: Reply.tool_calls(search(request, "harbour light")),
            "It was first lit on 3 March 1862 [1].",
        ),
    )
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": 3,
            "chat.max_tokens": 777,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress" and result.rounds == 4
    assert (
        result.final_mode == "model"
        and written(result.answer) == "It was first lit on 3 March 1862 [1]."
    )
    assert [event.progress for event in run.of(ev.RoundEnded)] == [True, False, False, False]
    assert [item.source for item in result.evidence] == ["harbour.md"]
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=777)
    assert len(by_phase["research"]) == 4 and len(by_phase["final"]) == 1
    final = by_phase["final"][0]
    assert openai_server.chat_requests()[-1] is final
    assert len(tool_messages(final)) == 4
    assert all("3 March 1862" in message["content"] for message in tool_messages(final))
    assert [line["no_progress_rounds"] for line in run.lines("round_end")] == [0, 1, 2, 3]
    assert run.lines("stop")[0]["reason"] == "no_progress"
    assert [line["mode"] for line in run.lines("final")] == ["model"]


def test_alternating_queries_with_alternating_results_are_caught(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    queries = ["harbour lens", "keepers shifts"]
    serve(
        openai_server,
        research_then_final(
            lambda request: Reply.tool_calls(search(request, queries[turn(request) % 2]))
        ),
    )
    run = run_reply(
        openai_server,
        workspace,
        config={"chat.research_no_progress_rounds": 4, "chat.research_max_output_tokens": 300},
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 6
    assert [event.progress for event in run.of(ev.RoundEnded)] == [True, True] + [False] * 4
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    final = by_phase["final"][0]
    contents = [message["content"] for message in tool_messages(final)]
    assert ["1862" in text for text in contents] == [True, False] * 3, "A, B, A, B, A, B"
    assert ["1971" in text for text in contents] == [False, True] * 3
    assert [(line["new_evidence"], line["repeated_evidence"]) for line in run.lines("tool")] == [
        (1, 0),
        (1, 0),
    ] + [(0, 1)] * 4


def test_different_queries_returning_the_same_passages_are_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    # Two queries find one passage each; then other words find the same passages, one at a time
    # and both together (in the order the index ranks them).
    queries = ["keepers", "harbour lens", "shifts", "automation paris", "served workshop"]
    serve(
        openai_server,
        research_then_final(
            lambda request: Reply.tool_calls(search(request, queries[turn(request)]))
        ),
    )
    run = run_reply(
        openai_server,
        workspace,
        config={"chat.research_no_progress_rounds": 3, "chat.research_max_output_tokens": 300},
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 5
    assert [event.progress for event in run.of(ev.RoundEnded)] == [True, True, False, False, False]
    assert [item.source for item in run.result.evidence] == ["keepers.md", "harbour.md"]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    final = by_phase["final"][0]
    sent = [
        json.loads(tool_call["function"]["arguments"])["query"]
        for message in final.messages
        if message["role"] == "assistant"
        for tool_call in message["tool_calls"]
    ]
    assert sent == queries, "five different queries"
    contents = [message["content"] for message in tool_messages(final)]
    assert ["Four keepers served" in text for text in contents] == [True, False, True, True, True]
    assert ["3 March 1862" in text for text in contents] == [False, True, False, True, True]
    assert [line["repeated_evidence"] for line in run.lines("tool")] == [0, 0, 1, 2, 2]


def test_changing_errors_and_empty_results_are_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    def research(request: RecordedRequest) -> Reply:
        done = turn(request)
        if done % 2:
            return Reply.tool_calls(search(request, f"zeppelin{done} quasar{done}"))
        return Reply.tool_calls(call(request, 0, "read_document", path=f"missing-{done}.md"))

    serve(openai_server, research_then_final(research, "I could not find it."))
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": 3,
            "chat.research_max_output_tokens": 300,
            "chat.answer_without_evidence": True,  # nothing is found: still ask for a final
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress" and result.rounds == 3
    assert result.evidence == ()
    assert [event.status for event in run.of(ev.ToolFinished)] == ["error", "empty", "error"]
    assert [event.progress for event in run.of(ev.RoundEnded)] == [False, False, False]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    final = by_phase["final"][0]
    contents = [message["content"] for message in tool_messages(final)]
    assert "missing-0.md" in contents[0] and "missing-2.md" in contents[2], "the errors changed"
    assert contents[0] != contents[2]
    assert final.messages[-1]["content"] == prompts.FINAL_WITHOUT_EVIDENCE


# --- 6. writes ----------------------------------------------------------------------------------


def test_write_rounds_are_excluded_and_writes_never_deduplicated(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    def note(request: RecordedRequest, index: int = 0) -> ToolCall:
        return call(request, index, "write_note", title="Summary", content="Same note.")

    rounds: list[Callable[[RecordedRequest], list[ToolCall]]] = [
        lambda r: [search(r, "harbour")],
        lambda r: [note(r)],
        lambda r: [note(r)],
        lambda r: [note(r), search(r, "harbour", 1)],
        lambda r: [search(r, "harbour")],
        lambda r: [note(r)],
        lambda r: [search(r, "harbour")],
    ]
    serve(
        openai_server,
        research_then_final(lambda request: Reply.tool_calls(*rounds[turn(request)](request))),
    )
    run = run_reply(
        openai_server,
        workspace,
        config={"chat.research_no_progress_rounds": 2, "chat.research_max_output_tokens": 300},
    )
    assert run.result.stop_reason == "no_progress" and run.result.rounds == 7
    assert [(e.progress, e.excluded) for e in run.of(ev.RoundEnded)] == [
        (True, False),
        (False, True),
        (False, True),
        (False, True),
        (False, False),
        (False, True),
        (False, False),
    ]
    notes = sorted(path.name for path in (workspace.root / workspace.notes_folder).iterdir())
    assert notes == ["summary-2.md", "summary-3.md", "summary-4.md", "summary.md"]
    for path in (workspace.root / workspace.notes_folder).iterdir():
        assert "Same note." in path.read_text(encoding="utf-8")
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    saved = [m["content"] for m in tool_messages(by_phase["final"][0]) if m["name"] == "write_note"]
    assert len(saved) == 4 and len(set(saved)) == 4, saved
    assert [line["excluded"] for line in run.lines("round_end")] == [
        False, True, True, True, False, True, False,
    ]  # fmt: skip


# --- 7. tokens ----------------------------------------------------------------------------------


def test_token_stop_charges_net_of_the_reused_prefix_and_the_refund_is_in_the_trace(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    sent: list[Usage] = []

    def usage_for(request: RecordedRequest) -> Usage:
        """What a server with a prompt cache reports: the previous prompt is the reused prefix."""
        prompt = len(json.dumps(request.messages)) // 5
        cached = sent[-1].prompt_tokens if sent else None
        usage = Usage(prompt, 40, cached=cached)
        sent.append(usage)
        return usage

    def model(request: RecordedRequest) -> Reply:
        usage = usage_for(request)
        if phase_of(request) == "final":
            return Reply.text("Everything the logs say [1].", usage=usage)
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]), usage=usage)

    serve(openai_server, model)
    budget = 4000
    run = run_reply(
        openai_server,
        library,
        config={
            "chat.research_token_budget": budget,
            "chat.research_max_output_tokens": 400,
            "chat.max_tokens": 500,
        },
    )
    result = run.result
    assert result.stop_reason == "token_budget"
    requests = run.lines("request")
    research = [line for line in requests if line["phase"] == "research"]
    assert len(research) >= 3
    assert len(sent) == len(requests) == len(openai_server.chat_requests())
    for line, usage in zip(requests, sent, strict=True):
        assert line["estimated"] is False
        assert line["provider_usage"] == usage.to_json(), "the trace keeps the server's usage"
        assert line["reused_prefix"] == (usage.cached or 0)
        assert line["charged_prompt"] == usage.prompt_tokens - (usage.cached or 0)
        assert line["output_tokens"] == usage.completion_tokens
        assert line["charged"] == line["charged_prompt"] + line["output_tokens"]
    for line in research[1:]:
        assert line["reused_prefix"] > 0, "the reused prefix is not charged"
    for line in research:
        assert line["reserved"] == line["prompt_tokens"] + 400, "the prompt and all of the output"
        assert line["refunded"] == line["reserved"] - line["charged"] > 0
    assert result.tokens.charged == sum(line["charged"] for line in research) <= budget
    assert result.tokens.refunded == sum(line["refunded"] for line in research)
    assert result.tokens.budget == budget
    # The request that would not fit was never sent: the one after the last research request
    # is the final answer, outside the research budget.
    stopped = run.of(ev.ResearchStopped)[0]
    needed, left = (int(n) for n in re.findall(r"\d+", stopped.detail)[:2])
    assert needed > left == research[-1]["budget_left"], stopped.detail
    assert requests[-1]["phase"] == "final"
    assert result.tokens.final_charged == requests[-1]["charged"] > 0
    assert result.final_mode == "model" and written(result.answer) == "Everything the logs say [1]."
    check_requests(openai_server, research_max_tokens=400, final_max_tokens=500)


# --- 8-9. time ----------------------------------------------------------------------------------


@pytest.mark.timeout(30)  # a deadline that is not kept hangs: fail fast
@pytest.mark.parametrize(
    "endless",
    [
        pytest.param(Reply.stall("Let me think about"), id="stalled-stream"),
        # Bytes keep arriving, so no read timeout ever fires: only the deadline can cut it.
        pytest.param(Reply.trickle("Let me think ", interval=0.02), id="trickling-stream"),
    ],
)
def test_time_stop_cuts_an_in_flight_request_at_the_deadline_then_a_final(
    openai_server: OpenAIServer, workspace: Workspace, endless: Reply
) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.text("Lit on 3 March 1862 [1].")
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        return endless  # never finishes on its own

    serve(openai_server, model)
    timeout = 1.0
    started = time.monotonic()
    run = run_reply(
        openai_server,
        workspace,
        config={"chat.research_timeout_sec": timeout, "chat.research_max_output_tokens": 300},
    )
    elapsed = time.monotonic() - started
    result = run.result
    assert result.stop_reason == "time_budget"
    assert timeout - 0.01 <= result.research_seconds < timeout + 0.5
    assert elapsed < timeout + 2, "the endless stream was cut at the deadline"
    assert result.final_mode == "model" and written(result.answer) == "Lit on 3 March 1862 [1]."
    assert stops(run, "research") == ["tool_calls", "deadline"]
    research_lines = run.lines("request", phase="research")
    assert research_lines[1]["charged"] > 0, "the work of a cut request is still charged"
    deltas = "".join(e.text for e in run.of(ev.TextDelta) if e.phase == "research")
    assert deltas.startswith("Let me think")
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    assert len(by_phase["research"]) == 2 and len(by_phase["final"]) == 1
    assert openai_server.chat_requests()[-1] is by_phase["final"][0]
    assert "3 March 1862" in tool_messages(by_phase["final"][0])[0]["content"]
    assert run.lines("stop")[0]["reason"] == "time_budget"


@pytest.mark.timeout(30)  # a deadline that is not kept hangs: fail fast
def test_calls_not_started_when_time_runs_out_mid_batch_are_answered_not_executed(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    with stalled_page() as (pages, url):

        def research(request: RecordedRequest) -> Reply:
            return Reply.tool_calls(
                call(request, 0, "fetch_url", url=url),
                search(request, "harbour", 1),
                call(request, 2, "write_note", title="Never", content="Not to be written."),
            )

        serve(openai_server, research_then_final(research, "What I have [1]."))
        run = run_reply(
            openai_server,
            workspace,
            config={
                "chat.research_timeout_sec": 1.0,
                "chat.research_max_output_tokens": 300,
                "chat.answer_without_evidence": True,  # nothing is found: still ask for a final
                "tools.fetch_url_confirm": False,  # fetched without asking (consent: elsewhere)
            },
        )
        assert pages.wait_for_stall(timeout=0), "the page was being fetched"
    result = run.result
    assert result.stop_reason == "time_budget" and result.rounds == 1
    assert [event.name for event in run.of(ev.ToolStarted)] == ["fetch_url"]
    assert [(line["call_id"], line["status"]) for line in run.lines("tool")] == [
        ("r0_0", "error"),
        ("r0_1", "not_executed"),
        ("r0_2", "not_executed"),
    ]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    final = by_phase["final"][0]
    results = tool_messages(final)
    assert [m["tool_call_id"] for m in results] == ["r0_0", "r0_1", "r0_2"]
    assert "not executed" not in results[0]["content"]
    assert [m["content"] for m in results[1:]] == [
        "not executed: research time budget exhausted"
    ] * 2
    assert not (workspace.root / workspace.notes_folder).exists(), "the write never started"
    assert result.answer.endswith("\n\nWhat I have [1].")  # labelled: not from the documents


# --- 10. Stop ------------------------------------------------------------------------------------

# A Stop that went unheard would end the reply on the time budget instead, well before the timeout.
CANCEL_SETTINGS = {"chat.research_timeout_sec": 15, "chat.research_max_output_tokens": 300}


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_a_request(openai_server: OpenAIServer, workspace: Workspace) -> None:
    def model(request: RecordedRequest) -> Reply:
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        return Reply.stall("Half an")

    serve(openai_server, model)
    cancel = CancelToken()
    run = stop_on_stall(
        openai_server,
        cancel,
        lambda: run_reply(openai_server, workspace, cancel=cancel, config=CANCEL_SETTINGS),
    )
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert "3 March 1862" in result.answer and "harbour.md" in result.answer
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert set(by_phase) == {"research"} and len(by_phase["research"]) == 2, "no final request"
    assert stops(run, "research") == ["tool_calls", "cancelled"]
    assert run.lines("stop")[0]["reason"] == "cancelled"


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_a_tool(openai_server: OpenAIServer, workspace: Workspace) -> None:
    cancel = CancelToken()
    with stalled_page() as (pages, url):

        def model(request: RecordedRequest) -> Reply:
            return Reply.tool_calls(
                call(request, 0, "fetch_url", url=url), search(request, "harbour", 1)
            )

        serve(openai_server, model)
        started = time.monotonic()
        run = stop_on_stall(
            pages,
            cancel,
            lambda: run_reply(
                openai_server,
                workspace,
                cancel=cancel,
                config={**CANCEL_SETTINGS, "tools.fetch_url_confirm": False},
            ),
        )
        elapsed = time.monotonic() - started
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert elapsed < 5, "the fetch was abandoned when Stop was pressed"
    assert [event.name for event in run.of(ev.ToolStarted)] == ["fetch_url"], "search never ran"
    assert [event.status for event in run.of(ev.ToolFinished)] == ["error", "not_executed"]
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert result.evidence == ()
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert len(by_phase["research"]) == 1 and set(by_phase) == {"research"}


@pytest.mark.timeout(30)  # a Stop that is not heard hangs: fail fast
def test_stop_during_the_final_stage(openai_server: OpenAIServer, workspace: Workspace) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.stall("The harbour light")
        return Reply.tool_calls(search(request, "harbour"))

    serve(openai_server, model)
    cancel = CancelToken()
    run = stop_on_stall(
        openai_server,
        cancel,
        lambda: run_reply(
            openai_server,
            workspace,
            cancel=cancel,
            config={
                "chat.research_no_progress_rounds": 2,
                "chat.research_max_output_tokens": 300,
                "chat.max_tokens": 600,
            },
        ),
    )
    result = run.result
    assert result.stop_reason == "cancelled" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: you stopped the reply")
    assert "3 March 1862" in result.answer
    assert not result.answer.startswith("The harbour light")
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=600)
    assert len(by_phase["research"]) == 3 and len(by_phase["final"]) == 1
    assert run.lines("stop")[0]["reason"] == "no_progress", "research itself ended on patience"
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]
    assert stops(run, "final") == ["cancelled"]


# --- 11. the person -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thinking",
    [
        pytest.param(0.0, id="through-assistant.research"),
        pytest.param(1000.0, id="engine-clock-1000s-person"),
    ],
)
def test_waiting_for_the_person_is_not_research_time_and_the_answer_is_progress(
    openai_server: OpenAIServer, workspace: Workspace, thinking: float
) -> None:
    """The person answers an ``ask_user`` question. Through ``assistant.research`` (real clock),
    and through the same engine and toolbox on a clock where the person thinks for 1000 s, far
    past the 30 s research budget (tests do not sleep: the clock jumps)."""
    offset = [0.0]

    def clock() -> float:
        return time.monotonic() + offset[0]

    questions: list[str] = []

    async def person(question: str) -> str:
        questions.append(question)
        offset[0] += thinking
        return "The northern lights, please."

    rounds: list[Callable[[RecordedRequest], Reply]] = [
        lambda r: Reply.tool_calls(search(r, "harbour")),  # new evidence
        lambda r: Reply.tool_calls(search(r, "harbour")),  # nothing new: 1 of 2
        lambda r: Reply.tool_calls(call(r, 0, "ask_user", question="Which lights?")),
        lambda r: Reply.tool_calls(search(r, "harbour")),  # nothing new: 1 of 2 again
        lambda r: Reply.text("About the northern lights [1]."),
    ]
    serve(openai_server, lambda request: rounds[turn(request)](request))
    run = run_reply(
        openai_server,
        workspace,
        ask=person,
        clock=clock if thinking else None,
        config={
            "chat.research_timeout_sec": 30,
            "chat.research_no_progress_rounds": 2,
            "chat.research_max_output_tokens": 300,
        },
    )
    result = run.result
    assert questions == ["Which lights?"]
    assert result.stop_reason == "answered", "the answer reset the no-progress count"
    assert result.rounds == 4 and written(result.answer) == "About the northern lights [1]."
    assert [e.progress for e in run.of(ev.RoundEnded)] == [True, False, True, False]
    assert [e.no_progress_rounds for e in run.of(ev.RoundEnded)] == [0, 1, 0, 1]
    assert result.user_wait_seconds >= thinking and result.research_seconds < 30
    assert run.of(ev.QuestionAsked)[0].question == "Which lights?"
    assert run.of(ev.UserWait)[0].seconds >= thinking
    assert run.lines("user_wait")[0]["seconds"] >= thinking
    assert result.user_wait_seconds == pytest.approx(run.of(ev.UserWait)[0].seconds, abs=0.05)
    paused = [event.time_paused for event in run.of(ev.BudgetUpdate)]
    assert True in paused and paused[-1] is False
    assert [item.source for item in result.evidence] == ["harbour.md", "user"]
    by_phase = check_requests(openai_server, research_max_tokens=300)
    assert "ask_user" in tool_names(by_phase["research"][0])
    answer = tool_messages(by_phase["research"][-1])[2]
    assert answer["name"] == "ask_user" and "The northern lights, please." in answer["content"]


# --- 12-14. the final stage -----------------------------------------------------------------------


def test_context_full_stops_research_and_the_final_fits(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    serve(
        openai_server,
        research_then_final(
            lambda request: Reply.tool_calls(search(request, LIGHTS[turn(request)])),
            "Final within the window [1].",
        ),
    )
    window = 3000
    run = run_reply(
        openai_server,
        library,
        context_window=window,
        config={"chat.research_max_output_tokens": 512, "chat.max_tokens": 256},
    )
    result = run.result
    assert result.stop_reason == "context_full"
    assert result.final_mode == "model" and written(result.answer) == "Final within the window [1]."
    assert result.rounds >= 2
    requests = run.lines("request")
    for line in requests:
        assert line["reserved"] <= window, line
    assert requests[-1]["phase"] == "final"
    assert requests[-1]["prompt_tokens"] + 256 <= window
    by_phase = check_requests(openai_server, research_max_tokens=512, final_max_tokens=256)
    assert len(by_phase["final"]) == 1 and "condense" not in by_phase
    assert len(tool_messages(by_phase["final"][0])) == result.rounds
    assert run.lines("stop")[0]["reason"] == "context_full"


def test_evidence_condensing_is_charged_to_the_research_budget_when_the_final_cannot_fit(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    notes = "Notes: the Alderney log is the oldest [1]."

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "condense":
            return Reply.text(notes)
        if phase == "final":
            return Reply.text("Answer from the notes [1].")
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]))

    serve(openai_server, model)
    window = 2600
    run = run_reply(
        openai_server,
        library,
        context_window=window,
        config={
            "chat.research_max_output_tokens": 200,
            "chat.max_tokens": 1200,
            "chat.research_token_budget": 50_000,
        },
    )
    result = run.result
    assert result.stop_reason == "context_full"
    assert result.final_mode == "model" and written(result.answer) == "Answer from the notes [1]."
    by_phase = check_requests(openai_server, research_max_tokens=200, final_max_tokens=1200)
    condense = by_phase.get("condense", [])
    assert condense, "the evidence was condensed"
    condensed_text = "".join(request.messages[-1]["content"] for request in condense)
    for item in result.evidence:
        assert f"[{item.id}] {item.source}" in condensed_text
    final = by_phase["final"][0]
    assert openai_server.chat_requests()[-1] is final
    assert notes in final.messages[-1]["content"] and not tool_messages(final)
    lines = run.lines("request")
    condense_lines = [line for line in lines if line["phase"] == "condense"]
    assert len(condense_lines) == len(condense)
    assert all(line["charged"] > 0 and line["reserved"] <= window for line in condense_lines)
    research_and_condense = sum(line["charged"] for line in lines if line["phase"] != "final")
    assert result.tokens.charged == research_and_condense and result.tokens.budget == 50_000
    assert result.tokens.final_charged == sum(
        line["charged"] for line in lines if line["phase"] == "final"
    )
    # Condensing is charged to what was left of the research budget, like any research request.
    budgeted = [line for line in lines if line["phase"] != "final"]
    assert budgeted[0]["budget_left"] == 50_000 - budgeted[0]["charged"]
    for before, line in itertools.pairwise(budgeted):
        assert line["budget_left"] == before["budget_left"] - line["charged"], line


def test_the_labelled_fallback_when_the_final_cannot_fit_and_condensing_fails(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "condense":
            return Reply.error(503, "overloaded", retry_after="0")
        if phase == "final":
            return Reply.text("A final that must never be asked for.")
        return Reply.tool_calls(search(request, LIGHTS[turn(request)]))

    serve(openai_server, model)
    run = run_reply(
        openai_server,
        library,
        context_window=2600,
        config={"chat.research_max_output_tokens": 200, "chat.max_tokens": 1200},
    )
    result = run.result
    assert result.stop_reason == "context_full" and result.final_mode == "fallback"
    assert result.answer.startswith(
        f"{FALLBACK_LABEL}: the conversation no longer fits the model's context window"
    )
    for item in result.evidence:
        assert f"[{item.id}] {item.source}, {item.location}" in result.answer
    assert len(result.evidence) == result.rounds >= 2
    by_phase = check_requests(openai_server, research_max_tokens=200, final_max_tokens=1200)
    assert "final" not in by_phase and by_phase["condense"], "condensing was tried, no final sent"
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]


def test_the_labelled_fallback_when_the_final_request_fails_is_persisted(
    openai_server: OpenAIServer, workspace: Workspace, tmp_path: Path
) -> None:
    def model(request: RecordedRequest) -> Reply:
        if phase_of(request) == "final":
            return Reply.error(500, "the model crashed", retry_after="0")
        return Reply.tool_calls(search(request, "harbour"))

    serve(openai_server, model)
    history = HistoryStore(tmp_path / "history.sqlite3")
    try:
        conversation = history.create_conversation(QUESTION)
        recorder = history.start_reply(conversation, QUESTION)
        run = run_reply(
            openai_server,
            workspace,
            extra_sink=recorder,
            config={
                "chat.research_no_progress_rounds": 2,
                "chat.research_max_output_tokens": 300,
                "chat.max_tokens": 900,
            },
        )
        stored = history.reply(recorder.reply_id)
    finally:
        history.close()
    result = run.result
    assert result.stop_reason == "no_progress" and result.final_mode == "fallback"
    assert result.answer.startswith(f"{FALLBACK_LABEL}: research stopped finding new evidence")
    assert "3 March 1862" in result.answer and "[1] harbour.md, lines" in result.answer
    assert result.error is not None and "500" in result.error
    by_phase = check_requests(openai_server, research_max_tokens=300, final_max_tokens=900)
    assert len(by_phase["research"]) == 3 and len(by_phase["final"]) >= 1
    assert len({final.body for final in by_phase["final"]}) == 1, "only retries of the one final"
    assert [line["mode"] for line in run.lines("final")] == ["fallback"]
    assert stored.final_mode == "fallback" and written(stored.answer) == result.answer
    assert stored.stop_reason == "no_progress"
    assert [item.source for item in stored.evidence] == ["harbour.md"]


# --- 15. section workers -------------------------------------------------------------------------


def test_every_section_worker_request_is_reserved_and_charged(
    openai_server: OpenAIServer, library: Workspace
) -> None:
    sections = {"history": LIGHTS[0:2], "technology": LIGHTS[2:4]}

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        usage = Usage(len(json.dumps(request.messages)) // 5, 30)
        if phase == "worker":
            section = request.messages[1]["content"].rsplit("Your section: ", 1)[1]
            done = turn(request)
            if done < 2:
                return Reply.tool_calls(search(request, sections[section][done]), usage=usage)
            return Reply.text(f"Summary of {section} [1].", usage=usage)
        if turn(request) == 0:
            return Reply.tool_calls(
                call(request, 0, "research_sections", sections=list(sections)), usage=usage
            )
        return Reply.text("Combined answer [1].", usage=usage)

    serve(openai_server, model)
    run = run_reply(openai_server, library, config={"chat.research_max_output_tokens": 300})
    result = run.result
    assert result.stop_reason == "answered" and written(result.answer) == "Combined answer [1]."
    assert [item.source for item in result.evidence] == [
        f"{name.lower()}.md" for name in LIGHTS[:4]
    ]
    by_phase = check_requests(openai_server, research_max_tokens=300)
    workers = by_phase["worker"]
    assert len(workers) == 6, "two workers, three requests each"
    read_only = {"search_workspace", "read_document", "list_documents", "fetch_url"}
    for request in workers:
        assert tool_names(request) <= read_only
    assert "research_sections" in tool_names(by_phase["research"][0])
    worker_lines = run.lines("request", phase="worker")
    assert len(worker_lines) == 6
    for line, request in zip(worker_lines, workers, strict=True):
        assert line["reserved"] >= line["prompt_tokens"] + 300
        # Charged past the prompt shared with the previous request (DESIGN §1).
        prompt = len(json.dumps(request.messages)) // 5
        assert line["charged"] == prompt - line["reused_prefix"] + 30
        assert line["refunded"] == line["reserved"] - line["charged"]
    assert [event.reserved for event in run.of(ev.RequestStarted) if event.phase == "worker"] == [
        line["reserved"] for line in worker_lines
    ]
    assert result.tokens.charged == sum(line["charged"] for line in run.lines("request"))
    summary = tool_messages(by_phase["research"][-1])[0]["content"]
    assert "Summary of history [1]." in summary and "Summary of technology [1]." in summary
    assert run.of(ev.RoundEnded)[-1].progress is True


def test_a_section_worker_repeating_known_evidence_is_not_progress(
    openai_server: OpenAIServer, workspace: Workspace
) -> None:
    """Evidence is reply-wide: what a worker finds again was already found by the coordinator."""

    def model(request: RecordedRequest) -> Reply:
        phase = phase_of(request)
        if phase == "final":
            return Reply.text("Lit in 1862 [1].")
        if phase == "worker":
            if turn(request) == 0:
                return Reply.tool_calls(search(request, "harbour lens"))
            return Reply.text("Nothing new for this section.")
        if turn(request) == 0:
            return Reply.tool_calls(search(request, "harbour"))
        section = f"part {turn(request)}"
        return Reply.tool_calls(call(request, 0, "research_sections", sections=[section]))

    serve(openai_server, model)
    run = run_reply(
        openai_server,
        workspace,
        config={
            "chat.research_no_progress_rounds": 2,
            "chat.research_max_output_tokens": 300,
            "chat.research_token_budget": 40_000,  # a reply that never stops ends here instead
        },
    )
    result = run.result
    assert result.stop_reason == "no_progress"
    coordinator = [e.round for e in run.of(ev.RoundStarted) if e.worker is None]
    workers = [e.round for e in run.of(ev.RoundStarted) if e.worker is not None]
    assert len(coordinator) == 3 and len(workers) == 2
    progress = {e.round: e.progress for e in run.of(ev.RoundEnded)}
    assert [progress[number] for number in coordinator] == [True, False, False]
    assert [progress[number] for number in workers] == [False, False]
    assert [item.source for item in result.evidence] == ["harbour.md"]
    by_phase = check_requests(
        openai_server, research_max_tokens=300, final_max_tokens=settings()["chat.max_tokens"]
    )
    assert len(by_phase["worker"]) == 4 and len(by_phase["final"]) == 1
    assert len(run.lines("request", phase="worker")) == 4
