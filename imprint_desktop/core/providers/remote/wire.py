"""What every reader of a server's answer shares: one error, and JSON read without surprises.

The server is not trusted. Whatever it sends — JSON nested too deeply for the parser, invalid
UTF-8 or lone UTF-16 surrogates, error objects of any shape — either is read leniently or becomes
a :class:`StreamProtocolError`, never another exception. The event-stream framing (:mod:`.sse`),
the chunk assembly (:mod:`.chunks`), the body reads (:mod:`.bodies`) and the context-window
questions (:mod:`.stated_window`) all read server text through these functions, so they fail one
way and show the server's words the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any


class StreamProtocolError(ValueError):
    """A response that breaks the chat-completion streaming protocol."""


class StreamServerError(StreamProtocolError):
    """The server put an error object into the stream instead of (the rest of) an answer."""


def loads(text: str, what: str, *, shown: bytes | str | None = None) -> Any:
    """``text`` as JSON. Anything that is not, or that the parser cannot take (nesting deeper
    than its recursion limit), is a :class:`StreamProtocolError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise StreamProtocolError(f"{what} is nested too deeply to read") from None
    except ValueError:
        shown = text[:80] if shown is None else shown
        raise StreamProtocolError(f"{what} is not JSON: {shown!r}") from None


def dumps(value: Any, what: str) -> str:
    """A parsed value as JSON text again (arguments sent as an object, for instance)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError):
        raise StreamProtocolError(f"{what} are nested too deeply to read") from None


def try_json(raw: bytes) -> Any:
    """``raw`` as JSON, or None when it is not (or is nested too deeply to read)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def error_text(value: Any) -> str:
    """The human part of an OpenAI-style error object (``{"error": {"message": ...}}`` and
    its variants), or "" when there is none; at most 1000 characters."""
    if not isinstance(value, dict):
        return ""
    error = value.get("error", value)
    if isinstance(error, dict):
        return json_text(error.get("message") or error.get("detail") or "", 1000)
    return json_text(error or value.get("detail") or "", 1000)


def json_text(value: Any, limit: int) -> str:
    """What to show of a value the server sent: a string as it is, anything else as JSON."""
    return valid_text(value[:limit] if isinstance(value, str) else _as_json(value)[:limit])


def data_excerpt(value: Any, limit: int = 120) -> str:
    return repr(_as_json(value)[:limit])


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` as valid Unicode. JSON can carry half of a surrogate pair (a server that cut an
    emoji apart, as ``\\ud83d``): it becomes U+FFFD, like invalid UTF-8 bytes, instead of text
    that fails the moment anything encodes it."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def size_text(limit: int) -> str:
    """A size limit as a message names it: 16 MiB, 65,536 bytes."""
    mib = 1024 * 1024
    return f"{limit / mib:g} MiB" if limit >= mib else f"{limit:,} bytes"


def _as_json(value: Any) -> str:
    """``value`` as JSON text for a message; never an exception, however deep it is."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} nested too deeply to show>"
