"""``imprint models``: find, download, list, import and remove GGUF models from a terminal.

The same model store as the window (:mod:`imprint_desktop.core.models`), against the hub that
``HF_ENDPOINT`` names (the real one by default). ``download`` shows a progress bar on a terminal,
resumes a partial file left by an earlier run (also one that was killed), and exits 0 only for a
file whose SHA-256 matched the hub's; Ctrl+C pauses it, keeping the partial for the next run.

Exit codes: 0 done, 1 an error (no such repository, the hub or the disk failed, a checksum
mismatch), 2 bad usage, 130 interrupted (the partial is kept).

``recommended`` lists the curated models of ``resources/models.toml`` with how each fits this
computer (runs well, runs slowly, does not fit, and why); ``download --recommended`` downloads the
best fit, or the entry named after it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from imprint_desktop.core.config import Config
from imprint_desktop.core.errors import ImprintError, ModelStoreError
from imprint_desktop.core.models import (
    DownloadControl,
    DownloadProgress,
    HubClient,
    HubConfig,
    ModelDownloader,
    ModelLayout,
    ModelLibrary,
    Phase,
    Recommendations,
    Role,
    Sort,
    human_size,
    recommend_here,
)
from imprint_desktop.settings.store import SettingsStore

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
BEST_FIT = "best"


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of this command (its one-line summary is in :mod:`imprint_desktop.cli`)."""
    parser.description = (
        "Search the model hub (HF_ENDPOINT, or huggingface.co) for GGUF models, "
        "download them verified into the Hugging Face cache or downloads.models_dir, and manage "
        "the models installed on this computer."
    )
    parser.add_argument("--config", type=Path, help="settings file to use instead of the default")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    search = actions.add_parser("search", help="search the hub for GGUF repositories")
    search.add_argument("text", metavar="TEXT")
    search.add_argument("--sort", choices=("downloads", "recent"), default="downloads")
    search.add_argument("--page", type=_page, default=1, help="page number, from 1")
    search.add_argument("--json", action="store_true", help="print JSON")

    files = actions.add_parser("files", help="list a repository's GGUF models")
    files.add_argument("repo", metavar="REPO")
    files.add_argument("--json", action="store_true", help="print JSON")

    download = actions.add_parser(
        "download",
        help="download (or resume) and verify a model",
        usage="%(prog)s [-h] [--json] (REPO FILE | --recommended [ID])",
    )
    download.add_argument("repo", metavar="REPO", nargs="?")
    download.add_argument(
        "file", metavar="FILE", nargs="?", help="a GGUF file, or a split model's name"
    )
    download.add_argument(
        "--recommended",
        nargs="?",
        const=BEST_FIT,
        metavar="ID",
        help="a recommended model instead of REPO FILE: the best fit for this computer, or the "
        "one with this id (see `imprint models recommended`)",
    )
    download.add_argument("--json", action="store_true", help="print the result as JSON")

    recommended = actions.add_parser(
        "recommended", help="the models Imprint recommends, and how each fits this computer"
    )
    recommended.add_argument("--json", action="store_true", help="print JSON")

    listing = actions.add_parser("list", help="the models installed on this computer")
    listing.add_argument("--json", action="store_true", help="print JSON")

    remove = actions.add_parser("remove", help="remove an installed model (imports are forgotten)")
    remove.add_argument("name", metavar="NAME")

    importing = actions.add_parser("import", help="use a GGUF file where it is (no copy)")
    importing.add_argument("path", type=Path, metavar="PATH")
    parser.set_defaults(handler=run)


