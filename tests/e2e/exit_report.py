"""``imprint ARGS`` as a real process that reports on itself as it exits.

The process is ``python -m imprint_desktop`` (run by :mod:`runpy`, as ``-m`` does) with one exit
handler added: it calls ``state()``, defined by the test's own code, and writes what it returns
to a JSON file. The runner imports only what the interpreter itself has loaded by then (``atexit``,
``json``, ``runpy``, ``sys``), so what the command imports is the command's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_RUNNER = """
import atexit, json, runpy, sys
report, state_code, sys.argv = sys.argv[1], sys.argv[2], ["imprint", *sys.argv[3:]]
exec(state_code)
def reported():
    with open(report, "w", encoding="utf-8") as out:
        json.dump(state(), out)
atexit.register(reported)
runpy.run_module("imprint_desktop", run_name="__main__", alter_sys=True)
"""


def run_reporting(
    env: dict[str, str], report: Path, state_code: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run ``imprint ARGS``; as it exits, ``state()`` from ``state_code`` is written to
    ``report`` as JSON."""
    return subprocess.run(
        [sys.executable, "-c", _RUNNER, str(report), state_code, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
