"""HTML to readable text, for indexed pages and for ``fetch_url``.

Beautiful Soup builds the tree with lxml's HTML parser (libxml2): tolerant of the broken markup
real pages have, and linear in the size of the page whatever it holds. (Python's own
``html.parser`` is not: before its 2025 fixes, which a given Python may lack, a page of unclosed
``<x `` tags took time growing with the square of its size — 59 KB, 83 seconds; measured against
it in ``tests/unit/workspace/test_html.py``.) The page is parsed once for its title and its text.
The tree is walked once and turned into paragraphs: block
elements start a new paragraph, inline elements flow into the current one, headings become Markdown
headings and list items bullets, so passages can follow the page's sections. ``<pre>`` keeps its
lines.

The *main text* drops what surrounds an article on most sites — navigation, headers, footers,
sidebars, forms, scripts — and prefers ``<main>`` or the largest ``<article>`` when there is one.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from bs4.element import Comment, Doctype, NavigableString, Tag

_INVISIBLE = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "head",
)
_CHROME = ("nav", "header", "footer", "aside", "form", "button", "menu", "dialog")
_CHROME_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")
_BLOCK_NAMES = """address article blockquote body caption dd details div dl dt fieldset figcaption
    figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody
    td tfoot th thead tr ul"""
_BLOCKS = frozenset(_BLOCK_NAMES.split())
_SPACES = re.compile(r"\s+")
#: Below this many characters the main-text guess is probably wrong: use the whole body instead.
_MAIN_TEXT_MINIMUM = 200


def _parse(markup: str | bytes) -> BeautifulSoup:
    return BeautifulSoup(markup, "lxml")


def html_page(markup: str | bytes, *, main_only: bool = False) -> tuple[str | None, str]:
    """The page's title (:func:`html_title`) and text (:func:`html_to_text`), from one parse."""
    soup = _parse(markup)
    return _title(soup), _text(soup, main_only=main_only)


def html_title(markup: str | bytes) -> str | None:
    """The page's ``<title>``, else its first ``<h1>``."""
    return _title(_parse(markup))


def html_to_text(markup: str | bytes, *, main_only: bool = False) -> str:
    """The visible text of a page as paragraphs separated by blank lines."""
    return _text(_parse(markup), main_only=main_only)


def _title(soup: BeautifulSoup) -> str | None:
    for tag in (soup.title, soup.find("h1")):
        if isinstance(tag, Tag):
            text = _SPACES.sub(" ", tag.get_text(" ")).strip()
            if text:
                return text
    return None


def _text(soup: BeautifulSoup, *, main_only: bool) -> str:
    for tag in soup.find_all(_INVISIBLE):
        tag.decompose()
    root: Tag = soup.body if isinstance(soup.body, Tag) else soup
    if main_only:
        whole = _render(root)
        main = _main_element(root)
        for tag in main.find_all(_CHROME):
            tag.decompose()
        for tag in main.find_all(_has_chrome_role):
            tag.decompose()
        text = _render(main)
        return text if len(text) >= min(_MAIN_TEXT_MINIMUM, len(whole) // 2) else whole
    return _render(root)


def _has_chrome_role(tag: Tag) -> bool:
    return tag.get("role") in _CHROME_ROLES


def _main_element(root: Tag) -> Tag:
    main = root.find("main") or root.find(lambda tag: tag.get("role") == "main")
    if isinstance(main, Tag):
        return main
    articles = [tag for tag in root.find_all("article") if isinstance(tag, Tag)]
    if articles:
        return max(articles, key=lambda tag: len(tag.get_text()))
    return root


#: Put on the walk's stack after a block's children: the block ends there.
_END_OF_BLOCK = object()


def _render(root: Tag) -> str:
    """The text under ``root`` as paragraphs. The walk keeps its own stack (no recursion), so a
    page nested thousands of elements deep is read like any other."""
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = _SPACES.sub(" ", "".join(current)).strip()
        if text.strip("#- "):
            blocks.append(text)
        current.clear()

    stack: list[object] = list(reversed(root.contents))
    while stack:
        node = stack.pop()
        if node is _END_OF_BLOCK:
            flush()
        elif isinstance(node, Comment | Doctype):
            continue
        elif isinstance(node, NavigableString):
            current.append(str(node))
        elif isinstance(node, Tag):
            name = node.name
            if name == "br":
                current.append(" ")
            elif name == "pre":
                flush()
                blocks.append(node.get_text().strip("\n"))
            elif name in _BLOCKS:
                flush()
                if len(name) == 2 and name[0] == "h" and name[1].isdigit():
                    current.append("#" * int(name[1]) + " ")
                elif name == "li":
                    current.append("- ")
                stack.append(_END_OF_BLOCK)
                stack.extend(reversed(node.contents))
            else:
                stack.extend(reversed(node.contents))
    flush()
    return "\n\n".join(block for block in blocks if block.strip())
