"""Benchmark of the command line's start (issue 28): what a call of ``imprint`` costs a script.

Starts the real command as a process (``python -m imprint_desktop``, this checkout), each one
``--runs`` times in turn with ``python -c pass`` measured in the same rounds, and compares medians:

- ``imprint --help``: at most 0.15 s above bare Python;
- ``imprint settings get chat.max_tokens``: at most 0.15 s above bare Python;
- ``imprint workspace search DIR WORD --json`` over an indexed workspace of ``--docs`` Markdown
  files (3,000 by default; the search brings the index up to date first, as it always does): at
  most 0.25 s above bare Python. ``grep -rl WORD DIR`` over the same files is printed beside it.

Every command runs with private config and data folders. The package is compiled to bytecode first,
as an installed one is (a checkout run with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile its
modules on every call). Run ``python bench/bench_cli.py``; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TARGET_HELP = 0.15
TARGET_SETTINGS_GET = 0.15
TARGET_SEARCH = 0.25

_WORDS = (
    "harbour",
    "keeper",
    "lantern",
    "fog",
    "signal",
    "tide",
    "ledger",
    "beacon",
    "rock",
    "storm",
    "mooring",
    "channel",
    "pilot",
    "buoy",
    "wreck",
    "survey",
    "chart",
    "gale",
    "lens",
    "oil",
    "wick",
    "shift",
    "relief",
    "logbook",
    "station",
    "cliff",
)


def generate(folder: Path, count: int) -> str:
    """``count`` Markdown files of about 2 KB in 30 folders; returns a word found in a few."""
    rng = random.Random(28)
    for number in range(count):
        sub = folder / f"part{number % 30:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        body = [f"# Report {number}", ""]
        for _ in range(12):
            body.append(" ".join(rng.choices(_WORDS, k=24)) + ".")
        if number % 97 == 0:
            body.append("The quillwort survey found it by the north mooring.")
        (sub / f"report{number:05d}.md").write_text("\n".join(body) + "\n", encoding="utf-8")
    return "quillwort"


def timed(arguments: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock seconds of one run of this Python with ``arguments`` (``grep`` for the one
    command that is not Python), and the CPU seconds it used (shown beside: on a busy computer
    the wall clock also counts the wait for a core)."""
    grep = arguments[0] == "grep"
    command = ["grep", *arguments[1:]] if grep else [sys.executable, *arguments]
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
        )
    return seconds, _children_cpu() - cpu_before


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--docs", type=int, default=3000)
    args = parser.parse_args()

    compileall.compile_dir(ROOT / "imprint_desktop", quiet=1)
    scratch = Path(tempfile.mkdtemp(prefix="imprint-bench-cli-"))
    try:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")},
            "IMPRINT_CONFIG_DIR": str(scratch / "config"),
            "IMPRINT_DATA_DIR": str(scratch / "data"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        corpus = scratch / "corpus"
        word = generate(corpus, args.docs)
        imprint = ["-m", "imprint_desktop"]
        search = [*imprint, "workspace", "search", str(corpus), word, "--json"]
        started = time.perf_counter()
        timed([*imprint, "workspace", "index", str(corpus)], env)
        print(f"indexed {args.docs} documents in {time.perf_counter() - started:.1f} s")

        commands: dict[str, list[str]] = {
            "python -c pass": ["-c", "pass"],
            "imprint --help": [*imprint, "--help"],
            "imprint settings get": [*imprint, "settings", "get", "chat.max_tokens"],
            "imprint workspace search": search,
        }
        if shutil.which("grep") is not None:
            commands["grep -rl"] = ["grep", "-rl", word, str(corpus)]
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # in turn, so that a busy moment costs every command alike
            for name, command in commands.items():
                wall, used = timed(command, env)
                times[name].append(wall)
                cpu[name].append(used)
        medians = {name: statistics.median(values) for name, values in times.items()}
        cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
        bare, bare_cpu = medians["python -c pass"], cpu_medians["python -c pass"]
        failures: list[str] = []
        targets = {
            "imprint --help": TARGET_HELP,
            "imprint settings get": TARGET_SETTINGS_GET,
            "imprint workspace search": TARGET_SEARCH,
        }
        print(f"median of {args.runs} runs each (load average {os.getloadavg()[0]:.1f}):")
        for name, median in medians.items():
            line = f"  {name:<26} {median * 1000:7.0f} ms (CPU {cpu_medians[name] * 1000:5.0f} ms)"
            if name in targets:
                above = median - bare
                met = above <= targets[name]
                line += (
                    f"  {above * 1000:+6.0f} ms above bare Python (CPU "
                    f"{(cpu_medians[name] - bare_cpu) * 1000:+5.0f} ms; "
                    f"target <= +{targets[name] * 1000:.0f} ms){'' if met else '  MISSED'}"
                )
                if not met:
                    failures.append(name)
            print(line)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"MISSED: {', '.join(failures)}")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
