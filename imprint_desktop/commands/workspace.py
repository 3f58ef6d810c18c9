"""``imprint workspace``: build a folder's index and search it from a terminal.

``index DIR`` brings the index up to date (incrementally: a second run over an unchanged folder
takes a moment) and reports what it did and which files it could not fully use, each with the
reason: skipped (a file that takes too long or too much memory to read, a ZIP bomb, a damaged
file: skipped until it changes), read without text (a scan without OCR), or read in part.
``search DIR QUERY`` updates the index quietly first, so it always answers from the folder as it
is, then prints the best passages with their document's date and whether it looks superseded — as
JSON with ``--json``, a list of hits best first, each with ``path``, ``start_line``, ``end_line``,
``location``, ``score``, ``title``, ``date``, ``dated``, ``superseded`` and ``text``. Both
give every passage its vector from the ``workspace.embedder`` first. ``--mode`` chooses the
ranking: ``hybrid`` (the default, as everywhere in Imprint) fuses ``keyword`` (BM25) and
``meaning`` (the vectors).

Under ``workspace.embedder`` = ``auto`` (the default) those vectors are the built-in embedder's,
made at once; the sentence encoder embeds the passages again later — in the window while it is
idle, or here with ``index --embed``, which does it after the update, with its progress (Ctrl+C
stops it and keeps what it embedded; the next run goes on). Both commands say which embedder ranks
by meaning ("search by meaning: all-minilm-l6-v2 for 320 of 892 passages, … for the rest"):
``index`` on standard output (with ``--json``: ``search_embedder`` and ``embedders``), ``search``
on standard error, so that its output stays the hits.

Whatever comes from a file reaches the terminal shown, never obeyed: paths, titles, places,
reasons and errors through :func:`~imprint_desktop.core.shown_text.terminal_line` (a name holding
``ESC [ 2 J`` or a line break is printed with its escapes, on its one line), passage text through
:func:`~imprint_desktop.core.shown_text.terminal_safe`, and ``--json`` through
:func:`~imprint_desktop.core.shown_text.terminal_json` (every value exact once parsed). A path is
in the workspace's text form (:mod:`imprint_desktop.core.workspace.files`): a name that is not
valid UTF-8 is indexed, with ``:E9`` for each byte that is not text.

Exit codes: 0 done (also when nothing matched), 1 the index could not be built or read, 2 bad usage
(DIR is not a folder).
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TextIO

from imprint_desktop.core.errors import WorkspaceError
from imprint_desktop.core.shown_text import terminal_json, terminal_line, terminal_safe
from imprint_desktop.core.workspace import IndexProgress, IndexReport, Workspace, problem_counts
from imprint_desktop.core.workspace.search import SearchMode
from imprint_desktop.core.workspace.update import NOT_WAITED, WAITING
from imprint_desktop.core.workspace.vectors import EmbedProgress
from imprint_desktop.settings.store import SettingsStore

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of this command (its one-line summary is in :mod:`imprint_desktop.cli`)."""
    parser.description = (
        "Build the full-text index of a folder of documents and search it, as the "
        "model's search_workspace tool does."
    )
    parser.add_argument("--config", type=Path, help="settings file to use instead of the default")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    indexing = actions.add_parser("index", help="build or update the index of DIR")
    indexing.add_argument("dir", type=Path, metavar="DIR")
    indexing.add_argument("--json", action="store_true", help="print the report as JSON")
    indexing.add_argument(
        "--embed",
        action="store_true",
        help="also give every passage the better embedder's vector now (workspace.embedder = "
        "auto: the sentence encoder, which the window otherwise runs while it is idle)",
    )

    searching = actions.add_parser("search", help="search DIR for QUERY (updates the index first)")
    searching.add_argument("dir", type=Path, metavar="DIR")
    searching.add_argument("query", metavar="QUERY")
    searching.add_argument("--json", action="store_true", help="print a JSON list of hits")
    searching.add_argument(
        "--limit", type=_positive, default=8, metavar="N", help="how many hits (default 8)"
    )
    searching.add_argument(
        "--mode",
        type=SearchMode,
        choices=list(SearchMode),
        default=SearchMode.HYBRID,
        help="rank by words (keyword), by meaning, or both fused (hybrid, the default)",
    )
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError("must be between 1 and 1000")
    return value


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    folder: Path = args.dir.expanduser()
    if not folder.is_dir():
        print(f"imprint: {terminal_line(str(folder))} is not a folder.", file=err)
        return EXIT_USAGE
    store = SettingsStore(args.config) if args.config else SettingsStore()
    for problem in store.problems:
        print(f"warning: {terminal_line(problem.message)}", file=err)
    try:
        with Workspace.from_config(folder, store.config().workspace) as workspace:
            progress = _ProgressLine(err, bars=err.isatty())
            report = workspace.index.update(
                progress=progress,
                embed_progress=progress.embedding,
                wait=args.action == "index",  # a search reads what another Imprint committed
            )
            progress.finish()
            if report.busy:
                print(f"imprint: {NOT_WAITED}", file=err)
            if args.action == "index":
                if args.embed and not report.cancelled and not report.busy:
                    _improve(workspace, progress, err)
                _print_report(workspace, report, as_json=args.json, out=out, err=err)
                return EXIT_OK
            hits = workspace.index.search(args.query, args.limit, args.mode)
            if args.mode is not SearchMode.KEYWORD:
                served = workspace.index.coverage().describe()
                print(f"search by meaning: {terminal_line(served)}", file=err)
    except WorkspaceError as error:
        print(f"imprint: {terminal_line(str(error))}", file=err)
        return EXIT_ERROR
    if args.json:
        rows = [
            {
                "path": hit.path,
                "start_line": hit.start_line,
                "end_line": hit.end_line,
                "page": hit.page,
                "place": hit.place,
                "location": hit.location,
                "score": hit.score,
                "title": hit.title,
                "section": hit.section,
                "date": hit.date,
                "dated": hit.dated,
                "superseded": hit.superseded,
                "text": hit.text,
            }
            for hit in hits
        ]
        print(terminal_json(rows), file=out)
        return EXIT_OK
    if not hits:
        print(f"No passages match {args.query!r}.", file=out)
    for number, hit in enumerate(hits, start=1):
        path, title = terminal_line(hit.path), terminal_line(hit.title)
        print(f"[{number}] {path}:{hit.start_line}-{hit.end_line}  {title}", file=out)
        where = f", {hit.location.rsplit(', lines ', 1)[0]}" if hit.page or hit.place else ""
        standing = f" · {hit.currency}" if hit.currency else ""
        print(f"    score {hit.score:.3f}{terminal_line(where + standing)}", file=out)
        for line in terminal_safe(hit.text).splitlines()[:6]:
            print(f"    {line[:116]}", file=out)
        print(file=out)
    return EXIT_OK


