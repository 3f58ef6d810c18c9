"""The passages' vectors as one file beside the index database: a new process reads them at once.

Reading every vector out of SQLite row by row takes a while (0.05 s at 6,000 passages, seconds at
160,000), and a search by meaning needs all of them, so a process that searches once — ``imprint
workspace search``, the window's first search — would pay it every time (issue 28). So
:class:`~.vectors.VectorSearch`, having read them from the database, writes them here as they are
in memory (passage ids, their files' ids, the ``float16`` rows, and each document's direction),
and the next process reads this file instead.

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
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

_MAGIC = b"IMPRVEC2"
_HEAD = len(_MAGIC) + 4  # the magic, then the header's length (4 bytes, little-endian)


class Kept(NamedTuple):
    """The vectors of an index as a search holds them."""

    #: Passage ids, by file.
    ids: npt.NDArray[np.int64]
    #: Each passage's file id: each file's passages are one run of rows.
    files: npt.NDArray[np.int64]
    #: One ``float16`` row per passage, as the table stores it.
    rows: npt.NDArray[np.float16]
    #: One unit ``float32`` row per file (per run of ``files``): the direction of its passages'.
    documents: npt.NDArray[np.float32]


def path_for(db_path: Path, kept_suffix: str = "vectors") -> Path:
    """Where the vectors of the index database at ``db_path`` are kept: ``kept_suffix`` names
    the set (:attr:`.vectors.VectorSet.kept_suffix`)."""
    return db_path.with_name(f"{db_path.name}.{kept_suffix}")


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
        rows, documents = int(header["rows"]), int(header["documents"])
        dimensions = int(header["dimensions"])
        body = memoryview(data)[_aligned(_HEAD + size) :]
        if (
            header["state"] != list(state)
            or min(rows, documents, dimensions) < 0
            or len(body) != rows * (16 + 2 * dimensions) + documents * 4 * dimensions
            or zlib.crc32(body) != header["crc32"]
        ):
            return None
    except (ValueError, KeyError, TypeError):  # JSON or numbers that are not what was written
        return None
    # The rows are a view of what was read (the caller converts them); the rest are copies, so
    # that what was read is freed once the rows are converted.
    at = 0

    def taken(dtype: str, count: int) -> npt.NDArray[np.generic]:
        nonlocal at
        array = np.frombuffer(body, dtype=np.dtype(dtype), count=count, offset=at)
        at += array.nbytes
        return array

    return Kept(
        taken("<i8", rows).astype(np.int64),
        taken("<i8", rows).astype(np.int64),
        taken("<f2", rows * dimensions).astype(np.float16, copy=False).reshape(rows, dimensions),
        taken("<f4", documents * dimensions).astype(np.float32).reshape(documents, dimensions),
    )


def write(path: Path, state: tuple[str, str], kept: Kept) -> None:
    """Keep ``kept`` at ``path`` as written from ``state``; a file that cannot be written is
    left out (the vectors are read from the database next time, as before)."""
    rows = len(kept.ids)
    dimensions = int(kept.rows.shape[1]) if kept.rows.ndim == 2 and rows else 0
    body = b"".join(
        (
            kept.ids.astype("<i8").tobytes(),
            kept.files.astype("<i8").tobytes(),
            kept.rows.astype("<f2").tobytes(),
            kept.documents.astype("<f4").tobytes(),
        )
    )
    header = json.dumps(
        {
            "state": list(state),
            "rows": rows,
            "documents": len(kept.documents) if dimensions else 0,
            "dimensions": dimensions,
            "crc32": zlib.crc32(body),
        }
    ).encode("utf-8")
    start = _aligned(_HEAD + len(header))
    head = _MAGIC + len(header).to_bytes(4, "little") + header
    head += b"\0" * (start - len(head))
    import tempfile  # noqa: PLC0415 - only to write: a search that reads the file needs none

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
