"""`imprint workspace index` and `search` over files with hostile or odd names, as a person runs
them: one odd name never stops the folder, and nothing a file is called reaches the terminal raw.

A name that is not UTF-8 (``caf\\xe9.md``, from an old ZIP archive or a Windows share) made both
commands exit 1 with a traceback and index nothing; it is now indexed as ``caf:E9.md``. A name or a
Markdown title holding ``ESC [ 2 J`` cleared the screen, an OSC retitled the window, a line break
forged a result line and an 8-bit CSI (U+009B) passed as it was; each is now printed escaped, on
its one line. The output is checked as the bytes the terminal receives.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ask_command import TerminalRun

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.name == "nt", reason="POSIX names: bytes, and any but '/' and NUL"),
]

#: What a terminal would act on: ESC, BEL, the C1 controls (as UTF-8, or as a raw byte), and any
#: byte that is not UTF-8 (a name's own, passed through).
CONTROL = re.compile(rb"\x1b|\x07|\xc2[\x80-\x9f]|\x9b")
CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;owned\x07"
FORGED = "\n[9] forged.md 1-1  Forged"  # no ":": a name with one is never indexed
EIGHT_BIT = "\x9b2J"


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """``imprint ARGS``, its output as the bytes a terminal would receive."""
    return subprocess.run(
        [sys.executable, "-m", "imprint_desktop", *args],
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )


def assert_clean(result: subprocess.CompletedProcess[bytes]) -> None:
    for stream in (result.stdout, result.stderr):
        assert CONTROL.search(stream) is None, stream
        assert b"\r" not in stream, stream
        stream.decode("utf-8")  # every byte is text: no name's raw bytes
    assert b"Traceback" not in result.stderr, result.stderr


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "normal.md").write_text("# Normal\n\nThe lighthouse keeper's log.\n")
    # A name of bytes as POSIX gives it to Python: what is not UTF-8 as lone surrogates.
    (root / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\nThe lighthouse cafe serves tea.\n")
    (root / os.fsdecode(b"raw\x9b2J.md")).write_bytes(b"A lighthouse under a raw 8-bit CSI.\n")
    return root


def test_a_name_that_is_not_utf8_is_indexed_and_found(
    imprint_env: dict[str, str], corpus: Path
) -> None:
    indexed = run(["workspace", "index", str(corpus), "--json"], imprint_env)
    assert indexed.returncode == 0, indexed.stderr
    assert_clean(indexed)
    report = json.loads(indexed.stdout)
    assert (report["documents"], report["problems"]) == (3, [])

    found = run(["workspace", "search", str(corpus), "lighthouse", "--json"], imprint_env)
    assert found.returncode == 0, found.stderr
    assert_clean(found)
    hits = {hit["path"]: hit for hit in json.loads(found.stdout)}
    assert set(hits) == {"caf:E9.md", "normal.md", "raw:9B2J.md"}
    assert "cafe serves tea" in hits["caf:E9.md"]["text"]

    shown = run(["workspace", "search", str(corpus), "lighthouse"], imprint_env)
    assert shown.returncode == 0, shown.stderr
    assert_clean(shown)
    assert b"caf:E9.md:1-3  Cafe" in shown.stdout


def test_hostile_names_titles_and_headings_are_printed_escaped(
    imprint_env: dict[str, str], corpus: Path
) -> None:
    (corpus / f"clear{CLEAR}.md").write_text(
        f"# Title{TITLE} and{EIGHT_BIT}\n\n## Heading{CLEAR}\n\nThe lighthouse clears.\n"
    )
    (corpus / f"forge{FORGED}.md").write_text("The lighthouse forges.\n")
    (corpus / f"retitle{TITLE}{EIGHT_BIT}.md").write_text(
        '---\ntitle: "front \\u009b2J \\u001b]0;x\\u0007 matter"\n---\nThe lighthouse retitles.\n'
    )
    archive = corpus / f"archive{CLEAR}"
    archive.mkdir()
    (archive / f"old{EIGHT_BIT}.md").write_text("# Old\n\nThe lighthouse, superseded.\n")
    (corpus / f"big{TITLE}.md").write_text("lighthouse " * 200_000)  # over the 1 MB set below
    env = {**imprint_env, "IMPRINT_WORKSPACE_MAX_FILE_MB": "1"}

    indexed = run(["workspace", "index", str(corpus)], env)
    assert indexed.returncode == 0, indexed.stderr
    assert_clean(indexed)
    assert b"7 documents indexed" in indexed.stdout
    # The oversized file is reported with its reason, its name escaped.
    assert (
        b"skipped big\\u001b]0;owned\\u0007.md: larger than the 1 MB limit (workspace.max_file_mb)"
        in indexed.stderr
    )

    shown = run(["workspace", "search", str(corpus), "lighthouse", "--limit", "20"], env)
    assert shown.returncode == 0, shown.stderr
    assert_clean(shown)
    lines = shown.stdout.decode("utf-8").splitlines()
    headers = [line for line in lines if line.startswith("[")]
    assert len(headers) == 7  # the forged line is no result line
    assert not any("forged.md" in line and line.startswith("[9]") for line in lines)
    assert r"forge\n[9] forged.md 1-1  Forged.md:1-1" in shown.stdout.decode("utf-8")
    assert r"clear\u001b[2J\u001b[H.md" in shown.stdout.decode("utf-8")
    assert r"archive\u001b[2J\u001b[H/old\u009b2J.md" in shown.stdout.decode("utf-8")

    as_json = run(
        ["workspace", "search", str(corpus), "lighthouse", "--json", "--limit", "20"], env
    )
    assert as_json.returncode == 0, as_json.stderr
    assert_clean(as_json)
    hits = json.loads(as_json.stdout)
    # JSON keeps every value exactly: the names as they are (in the text form).
    assert {hit["path"] for hit in hits} >= {
        f"clear{CLEAR}.md",
        f"forge{FORGED}.md",
        f"retitle{TITLE}{EIGHT_BIT}.md",
        f"archive{CLEAR}/old{EIGHT_BIT}.md",
        "caf:E9.md",
    }

    report = run(["workspace", "index", str(corpus), "--json"], env)
    assert_clean(report)
    problems = json.loads(report.stdout)["problems"]
    assert [(p["path"], p["reason"]) for p in problems] == [
        (f"big{TITLE}.md", "larger than the 1 MB limit (workspace.max_file_mb)")
    ]


def test_the_progress_line_on_a_terminal_shows_names_escaped(
    imprint_env: dict[str, str], corpus: Path
) -> None:
    (corpus / f"a{CLEAR}.md").write_text("The lighthouse first.\n")  # the first one shown
    with TerminalRun(["workspace", "index", str(corpus)], imprint_env) as terminal:
        code, stdout, stderr = terminal.finish()
    assert code == 0, stderr
    assert r"a\u001b[2J\u001b[H.md" in stderr  # the progress line
    assert CONTROL.search(stderr.encode("utf-8")) is None, stderr
    assert CONTROL.search(stdout) is None, stdout
