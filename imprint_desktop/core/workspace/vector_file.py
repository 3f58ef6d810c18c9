"""The passages' vectors as one file beside the index database: a new process reads them at once.

Reading every vector out of SQLite row by row takes a while (0.05 s at 6,000 passages, seconds at
160,000), and a search by meaning needs all of them, so a process that searches once — ``imprint
workspace search``, the window's first search — would pay it every time (issue 28). So
:class:`~.vectors.VectorSearch`, having read them from the database, writes them here as they are
in memory (passage ids, their files' ids, the ``float16`` rows), and the next process reads this
file instead.

It is a cache, and trusted only as far as it can be checked: its header names the state of the
table it was written from (the embedder and ``vectors_generation``, which changes to a new random
value with every change to the vectors: see :mod:`.vectors`), and a checksum covers the rest. A file
from another state, cut short, or damaged is not used; the vectors are read from the database and
the file written again. It is written to a temporary file first and renamed into place, so a reader
never sees half of one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

_MAGIC = b"IMPRVEC1"
_HEAD = len(_MAGIC) + 4  # the magic, then the header's length (4 bytes, little-endian)

#: Passage ids, their files' ids (both ``int64``), and one ``float16`` row per passage.
Kept = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float16]]


def path_for(db_path: Path) -> Path:
    """Where the vectors of the index database at ``db_path`` are kept."""
    return db_path.with_name(f"{db_path.name}.vectors")


def read(path: Path, state: tuple[str, str]) -> Kept | None:
    """The vectors kept at ``path`` if they were written from ``state`` (embedder, generation)
    and are whole; None otherwise."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(_MAGIC):
            return None
        size = int.from_bytes(data[len(_MAGIC) : _HEAD], "little")
        header = json.loads(data[_HEAD : _HEAD + size])
        rows, dimensions = int(header["rows"]), int(header["dimensions"])
        start = _aligned(_HEAD + size)
        body = memoryview(data)[start:]
        if (
            header["state"] != list(state)
            or rows < 0
            or dimensions < 0
            or len(body) != rows * (16 + 2 * dimensions)
            or zlib.crc32(body) != header["crc32"]
        ):
            return None
    except (ValueError, KeyError, TypeError):  # JSON or numbers that are not what was written
        return None
    # Read-only views of what was read (the machine's byte order where it is little-endian).
    ids = np.frombuffer(body, dtype=np.dtype("<i8"), count=rows)
    files = np.frombuffer(body, dtype=np.dtype("<i8"), count=rows, offset=8 * rows)
    matrix = np.frombuffer(body, dtype=np.dtype("<f2"), offset=16 * rows)
    return (
        ids.astype(np.int64, copy=False),
        files.astype(np.int64, copy=False),
        (matrix.astype(np.float16, copy=False).reshape(rows, dimensions)),
    )


def write(path: Path, state: tuple[str, str], kept: Kept) -> None:
    """Keep ``kept`` at ``path`` as written from ``state``; a file that cannot be written is
    left out (the vectors are read from the database next time, as before)."""
    ids, files, matrix = kept
    rows = len(ids)
    dimensions = int(matrix.shape[1]) if matrix.ndim == 2 and rows else 0
    body = b"".join(
        (
            ids.astype("<i8").tobytes(),
            files.astype("<i8").tobytes(),
            matrix.astype("<f2").tobytes(),
        )
    )
    header = json.dumps(
        {
            "state": list(state),
            "rows": rows,
            "dimensions": dimensions,
            "crc32": zlib.crc32(body),
        }
    ).encode("utf-8")
    start = _aligned(_HEAD + len(header))
    head = _MAGIC + len(header).to_bytes(4, "little") + header
    head += b"\0" * (start - len(head))
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
    except OSError as error:
        log.info("the vectors are not kept beside the index: %s", error)
        return
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(head)
            out.write(body)
        Path(temporary).replace(path)
    except OSError as error:
        log.info("the vectors are not kept beside the index: %s", error)
        with contextlib.suppress(OSError):
            Path(temporary).unlink()


def _aligned(offset: int) -> int:
    return (offset + 7) // 8 * 8
