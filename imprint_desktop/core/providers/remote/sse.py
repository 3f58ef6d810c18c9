"""Server-sent events: the framing of a streamed answer, bytes in, complete events out.

Network reads cut the stream anywhere: inside a UTF-8 character, between the ``\\r`` and ``\\n``
of a line break, in the middle of a field. :class:`SSEDecoder` takes the bytes as they come and
hands back only complete events, so the provider never parses half a JSON chunk. What the events
carry is :mod:`.chunks`' business; this module knows nothing of chat completions.

It follows the event-stream rules servers actually rely on: lines end in ``\\r\\n``, ``\\n`` or
``\\r``; a blank line ends an event; ``data`` lines of one event are joined with ``\\n``; lines that
start with ``:`` are comments (keep-alives); one space after the colon is dropped; a byte order
mark at the very start is ignored; unknown fields are ignored. An event without ``data`` is not
dispatched (a keep-alive made of ``event:`` or ``id:`` lines alone carries nothing to read), nor
is one whose data is empty (a lone ``data:`` line).

The server is not trusted: invalid UTF-8 is replaced, and a line or an event larger than
:data:`EVENT_LIMIT` (one that never ends, say) is a :class:`~.wire.StreamProtocolError` rather
than memory spent.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from imprint_desktop.core.providers.remote.wire import StreamProtocolError, size_text

EVENT_LIMIT = 16 * 1024 * 1024
"""Characters of one line or one event's data. Real chunks are a few hundred bytes; even a whole
tool call sent in one delta is far below this. A server that sends more without a line break (or
without ending the event) is broken or hostile, and its stream is refused rather than buffered."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its ``data`` lines joined with newlines, and its type."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Feed bytes in, get complete events out. One decoder per response stream."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # the unfinished last line, in pieces: no quadratic joins
        self._pending_size = 0
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._last_id: str | None = None
        self._started = False
        self._skip_lf = (
            False  # the previous chunk ended in "\r": a "\n" first in this one is its pair
        )
        self.saw_field = False  # any field line at all: tells an event stream from a stray body

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed (often none, sometimes several)."""
        return self._take(self._text.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """The stream ended: a last line without its line break still counts, an unfinished
        event (no blank line after it) does not — the spec drops it, and so do we."""
        events = self._take(self._text.decode(b"", final=True))
        if self._pending:
            self._line("".join(self._pending))
            self._pending, self._pending_size = [], 0
        self._data, self._data_size = [], 0
        return events

    def _take(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        if "\n" not in text and "\r" not in text:  # more of the same line
            if text:
                self._pending.append(text)
                self._pending_size += len(text)
                self._check_line()
            return []
        buffer = "".join(self._pending) + text
        events: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        while start < length:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, after = lf, lf + 1
            elif cr + 1 < length:
                end, after = cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            else:  # a "\r" at the very end: its "\n" may be in the next chunk
                end, after = cr, cr + 1
                self._skip_lf = True
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        rest = buffer[start:]
        self._pending, self._pending_size = ([rest] if rest else []), len(rest)
        self._check_line()
        return events

    def _check_line(self) -> None:
        if self._pending_size > EVENT_LIMIT:
            raise StreamProtocolError(
                f"a line of the stream is larger than {size_text(EVENT_LIMIT)}"
            )

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon:
            value = value.removeprefix(" ")
        self.saw_field = self.saw_field or name in ("data", "event", "id", "retry")
        if name == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > EVENT_LIMIT:
                raise StreamProtocolError(
                    f"an event of the stream is larger than {size_text(EVENT_LIMIT)}"
                )
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data, self._data_size = self._data, [], 0
        event, self._event = self._event, ""
        text = "\n".join(data)
        if not text:  # a lone "data:" line: the spec's empty data buffer, nothing to dispatch
            return None
        return SSEEvent(text, event or "message", self._last_id)
