"""Document extraction in a separate process, under a time and a memory limit.

A PDF is a program for a complicated parser, and an Office file, an e-book or an image is a ZIP or
a compressed picture that a library inflates: a damaged or hostile file can make a parser loop for
hours, ask for gigabytes or crash in native code, and in-process nothing could stop it — a Python
thread cannot be killed. So every such format (:data:`~.extract.ISOLATED`) is read by a worker
process (started when an index update, or the workspace's document reads, first meet one, and
reused for the next), and the calling thread waits for the answer:

* **time** — each file gets :meth:`ExtractionLimits.seconds_for` its size; past that the worker is
  killed and the file is reported with the reason;
* **memory** — on Linux the worker limits its own address space (``RLIMIT_AS``) before reading
  anything, so a file that needs too much fails with a ``MemoryError`` instead of taking the
  computer's memory; on POSIX a CPU-time limit backs up the parent's clock should the parent die.
  Windows has no such limits in the standard library (a job object needs the Win32 API), nor does
  macOS honour a fixed address-space cap: there the time limit applies, and the ZIP checks of
  :mod:`.formats.archive` and the libraries' own limits on decompressed sizes;
* **OCR** — where it is on (:class:`ExtractionLimits` ``ocr``), tesseract runs in the worker with
  its own limit per page, and before each page the worker says so: the file's time grows by that
  page's allowance, so a long scan is never cut off for its length, and one stuck page is;
* **Stop** — the wait checks the cancel token every few hundredths of a second and kills the worker
  at once.

Answers come back as JSON, never pickles, and are checked and size-capped: a worker that a file
managed to subvert still cannot make this process run anything. The worker is started with
``multiprocessing``'s *spawn* method on every platform (forking a process that runs Qt and
llama.cpp threads is unsafe); a frozen build must call ``multiprocessing.freeze_support()`` first
thing in its entry point.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import Cancelled, DocumentError
from imprint_desktop.core.workspace.extract import Extracted, Place, extract
from imprint_desktop.core.workspace.formats import ocr

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

_POLL_SECONDS = 0.05
#: The longest answer taken from the worker: far above the text of any 20 MB PDF.
_MAX_ANSWER_BYTES = 256 * 1024 * 1024
#: Starting a worker (a Python process importing the PDF library) is not part of any file's time.
_START_SECONDS = 60.0
#: The most time one "still working" message from the worker may add.
_MAX_EXTENSION_SECONDS = 600.0


class PdfReaderUnavailableError(DocumentError):
    """The worker process could not be started: no fault of the file, so it is not recorded as
    skipped and is tried again next time."""


#: What stops indexing: the reply's :class:`CancelToken` (Stop, SIGINT) or a plain event.
Stop = CancelToken | threading.Event


def is_cancelled(stop: Stop | None) -> bool:
    if stop is None:
        return False
    return stop.cancelled if isinstance(stop, CancelToken) else stop.is_set()


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    """How long and how much memory one isolated extraction may take.

    ``reader`` runs in the worker: a module-level function (the worker imports it by name) taking
    the file name and bytes. Tests point it at readers that hang or eat memory.
    """

    base_seconds: float = 15.0
    seconds_per_mb: float = 3.0
    max_seconds: float = 90.0
    memory_bytes: int = 2 * 1024**3
    reader: Callable[[str, bytes], Extracted] = extract
    #: Recognise pages without a text layer with tesseract, where it is installed.
    ocr: bool = True
    ocr_page_seconds: float = 30.0

    def seconds_for(self, size: int) -> float:
        return min(self.base_seconds + self.seconds_per_mb * size / 2**20, self.max_seconds)


DEFAULT_LIMITS = ExtractionLimits()


class IsolatedExtractor:
    """Runs ``limits.reader`` in a worker process; use as a context manager (closing stops it)."""

    def __init__(self, limits: ExtractionLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None

    def __enter__(self) -> IsolatedExtractor:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:  # an error or Ctrl+C while a file may still be running: no waiting for it
            self._kill()

    def extract(self, name: str, data: bytes, cancel: Stop | None = None) -> Extracted:
        """The text of ``data``: :class:`DocumentError` says why not, :class:`Cancelled` on Stop."""
        connection = self._ready(cancel)
        try:
            connection.send_bytes(json.dumps({"name": name}).encode("utf-8"))
            connection.send_bytes(data)
        except OSError:  # the worker died between files: one fresh start
            self._kill()
            connection = self._ready(cancel)
            connection.send_bytes(json.dumps({"name": name}).encode("utf-8"))
            connection.send_bytes(data)
        seconds = self.limits.seconds_for(len(data))
        reply = self._answer(seconds, cancel)
        if reply is None:
            self._kill()
            raise DocumentError(
                f"reading it took longer than {seconds:.0f} s, so it was stopped; it will be "
                "tried again when the file changes"
            )
        if not reply.get("ok"):
            raise DocumentError(str(reply.get("reason") or "cannot be turned into text"))
        try:
            return Extracted(
                str(reply["title"]),
                tuple(str(line) for line in reply["lines"]),
                tuple(int(start) for start in reply["page_starts"]),
                str(reply["encoding"]),
                tuple(
                    Place(int(start), str(name), tuple(int(row) for row in rows))
                    for start, name, rows in reply.get("places", ())
                ),
                str(reply.get("date", "")),
                str(reply.get("gaps", "")),
            )
        except (KeyError, TypeError, ValueError) as error:
            self._kill()
            raise DocumentError("the document reader gave an answer that makes no sense") from error

    def close(self) -> None:
        """Let the worker finish on its own (end of input), or kill it if it does not."""
        connection, process = self._connection, self._process
        self._connection = self._process = None
        if connection is not None:
            connection.close()
        if process is not None:
            process.join(timeout=2.0)
            if process.is_alive():
                process.kill()
                process.join()
            process.close()

    # --- the worker's life -----------------------------------------------------------------------

    def _ready(self, cancel: Stop | None) -> Connection:
        if self._connection is not None and self._process is not None and self._process.is_alive():
            return self._connection
        self._kill()
        # Imported with the first worker: an index that finds nothing to read never needs it.
        import multiprocessing  # noqa: PLC0415

        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe(duplex=True)
        settings = ocr.OcrSettings(self.limits.ocr, self.limits.ocr_page_seconds)
        process = context.Process(
            target=serve,
            args=(child, self.limits.memory_bytes, self.limits.reader, settings),
            name="imprint-document-reader",
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._connection = process, parent
        try:
            ready = self._answer(_START_SECONDS, cancel)
        except PdfReaderUnavailableError:
            raise
        except DocumentError as error:
            raise PdfReaderUnavailableError("the document reader could not be started") from error
        if ready != {"ready": True}:
            self._kill()
            raise PdfReaderUnavailableError("the document reader could not be started")
        return parent

    def _answer(self, seconds: float, cancel: Stop | None) -> dict[str, Any] | None:
        """The worker's next answer; None when ``seconds`` pass first. A "working" message (an OCR
        page starting) moves the deadline to that page's allowance from now. Raises
        :class:`DocumentError` when the worker dies and :class:`Cancelled` on Stop."""
        from multiprocessing.connection import wait  # noqa: PLC0415 - see _ready

        connection, process = self._connection, self._process
        assert connection is not None and process is not None
        deadline = time.monotonic() + seconds
        while True:
            if is_cancelled(cancel):
                self._kill()
                raise Cancelled("Indexing was stopped.")
            ready = wait([connection, process.sentinel], timeout=_POLL_SECONDS)
            if connection in ready:
                try:
                    reply = _parsed(connection.recv_bytes(_MAX_ANSWER_BYTES))
                except (EOFError, OSError):  # ended, or an answer past the cap
                    break
                except ValueError as error:
                    self._kill()
                    raise DocumentError(
                        "the document reader gave an answer that makes no sense"
                    ) from error
                working = reply.get("working")
                if isinstance(working, int | float) and not isinstance(working, bool):
                    extension = min(max(float(working), 0.0), _MAX_EXTENSION_SECONDS)
                    deadline = max(deadline, time.monotonic() + extension)
                    continue
                return reply
            if ready:  # the worker ended without answering
                break
            if time.monotonic() > deadline:
                return None
        self._kill()
        raise DocumentError(
            "the document reader stopped while reading it (it crashed or ran out of memory)"
        )

    def _kill(self) -> None:
        connection, process = self._connection, self._process
        self._connection = self._process = None
        if connection is not None:
            connection.close()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join()
            process.close()


def _parsed(message: bytes) -> dict[str, Any]:
    reply = json.loads(message)
    if not isinstance(reply, dict):
        raise ValueError("not a JSON object")  # noqa: TRY004 - reported as a nonsense answer
    return reply


# --- in the worker process ------------------------------------------------------------------------


def serve(
    connection: Connection,
    memory_bytes: int,
    reader: Callable[[str, bytes], Extracted],
    settings: ocr.OcrSettings | None = None,
) -> None:
    """The worker's main loop: limits first, then one file after another until the input ends."""
    _limit_memory(memory_bytes)
    with contextlib.suppress(ImportError):
        import pypdfium2  # noqa: F401, PLC0415 - imported once, before any file's clock starts

    def working(seconds: float) -> None:
        connection.send_bytes(json.dumps({"working": seconds}).encode("utf-8"))

    ocr.configure(settings or ocr.OcrSettings(), working)
    connection.send_bytes(b'{"ready": true}')
    while True:
        try:
            header = json.loads(connection.recv_bytes())
            data = connection.recv_bytes()
        except (EOFError, OSError):
            return
        _limit_cpu()
        reply = _read(reader, str(header.get("name", "")), data)
        del data
        connection.send_bytes(json.dumps(reply, ensure_ascii=False).encode("utf-8"))


