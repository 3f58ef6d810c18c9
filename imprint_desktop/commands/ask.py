"""``imprint ask``: one research reply from a terminal, with the same engine as the window.

Exit codes (DESIGN §4): 0 an answer or the labelled fallback was produced; 130 stopped with Ctrl+C
(after printing what it has); 1 an error (the model failed, the model file cannot be loaded);
2 bad usage or a bad setting. With ``--json`` exactly one object is printed at the end whichever
way the run ends — also for bad usage, a model that cannot be loaded or Ctrl+C before research
began — with the exit code and the error in it (:func:`ending_json`).

Whatever the model, a document, a page or a server wrote reaches the terminal through
:func:`~imprint_desktop.core.shown_text.terminal_safe` (the answer, the model's question, the status
line, error messages): no escape sequence in it can write the clipboard, retitle the window or clear
the screen. ``--json`` escapes control characters itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sqlite3
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from imprint_desktop.commands.fetch_consent import is_terminal, terminal_consent
from imprint_desktop.core import assistant, reply_services
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.chosen import chosen_model, workspace_folder, workspace_root
from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import (
    Cancelled,
    ImprintError,
    SecretStoreError,
    SettingsError,
    WorkspaceMissingError,
)
from imprint_desktop.core.history import HistoryStore
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.handler import EventHandler
from imprint_desktop.core.research.record.counts import CountsCheck, RequestLines
from imprint_desktop.core.research.record.page import report_writer
from imprint_desktop.core.research.sources import with_sources
from imprint_desktop.core.research.trace import TraceWriter, fan_out
from imprint_desktop.core.research.wording import phase_words, stop_words
from imprint_desktop.core.shown_text import terminal_json, terminal_line, terminal_safe
from imprint_desktop.core.tools.words import plain
from imprint_desktop.settings import schema
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of this command (its one-line summary is in :mod:`imprint_desktop.cli`)."""
    parser.description = (
        "Research QUESTION in the workspace with the configured model and print the "
        "answer. Research stops on its time, token and patience budgets, then a final answer is "
        "written."
    )
    parser.add_argument("question")
    parser.add_argument("--workspace", type=Path, help="the folder of documents to research")
    parser.add_argument("--provider", choices=("local", "remote"), help="local GGUF or a server")
    parser.add_argument("--model", type=Path, help="GGUF file for --provider local")
    parser.add_argument("--base-url", help="OpenAI-compatible server for --provider remote")
    parser.add_argument(
        "--api-key-env", metavar="VAR", help="read the API key from this environment variable"
    )
    parser.add_argument("--config", type=Path, help="settings file to use instead of the default")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting for this run (validated like Preferences)",
    )
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="answer the model's questions in order; then questions are read from stdin",
    )
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write the trace (JSON Lines)")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE.html",
        help="write the research record as a self-contained HTML report",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.add_argument(
        "--allow-fetch",
        action="store_true",
        help="let the model fetch web pages without asking (otherwise it asks on the terminal, "
        "or, when stdin is not a terminal, fetching is denied); link-local and cloud-metadata "
        "addresses are refused either way",
    )
    parser.add_argument(
        "--continue",
        dest="follow_up",
        action="store_true",
        help="ask a follow-up in the newest conversation of the chat history (the question may "
        "refer to the one before it: “How deep is it?”), in the folder it researched unless "
        "--workspace says otherwise",
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help="do not keep this reply in the chat history the window shows (kept by default, "
        "written as it happens, so a reply cut short reopens marked interrupted)",
    )
    parser.set_defaults(handler=run)


@dataclass(frozen=True)
class _Run:
    """Everything one ``imprint ask`` needs, checked before anything is loaded or sent."""

    args: argparse.Namespace
    config: Config
    root: Path
    trace: TraceWriter | None


@dataclass(frozen=True)
class _Ending:
    """How a run ended: its exit code, and the reply, or why there is none."""

    code: int
    result: ev.ReplyResult | None = None
    error: str = ""
    trace: str | None = None
    #: Which embedders served the searches by meaning (None: no workspace was opened).
    search_embedder: str | None = None
    #: The server's prompt counts against Imprint's estimates (None: none reported).
    token_counts: CountsCheck | None = None


