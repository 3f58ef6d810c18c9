"""A scripted OpenAI-compatible server on 127.0.0.1, for exact protocol scenarios in tests.

Each ``POST /v1/chat/completions`` takes the next :class:`Reply` from the script, and every
request is recorded (method, path, headers, parsed JSON body) so a test can assert what the client
really sent. ``GET /v1/models`` lists :attr:`OpenAIServer.models` unless replies are scripted for
it too. Nothing sleeps: a stalled reply blocks until :meth:`OpenAIServer.release` or shutdown, and
tests wait for the stall with :meth:`OpenAIServer.wait_for_stall`.

Usage::

    from tests.support.openai_server import OpenAIServer, Reply, Usage
    from imprint_desktop.core.providers.base import ToolCall

    def test_something(openai_server: OpenAIServer) -> None:
        openai_server.script(
            Reply.tool_calls(ToolCall("call_1", "search_workspace", '{"query": "fog"}')),
            Reply.text("The fog signal dates from 1871 [1].", usage=Usage(120, 9, cached=100)),
        )
        ...  # point the client at openai_server.base_url ("http://127.0.0.1:PORT/v1")
        first, second = openai_server.chat_requests()
        assert second.messages[-1]["role"] == "tool"
        openai_server.assert_protocol_complete()  # every tool call answered, in every request

Reply kinds: :meth:`Reply.text`, :meth:`Reply.tool_calls`, :meth:`Reply.error` (any status, with
``Retry-After``), :meth:`Reply.garbage` (a non-SSE body), :meth:`Reply.events` (raw SSE data, e.g.
a malformed chunk), :meth:`Reply.raw` (exact bytes), :meth:`Reply.stream_error` (an error object
mid-stream), :meth:`Reply.stall`, :meth:`Reply.drop` (connection closed mid-stream),
:meth:`Reply.trickle` (a delta every interval, forever), :meth:`Reply.json`.
A script entry may also be a function of the :class:`RecordedRequest` returning a reply (to echo
what the client sent). ``OpenAIServer(api_key="k")`` answers 401 to any request without
``Authorization: Bearer k``. The ``openai_server`` fixture asserts, after the test, that scripted
functions did not raise and that every request answered every tool call.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from imprint_desktop.core.providers.base import ToolCall

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
SSE = "text/event-stream"


# --- what the server answers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """A ``usage`` object; ``cached`` adds ``prompt_tokens_details.cached_tokens``."""

    prompt_tokens: int
    completion_tokens: int
    cached: int | None = None

    def to_json(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached}
        return usage


@dataclass(frozen=True)
class _Stall:
    """Block until released (or the server stops), then go on."""


@dataclass(frozen=True)
class _Drop:
    """Close the connection here, leaving the chunked body unfinished."""


@dataclass(frozen=True)
class _Trickle:
    """Send ``part`` every ``interval`` seconds until released, then go on."""

    part: bytes
    interval: float


Part = bytes | _Stall | _Drop | _Trickle


def chunk(
    delta: Mapping[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: Usage | None = None,
    choices: bool = True,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object (``choices=False`` makes the usage-only last chunk)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "imprint-test",
        "choices": (
            [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish_reason}]
            if choices
            else []
        ),
    }
    if usage is not None:
        body["usage"] = usage.to_json()
    return body


def sse(data: str | Mapping[str, Any]) -> bytes:
    """One SSE event carrying ``data`` (a mapping is sent as JSON)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return "".join(f"data: {line}\n" for line in text.split("\n")).encode() + b"\n"


DONE = sse("[DONE]")


