"""One reply through the real engine over real HTTP on 127.0.0.1, and a scripted model that reads
each request: what the DESIGN §1 scenarios of ``tests/integration/test_engine_remote_*.py`` share.

Each reply runs in-process through the real :class:`RemoteProvider`, the real toolbox and a real
:class:`Workspace`, against the scripted OpenAI-compatible server of ``tests/support``
(:func:`run_reply`). The model is a function of the request the server received (:func:`phase_of`,
:func:`turn`), so every test can assert both what the engine decided (the :class:`ReplyResult`, its
events, its trace: :class:`Run`) and every request the server got (:func:`check_requests`): each
tool call answered exactly once, research requests offering tools with the research output
allowance, the final request tools-free with ``chat.max_tokens``.

Nothing sleeps: time limits are small budgets that run out on their own, and stalled streams are
released (or Stop is pressed, :func:`stop_on_stall`) from ``wait_for_stall``.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imprint_desktop.core import assistant
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.config import Config
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.remote.client import RemoteProvider
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research import prompts
from imprint_desktop.core.research.engine import ResearchEngine, ResearchSettings
from imprint_desktop.core.research.trace import TraceWriter, fan_out, read_trace
from imprint_desktop.core.tools.toolbox import Toolbox
from imprint_desktop.core.workspace import Workspace
from tests.support.llama_server import LlamaServer
from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply
from tests.support.settings import make_config

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


# --- running one reply ---------------------------------------------------------------------------


def settings(overrides: Mapping[str, object] | None = None) -> Config:
    """The default settings with ``overrides``. These scenarios script every request, so the
    engine's own first search (tested on its own) is off."""
    return make_config({"chat.research_first": False, **(overrides or {})})


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
    server: OpenAIServer | LlamaServer,
    workspace: Workspace,
    *,
    model: str = "",
    context_window: int = 32_768,
    cancel: CancelToken | None = None,
    ask: Callable[[str, str], Any] | None = None,
    clock: Callable[[], float] | None = None,
    extra_sink: Callable[[ev.Event], None] | None = None,
    config: Mapping[str, object] | None = None,
) -> Run:
    """One reply through ``assistant.research`` (or, with ``clock``, the same engine and toolbox
    built by hand) under the default settings updated with ``config``, recording its events and
    writing its trace next to the workspace."""
    chosen = settings(config)
    events: list[ev.Event] = []
    trace_path = workspace.root.parent / "trace.jsonl"
    writer = TraceWriter(trace_path)
    sink = fan_out([events.append, writer, extra_sink])

    async def reply() -> ev.ReplyResult:
        async with make_async_client(chosen.network) as http:
            provider = RemoteProvider(http, server.base_url, model, None, context_window)
            if clock is None:
                return await assistant.research(
                    QUESTION,
                    provider=provider,
                    config=chosen,
                    workspace=workspace,
                    http=http,
                    cancel=cancel or CancelToken(),
                    ask=ask,
                    sink=sink,
                )
            engine = ResearchEngine(
                provider,
                ResearchSettings.from_config(chosen),
                cancel=cancel,
                ask=ask,
                sink=sink,
                clock=clock,
            )
            toolbox = Toolbox(workspace, chosen.tools, http)
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
    if system.startswith((prompts.FINAL_SYSTEM, prompts.FINAL_WITHOUT_EVIDENCE)):
        return "final"
    content = last.get("content") or ""
    if last.get("role") == "user" and content.endswith(prompts.CONTINUE_ANSWER):
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
    """A model by phase over HTTP: the final request answers ``final``, every other request is
    ``research(request)`` (which reads the turn from the request). The in-process scripts have
    their own, :func:`tests.support.research_run.research_then_final`, which numbers the research
    requests instead: the two differ in request, reply and what the research side is given."""

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