def _improve(workspace: Workspace, progress: _ProgressLine, err: TextIO) -> None:
    """Give every passage the better embedder's vector too, with its progress; Ctrl+C stops it
    between batches and keeps what it embedded."""
    index = workspace.index
    if not index.better_name:
        return
    stop = threading.Event()
    progress.label = f"improving search ({index.better_name})"
    try:
        improved = index.improve(progress=progress.embedding, cancel=stop, wait=True)
    except KeyboardInterrupt:
        stop.set()
        progress.finish()
        print("imprint: stopped; the passages embedded so far are kept.", file=err)
        return
    finally:
        progress.finish()
        progress.label = _EMBEDDING
    if improved.problem:
        print(f"the better embedder is off: {terminal_line(improved.problem)}", file=err)


def _print_report(
    workspace: Workspace, report: IndexReport, *, as_json: bool, out: TextIO, err: TextIO
) -> None:
    coverage = workspace.index.coverage()
    if as_json:
        data = {
            "workspace": str(workspace.root),
            "index": str(workspace.index.db_path),
            "documents": report.documents,
            "added": report.added,
            "updated": report.updated,
            "renamed": report.renamed,
            "removed": report.removed,
            "unchanged": report.unchanged,
            "seconds": round(report.seconds, 3),
            "problems": [
                {"path": p.path, "reason": p.reason, "kind": p.kind} for p in report.problems
            ],
            "embedded_passages": report.embedded,
            "embedder_problem": report.embedder_problem or None,
            "search_embedder": coverage.describe(),
            "embedders": {
                "quick": coverage.quick or None,
                "better": coverage.better or None,
                "better_passages": coverage.better_done,
                "passages": coverage.total,
            },
        }
        print(terminal_json(data), file=out)
        return
    skipped = "".join(f", {count}" for count in problem_counts(report.problems))
    print(
        f"{report.documents} documents indexed in {terminal_line(str(workspace.root))} "
        f"({report.added} added, {report.updated} updated, {report.renamed} renamed, "
        f"{report.removed} removed, {report.unchanged} unchanged{skipped}) in "
        f"{report.seconds:.2f} s.",
        file=out,
    )
    served = f"search by meaning: {terminal_line(coverage.describe())}"
    if coverage.better and coverage.better_done < coverage.total:
        served += " (imprint workspace index --embed, or the window while idle, embeds the rest)"
    print(f"{served}.", file=out)
    for problem in report.problems:
        path, reason = terminal_line(problem.path), terminal_line(problem.reason)
        print(f"{_PROBLEM_WORDS[problem.kind]} {path}: {reason}", file=err)
    if report.embedder_problem:
        print(f"search by meaning is off: {terminal_line(report.embedder_problem)}", file=err)


_PROBLEM_WORDS = {"skipped": "skipped", "no_text": "no text in", "partial": "partly read"}
_EMBEDDING = "embedding passages"


class _ProgressLine:
    """A one-line progress bar on a terminal (``bars``), redrawn at most every few files; and on
    any stream, once, a line saying the run waits for another Imprint's indexing."""

    def __init__(self, stream: TextIO, *, bars: bool) -> None:
        self._stream = stream
        self._bars = bars
        self._drawn = False
        self._waited = False
        #: What the passages' progress bar says it is doing.
        self.label = _EMBEDDING

    def __call__(self, progress: IndexProgress) -> None:
        if progress.waiting:
            self._waiting()
            return
        if not self._bars or progress.total == 0:
            return
        if progress.done % 25 and progress.done != progress.total:
            return
        width = 30
        filled = width * progress.done // progress.total
        bar = "#" * filled + "-" * (width - filled)
        name = terminal_line(progress.path)[-40:]
        self._stream.write(f"\r[{bar}] {progress.done}/{progress.total} {name:<40}")
        self._stream.flush()
        self._drawn = True

    def embedding(self, progress: EmbedProgress) -> None:
        if progress.waiting:
            self._waiting()
            return
        if not self._bars or progress.total == 0:
            return
        width = 30
        filled = width * progress.done // progress.total
        bar = "#" * filled + "-" * (width - filled)
        self._stream.write(f"\r[{bar}] {progress.done}/{progress.total} {self.label:<40}")
        self._stream.flush()
        self._drawn = True

    def _waiting(self) -> None:
        if not self._waited:
            self._waited = True
            self.finish()
            self._stream.write(f"{WAITING}…\n")
            self._stream.flush()

    def finish(self) -> None:
        if self._drawn:
            self._drawn = False
            self._stream.write("\r" + " " * 90 + "\r")
            self._stream.flush()
