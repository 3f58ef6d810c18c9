"""Untrusted text shown on a terminal or as an address to decide on: nothing in it acts or fools."""

from __future__ import annotations

import json
import time

import pytest

from imprint_desktop.core.consent import redirect_leaves_site
from imprint_desktop.core.shown_text import (
    mixes_scripts,
    shown_address,
    terminal_json,
    terminal_line,
    terminal_safe,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b]52;c;cm0gLXJmIH4K\x07b", "ab"),  # clipboard write, ended by BEL
        ("a\x1b]0;owned\x1b\\b", "ab"),  # window title, ended by ST
        ("a\x1b]8;;http://x\x07link\x1b]8;;\x07b", "alinkb"),  # a terminal hyperlink
        ("a\x1b[2J\x1b[Hb", "ab"),  # clear the screen
        ("a\x1b[38;5;196mred\x1b[0mb", "aredb"),
        ("a\x9b2Jb", "ab"),  # the same with the 8-bit CSI
        ("a\x9d0;t\x9cb", "ab"),  # an 8-bit OSC and ST
        ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),  # a DCS (sixel)
        ("a\x1b(0b", "ab"),  # a character set switch
        ("line\r\nnext", "line\nnext"),
        ("shown\rhidden", "shownhidden"),  # a lone CR would overwrite the line
        ("tab\tand\x00nul\x08bs\x7fdel\x07bel", "tab\tandnulbsdelbel"),
        ("an unterminated \x1b]52;c;AAAA\nnext line", "an unterminated \nnext line"),
        (
            "Ünïcödé, 中文, emoji 🙂 and RTL עברית stay",
            "Ünïcödé, 中文, emoji 🙂 and RTL עברית stay",
        ),
    ],
)
def test_terminal_text_keeps_the_words_and_loses_every_control(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown


def seconds(work: str) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        terminal_safe(work)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize(
    "unit",
    ["\x1b]", "\x1b[1;", "\x1b", "\x9b1", "\x1b]52;" + "A" * 10 + "\n", "a" * 50 + "\x1b"],
)
def test_terminal_text_takes_time_linear_in_its_length(unit: str) -> None:
    """Eight times the hostile input takes about eight times the work, far from the 64 times of
    a pass that backtracks (three doublings, so noise on a busy machine cannot pass for either)."""
    small = seconds(unit * 20_000)
    large = seconds(unit * 160_000)
    assert large < 20 * small + 0.02, (small, large)


@pytest.mark.parametrize(
    ("url", "text", "host"),
    [
        ("https://example.org/a?b=c", "https://example.org/a?b=c", "example.org"),
        (
            "https://example.org/?\u202egpj.elgoog.www//:sptth",
            "https://example.org/?%E2%80%AEgpj.elgoog.www//:sptth",
            "example.org",
        ),
        (
            "https://example.org/\u200bx\u2066y\u2069",
            "https://example.org/%E2%80%8Bx%E2%81%A6y%E2%81%A9",
            "example.org",
        ),
        ("https://p\u0430ypal.com/", "https://xn--pypal-4ve.com/", "xn--pypal-4ve.com"),
        ("https://例え.jp/x", "https://例え.jp/x", "例え.jp"),
        ("https://bücher.de/", "https://bücher.de/", "bücher.de"),
        ("not a url \u202e", "not a url %E2%80%AE", ""),
    ],
)
def test_an_address_is_shown_without_invisible_or_reordering_characters(
    url: str, text: str, host: str
) -> None:
    shown = shown_address(url)
    assert (shown.text, shown.host) == (text, host)


def test_mixed_scripts_are_told_from_scripts_written_together() -> None:
    assert mixes_scripts("p\u0430ypal")  # a Cyrillic a among Latin letters
    assert mixes_scripts("ｅxample")  # a full-width e
    assert not mixes_scripts("例えばカタカナ")  # Japanese mixes three scripts
    assert not mixes_scripts("bücher-2")
    assert not mixes_scripts("москва")


@pytest.mark.parametrize(
    ("from_url", "to_url", "leaves"),
    [
        ("http://a.example/x", "http://a.example/y", False),
        ("http://a.example/x", "https://a.example/y", False),  # the same host, made secure
        ("http://a.example:8080/x", "https://a.example/y", True),
        ("https://a.example/x", "http://a.example/y", True),  # made insecure: not the site
        ("https://a.example/x", "https://b.example/y", True),
        ("https://a.example/x", "https://A.EXAMPLE:443/y", False),
        ("https://a.example/x", "https://a.example:8443/y", True),
    ],
)
def test_which_redirects_leave_the_site(from_url: str, to_url: str, leaves: bool) -> None:
    assert redirect_leaves_site(from_url, to_url) is leaves


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("clear\x1b[2Jscreen.md", "clear\\u001b[2Jscreen.md"),
        ("t\x1b]0;owned\x07.md", "t\\u001b]0;owned\\u0007.md"),
        ("forge\n[2] fake.md", "forge\\n[2] fake.md"),  # cannot start a line of its own
        ("c1\x9b2J and \x85 NEL", "c1\\u009b2J and \\u0085 NEL"),
        ("tab\tcr\rdel\x7f", "tab\\tcr\\rdel\\u007f"),
        ("sep\u2028par\u2029", "sep\\u2028par\\u2029"),
        ("cod\u202egpj.exe", "cod\\u202egpj.exe"),  # the right-to-left override
        ("caf\udce9.md", "caf\\udce9.md"),  # an undecodable byte: no UTF-8 stream holds it
        ("café 中文 🙂 עברית", "café 中文 🙂 עברית"),
    ],
)
def test_a_name_on_one_line_is_shown_whole_with_its_controls_escaped(name: str, shown: str) -> None:
    assert terminal_line(name) == shown


def test_json_for_a_terminal_keeps_every_value_and_escapes_what_json_lets_through() -> None:
    value = {"path\x9b": ["a\x1b[2J\nb\t\x9b2J\x7f\u2028\udce9\u202e\\ é 中文", 1, None]}
    text = terminal_json(value)
    assert json.loads(text) == value
    assert "é 中文" in text  # readable: only what a terminal may act on is escaped
    assert all(
        character in "\n" or not (ord(character) < 0x20 or 0x7F <= ord(character) <= 0x9F)
        for character in text
    )
    text.encode("utf-8")  # no lone surrogate left: would raise
    assert "\\u009b2J" in text and "\\udce9" in text and "\\u2028" in text
