"""Text nobody vetted, shown as data: escaping helpers and the links the app itself makes.

The window shows text from the model, from documents and from web pages. Qt would act on some of
it: a label, a tooltip or a message box guesses "rich text" when the text merely looks like HTML,
and rich text loads the images it names (``<img src="file:///dev/zero">`` never finishes loading;
``file://host/share/x.png`` opens an SMB connection on Windows). So untrusted text reaches a widget
only through one of these doors:

- :func:`tooltip` — tooltips are always guessed, so the text is escaped inside a paragraph;
- :func:`rich` — the text inside a deliberately rich label, escaped;
- :func:`escape_markdown` — the text inside a Markdown line the app writes (a status line);
- :func:`make_inert` — a document parsed from Markdown, before it is ever laid out;
- a widget set to ``Qt.TextFormat.PlainText`` (labels, message boxes).

Links are the other half. Markdown lets the model write any link, and a link's scheme cannot say
who wrote it, so every link the app makes carries this window's session token (:class:`AppLinks`),
a random value the model never sees. Only those links act. A link without it is the model's: see
:func:`is_web_link` for what may happen to it.
"""

from __future__ import annotations

import hmac
import html
import re
import secrets
from dataclasses import dataclass
from typing import Literal, cast, get_args

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFragment,
    QTextImageFormat,
)

from imprint_desktop.core.shown_text import made_visible

APP_SCHEME = "imprint"
Action = Literal["cite", "copy", "record", "earlier", "full"]
_ACTIONS: frozenset[str] = frozenset(get_args(Action))
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
_NUMBER = re.compile(r"[0-9]{1,9}")


def tooltip(text: str) -> str:
    """``text`` as a tooltip shows it: escaped inside a paragraph, so nothing in it is markup."""
    return f"<p>{html.escape(text).replace(chr(10), '<br>')}</p>" if text else ""


def rich(text: str) -> str:
    """``text`` escaped for a place inside a rich-text label the app writes."""
    return html.escape(text)