def run(args: argparse.Namespace) -> int:
    """Research the question; whatever happens, ``--json`` prints one object at the end."""
    out, err = sys.stdout, sys.stderr
    try:
        ending = _run(args, err)
    except KeyboardInterrupt:  # Ctrl+C before the reply's own handler was installed
        ending = _Ending(EXIT_INTERRUPTED, error="interrupted before research began")
    except Exception as error:  # a fault of ours: said, with the detail, and still one object
        traceback.print_exc(file=err)
        ending = _Ending(EXIT_ERROR, error=f"unexpected error: {type(error).__name__}: {error}")
    if ending.result is None:
        print(f"imprint: {terminal_safe(ending.error)}", file=err)
    _print_ending(ending, args, out, err)
    return ending.code


def ended_early(argv: Sequence[str], code: int, message: str) -> None:
    """The command ended before it ran (see :mod:`imprint_desktop.cli`): with ``--json`` that
    is one object too."""
    words = list(argv)
    if "--json" in words[words.index("ask") + 1 :]:
        _print_ending(_Ending(code, error=message), _JSON_ONLY, sys.stdout, sys.stderr)


_JSON_ONLY = argparse.Namespace(json=True)


def _run(args: argparse.Namespace, err: TextIO) -> _Ending:
    try:
        prepared = _prepare(args, err)
    except (SettingsError, WorkspaceMissingError) as error:
        return _Ending(EXIT_USAGE, error=str(error))
    trace = None if prepared.trace is None else str(args.trace)
    cancel = CancelToken()
    try:
        api_key = _api_key(args, prepared.config)
        requests = RequestLines()
        result, search_embedder = asyncio.run(_ask(prepared, api_key, cancel, err, requests))
    except Cancelled:
        return _Ending(EXIT_INTERRUPTED, error="stopped before research began", trace=trace)
    except ImprintError as error:  # the model cannot be loaded, the keyring refused, ...
        return _Ending(EXIT_ERROR, error=str(error), trace=trace)
    finally:
        if prepared.trace is not None:
            prepared.trace.close()
    if result.stop_reason == "cancelled":
        code = EXIT_INTERRUPTED
    else:
        code = EXIT_ERROR if result.stop_reason == "error" else EXIT_OK
    return _Ending(code, result, search_embedder=search_embedder, token_counts=requests.check())


def _prepare(args: argparse.Namespace, err: TextIO) -> _Run:
    """Settings, workspace and trace file; any of them unusable is bad usage (exit 2)."""
    if not args.question.strip():
        raise SettingsError("the question is empty")
    config = _config(args, err)
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise SettingsError(
            f"the environment variable {args.api_key_env} is not set (or is empty); "
            "--api-key-env names the variable that holds the API key"
        )
    root = workspace_root(config, args.workspace or _continued_folder(args, err))
    return _Run(args, config, root, _open_trace(args.trace))


def _continued_folder(args: argparse.Namespace, err: TextIO) -> Path | None:
    """With ``--continue`` and no ``--workspace``, the folder the conversation continued
    researches; None when it is not known, or gone (then said: the configured one is researched)."""
    if not args.follow_up or args.no_history:
        return None
    try:
        store = HistoryStore()
        try:
            newest = store.conversations()[:1]
        finally:
            store.close()
    except (OSError, sqlite3.Error):
        return None  # the history cannot be opened: _history says so
    kept = newest[0].workspace if newest else None
    if kept is None:
        return None
    folder = workspace_folder(kept)
    if not folder.is_dir():
        print(
            f"warning: the conversation was about {terminal_safe(kept)}, which is no longer "
            "there; researching the configured workspace",
            file=err,
        )
        return None
    return folder