def _pieces(text: str | Sequence[str]) -> list[str]:
    """A string becomes word-sized deltas (spaces kept), so every answer streams in parts."""
    if not isinstance(text, str):
        return list(text)
    return re.findall(r"\S+\s*|\s+", text)


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(parts, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _ending(finish_reason: str, usage: Usage | None, done: bool) -> list[Part]:
    parts: list[Part] = [sse(chunk(finish_reason=finish_reason))]
    if usage is not None:
        parts.append(sse(chunk(usage=usage, choices=False)))
    if done:
        parts.append(DONE)
    return parts


def _text_parts(text: str | Sequence[str]) -> list[Part]:
    return [sse(chunk({"content": piece})) for piece in _pieces(text) if piece]


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer: status, headers and the body parts written in order.

    Build them with the class methods; a reply with several parts is sent chunked, part by part.
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", SSE),)
    parts: tuple[Part, ...] = ()
    label: str = ""

    @classmethod
    def text(
        cls,
        text: str | Sequence[str],
        *,
        usage: Usage | None = None,
        finish_reason: str = "stop",
        done: bool = True,
    ) -> Reply:
        """A streamed answer; a string streams word by word, a list as the deltas given."""
        opening: list[Part] = [sse(chunk({"role": "assistant", "content": ""}))]
        parts = opening + _text_parts(text) + _ending(finish_reason, usage, done)
        return cls(parts=tuple(parts), label="text")

    @classmethod
    def tool_calls(
        cls,
        *calls: ToolCall,
        text: str = "",
        fragments: int = 3,
        together: bool = False,
        usage: Usage | None = None,
        finish_reason: str = "tool_calls",
    ) -> Reply:
        """Streamed tool calls: the first delta of each carries id and name, then its arguments
        follow in ``fragments`` pieces. ``together`` sends every call whole in one delta."""
        parts: list[Part] = [sse(chunk({"role": "assistant", "content": None}))]
        parts += _text_parts(text) if text else []
        if together:
            deltas = [{**call.to_openai(), "index": i} for i, call in enumerate(calls)]
            parts.append(sse(chunk({"tool_calls": deltas})))
        for index, call in enumerate(() if together else calls):
            opening = {"name": call.name, "arguments": ""}
            first = {"index": index, "id": call.id, "type": "function", "function": opening}
            parts.append(sse(chunk({"tool_calls": [first]})))
            for piece in _split(call.arguments, fragments):
                rest = {"index": index, "function": {"arguments": piece}}
                parts.append(sse(chunk({"tool_calls": [rest]})))
        parts += _ending(finish_reason, usage, True)
        return cls(parts=tuple(parts), label="tool_calls")

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted failure",
        *,
        retry_after: str | float | None = None,
        body: bytes | None = None,
    ) -> Reply:
        """An HTTP error with an OpenAI-style error body (or ``body`` as given)."""
        headers = [("Content-Type", "application/json")]
        if retry_after is not None:
            headers.append(("Retry-After", str(retry_after)))
        error = {"error": {"message": message, "type": "scripted", "code": status}}
        content = body if body is not None else json.dumps(error).encode()
        return cls(status, tuple(headers), (content,), label=f"error {status}")

    @classmethod
    def json(cls, value: Any, *, status: int = 200) -> Reply:
        """A plain JSON body (a non-streamed completion, a model list, ...)."""
        headers = (("Content-Type", "application/json"),)
        return cls(status, headers, (json.dumps(value).encode(),), label="json")

    @classmethod
    def garbage(
        cls,
        body: bytes = b"<html><body>Welcome to nginx!</body></html>",
        *,
        content_type: str = "text/html",
    ) -> Reply:
        """A 200 answer that is not an event stream at all."""
        return cls(200, (("Content-Type", content_type),), (body,), label="garbage")

    @classmethod
    def events(cls, *data: str | Mapping[str, Any], done: bool = True) -> Reply:
        """Raw SSE events with the ``data`` given, e.g. ``Reply.events("{not json")``."""
        parts: list[Part] = [sse(item) for item in data] + ([DONE] if done else [])
        return cls(parts=tuple(parts), label="events")

    @classmethod
    def raw(cls, *parts: bytes, content_type: str = SSE) -> Reply:
        """Exactly these bytes, each part written (and flushed) separately."""
        return cls(200, (("Content-Type", content_type),), tuple(parts), label="raw")

    @classmethod
    def stream_error(cls, message: str = "the model crashed", *, before: str = "") -> Reply:
        """Some text, then an error object inside the stream."""
        error = {"error": {"message": message, "type": "server_error"}}
        return cls(parts=(*_text_parts(before), sse(error)), label="stream_error")

    @classmethod
    def stall(cls, before: str = "Partial answer", *, after: str = "") -> Reply:
        """Stream ``before``, then block until released or shut down, then finish."""
        parts = [*_text_parts(before), _Stall(), *_text_parts(after), *_ending("stop", None, True)]
        return cls(parts=tuple(parts), label="stall")

    @classmethod
    def drop(cls, before: str = "Partial answer") -> Reply:
        """Stream ``before``, then close the connection without finishing the body."""
        return cls(parts=(*_text_parts(before), _Drop()), label="drop")

    @classmethod
    def trickle(cls, piece: str = ".", *, interval: float = 0.02, lead: str = "") -> Reply:
        """``lead`` (if any), then a delta of ``piece`` every ``interval`` seconds until released
        or shut down."""
        part = _Trickle(sse(chunk({"content": piece})), interval)
        first = (sse(chunk({"content": lead})),) if lead else ()
        return cls(parts=(*first, part, *_ending("stop", None, True)), label="trickle")


