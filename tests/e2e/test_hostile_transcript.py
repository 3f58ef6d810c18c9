"""The real window on Xvfb stays responsive when an answer carries image and HTML payloads.

A transcript that loaded ``file:///dev/zero`` would never finish laying out: the window would stop
reading its keyboard, so the next question would never start and Ctrl+Q would never quit. The
answer is saved, so reopening the conversation is checked too. A loopback listener stands where an
image on the web would be fetched from; it must never be asked.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.gui_driver import GuiProcess
from tests.support.display import xvfb
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    assert shutil.which("Xvfb"), "install Xvfb (scripts/system-deps.sh test)"
    with xvfb(1280, 800) as name:
        yield name


class Listener:
    """An HTTP server on 127.0.0.1 that writes down every path it is asked for."""

    def __init__(self) -> None:
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.seen = seen
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="listener")
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def hostile_answer(base: str) -> str:
    return "\n\n".join(
        [
            "Here is a picture ![zero](file:///dev/zero) and a share ![s](file://host/share/x.png).",
            f'Raw HTML: <img src="file:///dev/zero"> and <img src="{base}/inline.png">',
            f'<div><img src="{base}/block.png"></div>',
            f"A web image ![web]({base}/markdown.png) and [Copy](copy:1).",
        ]
    )


@pytest.mark.timeout(180)
def test_an_answer_with_image_and_html_payloads_leaves_the_window_responsive(
    display: str,
    imprint_env: dict[str, str],
    tmp_path: Path,
    openai_server: OpenAIServer,
    listener: Listener,
) -> None:
    openai_server.script(
        Reply.text(hostile_answer(listener.base)), Reply.text("A plain second answer.")
    )
    env = {
        **imprint_env,
        "IMPRINT_MODEL_PROVIDER": "remote",
        "IMPRINT_REMOTE_BASE_URL": openai_server.base_url,
    }
    gui = GuiProcess(display, env, tmp_path / "first.log")
    try:
        gui.wait_for("ready")
        gui.focus_window()
        gui.type_line("Show me the picture")
        assert gui.wait_for("reply-ended", timeout=60)["outcome"] == "finished"
        # The window still reads its keyboard: the next question starts and is answered (one the
        # sample workspace has passages for: a question nothing is found for is answered "not
        # found" without the model).
        gui.type_line("When was Gannet Point automated?")
        gui.wait_for("reply-opened", timeout=30)
        second = gui.wait_for("reply-ended", timeout=60)
        assert second["answer"].startswith("A plain second answer.")
        assert gui.quit() == 0
    finally:
        gui.close()

    again = GuiProcess(display, env, tmp_path / "second.log")
    try:
        again.wait_for("conversations", count=1)
        again.focus_window()
        again.xdotool("key", "ctrl+1", "Down")  # open the saved conversation
        again.wait_for("conversation-loaded")
        assert again.quit() == 0  # it laid the saved answer out and still answers Ctrl+Q
    finally:
        again.close()
    assert listener.seen == []
