"""``imprint ask``: one research reply from a terminal, with the same engine as the window.

Exit codes (DESIGN §4): 0 an answer or the labelled fallback was produced; 130 stopped with Ctrl+C
(after printing what it has); 1 an error (the model failed, the model file cannot be loaded);
2 bad usage or a bad setting.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from imprint_desktop.core import assistant
from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import (
    Cancelled,
    ImprintError,
    SecretStoreError,
    SettingsError,
)
from imprint_desktop.core.net import make_async_client
from imprint_desktop.core.research import events as ev
from imprint_desktop.core.research.trace import TraceWriter, fan_out
from imprint_desktop.core.workspace import Workspace
from imprint_desktop.settings import schema
from imprint_desktop.settings.secrets import SecretStore
from imprint_desktop.settings.store import SettingsStore

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_STOP_WORDS = {
    "answered": "answered",
    "no_progress": "research stopped finding new evidence",
    "time_budget": "the research time budget ran out",
    "token_budget": "the research token budget ran out",
    "context_full": "the context window filled up",
    "cancelled": "stopped",
    "error": "the model failed",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="research a question in a folder of documents and answer it",
        description="Research QUESTION in the workspace with the configured model and print the "
        "answer. Research stops on its time, token and patience budgets, then a final answer is "
        "written.",
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
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    try:
        settings = _settings(args, err)
    except SettingsError as error:
        print(f"imprint: {error}", file=err)
        return EXIT_USAGE
    try:
        api_key = _api_key(args, settings)
    except SecretStoreError as error:
        print(f"imprint: {error}", file=err)
        return EXIT_ERROR
    cancel = CancelToken()
    try:
        result = asyncio.run(_ask(args, settings, api_key, cancel, err))
    except Cancelled:
        print("imprint: stopped before research began", file=err)
        return EXIT_INTERRUPTED
    except ImprintError as error:
        print(f"imprint: {error}", file=err)
        return EXIT_ERROR
    _print_result(result, args, out, err)
    if result.stop_reason == "cancelled":
        return EXIT_INTERRUPTED
    return EXIT_ERROR if result.stop_reason == "error" else EXIT_OK


def _settings(args: argparse.Namespace, err: TextIO) -> dict[str, Any]:
    store = SettingsStore(args.config) if args.config else SettingsStore()
    for problem in store.problems:
        print(f"warning: {problem.message}", file=err)
    settings = dict(store.snapshot())
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
        setting = schema.get(key)
        if setting.secret:
            raise SettingsError(f"{key} is a secret; use --api-key-env or the keyring")
        settings[key] = setting.parse(value)
    return settings


def _api_key(args: argparse.Namespace, settings: Mapping[str, Any]) -> str | None:
    if settings.get("model.provider") != "remote":
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


async def _ask(
    args: argparse.Namespace,
    settings: Mapping[str, Any],
    api_key: str | None,
    cancel: CancelToken,
    err: TextIO,
) -> ev.ReplyResult:
    loop = asyncio.get_running_loop()
    _install_interrupt(loop, cancel, err)
    root = assistant.workspace_root(settings, args.workspace)
    http = make_async_client(settings)
    trace = TraceWriter(args.trace) if args.trace else None
    try:
        provider = await assistant.open_provider(settings, http, api_key=api_key, cancel=cancel)
        try:
            with Workspace.from_settings(root, settings) as workspace:
                await assistant.prepare_workspace(workspace)
                answers: list[str] = list(args.answer)

                async def ask(question: str) -> str:
                    if answers:
                        return answers.pop(0)
                    print(f"\n{question}\n> ", end="", file=err, flush=True)
                    line: str = await asyncio.to_thread(sys.stdin.readline)
                    return line.rstrip("\r\n")

                progress = _Progress(err) if err.isatty() and not args.json else None
                result = await assistant.research(
                    args.question,
                    provider=provider,
                    settings=settings,
                    workspace=workspace,
                    http=http,
                    cancel=cancel,
                    ask=ask,
                    sink=fan_out([trace, progress]),
                )
        finally:
            await provider.aclose()
    finally:
        await http.aclose()
        if trace is not None:
            trace.close()
    if args.trace:
        result = _with_trace(result, str(args.trace))
    return result


def _install_interrupt(loop: asyncio.AbstractEventLoop, cancel: CancelToken, err: TextIO) -> None:
    """First Ctrl+C stops the reply (what was found is still printed); a second one quits."""

    def interrupted() -> None:
        if cancel.cancelled:
            os._exit(EXIT_INTERRUPTED)
        print("\nimprint: stopping…", file=err, flush=True)
        cancel.cancel()

    # On Windows there are no loop signal handlers: Ctrl+C raises KeyboardInterrupt instead.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupted)


def _with_trace(result: ev.ReplyResult, path: str) -> ev.ReplyResult:
    from dataclasses import replace  # noqa: PLC0415

    return replace(result, trace=path)


def _print_result(
    result: ev.ReplyResult, args: argparse.Namespace, out: TextIO, err: TextIO
) -> None:
    if args.json:
        json.dump(result.to_json(), out, ensure_ascii=False)
        out.write("\n")
        out.flush()
        return
    print(result.answer, file=out, flush=True)
    tokens = result.tokens
    print(
        f"\n[{_STOP_WORDS[result.stop_reason]} · {result.rounds} rounds · "
        f"{len(result.evidence)} pieces of evidence · {tokens.charged:,}/{tokens.budget:,} "
        f"research tokens · {result.research_seconds:.1f} s]",
        file=err,
    )


class _Progress:
    """One status line on a terminal: what the research is doing now."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.ToolStarted):
            self._show(f"{event.summary}…")
        elif isinstance(event, ev.FinalStarted):
            self._show("Writing the final answer…")
        elif isinstance(event, ev.ReplyFinished):
            self._show("")

    def _show(self, text: str) -> None:
        self.err.write(f"\r\033[K{text}")
        self.err.flush()
