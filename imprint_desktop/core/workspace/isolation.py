"""Document extraction in a separate process, under a time and a memory limit.

A PDF is a program for a complicated parser, and an Office file, an e-book or an image is a ZIP or
a compressed picture that a library inflates: a damaged or hostile file can make a parser loop for
hours, ask for gigabytes or crash in native code, and in-process nothing could stop it — a Python
thread cannot be killed. So every such format (:data:`~.extract.ISOLATED`) is read by a worker
process (started when an index update, or the workspace's document reads, first meet one, and
reused for the next), and the calling thread waits for the answer:

* **time** — each file gets :meth:`ExtractionLimits.seconds_for` its size; past that the worker is
  killed and the file is reported with the time it was given (the time enforced, OCR's included);
* **memory** — on Linux the worker limits its own address space (``RLIMIT_AS``) before reading
  anything, so a file that needs too much fails with a ``MemoryError`` instead of taking the
  computer's memory; on POSIX a CPU-time limit backs up the parent's clock should the parent die.
  Windows has no such limits in the standard library (a job object needs the Win32 API), nor does
  macOS honour a fixed address-space cap: there the time limit applies, and the ZIP checks of
  :mod:`.formats.archive` and the libraries' own limits on decompressed sizes;
* **OCR** — where it is on (:class:`ExtractionLimits` ``ocr``), tesseract runs in the worker with
  its own limit per page, and before each page the worker says so: the file's time grows by that
  page's allowance, so a long scan is not cut off for its length, and one stuck page is. OCR of
  one file is bounded too (``ocr_file_seconds``, ``ocr_max_pages``), and this process never
  grants a file more than its own time and the whole of that;
* **text** — a document gives at most ``max_text_chars`` of text (``workspace.max_text_mb``): the
  readers stop there (:class:`~.formats.text.LineWriter`), and an answer larger than that text
  can be is refused unread, one that holds more is cut, so this process's memory is bounded
  whatever the worker sends;
* **Stop** — the wait checks the cancel token every few hundredths of a second and kills the worker
  at once;
* **its files** — the worker writes only in a private folder (``mkdtemp``: mode 0700, its files
  0600: OCR's page images), which this process removes whenever the worker ends, killed or not;
* **its life** — the worker dies with this process: on Linux the kernel kills it when the thread
  that started it ends (``PR_SET_PDEATHSIG``), so every worker is started by one thread that
  lives as long as this process (:class:`_Launcher`), never by the caller's, which may end while
  the worker is still wanted; and everywhere a thread of the worker watches this process (the
  sentinel ``multiprocessing`` gives a child, a pipe or a process handle) and ends the worker when
  it goes. On POSIX the worker leads a process group of its own, so killing it kills the tesseract
  it may be running too.

The same worker draws a PDF's page for the source viewer (:meth:`IsolatedExtractor.render`, the
page's PNG sent after its JSON answer): under the file's time and the memory limit, and at most
:data:`~.formats.pdf_page.MAX_PIXELS` large, so a page that would need gigabytes is refused.

Answers come back as JSON, never pickles, and are checked and size-capped: a worker that a file
managed to subvert still cannot make this process run anything. The worker is started with
``multiprocessing``'s *spawn* method on every platform (forking a process that runs Qt and
llama.cpp threads is unsafe); a frozen build must call ``multiprocessing.freeze_support()`` first
thing in its entry point.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint_desktop.core.cancel import CancelToken
from imprint_desktop.core.errors import Cancelled, DocumentError
from imprint_desktop.core.workspace.dating import DocumentDate, How, normalized
from imprint_desktop.core.workspace.extract import (
    KINDS,
    Extracted,
    Place,
    bounded,
    extract,
    format_for,
)
from imprint_desktop.core.workspace.formats import ocr
from imprint_desktop.core.workspace.formats.ocr import FILE_SECONDS, MAX_PAGES, OcrSettings
from imprint_desktop.core.workspace.formats.pdf_page import (
    MAX_PIXELS,
    Box,
    PageRequest,
    RenderedPage,
    render_page,
)
from imprint_desktop.core.workspace.formats.text import MAX_CHARS, MAX_LINES, MAX_NAME, MAX_PARTS

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.05
#: Starting a worker (a Python process importing the PDF library) is not part of any file's time.
_START_SECONDS = 60.0
#: The most time one "still working" message from the worker may add.
_MAX_EXTENSION_SECONDS = 600.0
#: Time past a file's OCR allowance for drawing its last page and answering.
_OCR_GRACE_SECONDS = 10.0


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
    the file name, its bytes and the most text it may give. Tests point it at readers that hang or
    eat memory.
    """

    base_seconds: float = 15.0
    seconds_per_mb: float = 3.0
    max_seconds: float = 90.0
    memory_bytes: int = 2 * 1024**3
    reader: Callable[[str, bytes, int], Extracted] = extract
    #: Recognise pages without a text layer with tesseract, where it is installed.
    ocr: bool = True
    ocr_page_seconds: float = 30.0
    #: OCR's bounds for one file: its time in all, and its pages (or frames).
    ocr_file_seconds: float = FILE_SECONDS
    ocr_max_pages: int = MAX_PAGES
    #: The most text one document may give, in characters (``workspace.max_text_mb``).
    max_text_chars: int = MAX_CHARS
    #: Draws a PDF page for the viewer (module-level, like ``reader``; tests give it one that
    #: hangs).
    renderer: Callable[[bytes, PageRequest], RenderedPage] = render_page

    def seconds_for(self, size: int) -> float:
        return min(self.base_seconds + self.seconds_per_mb * size / 2**20, self.max_seconds)

    def ocr_settings(self) -> OcrSettings:
        return OcrSettings(
            self.ocr,
            self.ocr_page_seconds,
            file_seconds=self.ocr_file_seconds,
            max_pages=self.ocr_max_pages,
        )

    @property
    def answer_bytes(self) -> int:
        """The longest answer taken from the worker: its text as JSON (at most four bytes a
        character), a sheet's row number for each line, its places' names, and room for the
        rest."""
        return 4 * self.max_text_chars + 8 * MAX_LINES + 4 * MAX_NAME * MAX_PARTS + 2**20


