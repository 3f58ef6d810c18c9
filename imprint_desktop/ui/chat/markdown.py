"""The transcript's messages, and each one written as Markdown.

A message is written as the app's own links (*Copy*, *Research record*, a citation ``[n]`` as a
link to its evidence) around text nobody vetted, left as it is for :mod:`.transcript_document` to
parse without raw HTML and make inert. Text nobody vetted is first
:func:`~.transcript_bounds.bounded` (what reaches the layout is cut to sizes it handles quickly,
with a *Show all* link to the whole message). Text in, text out, so a finished message and the
reply being written are headed, linked, bounded and cut into paragraphs the same way, and the rules
can be read and tested without a widget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from imprint_desktop.core.research.sources import with_sources
from imprint_desktop.ui.chat.transcript_bounds import bounded
from imprint_desktop.ui.inert import AppLinks, escape_markdown

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev

Role = Literal["you", "assistant", "asked", "answered", "notice"]

_CITATION = re.compile(r"(?<![\\\w\]])\[(\d{1,3})\](?![(\[])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_EMPTY_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]*$")
#: The most of a status line shown (it may quote what the model wrote).
NOTICE_CHARS = 300


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the transcript; assistant messages carry what their record needs."""

    role: Role
    text: str
    stored_id: int | None = None
    stop_reason: str | None = None
    evidence: tuple[ev.EvidenceItemView, ...] = field(default=(), compare=False)
    result: ev.ReplyResult | None = field(default=None, compare=False)
    interrupted: bool = False
    workspace: str | None = field(default=None, compare=False)  # the folder it researched
    sources: tuple[ev.SourceView, ...] = field(default=(), compare=False)
    grounding: ev.GroundingView | None = field(default=None, compare=False)

    @property
    def shown(self) -> str:
        """The message as the transcript shows, copies and opens it: an answer with what to check
        in it (its heading in bold) and its sources."""
        return with_sources(self.text, self.sources, self.grounding, strong="**")


def link_citations(text: str, message: int, links: AppLinks) -> str:
    """``[n]`` outside code becomes a link to evidence n of ``message``."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        pieces = line.split("`")
        for index in range(0, len(pieces), 2):  # even pieces are outside inline code
            pieces[index] = _CITATION.sub(
                lambda m: f"[\\[{m.group(1)}\\]]({links.href('cite', message, int(m.group(1)))})",
                pieces[index],
            )
        out.append("`".join(pieces))
    return "\n".join(out)


def assistant_header(
    index: int, links: AppLinks, *, record: bool, interrupted: bool = False
) -> str:
    label = " · *interrupted*" if interrupted else ""
    more = f" · [Research record]({links.href('record', index)})" if record else ""
    return f"**Imprint**{label} · [Copy]({links.href('copy', index)}){more}"


def settle_point(text: str) -> int:
    """Where the streamed text's finished paragraphs end: after the last blank line that is not
    inside a code fence (0 when there is none). What comes before never changes again."""
    cut = 0
    in_fence = False
    position = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        position += len(line)
        if not in_fence and not line.strip() and position < len(text):
            cut = position
    return cut


def shown_text(text: str, index: int, links: AppLinks) -> str:
    """Text nobody vetted, of message ``index``, as much as the transcript lays out (a *Show
    all* link where something is left out), without empty list items."""
    return bounded(without_empty_items(text), f"[Show all]({links.href('full', index)})").markdown


def without_empty_items(text: str) -> str:
    """``text`` without list items that hold nothing ("-" or "2." alone on a line, as a small
    model writes them), outside code. They say nothing, and Qt's Markdown reader keeps every
    paragraph after one in its list: an answer's check and its sources were drawn as the list's
    items."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _EMPTY_ITEM.match(line):
            continue
        out.append(line)
    return "\n".join(out)


def message_markdown(message: ChatMessage, index: int, links: AppLinks) -> str:
    """One message as Markdown: the app's own links around text that is rendered inert."""
    copy = f"[Copy]({links.href('copy', index)})"
    if message.role == "notice":  # a status line: may quote tool arguments, so literal
        return f"*{escape_markdown(message.text[:NOTICE_CHARS])}*\n"
    text = shown_text(message.shown, index, links)
    if message.role == "you":
        return f"**You** · {copy}\n\n{text}\n"
    if message.role == "asked":
        return f"**Imprint asks:** {text}\n"
    if message.role == "answered":
        return f"**You answered:** {text}\n"
    header = assistant_header(
        index, links, record=message.stored_id is not None, interrupted=message.interrupted
    )
    body = link_citations(text, index, links) if message.text else "*(no answer)*"
    return f"{header}\n\n{body}\n"
