"""``fetch_url`` against a real HTTP server on 127.0.0.1, started and stopped by the tests."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from imprint_desktop.core.tools import Toolbox, ToolResult
from imprint_desktop.core.tools.fetch import MAX_BYTES
from imprint_desktop.core.workspace import Workspace
from tests.support.settings import make_config

pytestmark = pytest.mark.integration
#: These tests are about fetching itself: the person's consent is tested in test_fetch_consent.py.
FETCH = {"tools.fetch_url_confirm": False}

ARTICLE = b"""<!doctype html><html><head><title>Tide tables</title>
<script>var tracking = "beacon";</script></head>
<body><nav>Home | About | Contact</nav>
<main><h1>Tide tables for Harwick</h1>
<p>High water at Harwick quay comes <b>forty minutes</b> after Marrow Head.</p>
<p>Spring tides rise 5.2 metres.</p></main>
<footer>Copyright the harbour office</footer></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event  # set by the fixture: lets the slow page finish

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test output is for the tests."""

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/article":
            self._send(200, "text/html; charset=utf-8", ARTICLE)
        elif self.path == "/plain":
            self._send(
                200, "text/plain; charset=latin-1", "Caf\xe9 opening hours: 8-6.".encode("latin-1")
            )
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(100))
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/article")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            line = b"The estuary is wide and the tide is strong. " * 20 + b"\n"
            try:
                for _ in range(3 * MAX_BYTES // len(line)):
                    self.wfile.write(line)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading at its cap, as it should
        elif self.path == "/dense":  # the most markup a page may have, seconds of parsing
            self._send(200, "text/html", b"<a href='x'>text " * (MAX_BYTES // 17))
        elif self.path == "/unclosed":  # quadratic for html.parser before its 2025 fixes
            self._send(200, "text/html", b"<p>The quay opens at six.</p>" + b"<x " * 20_000)
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body><p>Loading")
            self.wfile.flush()
            self.release.wait(timeout=30)  # held open until the test is done with it
        else:
            self._send(404, "text/html", b"<h1>Not found</h1>")


@pytest.fixture
def server() -> Iterator[str]:
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = False
    thread = threading.Thread(target=httpd.serve_forever, name="test-http", daemon=False)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()  # joins the request threads
        thread.join(timeout=10)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    (tmp_path / "w").mkdir()
    with Workspace(tmp_path / "w") as opened:
        yield opened


def fetch(workspace: Workspace, url: str, *, timeout: float = 10.0) -> ToolResult:
    async def call() -> ToolResult:
        async with httpx.AsyncClient() as client:
            toolbox = Toolbox(
                workspace, make_config({"tools.max_result_chars": 4000, **FETCH}).tools, client
            )
            return await toolbox.execute("fetch_url", {"url": url}, timeout=timeout)

    return asyncio.run(call())


def test_html_page_gives_its_main_text(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/article")
    assert result.status == "ok"
    text = "\n".join(item.text for item in result.evidence)
    assert "forty minutes after Marrow Head" in text
    assert "Spring tides rise 5.2 metres." in text
    assert "Tide tables" in result.content
    for chrome in ("Home | About", "Copyright", "tracking", "<b>"):
        assert chrome not in result.content
    assert {item.source for item in result.evidence} == {f"{server}/article"}


def test_redirects_are_followed_and_the_final_url_cited(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/redirect")
    assert result.status == "ok"
    assert result.evidence[0].source == f"{server}/article"


def test_plain_text_in_its_declared_charset(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/plain")
    assert result.evidence[0].text == "Café opening hours: 8-6."


def test_slow_page_stops_at_the_callers_timeout(server: str, workspace: Workspace) -> None:
    loop_time: list[float] = []

    async def call() -> ToolResult:
        async with httpx.AsyncClient() as client:
            toolbox = Toolbox(workspace, make_config(FETCH).tools, client)
            started = asyncio.get_running_loop().time()
            result = await toolbox.execute("fetch_url", {"url": f"{server}/slow"}, timeout=0.5)
            loop_time.append(asyncio.get_running_loop().time() - started)
            return result

    result = asyncio.run(call())
    assert result.status == "error"
    assert "did not answer within" in result.content or "did not finish" in result.content
    assert loop_time[0] < 5


def test_a_page_is_parsed_off_the_loop_and_its_time_limit_holds(
    server: str, workspace: Workspace
) -> None:
    """Parsing a page that takes seconds must not hold the engine's loop: the loop keeps its
    pace (streaming, clocks, Stop) and the fetch ends at the caller's time limit."""
    gaps: list[float] = []

    async def call() -> tuple[ToolResult, float]:
        loop = asyncio.get_running_loop()

        async def heartbeat() -> None:
            last = loop.time()
            while True:
                await asyncio.sleep(0.02)
                gaps.append(loop.time() - last)
                last = loop.time()

        beating = asyncio.create_task(heartbeat())
        async with httpx.AsyncClient() as client:
            toolbox = Toolbox(workspace, make_config(FETCH).tools, client)
            started = loop.time()
            result = await toolbox.execute("fetch_url", {"url": f"{server}/dense"}, timeout=0.5)
            seconds = loop.time() - started
        beating.cancel()
        return result, seconds

    result, seconds = asyncio.run(call())
    assert result.status == "error" and "did not" in result.content, result.content
    assert seconds < 2.0
    assert max(gaps) < 1.0, f"the loop was held for {max(gaps):.1f} s"


def test_unclosed_tags_are_parsed_at_once(server: str, workspace: Workspace) -> None:
    started = time.monotonic()
    result = fetch(workspace, f"{server}/unclosed", timeout=20)
    assert time.monotonic() - started < 20
    assert result.status == "ok", result.content
    assert "The quay opens at six." in result.content


def test_huge_page_is_capped(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/huge")
    assert result.status == "ok"
    assert len(result.content) <= 4000
    assert result.truncated
    assert "longer than the download limit" in result.content


def test_non_text_content_is_refused(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/image")
    assert result.status == "error"
    assert "image/png" in result.content


def test_missing_page_reports_the_status(server: str, workspace: Workspace) -> None:
    result = fetch(workspace, f"{server}/nothing-here")
    assert result.status == "error"
    assert "404" in result.content


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "127.0.0.1/article"]
)
def test_other_schemes_are_refused(workspace: Workspace, url: str) -> None:
    result = fetch(workspace, url)
    assert result.status == "error"
    assert "Only http:// and https://" in result.content


def test_unreachable_server_is_an_error_not_an_exception(workspace: Workspace) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), _Handler) as closed:
        port = closed.server_address[1]
    result = fetch(workspace, f"http://127.0.0.1:{port}/")
    assert result.status == "error"
    assert "could not be fetched" in result.content