def escape_markdown(text: str) -> str:
    """``text`` as one literal Markdown line: white space collapsed, every punctuation escaped
    (CommonMark lets any ASCII punctuation be escaped), so it can form no image, link, heading,
    list or HTML."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(text.split()))


def is_web_link(url: QUrl) -> bool:
    """An address the person may choose to open in the browser (after seeing it in full)."""
    return url.isValid() and url.scheme().lower() in ("http", "https") and bool(url.host())


@dataclass(frozen=True, slots=True)
class AppLink:
    """What a link the app made asks for: an action on message ``message`` (and evidence n)."""

    action: Action
    message: int
    number: int = 0


class AppLinks:
    """Makes and recognises this window's own links: ``imprint:<token>/<action>/<message>[/<n>]``.

    The token is made fresh for every transcript and never leaves the process (the model sees the
    stored answers, not the rendered transcript), so a link written into an answer cannot pass for
    one of these, however it is spelt.
    """

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_hex(16)

    def href(self, action: Action, message: int, number: int | None = None) -> str:
        tail = f"/{number}" if number is not None else ""
        return f"{APP_SCHEME}:{self.token}/{action}/{message}{tail}"

    def parse(self, url: QUrl) -> AppLink | None:
        """The action of one of our links, or None for any other link."""
        if url.scheme() != APP_SCHEME:
            return None
        parts = url.path().split("/")
        if len(parts) not in (3, 4) or not hmac.compare_digest(parts[0], self.token):
            return None
        action, numbers = parts[1], parts[2:]
        if action not in _ACTIONS or not all(_NUMBER.fullmatch(part) for part in numbers):
            return None
        message = int(numbers[0])
        number = int(numbers[1]) if len(numbers) == 2 else 0
        return AppLink(cast(Action, action), message, number)


def make_inert(document: QTextDocument, links: AppLinks) -> None:
    """Leave nothing in ``document`` that could load or run: call before it is ever laid out.

    An image becomes its alt text — a link to its address when that is a web address, which then
    opens only as the person decides (:func:`~imprint_desktop.ui.inert.is_web_link`); a tooltip
    (Markdown makes one of a link's title) is dropped. A web link that is not the app's shows its
    address as its tooltip, escaped, so the person can see where it points; any other link
    (``javascript:``, ``data:``, ``file:``, ``mailto:``, a relative one) stops being a link at all:
    its text is shown plain, followed by its target (:func:`link_target_text`), so nothing looks
    clickable that the app would not open.

    One pass over the fragments, each judged by its format alone: the app's own links are told by
    their prefix before any URL is parsed, so a message full of links costs little more than
    reading it.
    """
    edits = _Edits(f"{APP_SCHEME}:{links.token}/", links)
    block = document.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            edits.judge(fragments.fragment())
            fragments += 1
        edits.end_link()
        block = block.next()
    edits.apply(document)


Change = tuple[int, int, QTextCharFormat, str | None]  # position, length, format, new text


class _Edits:
    """What :func:`make_inert` changes in a document, gathered fragment by fragment."""

    def __init__(self, own: str, links: AppLinks) -> None:
        self.own = own  # how the app's own links begin
        self.links = links
        self.changes: list[Change] = []
        self.as_text: _LinkAsText | None = None  # a link being shown as text, until it ends

    def judge(self, fragment: QTextFragment) -> None:
        char_format = fragment.charFormat()
        position, length = fragment.position(), fragment.length()
        anchor = char_format.isAnchor() and not char_format.isImageFormat()
        href = char_format.anchorHref() if anchor else ""
        if anchor and not _acts(href, self.own, self.links):
            self._show_as_text(fragment, char_format, href)
            return
        self.end_link()
        if char_format.isImageFormat():
            self.changes.append((position, length, *_image_text(char_format.toImageFormat())))
        elif href and not href.startswith(self.own):
            char_format.setToolTip(tooltip(href))  # a web address: where it points
            self.changes.append((position, length, char_format, None))
        elif char_format.hasProperty(QTextFormat.Property.TextToolTip):
            char_format.clearProperty(QTextFormat.Property.TextToolTip)
            self.changes.append((position, length, char_format, None))

    def _show_as_text(
        self, fragment: QTextFragment, char_format: QTextCharFormat, href: str
    ) -> None:
        position, length = fragment.position(), fragment.length()
        plain = _without_link(char_format)
        going_on = self.as_text
        if going_on is not None and (going_on.end, going_on.href) == (position, href):
            going_on.text += fragment.text()
            going_on.end = position + length
        else:
            self.end_link()  # another link right before this one: its target comes first
            self.as_text = _LinkAsText(href, fragment.text(), position + length, plain)
        self.changes.append((position, length, plain, None))

    def end_link(self) -> None:
        """The link being shown as text has ended: its target follows it."""
        ended, self.as_text = self.as_text, None
        if ended is not None:
            suffix = link_target_text(ended.text, ended.href)
            if suffix:
                self.changes.append((ended.end, 0, ended.plain, suffix))

    def apply(self, document: QTextDocument) -> None:
        if not self.changes:
            return
        cursor = QTextCursor(document)
        cursor.beginEditBlock()
        for position, length, char_format, replacement in reversed(self.changes):
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            if replacement is None:
                cursor.setCharFormat(char_format)
            else:
                cursor.insertText(replacement, char_format)
        cursor.endEditBlock()


#: The most of a link's target shown after its text when the link is shown as text.
TARGET_CHARS = 120


def _acts(href: str, own: str, links: AppLinks) -> bool:
    """Whether a link to ``href`` may do anything: it is the app's own, or a web address."""
    if href.startswith(own):
        return links.parse(QUrl(href)) is not None
    return is_web_link(QUrl(href))


def link_target_text(text: str, href: str) -> str:
    """What follows a link shown as text: `` (its target)``, every invisible or direction-changing
    character made visible, cut to :data:`TARGET_CHARS`; nothing when the text already is the
    target (an autolink, an e-mail address)."""
    if not href or text.strip() in (href, href.removeprefix("mailto:")):
        return ""
    shown = made_visible(href[: TARGET_CHARS * 2])
    if len(shown) > TARGET_CHARS:
        shown = shown[: TARGET_CHARS - 1] + "…"
    return f" ({shown})"


@dataclass(slots=True)
class _LinkAsText:
    """A link shown as text while its fragments are read: its target follows the last."""

    href: str
    text: str
    end: int
    plain: QTextCharFormat


def _without_link(char_format: QTextCharFormat) -> QTextCharFormat:
    """``char_format`` as plain text: no link, no tooltip, none of a link's colour or underline."""
    plain = QTextCharFormat(char_format)
    plain.setAnchor(False)
    for kind in (
        QTextFormat.Property.AnchorHref,
        QTextFormat.Property.AnchorName,
        QTextFormat.Property.TextToolTip,
        QTextFormat.Property.ForegroundBrush,
    ):
        plain.clearProperty(kind)
    plain.setFontUnderline(False)
    return plain


def _image_text(image: QTextImageFormat) -> tuple[QTextCharFormat, str]:
    """What an image is shown as: ``[image: its alt text]``, a link when it is on the web."""
    alt = " ".join(str(image.property(QTextFormat.Property.ImageAltText) or "").split())
    shown = QTextCharFormat()
    shown.setFontItalic(True)
    address = QUrl(image.name())
    if is_web_link(address):
        shown.setAnchor(True)
        shown.setAnchorHref(address.toString())
        shown.setFontUnderline(True)
        shown.setToolTip(tooltip(address.toString()))
    return shown, f"[image: {alt or 'no description'}]"