def _read(reader: Callable[[str, bytes], Extracted], name: str, data: bytes) -> dict[str, Any]:
    try:
        document = reader(name, data)
    except MemoryError:
        return {"ok": False, "reason": "reading it needed more memory than allowed"}
    except DocumentError as error:
        return {"ok": False, "reason": str(error)}
    except Exception as error:  # any parser failure is a reason, never the worker's end
        return {"ok": False, "reason": f"cannot be turned into text ({type(error).__name__})"}
    return {
        "ok": True,
        "title": document.title,
        "lines": list(document.lines),
        "page_starts": list(document.page_starts),
        "encoding": document.encoding,
        "places": [[place.start, place.name, list(place.rows)] for place in document.places],
        "date": document.date,
        "gaps": document.gaps,
    }


def _limit_memory(extra_bytes: int) -> None:
    """Cap this process's address space at what it uses now plus ``extra_bytes``.

    Where the current size is unknown (anything but Linux) nothing is capped: macOS reserves
    hundreds of gigabytes of address space up front, so no fixed figure would be right there.
    """
    base = _address_space()
    if base == 0:
        return
    import resource  # noqa: PLC0415 - POSIX only

    limit = base + extra_bytes
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _limit_cpu() -> None:
    """Should the parent die, a file still cannot keep this worker spinning: a CPU-time limit a
    little past the longest time any file is given ends it (SIGXCPU)."""
    if sys.platform == "win32":
        return
    import resource  # noqa: PLC0415

    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime)
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = spent + int(DEFAULT_LIMITS.max_seconds) * 2
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _address_space() -> int:
    """This process's virtual memory size in bytes (Linux ``/proc``; 0 where unknown)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:  # noqa: PTH123
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    import resource  # noqa: PLC0415

    return pages * resource.getpagesize()
