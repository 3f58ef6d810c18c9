"""The command line loads only the command it runs (issue 28), in-process: the parser it builds,
the help it shows, and the one ``--json`` object of ``imprint ask`` on the paths no server or
model file can reach (a fault of Imprint's own)."""

from __future__ import annotations

import gc
import io
import json
import os
from pathlib import Path

import pytest

from imprint_desktop import cli
from imprint_desktop.commands import ask
from imprint_desktop.core.chosen import sample_workspace
from imprint_desktop.core.history import HistoryStore


def test_the_command_is_the_first_word_that_is_not_an_option() -> None:
    assert cli.command_named(["-vv", "settings", "get", "ask"]) is cli.COMMANDS[1]
    assert cli.command_named(["--verbose", "ask", "settings"]) is cli.COMMANDS[0]
    assert cli.command_named(["--help"]) is None
    assert cli.command_named(["gui"]) is None
    assert cli.command_named([]) is None


def test_help_lists_every_command_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--help"])
    assert stopped.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    for command in cli.COMMANDS:
        assert f"{command.name} {command.summary}" in shown, command


def test_a_commands_own_help_shows_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["workspace", "--help"])
    shown = capsys.readouterr().out
    assert "index" in shown and "search" in shown and "full-text index" in shown


def test_a_command_run_in_a_callers_process_leaves_the_process_as_it_was(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``imprint`` run as the process sets it up for a short life (one BLAS thread, the
    cycle collector spared what was loaded): a caller's collector and environment are its own."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    # The collector's own calls are watched, not its freeze count: an object an earlier test
    # froze may be freed while the command runs, and the count then falls by one.
    touched: list[str] = []
    for name in ("freeze", "disable"):
        monkeypatch.setattr(gc, name, lambda name=name: touched.append(name))
    frozen = gc.get_freeze_count()
    assert cli.main(["settings", "get", "chat.max_tokens"]) == 0
    assert capsys.readouterr().out.strip() == "2048"
    assert touched == []
    assert gc.isenabled()
    assert gc.get_freeze_count() <= frozen
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_an_unexpected_fault_still_ends_in_one_json_object(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(ask, "_prepare", broken)
    code = cli.main(["ask", "Who?", "--workspace", str(tmp_path), "--json"])
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert code == payload["exit_code"] == 1
    assert payload["stop_reason"] == "error" and payload["final_mode"] is None
    assert "RuntimeError: a bug of ours" in payload["error"]
    assert "Traceback" in captured.err, "the detail is kept for a bug report"


def test_ctrl_c_before_the_reply_handles_it_is_one_json_object_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ask, "_prepare", interrupted)
    code = cli.main(["ask", "Who?", "--workspace", str(tmp_path), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == payload["exit_code"] == 130
    assert payload["stop_reason"] == "cancelled" and payload["error"]


def test_continue_researches_the_folder_of_the_conversation_it_continues(
    tmp_path: Path,
) -> None:
    """``imprint ask --continue`` without ``--workspace`` follows the conversation's folder
    (issue 41, item 9); ``--workspace`` still wins, and a folder gone since is said."""
    harbour = tmp_path / "harbour-docs"
    harbour.mkdir()
    history = HistoryStore()
    history.start_reply(history.create_conversation("Harbour"), "How high is the wall?", harbour)
    history.close()

    def root(*words: str) -> tuple[Path, str]:
        argv = ["ask", *words]
        err = io.StringIO()
        prepared = ask._prepare(cli.build_parser(argv).parse_args(argv), err)
        return prepared.root, err.getvalue()

    assert root("How deep is it?", "--continue") == (harbour, "")
    assert root("How deep is it?")[0] == sample_workspace()  # a new conversation: the settings'
    assert root("How deep is it?", "--continue", "--workspace", str(tmp_path))[0] == tmp_path
    harbour.rmdir()
    again, said = root("How deep is it?", "--continue")
    assert again == sample_workspace()
    assert f"the conversation was about {harbour}, which is no longer there" in said
