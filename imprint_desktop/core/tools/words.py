"""Tool calls in words: what each spec's wording (:mod:`.specs`) is made of.

A call is said twice: while it runs, on the status line ("Searching 'quarry'"), and afterwards, in
the research record ("searched 'quarry'"). Both come from the call's arguments, which the model
wrote: untrusted text that :func:`plain` puts on one line without control characters before the
record shows it. Standard library only: the window imports this at startup.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from imprint_desktop.core.urls import loose_parts

#: The longest a piece of untrusted text is shown in words, by default.
WORDS_CHARS = 90
#: The status line shows this much of what a call works on.
STATUS_CHARS = 60


@dataclass(frozen=True, slots=True)
class CallWords:
    """One tool call in words."""

    doing: str  # while it runs, for the status line: "Searching 'quarry'"
    done: str  # afterwards, for the research record: "searched 'quarry'"


def plain(text: str, limit: int = WORDS_CHARS) -> str:
    """Untrusted ``text`` on one line: control and direction-changing characters dropped, white
    space collapsed, cut to ``limit`` characters with "…"."""
    kept = "".join(
        " " if char.isspace() else char
        for char in text[: limit * 4]
        if char.isspace() or unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn")
    )
    flat = " ".join(kept.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def text_of(values: Mapping[str, object], key: str, limit: int = STATUS_CHARS) -> str:
    """The text argument ``key``, plain (see :func:`plain`), or "" when it is not a string."""
    value = values.get(key)
    return plain(value, limit) if isinstance(value, str) else ""


def subject(values: Mapping[str, object]) -> str:
    """What a running call works on, for the status line: its first text argument, cut short."""
    value = next((str(v) for v in values.values() if isinstance(v, str)), "")
    return value if len(value) <= STATUS_CHARS else value[: STATUS_CHARS - 1] + "…"


def line_range(start: object, end: object) -> str:
    """ " lines 10–40", " from line 10", or "" for no line numbers."""
    first = start if isinstance(start, int) and not isinstance(start, bool) else None
    last = end if isinstance(end, int) and not isinstance(end, bool) else None
    if first is None and last is None:
        return ""
    if last is None:
        return f" from line {first}"
    return f" lines {first or 1}–{last}"


def short_url(url: str) -> str:
    """A URL by its host: "example.org/…" (the rest may carry anything)."""
    parts = loose_parts(url)
    host = (parts.hostname or "") if parts is not None else ""
    if parts is None or not host:
        return plain(url, 50)
    rest = parts.path.strip("/")
    return plain(host, 50) + ("/…" if rest or parts.query else "")