def _config(args: argparse.Namespace, err: TextIO) -> Config:
    """The settings of this run: the store's, with the command line's overrides by key."""
    store = SettingsStore(args.config) if args.config else SettingsStore()
    for problem in store.problems:
        print(f"warning: {problem.message}", file=err)
    values = dict(store.snapshot())
    overrides: list[tuple[str, str]] = []
    for item in args.set:
        key, equals, value = item.partition("=")
        if not equals:
            raise SettingsError(f"--set takes KEY=VALUE (got {item!r})")
        overrides.append((key.strip(), value))
    if args.provider:
        overrides.append(("model.provider", args.provider))
    if args.model:
        overrides.append(("model.path", str(args.model)))
        if not args.provider:
            overrides.append(("model.provider", "local"))
    if args.base_url:
        overrides.append(("remote.base_url", args.base_url))
        if not args.provider:
            overrides.append(("model.provider", "remote"))
    for key, value in overrides:
        if key in schema.RETIRED_KEYS:  # ignored everywhere (DESIGN §3): said, not refused
            print(f"warning: {key} is retired and ignored", file=err)
            continue
        setting = schema.get(key)
        if setting.secret:
            raise SettingsError(f"{key} is a secret; use --api-key-env or the keyring")
        values[key] = setting.parse(value)
    return Config.from_values(values)


def _api_key(args: argparse.Namespace, config: Config) -> str | None:
    if not chosen_model(config).remote:
        return None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise SecretStoreError(f"The environment variable {args.api_key_env} is not set.")
        return key
    secrets = SecretStore()
    if not secrets.available():
        return None  # a server without authentication needs none; one that does will say 401
    return secrets.get("remote.api_key")


def _open_trace(path: Path | None) -> TraceWriter | None:
    if path is None:
        return None
    try:
        return TraceWriter(path)
    except OSError as error:
        raise SettingsError(
            f"cannot write the trace to {path}: {error.strerror or error}. Choose another --trace."
        ) from error


async def _ask(
    prepared: _Run, api_key: str | None, cancel: CancelToken, err: TextIO, requests: RequestLines
) -> tuple[ev.ReplyResult, str | None]:
    """The reply, and which embedders served its searches by meaning."""
    args, config, trace = prepared.args, prepared.config, prepared.trace
    loop = asyncio.get_running_loop()
    _install_interrupt(loop, cancel, args, err)
    answers: list[str] = list(args.answer)

    async def ask(call_id: str, question: str) -> str:
        if answers:
            return answers.pop(0)
        print(f"\n{terminal_safe(question)}\n> ", end="", file=err, flush=True)
        line = await _read_line()
        return line.rstrip("\r\n")

    progress = _Progress(err) if err.isatty() and not args.json else None
    consent = terminal_consent(
        allow_fetch=args.allow_fetch,
        interactive=is_terminal(sys.stdin),
        err=err,
        read_line=_read_line,
    )
    front = assistant.ReplyFront(
        sink=fan_out([trace, progress, report_writer(args.report, err), requests]),
        ask=ask,
        consent=lambda _conversation: consent,
    )
    services = reply_services.OneRunServices(
        prepared.root,
        api_key,
        lambda note: print(f"imprint: {terminal_safe(note)}", file=err, flush=True),
    )
    try:
        with _history(args, err) as (history, conversation):
            result = await assistant.run_reply(
                args.question,
                config=config,
                cancel=cancel,
                services=services,
                front=front,
                history=history,
                conversation=conversation,
            )
        search_embedder = services.search_embedder()
    finally:
        await services.aclose()
    if args.trace:
        result = _with_trace(result, str(args.trace))
    return result, search_embedder


@contextlib.contextmanager
def _history(
    args: argparse.Namespace, err: TextIO
) -> Iterator[tuple[HistoryStore | None, int | None]]:
    """The chat history the reply is kept in, and the conversation it continues with
    ``--continue`` (the newest one; None: a new one named after the question); no history with
    ``--no-history`` or when it cannot be opened (a warning)."""
    if args.no_history:
        yield None, None
        return
    try:
        store = HistoryStore()
        newest = store.conversations()[:1] if args.follow_up else []
    except (OSError, sqlite3.Error) as error:
        print(f"warning: the reply is not kept in the chat history: {error}", file=err)
        yield None, None
        return
    try:
        yield store, newest[0].id if newest else None
    finally:
        store.close()


