"""Untrusted text made safe to show where the app cannot choose how it is drawn.

Two places take text literally and act on some of it:

* **A terminal** acts on control sequences: an answer, a question or a status line that carries
  ``ESC ] 52`` writes the clipboard, ``ESC ] 0`` retitles the window, ``ESC [ 2 J`` clears the
  screen, and a lone carriage return overwrites what was printed. :func:`terminal_safe` takes every
  escape sequence and control character out (line breaks and tabs stay), in one linear pass. What
  names a thing on one line (a file's path, a document's title, a reason given for a file) is
  shown whole instead: :func:`terminal_line` writes every character that is not drawn as itself
  as its JSON escape (``\\u001b``, ``\\n``), so a name holding ``ESC [ 2 J`` or a line break is
  shown and cannot clear the screen or forge a line of its own; :func:`terminal_json` is JSON that
  keeps every value exactly and escapes what JSON itself lets through (C1 controls, lone
  surrogates).
* **An address shown for a decision** (may this page be fetched?) is read by its shape: a
  right-to-left override (U+202E) makes ``https://evil.example/?moc.elpmaxe//:sptth`` read like
  another site, a zero-width or look-alike character hides in a host. :func:`shown_address` writes
  every invisible, control or direction-changing character as the percent-escape that is actually
  sent, and a host whose name mixes scripts (a Cyrillic ``а`` among Latin letters) in the ASCII
  ``xn--`` form the computer looks up.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from imprint_desktop.core.urls import host_span

#: Escape sequences (7-bit and 8-bit introducers): a string sequence (OSC, DCS, SOS, PM, APC) up
#: to its terminator, the next ESC or the end of the line; a CSI with its parameters; an ESC and
#: one byte; then any other C0 control but tab and line feed, DEL, and the C1 controls. Every
#: branch reads forward without backtracking into another: the pass is linear in the length.
_TERMINAL_CONTROL = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
#: What JSON writes as itself but a terminal may act on or a UTF-8 stream cannot carry: DEL, C1
#: controls, the line and paragraph separators, the characters that change the direction text is
#: drawn in, and lone surrogates (a name's undecodable bytes).
_UNDRAWN = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_NOT_IN_JSON = re.compile(f"[{_UNDRAWN}]")
#: What cannot stand in one line of a terminal as itself: the C0 controls (tab and line feed
#: too) as well.
_NOT_IN_A_LINE = re.compile(f"[\x00-\x1f{_UNDRAWN}]")
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: Characters that are drawn as nothing, as white space of another kind, or that change the
#: direction text is drawn in: controls, format characters (bidi controls, zero-width joiners),
#: line and paragraph separators, spaces other than U+0020, and code points with no glyph.
_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
#: Scripts that are written together in one name (Japanese, Korean, Chinese with Latin).
_SCRIPTS_WRITTEN_TOGETHER = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
)
#: Left-to-right override … pop: what is between is drawn in the order it is written, whatever
#: its letters' direction (put around a shown address by a widget that applies the bidi rules).
LEFT_TO_RIGHT = ("\u202d", "\u202c")


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences or control characters; line breaks and tabs stay (a
    CR LF is a line break, a lone CR goes: it would overwrite the line)."""
    return _TERMINAL_CONTROL.sub("", text.replace("\r\n", "\n"))


def _json_escape(match: re.Match[str]) -> str:
    character = match.group()
    return _SHORT_ESCAPES.get(character) or f"\\u{ord(character):04x}"


def terminal_line(text: str) -> str:
    """``text`` for one line of a terminal, whole: every control, separator, direction-changing
    character and lone surrogate in it written as its JSON escape (``\\n``, ``\\u001b``)."""
    return _NOT_IN_A_LINE.sub(_json_escape, text)


def terminal_json(value: object, indent: int | None = 2) -> str:
    """``value`` as JSON (indented by ``indent``; None for one line) a terminal can show: every
    string exactly as it is once parsed, with what JSON writes as itself but a terminal may act on
    (C1 controls such as the 8-bit CSI, DEL, separators, direction changes) or a UTF-8 stream
    cannot carry (lone surrogates) escaped. JSON escapes the C0 controls itself, and outside its
    strings it is ASCII, so these escapes land only inside them."""
    return _NOT_IN_JSON.sub(_json_escape, json.dumps(value, indent=indent, ensure_ascii=False))


def _escaped(character: str) -> str:
    return "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogatepass"))


def made_visible(text: str) -> str:
    """``text`` with every character in :data:`_UNSEEN_CATEGORIES` (but the plain space and the
    tab, which show as the gap they are) written as its percent-escaped UTF-8 bytes, as an address
    carries it."""
    return "".join(
        _escaped(character)
        if character not in " \t" and unicodedata.category(character) in _UNSEEN_CATEGORIES
        else character
        for character in text
    )


def _script(character: str) -> str | None:
    """The script of a letter as its Unicode name begins (LATIN, CYRILLIC, CJK, FULLWIDTH…), None
    for anything else (digits, hyphens, dots: shared by all)."""
    if not unicodedata.category(character).startswith("L"):
        return None
    name = unicodedata.name(character, "")
    return name.split(" ", 1)[0].split("-", 1)[0] or None


def mixes_scripts(label: str) -> bool:
    """Does one label of a host name mix letters of scripts not written together?"""
    scripts = {script for script in map(_script, label) if script is not None}
    if len(scripts) < 2:
        return False
    return not any(scripts <= together for together in _SCRIPTS_WRITTEN_TOGETHER)


def ascii_host(host: str) -> str:
    """``host`` in the ASCII (IDNA, ``xn--``) form it is looked up by; itself when it has none."""
    try:
        import httpx  # noqa: PLC0415 - loaded with the first address shown

        return httpx.URL(f"http://{host}/").raw_host.decode("ascii")
    except (ValueError, UnicodeError):  # httpx.InvalidURL is a ValueError
        return host


@dataclass(frozen=True, slots=True)
class ShownAddress:
    """An address as it is shown for a decision, and where its host is in the shown text."""

    text: str
    host_start: int
    host_end: int  # host_start == host_end: no host was read

    @property
    def host(self) -> str:
        return self.text[self.host_start : self.host_end]


def shown_address(url: str) -> ShownAddress:
    """``url`` for a person to judge (see the module docstring): nothing in it invisible or
    direction-changing, its host in ASCII form when it mixes scripts."""
    span = host_span(url)
    if span is None:
        text = made_visible(url)
        return ShownAddress(text, 0, 0)
    start, end = span
    host = url[start:end]
    if any(mixes_scripts(label) for label in host.split(".")):
        host = ascii_host(host)
    before, shown_host, after = (
        made_visible(url[:start]),
        made_visible(host),
        made_visible(url[end:]),
    )
    return ShownAddress(before + shown_host + after, len(before), len(before) + len(shown_host))
