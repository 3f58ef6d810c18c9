"""The event-stream decoder, fed the way networks cut streams."""

from __future__ import annotations

import pytest

from imprint_desktop.core.providers.remote import sse
from imprint_desktop.core.providers.remote.sse import SSEDecoder, SSEEvent
from imprint_desktop.core.providers.remote.wire import StreamProtocolError


def decode(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def data(*chunks: bytes) -> list[str]:
    return [event.data for event in decode(*chunks)]


def test_data_lines_and_done() -> None:
    assert data(b'data: {"a": 1}\n\ndata: [DONE]\n\n') == ['{"a": 1}', "[DONE]"]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline: bytes) -> None:
    stream = b"data: one" + newline + newline + b"data: two" + newline + newline
    assert data(stream) == ["one", "two"]


def test_crlf_split_between_chunks_is_one_line_break() -> None:
    # "\r" at the end of one read and "\n" at the start of the next must not make a blank line
    # (which would dispatch an event early and split "x" from "y").
    assert data(b"data: x\r", b"\ndata: y\r\n\r\n") == ["x\ny"]


def test_multi_line_event_joined_with_newlines() -> None:
    assert data(b"data: first\ndata: second\ndata:third\n\n") == ["first\nsecond\nthird"]


def test_comments_and_keep_alives_are_ignored() -> None:
    stream = b": ping\n\n:keep-alive\ndata: real\n\nevent: ping\n\nid: 7\n\n"
    events = decode(stream)
    assert [event.data for event in events] == ["real"]


def test_event_type_and_id() -> None:
    (event,) = decode(b"event: delta\nid: 42\ndata: x\n\n")
    assert (event.event, event.id, event.data) == ("delta", "42", "x")


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert data(b"data:  two spaces\n\n") == [" two spaces"]


def test_unknown_fields_and_lines_without_colon_are_ignored() -> None:
    assert data(b"foo: bar\ndata\ndata: x\n\n") == ["\nx"]


def test_byte_at_a_time_and_split_utf8() -> None:
    stream = 'data: {"content": "Fyr — Leuchtturm ✓"}\n\n'.encode()
    assert data(*(stream[i : i + 1] for i in range(len(stream)))) == [
        '{"content": "Fyr — Leuchtturm ✓"}'
    ]


def test_byte_order_mark_at_the_start() -> None:
    assert data(b"\xef\xbb\xbfdata: x\n\n") == ["x"]


def test_unfinished_event_at_the_end_is_dropped() -> None:
    assert data(b"data: complete\n\ndata: cut off") == ["complete"]


def test_saw_field_tells_an_event_stream_from_a_stray_body() -> None:
    html = SSEDecoder()
    html.feed(b"<html><body>Welcome</body></html>\n")
    html.close()
    stream = SSEDecoder()
    stream.feed(b": only a comment\ndata: x\n")
    assert not html.saw_field
    assert stream.saw_field


def test_a_line_or_an_event_past_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "EVENT_LIMIT", 100)
    endless = SSEDecoder()
    with pytest.raises(StreamProtocolError, match="a line of the stream is larger than 100 bytes"):
        for _ in range(30):
            endless.feed(b"data: xxxx")
    many = SSEDecoder()
    with pytest.raises(StreamProtocolError, match="an event of the stream is larger than 100"):
        for _ in range(30):
            many.feed(b"data: xxxx\n")
    assert data(b"data: " + b"x" * 90 + b"\n\n") == ["x" * 90]