DEFAULT_LIMITS = ExtractionLimits()


class IsolatedExtractor:
    """Runs ``limits.reader`` in a worker process; use as a context manager (closing stops it)."""

    def __init__(self, limits: ExtractionLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self._scratch: str | None = None  # the worker's private folder

    def __enter__(self) -> IsolatedExtractor:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:  # an error or Ctrl+C while a file may still be running: no waiting for it
            self._kill()

    def extract(self, name: str, data: bytes, cancel: Stop | None = None) -> Extracted:
        """The text of ``data``: :class:`DocumentError` says why not, :class:`Cancelled` on Stop."""
        self._send({"name": name}, data, cancel)
        clock = _FileClock(self.limits, len(data))
        reply = self._answer(clock, cancel)
        if reply is None:
            self._kill()
            raise DocumentError(
                f"reading it took longer than {clock.allowed:.0f} s{clock.how}, so it was "
                "stopped; it will be tried again when the file changes"
            )
        if not reply.get("ok"):
            detail = reply.get("detail")
            if detail:
                log.info("%s not read: %s", name, str(detail)[:500])
            raise DocumentError(
                str(reply.get("reason") or "it could not be read (no reason given)")
            )
        try:
            return self._document(reply)
        except (KeyError, TypeError, ValueError) as error:
            self._kill()
            raise DocumentError("the document reader gave an answer that makes no sense") from error

    def render(
        self, name: str, data: bytes, request: PageRequest, cancel: Stop | None = None
    ) -> RenderedPage:
        """A page of the PDF ``data`` drawn, with its sentence's boxes, under the same time (the
        file's, by its size) and memory limits as its text: :class:`DocumentError` says why not."""
        asked = {
            "page": request.page,
            "scale": request.scale,
            "sentences": request.sentences,
            "fit_width": request.fit_width,
        }
        self._send({"name": name, "page": asked}, data, cancel)
        clock = _FileClock(self.limits, len(data))
        reply = self._answer(clock, cancel)
        image = None
        if reply is not None and reply.get("ok"):
            image = self._image(clock, cancel, int(reply.get("png_bytes", 0)))
        if reply is None or (reply.get("ok") and image is None):
            self._kill()
            raise DocumentError(
                f"drawing its page {request.page} took longer than {clock.allowed:.0f} s, so it "
                "was stopped"
            )
        if image is None:
            raise DocumentError(str(reply.get("reason") or "its page could not be drawn"))
        try:
            return _page(reply, image)
        except (KeyError, TypeError, ValueError) as error:
            self._kill()
            raise DocumentError("the document reader gave an answer that makes no sense") from error

    def _send(self, header: dict[str, Any], data: bytes, cancel: Stop | None) -> None:
        connection = self._ready(cancel)
        try:
            connection.send_bytes(json.dumps(header).encode("utf-8"))
            connection.send_bytes(data)
        except OSError:  # the worker died between files: one fresh start
            self._kill()
            connection = self._ready(cancel)
            connection.send_bytes(json.dumps(header).encode("utf-8"))
            connection.send_bytes(data)

    def _image(self, clock: _FileClock, cancel: Stop | None, size: int) -> bytes | None:
        """The page image that follows a drawn page's answer; None when ``clock`` runs out."""
        from multiprocessing.connection import wait  # noqa: PLC0415 - see _ready

        connection, process = self._connection, self._process
        assert connection is not None and process is not None
        if not 0 < size <= MAX_PNG_BYTES:
            self._kill()
            raise DocumentError("the document reader gave a page image larger than any page")
        while not clock.out():
            if is_cancelled(cancel):
                self._kill()
                raise Cancelled("Drawing the page was stopped.")
            if connection in wait([connection, process.sentinel], timeout=_POLL_SECONDS):
                try:
                    image = connection.recv_bytes(MAX_PNG_BYTES)
                except (EOFError, OSError) as error:
                    self._kill()
                    raise DocumentError(
                        "the document reader stopped while drawing the page"
                    ) from error
                if len(image) != size:
                    self._kill()
                    raise DocumentError("the document reader gave a page image cut short")
                return image
            if not process.is_alive():
                self._kill()
                raise DocumentError("the document reader stopped while drawing the page")
        return None

    def _document(self, reply: dict[str, Any]) -> Extracted:
        """The document in a worker's answer, checked (raises ``ValueError`` and the like when
        it makes no sense) and held to the bounds on text, whatever the worker sent."""
        text, count = str(reply["text"]), int(reply["line_count"])
        if len(text) > self.limits.max_text_chars:  # more than it was asked for: cut here
            text = text[: self.limits.max_text_chars]
        lines, cut = bounded(
            tuple(text.split("\n", MAX_LINES)) if count else (), self.limits.max_text_chars
        )
        page_starts = tuple(int(start) for start in reply["page_starts"])
        places = tuple(
            Place(int(start), str(name), tuple(int(row) for row in rows))
            for start, name, rows in reply.get("places", ())
        )
        if (
            len(page_starts) > MAX_PARTS
            or len(places) > MAX_PARTS
            or sum(len(place.rows) for place in places) > MAX_LINES
            or not _ascending(page_starts)
            or not _ascending([place.start for place in places])
        ):
            raise ValueError("pages or places out of order or out of bounds")
        gaps = str(reply.get("gaps", ""))
        return Extracted(
            str(reply["title"])[:1000],
            lines,
            page_starts,
            str(reply["encoding"]),
            places,
            tuple(
                DocumentDate(normalized(str(date)), How(how))
                for date, how in reply.get("dates", ())[: len(How)]
                if normalized(str(date))
            ),
            "; ".join(part for part in (gaps, cut) if part),
        )

    def close(self) -> None:
        """Let the worker finish on its own (end of input), or kill it if it does not."""
        connection, process = self._connection, self._process
        self._connection = self._process = None
        if connection is not None:
            connection.close()
        if process is not None:
            process.join(timeout=2.0)
            if process.is_alive():
                _kill_group(process)
                process.join()
            process.close()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    # --- the worker's life -----------------------------------------------------------------------

    def _ready(self, cancel: Stop | None) -> Connection:
        if self._connection is not None and self._process is not None and self._process.is_alive():
            return self._connection
        self._kill()
        # Imported with the first worker: an index that finds nothing to read never needs it.
        import multiprocessing  # noqa: PLC0415

        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe(duplex=True)
        self._scratch = tempfile.mkdtemp(prefix="imprint-reader-")  # mode 0700
        process = context.Process(
            target=serve,
            args=(child, self.limits.memory_bytes, self.limits.reader, self.limits.ocr_settings()),
            kwargs={
                "scratch": self._scratch,
                "max_chars": self.limits.max_text_chars,
                "renderer": self.limits.renderer,
            },
            name="imprint-document-reader",
            daemon=True,
        )
        _Launcher.start(process)
        child.close()
        self._process, self._connection = process, parent
        try:
            ready = self._answer(_FileClock.fixed(_START_SECONDS), cancel)
        except PdfReaderUnavailableError:
            raise
        except DocumentError as error:
            raise PdfReaderUnavailableError("the document reader could not be started") from error
        if ready != {"ready": True}:
            self._kill()
            raise PdfReaderUnavailableError("the document reader could not be started")
        return parent

    def _answer(self, clock: _FileClock, cancel: Stop | None) -> dict[str, Any] | None:
        """The worker's next answer; None when ``clock`` runs out first. A "working" message (an
        OCR page starting) gives the file that page's allowance from now, as far as ``clock``
        allows. Raises :class:`DocumentError` when the worker dies or answers past the size cap,
        and :class:`Cancelled` on Stop."""
        from multiprocessing.connection import wait  # noqa: PLC0415 - see _ready

        connection, process = self._connection, self._process
        assert connection is not None and process is not None
        while True:
            if is_cancelled(cancel):
                self._kill()
                raise Cancelled("Indexing was stopped.")
            ready = wait([connection, process.sentinel], timeout=_POLL_SECONDS)
            if connection in ready:
                try:
                    reply = _parsed(connection.recv_bytes(self.limits.answer_bytes))
                except EOFError:  # ended
                    break
                except OSError as error:
                    if error.args != ("bad message length",):
                        break  # ended in the middle of an answer
                    self._kill()  # an answer past the cap, refused unread
                    raise DocumentError(
                        "the document reader gave an answer far larger than the text one "
                        "document may give, so it was refused"
                    ) from error
                except ValueError as error:
                    self._kill()
                    raise DocumentError(
                        "the document reader gave an answer that makes no sense"
                    ) from error
                working = reply.get("working")
                if isinstance(working, int | float) and not isinstance(working, bool):
                    clock.extend(min(max(float(working), 0.0), _MAX_EXTENSION_SECONDS))
                    continue
                return reply
            if ready:  # the worker ended without answering
                break
            if clock.out():
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
                _kill_group(process)
            process.join()
            process.close()
        self._remove_scratch()


class _Launcher:
    """The one thread that starts every worker, alive as long as this process.

    Linux sends ``PR_SET_PDEATHSIG``'s signal when the *thread* that started a child ends, not the
    process: a worker started by a short-lived thread (a tool call's) would be killed under the
    next caller. This thread never ends before the process does.
    """

    _lock = threading.Lock()
    _requests: queue.SimpleQueue[tuple[BaseProcess, Future[None]]] | None = None

    @classmethod
    def start(cls, process: BaseProcess) -> None:
        """``process.start()`` on the launcher's thread; raises what it raises."""
        with cls._lock:
            if cls._requests is None:
                cls._requests = queue.SimpleQueue()
                threading.Thread(
                    target=cls._serve,
                    args=(cls._requests,),
                    name="imprint-reader-launcher",
                    daemon=True,
                ).start()
            requests = cls._requests
        started: Future[None] = Future()
        requests.put((process, started))
        started.result()

    @staticmethod
    def _serve(requests: queue.SimpleQueue[tuple[BaseProcess, Future[None]]]) -> None:
        while True:
            process, started = requests.get()
            try:
                process.start()
            except BaseException as error:  # handed to the caller, who raises it
                started.set_exception(error)
            else:
                started.set_result(None)


class _FileClock:
    """The time one file is given: its own, by its size, and OCR's page by page on top, never
    more than the file's OCR allowance in all; :attr:`allowed` is the time enforced."""

    def __init__(self, limits: ExtractionLimits, size: int) -> None:
        self.started = time.monotonic()
        self.own = limits.seconds_for(size)
        self.deadline = self.started + self.own
        self._ceiling = self.deadline + limits.ocr_file_seconds + _OCR_GRACE_SECONDS
        self.extended = False

    @classmethod
    def fixed(cls, seconds: float) -> _FileClock:
        clock = cls(ExtractionLimits(base_seconds=seconds, seconds_per_mb=0.0), 0)
        clock._ceiling = clock.deadline
        return clock

    def extend(self, seconds: float) -> None:
        """A page starts that may take ``seconds``."""
        later = min(time.monotonic() + seconds, self._ceiling)
        if later > self.deadline:
            self.deadline, self.extended = later, True

    def out(self) -> bool:
        return time.monotonic() > self.deadline

    @property
    def allowed(self) -> float:
        return self.deadline - self.started

    @property
    def how(self) -> str:
        """How :attr:`allowed` was made up, when OCR added to the file's own time."""
        if not self.extended:
            return ""
        return f" ({self.own:.0f} s for a file of its size, the rest for OCR of its pages)"


#: The largest page image taken from the worker: a page of the most pixels, uncompressed.
MAX_PNG_BYTES = 4 * MAX_PIXELS + 2**20
#: The most boxes one marked sentence may have (one a line of text).
MAX_BOXES = 2_000


def _page(reply: dict[str, Any], image: bytes) -> RenderedPage:
    """A drawn page from a worker's answer, checked (raises ``ValueError`` and the like)."""
    width, height = int(reply["width"]), int(reply["height"])
    boxes = reply["boxes"]
    if not (width > 0 and height > 0 and width * height <= MAX_PIXELS and len(boxes) <= MAX_BOXES):
        raise ValueError("a page out of bounds")
    return RenderedPage(
        int(reply["page"]),
        int(reply["page_count"]),
        float(reply["scale"]),
        width,
        height,
        image,
        tuple(Box(*(float(side) for side in box[:4])) for box in boxes),
        int(reply["found"]),
    )


def _kill_group(process: BaseProcess) -> None:
    """Kill the worker and, on POSIX, its process group: the tesseract it may be running."""
    if sys.platform != "win32" and process.pid is not None:
        with contextlib.suppress(OSError):  # not yet a group leader, or already gone
            os.killpg(process.pid, signal.SIGKILL)
    process.kill()


def _ascending(numbers: list[int] | tuple[int, ...]) -> bool:
    return all(earlier <= later for earlier, later in itertools.pairwise(numbers))


def _parsed(message: bytes) -> dict[str, Any]:
    reply = json.loads(message)
    if not isinstance(reply, dict):
        raise ValueError("not a JSON object")  # noqa: TRY004 - reported as a nonsense answer
    return reply


# --- in the worker process ------------------------------------------------------------------------


def serve(
    connection: Connection,
    memory_bytes: int,
    reader: Callable[[str, bytes, int], Extracted],
    settings: ocr.OcrSettings | None = None,
    *,
    scratch: str | None = None,
    max_chars: int = MAX_CHARS,
    renderer: Callable[[bytes, PageRequest], RenderedPage] = render_page,
) -> None:
    """The worker's main loop: its life tied to its parent's, its files private, limits first,
    then one file after another until the input ends."""
    _die_with_parent()
    _keep_private(scratch)
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
        if isinstance(header.get("page"), dict):
            ocr.begin_file()  # a scan's words are read under OCR's bounds for one file
            reply, image = _draw(renderer, data, header["page"])
            del data
            connection.send_bytes(json.dumps(reply).encode("utf-8"))
            if image:
                connection.send_bytes(image)
            continue
        ocr.begin_file()
        reply = _read(reader, str(header.get("name", "")), data, max_chars)
        del data
        _empty(scratch)
        # A lone surrogate (a broken PDF's text) cannot be UTF-8: it becomes a replacement mark.
        connection.send_bytes(json.dumps(reply, ensure_ascii=False).encode("utf-8", "replace"))


def _read(
    reader: Callable[[str, bytes, int], Extracted], name: str, data: bytes, max_chars: int
) -> dict[str, Any]:
    try:
        document = reader(name, data, max_chars)
    except MemoryError:
        return {"ok": False, "reason": "reading it needed more memory than allowed"}
    except DocumentError as error:
        return {"ok": False, "reason": str(error)}
    except RecursionError as error:
        return {
            "ok": False,
            "reason": "its contents are nested too deeply to read (damaged, or made to be so)",
            "detail": repr(error)[:500],
        }
    except Exception as error:  # any parser failure is a reason, never the worker's end
        kind = KINDS.get(format_for(name), "a document")
        return {
            "ok": False,
            "reason": (
                f"it could not be read as {kind}: the file is damaged, or is not what its name says"
            ),
            "detail": f"{type(error).__name__}: {error}"[:500],
        }
    return {
        "ok": True,
        "title": document.title,
        "text": "\n".join(document.lines),
        "line_count": len(document.lines),
        "page_starts": list(document.page_starts),
        "encoding": document.encoding,
        "places": [[place.start, place.name, list(place.rows)] for place in document.places],
        "dates": [[date.date, date.how.value] for date in document.dates],
        "gaps": document.gaps,
    }


def _draw(
    renderer: Callable[[bytes, PageRequest], RenderedPage], data: bytes, asked: dict[str, Any]
) -> tuple[dict[str, Any], bytes]:
    """A page drawn for the viewer: the answer, and the PNG sent after it (empty on failure)."""
    try:
        request = PageRequest(
            int(asked["page"]),
            float(asked["scale"]),
            tuple(str(sentence) for sentence in asked.get("sentences", ())),
            int(asked.get("fit_width", 0)),
        )
        page = renderer(data, request)
    except MemoryError:
        return {"ok": False, "reason": "drawing its page needed more memory than allowed"}, b""
    except DocumentError as error:
        return {"ok": False, "reason": str(error)}, b""
    except Exception as error:  # a parser failure is a reason, never the worker's end
        log.debug("page not drawn: %r", error)
        return {"ok": False, "reason": "its page could not be drawn (the file is damaged?)"}, b""
    reply = {
        "ok": True,
        "page": page.page,
        "page_count": page.page_count,
        "scale": page.scale,
        "width": page.width,
        "height": page.height,
        "boxes": [[box.left, box.top, box.right, box.bottom] for box in page.boxes],
        "found": page.found,
        "png_bytes": len(page.png),
    }
    return reply, page.png


#: ``prctl`` asks the kernel for a signal when the parent ends (``linux/prctl.h``).
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """End this worker when the process that started it ends, whichever way it ends.

    On Linux the kernel sends SIGKILL (``PR_SET_PDEATHSIG``), and a parent already gone by then
    is caught by its pid. Everywhere, a thread waits on the parent's sentinel (closed when the
    parent ends) and then ends this process and, on POSIX, its group.
    """
    import multiprocessing  # noqa: PLC0415 - in the worker only

    parent = multiprocessing.parent_process()
    if sys.platform == "linux":
        import ctypes  # noqa: PLC0415

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if parent is not None and os.getppid() != parent.pid:
            os._exit(1)  # the parent ended before the kernel was asked to tell
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            os.setpgrp()  # a group of its own: killing it kills its tesseract
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        if sys.platform != "win32":
            with contextlib.suppress(OSError):
                os.killpg(0, signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="imprint-reader-lifeline", daemon=True).start()


def _keep_private(scratch: str | None) -> None:
    """Every file this worker and its programs write is its own (mode 0600), in ``scratch``."""
    if sys.platform != "win32":
        os.umask(0o077)
    if scratch is None:
        return
    tempfile.tempdir = scratch
    for variable in ("TMPDIR", "TEMP", "TMP"):
        os.environ[variable] = scratch


def _empty(scratch: str | None) -> None:
    """Remove what a file left in ``scratch`` (OCR's page images, when tesseract gave up)."""
    if scratch is None:
        return
    with contextlib.suppress(OSError):
        for entry in os.scandir(scratch):
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    Path(entry.path).unlink()


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
