"""ZIP containers (Office, OpenDocument, EPUB) checked before any library opens them.

A ZIP bomb is a small file that expands to gigabytes. Every container is looked over through its
central directory (Python's :mod:`zipfile`, nothing inflated) and refused, with the reason, when
it would expand past :data:`MAX_EXPANDED_BYTES` in all, when a large member inflates more than
:data:`MAX_RATIO` times, or when it holds more members than any document needs. A member cannot
lie its way past the check: :mod:`zipfile`, which every reader here uses, never inflates a member
beyond the size its directory entry declares. The worker's memory limit stands behind both.
"""

from __future__ import annotations

import io
import logging
import zipfile

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.formats.text import one_line

log = logging.getLogger(__name__)

#: The most a container may expand to, all members together.
MAX_EXPANDED_BYTES = 512 * 1024 * 1024
#: Members above :data:`_RATIO_FLOOR` may inflate at most this many times their stored size.
MAX_RATIO = 200
_RATIO_FLOOR = 4 * 1024 * 1024
MAX_MEMBERS = 20_000


def checked_zip(data: bytes, kind: str, *, max_bytes: int = MAX_EXPANDED_BYTES) -> None:
    """Raise :class:`DocumentError` unless ``data`` is a ZIP container safe to open, expanding
    to at most ``max_bytes``."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as container:
            members = container.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
        log.info("ZIP container not opened: %s", error)
        raise DocumentError(
            f"it is not a readable {kind} file: the ZIP container such a file is made of is "
            "damaged, or missing"
        ) from error
    if len(members) > MAX_MEMBERS:
        raise DocumentError(
            f"refused as a likely ZIP bomb: it holds {len(members):,} parts "
            f"(at most {MAX_MEMBERS:,} are read)"
        )
    total = sum(member.file_size for member in members)
    if total > max_bytes:
        raise DocumentError(
            f"refused as a likely ZIP bomb: it would expand to {_size(total)} "
            f"(at most {_size(max_bytes)} are read)"
        )
    for member in members:
        if member.file_size > _RATIO_FLOOR:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > MAX_RATIO:
                raise DocumentError(
                    f"refused as a likely ZIP bomb: its part \u201c{one_line(member.filename[:80])}"
                    f"\u201d would expand {ratio:,.0f} times (at most {MAX_RATIO} times is read)"
                )


def _size(count: int) -> str:
    return f"{count / 2**20:,.0f} MB" if count >= 2**20 else f"{count:,} bytes"