def _read_line() -> asyncio.Future[str]:
    """A line of stdin, read on a daemon thread: when Ctrl+C stops the reply while the person is
    still typing, the process ends at once instead of waiting for that line."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def deliver(text: str) -> None:
        if not line.done():
            line.set_result(text)

    def read() -> None:
        try:
            text = sys.stdin.readline()
        except (OSError, ValueError):  # stdin closed or not readable: no answer
            text = ""
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(deliver, text)

    threading.Thread(target=read, name="imprint-stdin", daemon=True).start()
    return line


def _install_interrupt(
    loop: asyncio.AbstractEventLoop, cancel: CancelToken, args: argparse.Namespace, err: TextIO
) -> None:
    """First Ctrl+C stops the reply (what was found is still printed); a second one quits."""

    def interrupted() -> None:
        if cancel.cancelled:
            quitting = _Ending(EXIT_INTERRUPTED, error="interrupted twice: quit at once")
            _print_ending(quitting, args, sys.stdout, err)
            os._exit(EXIT_INTERRUPTED)
        print("\nimprint: stopping…", file=err, flush=True)
        cancel.cancel()

    # On Windows there are no loop signal handlers: Ctrl+C raises KeyboardInterrupt instead.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupted)


def _with_trace(result: ev.ReplyResult, path: str) -> ev.ReplyResult:
    from dataclasses import replace  # noqa: PLC0415

    return replace(result, trace=path)


def _print_ending(ending: _Ending, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    if args.json:
        out.write(terminal_json(ending_json(ending), indent=None) + "\n")
        out.flush()
        return
    result = ending.result
    if result is None:
        return  # the reason is on stderr already
    shown = with_sources(result.answer, result.sources, result.grounding)
    print(terminal_safe(shown), file=out, flush=True)
    tokens = result.tokens
    if result.error:
        print(f"imprint: {terminal_safe(result.error)}", file=err)
    print(
        f"\n[{stop_words(result.stop_reason).brief} · {_count(result.rounds, 'round')} · "
        f"{_count(len(result.evidence), 'piece')} of evidence · "
        f"{tokens.charged:,}/{tokens.budget:,} research tokens · "
        f"{result.research_seconds:.1f} s]",
        file=err,
    )
    if ending.search_embedder:
        print(f"[search by meaning: {terminal_line(ending.search_embedder)}]", file=err)


def ending_json(ending: _Ending) -> dict[str, object]:
    """The one ``--json`` object: the reply's fields (DESIGN §4) and the exit code. A run that
    wrote no reply (bad usage, a model that cannot be loaded, Ctrl+C before research began) has
    the same fields: no answer, ``final_mode`` null, ``stop_reason`` error or cancelled, and
    ``error`` saying why."""
    if ending.result is not None:
        payload = ending.result.to_json()
    else:
        nothing = ev.ReplyResult(
            answer="",
            final_mode="fallback",
            stop_reason="cancelled" if ending.code == EXIT_INTERRUPTED else "error",
            rounds=0,
            evidence=(),
            tokens=ev.TokenTotals(0, 0, 0, 0),
            research_seconds=0.0,
            user_wait_seconds=0.0,
            error=ending.error,
            trace=ending.trace,
        )
        payload = {**nothing.to_json(), "final_mode": None}
    payload["search_embedder"] = ending.search_embedder
    counts = ending.token_counts
    payload["token_counts"] = counts.to_json() if counts is not None else None
    payload["exit_code"] = ending.code
    return payload


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


class _Progress(EventHandler):
    """One status line on a terminal: what the research is doing now."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, event: ev.Event) -> None:
        ev.dispatch(event, self)

    def on_tool_started(self, event: ev.ToolStarted) -> None:
        self._show(f"{event.summary}…")

    def on_final_started(self, event: ev.FinalStarted) -> None:
        self._show(phase_words("final").now)

    def on_reply_finished(self, event: ev.ReplyFinished) -> None:
        self._show("")

    def _show(self, text: str) -> None:
        """Replace the line with ``text`` (which may quote the model's arguments: made safe, no
        direction-changing character left, and kept to one line of the terminal, all a carriage
        return goes back over)."""
        line = plain(terminal_safe(text), max(shutil.get_terminal_size().columns - 1, 1))
        self.err.write(f"\r\033[K{line}")
        self.err.flush()