def _page(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 50:
        raise argparse.ArgumentTypeError("must be between 1 and 50")
    return value


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    store = SettingsStore(args.config) if args.config else SettingsStore()
    for problem in store.problems:
        print(f"warning: {problem.message}", file=err)
    config = store.config()
    try:
        return _dispatch(args, config, out, err)
    except ImprintError as error:
        print(f"imprint: {error}", file=err)
        return EXIT_ERROR


def _dispatch(args: argparse.Namespace, config: Config, out: TextIO, err: TextIO) -> int:
    if args.action == "search":
        return _search(config, args, out)
    if args.action == "files":
        return _files(config, args, out)
    if args.action == "download":
        return _download(config, args, out, err)
    if args.action == "recommended":
        return _recommended(recommend_here(config), as_json=args.json, out=out)
    library = ModelLibrary(ModelLayout.from_config(config.downloads))
    if args.action == "list":
        return _list(library, as_json=args.json, out=out)
    if args.action == "remove":
        print(library.remove(library.find(args.name)).message, file=out)
    else:
        model = library.import_file(args.path)
        print(f"Imported {model.name} ({human_size(model.size)}) from {model.path}.", file=out)
    return EXIT_OK


def _search(config: Config, args: argparse.Namespace, out: TextIO) -> int:
    sort = Sort.DOWNLOADS if args.sort == "downloads" else Sort.RECENT
    page = HubClient(HubConfig.from_config(config.network)).search(args.text, sort, args.page - 1)
    if args.json:
        rows = [
            {
                "repo_id": result.repo_id,
                "downloads": result.downloads,
                "likes": result.likes,
                "last_modified": result.last_modified.isoformat() if result.last_modified else None,
            }
            for result in page.results
        ]
        json.dump({"results": rows, "has_more": page.has_more}, out, indent=2)
        out.write("\n")
        return EXIT_OK
    if not page.results:
        print(f"No GGUF repositories match {args.text!r}.", file=out)
    for result in page.results:
        when = result.last_modified.date().isoformat() if result.last_modified else "?"
        print(f"{result.repo_id}  ({result.downloads:,} downloads, updated {when})", file=out)
    if page.has_more:
        print(f"More: --page {args.page + 1}", file=out)
    return EXIT_OK


def _files(config: Config, args: argparse.Namespace, out: TextIO) -> int:
    n_ctx = config.model.n_ctx
    listing = HubClient(HubConfig.from_config(config.network)).repo_models(args.repo, n_ctx)
    if args.json:
        rows = [
            {
                "name": model.name,
                "files": [file.path for file in model.files],
                "size": model.size,
                "quantization": model.quantization,
                "complete": model.complete,
                "sha256": [file.sha256 for file in model.files],
                "fit": model.fit.fit.value,
                "fit_text": model.fit.text,
            }
            for model in listing.models
        ]
        json.dump(
            {"repo_id": listing.repo_id, "commit": listing.commit, "models": rows}, out, indent=2
        )
        out.write("\n")
        return EXIT_OK
    if not listing.models:
        print(f"{args.repo} has no GGUF files.", file=out)
    for model in listing.models:
        parts = f", {len(model.files)} parts" if len(model.files) > 1 else ""
        missing = "" if model.complete else " (parts missing on the hub)"
        quant = model.quantization or "?"
        print(f"{model.name}  {quant}  {human_size(model.size)}{parts}{missing}", file=out)
        print(f"    {model.fit.text} at model.n_ctx={n_ctx}", file=out)
    return EXIT_OK


def _recommended(found: Recommendations, *, as_json: bool, out: TextIO) -> int:
    if as_json:
        json.dump(found.to_json(), out, indent=2)
        out.write("\n")
        return EXIT_OK
    print(f"Recommended for this computer ({_computer(found)}):\n", file=out)
    if found.machine.unseen_gpu:
        print(f"{found.machine.unseen_gpu}\n", file=out)
    for entry in found.entries:
        model, fit = entry.model, entry.fit
        mark = "*" if entry.role is Role.BEST else " "
        role = f"  [{entry.role.words.lower()}]" if entry.role is not None else ""
        here = "  [installed]" if entry.installed is not None else ""
        print(
            f"{mark} {model.id}  {model.name}  {human_size(model.size)}  "
            f"{fit.verdict.words}{role}{here}",
            file=out,
        )
        print(f"    {fit.reason}", file=out)
        print(f"    {model.repo}  {model.file}  ({model.license})", file=out)
    best = found.best
    if best is None:
        print("\nNone of them fits this computer now; see the reasons above.", file=out)
    elif best.installed is None:
        print(
            f"\nDownload the best fit ({best.model.name}): imprint models download --recommended",
            file=out,
        )
    return EXIT_OK


def _computer(found: Recommendations) -> str:
    machine = found.machine
    cores = f"{machine.cpu_cores} CPU core{'s' if machine.cpu_cores != 1 else ''}"
    memory = (
        f"{human_size(machine.available_memory)} free memory"
        if machine.available_memory is not None
        else "free memory unknown"
    )
    if machine.gpu is not None:
        gpu = f"{machine.gpu.name} with {human_size(machine.gpu.free_bytes)} free"
    else:
        gpu = "a GPU that is not counted" if machine.unseen_gpu else "no GPU that llama.cpp can use"
    disk = f"{human_size(machine.disk_free)} free disk" if machine.disk_free is not None else ""
    return ", ".join(part for part in (cores, memory, gpu, disk) if part)


def _download_target(
    config: Config, args: argparse.Namespace, err: TextIO
) -> tuple[str, str] | None:
    """REPO and FILE, given or recommended; None (after saying why) for bad usage."""
    if args.recommended is None:
        if args.repo and args.file:
            return args.repo, args.file
        print("imprint models download: give REPO and FILE, or --recommended.", file=err)
        return None
    if args.repo or args.file:
        print("imprint models download: --recommended takes no REPO or FILE.", file=err)
        return None
    found = recommend_here(config)
    if args.recommended == BEST_FIT:
        entry = found.best
        if entry is None:
            raise ModelStoreError(
                "None of the recommended models fits this computer now: "
                + " ".join(f"{e.model.name}: {e.fit.reason}" for e in found.entries[-1:])
                + " See `imprint models recommended`."
            )
    else:
        entry = found.find(args.recommended)
    if not args.json:
        print(f"{entry.model.name}: {entry.fit.verdict.words}. {entry.fit.reason}", file=err)
    return entry.model.repo, entry.model.file


def _download(config: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    target = _download_target(config, args, err)
    if target is None:
        return EXIT_USAGE
    hub = HubClient(HubConfig.from_config(config.network))
    downloader = ModelDownloader(hub, ModelLayout.from_config(config.downloads))
    model = hub.resolve_model(*target, config.model.n_ctx)
    record = downloader.record_for(model)
    resumed = downloader.partial_bytes(record)
    if resumed and not args.json:
        print(f"Resuming {model.name} from {human_size(resumed)}.", file=err)
    bar = _ProgressBar(err) if err.isatty() else None
    control = DownloadControl()
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["path"] = downloader.run(record, control, bar.update if bar else None)
        except BaseException as error:  # handed to the main thread, which reports it
            outcome["error"] = error

    worker = threading.Thread(target=work, name="imprint-download")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        control.pause()
        worker.join()
        if bar:
            bar.finish()
        print("Paused; the partial file is kept. Run the same command to resume.", file=err)
        return EXIT_INTERRUPTED
    if bar:
        bar.finish()
    error = outcome.get("error")
    if isinstance(error, BaseException):
        if isinstance(error, ImprintError):
            raise error
        raise ModelStoreError(f"The download failed unexpectedly: {error}") from error
    path = outcome["path"]
    if args.json:
        json.dump(
            {
                "path": str(path),
                "size": model.size,
                "sha256": model.files[0].sha256,
                "verified": True,
            },
            out,
            indent=2,
        )
        out.write("\n")
    else:
        print(f"Verified {model.name} ({human_size(model.size)}): {path}", file=out)
    return EXIT_OK


def _list(library: ModelLibrary, *, as_json: bool, out: TextIO) -> int:
    models = library.installed()
    if as_json:
        json.dump([model.to_json() for model in models], out, indent=2)
        out.write("\n")
        return EXIT_OK
    for model in models:
        state = "" if model.usable else f"  NOT LOADABLE: {model.problem}"
        print(f"{model.name}  [{model.source.value}]  {human_size(model.size)}{state}", file=out)
        print(f"    {model.path}", file=out)
    if not models:
        print("No models installed. `imprint models search TEXT` finds some.", file=out)
    return EXIT_OK


class _ProgressBar:
    """One line on a terminal, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, width: int = 28) -> None:
        self._stream = stream
        self._width = width
        self._last = 0.0
        self._drawn = False

    def update(self, event: DownloadProgress) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and event.phase is Phase.DOWNLOADING:
            return
        self._last = now
        filled = int(self._width * event.fraction)
        bar = "#" * filled + "-" * (self._width - filled)
        rate = f"{human_size(event.rate)}/s" if event.rate else ""
        eta = f"ETA {int(event.eta) // 60}:{int(event.eta) % 60:02d}" if event.eta else ""
        label = event.phase.value if event.phase is not Phase.DOWNLOADING else ""
        text = (
            f"[{bar}] {event.fraction:6.1%} {human_size(event.done_bytes)}/"
            f"{human_size(event.total_bytes)} {rate} {eta} {label}"
        )
        self._stream.write("\r" + text.ljust(90)[:110])
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
