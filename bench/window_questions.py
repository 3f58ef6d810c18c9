"""The sample workspace's questions typed into the real window, on the starter model, on Xvfb.

Starts ``imprint`` as a person would (a fresh config and data folder, the sample workspace, the
starter model), types each question on the keyboard, waits for the reply to end and saves a
screenshot after each. Prints, per question, the seconds from Enter to the reply's end, whether
the expected fact is in the model's own words, and the answer; then, from each reply's trace in
the history, where its time went (the engine's search, the model request with the prompt prefix
it reused, the final answer). The questions are the ones a person asked in a review: a
why-question, then a follow-up pair where "it" must keep its subject.

Run ``python bench/window_questions.py --out DIR [--pause SECONDS]`` (needs Xvfb and xdotool:
``scripts/system-deps.sh test``). ``--workspace DIR`` opens another folder than the sample, and
``--ask "QUESTION|FACT"`` (repeated) types other questions than the review's. ``--pause`` waits
before the first question as a person reading the window would; without it the first question
arrives while the model is still warming up.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.gui_driver import GuiProcess  # noqa: E402
from tests.support.display import xvfb  # noqa: E402

#: How long the window is given to paint a reply that has ended before its screenshot.
SETTLE_SECONDS = 1.5

QUESTIONS = (
    ("Why does the Carrick Spit light stand on piles?", "masonry"),
    ("What is the range of the Gannet Point light?", "24"),
    ("When was it automated?", "1986"),
)


def _norm(text: str) -> str:
    return re.sub(r"[\s,]+", "", text.lower())


def _where_time_went(history: Path) -> None:
    """Each reply's clock from its trace, kept in the history: when its first model request
    ended, and that request's prompt, the prefix it reused, and its output."""
    import json  # noqa: PLC0415
    import sqlite3  # noqa: PLC0415

    if not history.exists():
        return
    print("\nWhere each reply's time went (seconds on the reply's own clock):")
    with sqlite3.connect(history) as db:
        replies = db.execute("SELECT id, question FROM replies ORDER BY id").fetchall()
        for reply_id, question in replies:
            lines = [
                json.loads(line)
                for (line,) in db.execute(
                    "SELECT line FROM reply_trace WHERE reply_id = ? ORDER BY seq", (reply_id,)
                )
            ]
            steps = []
            for line in lines:
                if line.get("type") == "tool" and line.get("origin") == "engine":
                    steps.append(f"search done {line['t']:.2f}")
                elif line.get("type") == "request":
                    steps.append(
                        f"request done {line['t']:.2f} ({line['prompt_tokens']} prompt tokens, "
                        f"{line['reused_prefix']} reused, {line['output_tokens']} out)"
                    )
                elif line.get("type") == "final":
                    steps.append(f"final {line['t']:.2f}")
            print(f"  {question[:50]}: " + "; ".join(steps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("window-questions"))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--pause", type=float, default=0.0, help="seconds before the first question is typed"
    )
    parser.add_argument("--workspace", type=Path, help="the folder to open (default: the sample)")
    parser.add_argument(
        "--ask", action="append", default=[], metavar="QUESTION|FACT", help="a question to type"
    )
    args = parser.parse_args()
    questions = tuple(tuple(ask.rsplit("|", 1)) for ask in args.ask) or QUESTIONS
    args.out.mkdir(parents=True, exist_ok=True)
    assert shutil.which("Xvfb") and shutil.which("xdotool"), "scripts/system-deps.sh test"
    right = 0
    with tempfile.TemporaryDirectory(prefix="imprint-window-") as home, xvfb(1280, 800) as display:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": home,
            "PYTHONPATH": str(ROOT),
            "IMPRINT_CONFIG_DIR": f"{home}/config",
            "IMPRINT_DATA_DIR": f"{home}/data",
        }
        import os  # noqa: PLC0415

        env = {**os.environ, **env}
        if args.workspace:
            import subprocess  # noqa: PLC0415

            folder = str(args.workspace.resolve())
            command = [sys.executable, "-m", "imprint_desktop", "settings", "set"]
            subprocess.run([*command, "workspace.path", folder], env=env, check=True)
        gui = GuiProcess(display, env, args.out / "gui.log")
        try:
            opened = time.monotonic()
            gui.wait_for("ready")
            gui.wait_for("model", timeout=300, state="ready")
            print(f"window ready, model loaded: {time.monotonic() - opened:.1f} s after start")
            gui.focus_window()
            time.sleep(args.pause)  # a person reading the window before typing
            for number, (question, fact) in enumerate(questions, start=1):
                started = time.monotonic()
                gui.type_line(question)
                gui.wait_for("reply-opened", timeout=args.timeout)
                ended = gui.wait_for("reply-ended", timeout=args.timeout)
                seconds = time.monotonic() - started
                answer = str(ended.get("answer", ""))
                written = answer.split("\n\nSources:\n", 1)[0].split(
                    "\n\nPassages found (not cited):\n", 1
                )[0]
                ok = _norm(fact) in _norm(written)
                right += ok
                # The event line comes as the reply ends; the window paints the answer on a
                # later pass of its event loop, so the screenshot waits for that.
                time.sleep(SETTLE_SECONDS)
                gui.screenshot(args.out / f"question-{number}.png")
                print(f"\n{number}. {question}  [{seconds:.1f} s, fact {'yes' if ok else 'no'}]")
                print("   " + answer.strip().replace("\n", "\n   ")[:900])
            gui.quit()
        finally:
            gui.close()
        _where_time_went(Path(home) / "data" / "history.sqlite3")
    print(f"\n{right}/{len(questions)} right; screenshots in {args.out}")
    return 0 if right == len(questions) else 1


if __name__ == "__main__":
    sys.exit(main())
