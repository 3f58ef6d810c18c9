"""The real window on Xvfb keeps answering while it shows answers of any size.

An answer with a 10,000-row table, one with a 2 MB line without spaces (an embedded image's base64),
one with 100,000 links: each once froze the window for seconds to minutes and took hundreds of
megabytes. Here each is answered, the window takes the next question and answers it, the saved
conversation reopens, and the app reports no stall of its GUI thread longer than the 2 s allowed
(``stall`` events, from a timer on that thread) nor more than 1.5 GB of memory at its peak.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.gui_driver import GuiProcess
from tests.support.display import xvfb
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.e2e

MAX_STALL_SECONDS = 2.0
MAX_PEAK_BYTES = int(1.5 * 1024**3)


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    assert shutil.which("Xvfb"), "install Xvfb (scripts/system-deps.sh test)"
    with xvfb(1280, 800) as name:
        yield name


def big_table(rows: int, columns: int) -> str:
    header = "| " + " | ".join(f"h{c}" for c in range(columns)) + " |"
    rule = "|" + "---|" * columns
    body = "\n".join(
        "| " + " | ".join(f"{r}.{c}" for c in range(columns)) + " |" for r in range(rows)
    )
    return f"Here is the table.\n\n{header}\n{rule}\n{body}\n\nThat is every row."


def peak_memory(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc")


ANSWERS = [
    big_table(10_000, 12),
    "The image: ![chart](data:image/png;base64," + "iVBORw0K" * 250_000 + ")\n\nDone.",
    " ".join(f"[{n}](https://example.org/{n})" for n in range(100_000)),
]


@pytest.mark.timeout(600)
def test_huge_answers_leave_the_window_responsive(
    display: str, imprint_env: dict[str, str], tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.script(*(Reply.text(answer) for answer in ANSWERS), Reply.text("A plain one."))
    env = {
        **imprint_env,
        "IMPRINT_MODEL_PROVIDER": "remote",
        "IMPRINT_REMOTE_BASE_URL": openai_server.base_url,
        "IMPRINT_CHAT_RESEARCH_FIRST": "false",
    }
    gui = GuiProcess(display, env, tmp_path / "first.log")
    try:
        gui.wait_for("ready")
        gui.focus_window()
        for number in range(len(ANSWERS)):
            gui.type_line(f"Question {number}")
            ended = gui.wait_for("reply-ended", timeout=120)
            assert ended["outcome"] == "finished", ended
        gui.type_line("And now?")
        assert gui.wait_for("reply-ended", timeout=60)["answer"].startswith("A plain one.")
        peak = peak_memory(gui.process.pid)
        assert gui.quit() == 0
    finally:
        gui.close()
    stalls = [event["seconds"] for event in gui.seen if event["event"] == "stall"]
    assert max(stalls, default=0) < MAX_STALL_SECONDS, stalls
    assert peak < MAX_PEAK_BYTES, peak

    again = GuiProcess(display, env, tmp_path / "second.log")
    try:
        again.wait_for("conversations", count=1)
        again.focus_window()
        again.xdotool("key", "ctrl+1", "Down")  # open the saved conversation
        again.wait_for("conversation-loaded")
        assert again.quit() == 0  # it laid the saved answers out and still answers Ctrl+Q
    finally:
        again.close()
    stalls = [event["seconds"] for event in again.seen if event["event"] == "stall"]
    assert max(stalls, default=0) < MAX_STALL_SECONDS, stalls
