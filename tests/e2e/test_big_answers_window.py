"""The real window on Xvfb keeps answering while it shows answers of any size.

A conversation holding an answer with a 10,000-row table, one with a 2 MB line without spaces (an
embedded image's base64) and one with 100,000 links — each once froze the window for seconds to
minutes and took hundreds of megabytes — is opened; then a table as big as a research step may
write is streamed, and the next question is answered. The app reports no stall of its GUI thread
longer than the 2 s allowed (``stall`` events, from a timer on that thread), nor more than 1.5 GB
of memory at its peak.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.research import events as ev
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


#: Saved answers a conversation may hold (a reply's own output is bounded by its allowance; a
#: saved one, a pasted question, an older version's reply are not).
SAVED = [
    ("A table, please.", big_table(10_000, 12)),
    (
        "The chart?",
        "The image: ![chart](data:image/png;base64," + "iVBORw0K" * 250_000 + ")\n\nDone.",
    ),
    ("All the links.", " ".join(f"[{n}](https://example.org/{n})" for n in range(100_000))),
]
#: A streamed answer as big as the largest research output allowance lets through.
STREAMED = big_table(400, 8)  # within the 32,768-token output allowance it streams under


def save_conversation() -> None:
    """The conversation of :data:`SAVED`, in the history the app will open (this test's data
    folder, which the app's environment names too)."""
    store = HistoryStore()
    try:
        conversation = store.create_conversation("Huge answers")
        for question, answer in SAVED:
            recorder = store.start_reply(conversation, question)
            result = ev.ReplyResult(
                answer=answer,
                final_mode="model",
                stop_reason="answered",
                rounds=1,
                evidence=(),
                tokens=ev.TokenTotals(0, 0, 0, 0),
                research_seconds=0.0,
                user_wait_seconds=0.0,
            )
            recorder(ev.ReplyFinished(0.0, result))
    finally:
        store.close()


def stalls(gui: GuiProcess) -> list[tuple[float, str]]:
    """Each stall after the window was up and listed the conversations (starting is not what
    is measured here), with what had happened last."""
    found: list[tuple[float, str]] = []
    last = ""
    for event in gui.seen:
        if event["event"] == "stall" and last:
            found.append((event["seconds"], last))
        elif event["event"] != "stall" and (last or event["event"] == "conversations"):
            last = event["event"]
    return found


def longest(found: list[tuple[float, str]]) -> float:
    return max((seconds for seconds, _ in found), default=0.0)


@pytest.mark.timeout(600)
def test_huge_answers_leave_the_window_responsive(
    display: str, imprint_env: dict[str, str], tmp_path: Path, openai_server: OpenAIServer
) -> None:
    save_conversation()
    openai_server.script(Reply.text(STREAMED), Reply.text("A plain one."))
    env = {
        **imprint_env,
        "IMPRINT_MODEL_PROVIDER": "remote",
        "IMPRINT_REMOTE_BASE_URL": openai_server.base_url,
        "IMPRINT_REMOTE_CONTEXT_WINDOW": "1000000",
        "IMPRINT_CHAT_RESEARCH_FIRST": "false",
        "IMPRINT_CHAT_RESEARCH_MAX_OUTPUT_TOKENS": "32768",
        "IMPRINT_CHAT_RESEARCH_TOKEN_BUDGET": "2000000",
    }
    gui = GuiProcess(display, env, tmp_path / "first.log")
    try:
        gui.wait_for("conversations", count=1)
        gui.focus_window()
        gui.xdotool("key", "ctrl+1", "Down")  # open the saved conversation
        loaded = gui.wait_for("conversation-loaded", timeout=60)
        assert [reply["answer_chars"] for reply in loaded["replies"]] == [
            len(answer) for _, answer in SAVED
        ]
        gui.xdotool("key", "ctrl+n")  # a new conversation: its first answer is streamed
        gui.focus_window()
        gui.type_line("Stream the table")
        ended = gui.wait_for("reply-ended", timeout=120)
        assert ended["outcome"] == "finished", ended
        assert ended["answer_chars"] >= len(STREAMED), ended["answer_chars"]
        gui.type_line("And now?")
        assert gui.wait_for("reply-ended", timeout=60)["answer"].startswith("A plain one.")
        peak = peak_memory(gui.process.pid)
        assert gui.quit() == 0
    finally:
        gui.close()
    assert longest(stalls(gui)) < MAX_STALL_SECONDS, stalls(gui)
    assert peak < MAX_PEAK_BYTES, peak