# --- what the server received ------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received. ``headers`` keys are lower-case; ``json`` is None if not JSON."""

    method: str
    target: str  # as sent on the request line: absolute when it came through as a proxy request
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages", [])) if isinstance(self.json, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.json.get("tools") if isinstance(self.json, dict) else None


Scripted = Reply | Callable[["RecordedRequest"], Reply]
"""A reply, or a function of the request that makes one (to echo ids, count tools, ...)."""


def tool_protocol_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What breaks the tool-call protocol in ``messages`` (empty when it is complete).

    Every tool call id of an assistant message must be answered by exactly one later ``tool``
    message, before the next assistant message; every ``tool`` message must answer such a call;
    call ids are unique within a request.
    """
    problems: list[str] = []
    open_calls: dict[str, int] = {}
    seen: set[str] = set()
    answered: set[str] = set()

    def close_round(at: int) -> None:
        for call_id, asked_at in open_calls.items():
            problems.append(f"tool call {call_id!r} (message {asked_at}) has no result by {at}")
        open_calls.clear()

    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            close_round(position)
            for call in message.get("tool_calls") or ():
                call_id = call.get("id")
                if call_id in seen:
                    problems.append(f"tool call id {call_id!r} is used twice (message {position})")
                seen.add(call_id)
                open_calls[call_id] = position
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in open_calls:
                del open_calls[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"tool call {call_id!r} answered twice (message {position})")
            else:
                problems.append(f"tool message {position} answers unknown call {call_id!r}")
        else:
            close_round(position)
    close_round(len(messages))
    return problems


# --- the server ---------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False  # handler threads are joined on close: none outlives a test
    block_on_close = True

    def __init__(self, owner: OpenAIServer) -> None:
        self.owner = owner
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (Stop, a timeout, a test ending) is normal here, not news."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        with self.sockets_lock:
            sockets = list(self.open_sockets)
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            target=self.path,
            path=urlsplit(self.path).path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
            json=parsed,
        )
        owner = self.server.owner
        try:
            reply = owner._reply_for(request)
        except Exception as error:  # a scripted callable failed: the test hears of it at the end
            owner.failures.append(f"{request.method} {request.path}: {error!r}")
            reply = Reply.error(500, f"the scripted reply failed: {error!r}")
        try:
            self._write(reply)
        except OSError:  # the client went away (cancelled, timed out): nothing to finish
            self.close_connection = True

    def _write(self, reply: Reply) -> None:
        owner = self.server.owner
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if len(reply.parts) == 1 and isinstance(reply.parts[0], bytes):  # one plain body
            self.send_header("Content-Length", str(len(reply.parts[0])))
            self.end_headers()
            self.wfile.write(reply.parts[0])
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for part in reply.parts:
            if isinstance(part, bytes):
                self._chunk(part)
            elif isinstance(part, _Stall):
                owner._stalled()
                owner._gate.wait()
            elif isinstance(part, _Trickle):
                self._chunk(part.part)
                owner._stalled()
                while not owner._gate.wait(part.interval):
                    self._chunk(part.part)
            else:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class OpenAIServer:
    """A scripted OpenAI-compatible HTTP server on 127.0.0.1 (see the module docstring).

    Use it as a context manager or through the ``openai_server`` fixture; :meth:`stop` releases
    stalls, closes open connections and joins every thread it started.
    """

    def __init__(
        self,
        *,
        models: Iterable[str] = ("imprint-test",),
        api_key: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self._tls = tls
        self._scripts: dict[str, deque[Scripted]] = {}
        self.check_protocol = True  # the fixture asserts protocol completeness after the test
        self._requests: list[RecordedRequest] = []
        self._changed = threading.Condition()
        self._stalls = 0
        self._gate = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.unscripted: list[RecordedRequest] = []
        self.failures: list[str] = []  # scripted callables that raised

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        self._httpd = _HTTPServer(self)
        if self._tls is not None:  # https://, for tests of certificate settings
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None or self._thread is None:
            return
        self._gate.set()
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.drop_connections()
        self._httpd.server_close()  # joins the handler threads
        self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https`` with TLS): the root, e.g. to use as a proxy."""
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``…/v1``) to configure as ``remote.base_url``."""
        return f"{self.url}/v1"

    # --- scripting ----------------------------------------------------------------------------

    def script(self, *replies: Scripted, path: str = CHAT_PATH) -> None:
        """Queue ``replies`` for requests to ``path``, answered in order. A callable is called
        with the :class:`RecordedRequest` and returns the reply to send.

        When a chat script runs out, the server answers 500 and records the request in
        :attr:`unscripted`; ``GET /v1/models`` falls back to listing :attr:`models`.
        """
        with self._changed:
            self._scripts.setdefault(path, deque()).extend(replies)

    def release(self) -> None:
        """Let every stalled or trickling reply finish (later stalls pass straight through)."""
        self._gate.set()

    def wait_for_stall(self, timeout: float = 10.0) -> bool:
        """Block until a reply reached a stall (or its trickle began); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._stalls > 0, timeout)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have arrived; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._requests) >= count, timeout)

    @property
    def remaining(self) -> int:
        """Chat replies scripted but not yet sent."""
        with self._changed:
            return len(self._scripts.get(CHAT_PATH, ()))

    # --- what arrived -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == CHAT_PATH and r.method == "POST"]

    def assert_protocol_complete(self) -> None:
        """Every chat request received answers every tool call it contains, exactly once."""
        for number, request in enumerate(self.chat_requests(), start=1):
            problems = tool_protocol_problems(request.messages)
            assert not problems, f"chat request {number}: " + "; ".join(problems)

    # --- inside the server thread -------------------------------------------------------------

    def _reply_for(self, request: RecordedRequest) -> Reply:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()
            expected = f"Bearer {self.api_key}"
            if self.api_key is not None and request.headers.get("authorization") != expected:
                return Reply.error(401, "Incorrect API key provided.")
            queue = self._scripts.get(request.path)
            scripted = queue.popleft() if queue else None
        if scripted is not None:
            return scripted if isinstance(scripted, Reply) else scripted(request)
        if request.path == MODELS_PATH and request.method == "GET":
            data = [{"id": name, "object": "model", "owned_by": "tests"} for name in self.models]
            return Reply.json({"object": "list", "data": data})
        if request.path == CHAT_PATH:
            with self._changed:
                self.unscripted.append(request)
            return Reply.error(500, "the test scripted no reply for this request")
        return Reply.error(404, f"no route {request.path}")

    def _stalled(self) -> None:
        with self._changed:
            self._stalls += 1
            self._changed.notify_all()


def closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running :class:`OpenAIServer`, stopped (and its threads joined) after the test.

    Afterwards it asserts that every chat request it received answered every tool call
    (:meth:`OpenAIServer.assert_protocol_complete`); a test that sends a broken conversation on
    purpose sets ``openai_server.check_protocol = False``.
    """
    with OpenAIServer() as server:
        yield server
    assert not server.failures, f"scripted replies failed: {server.failures}"
    if server.check_protocol:
        server.assert_protocol_complete()
