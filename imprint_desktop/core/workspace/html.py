"""HTML to readable text, for indexed pages and for ``fetch_url``.

Beautiful Soup parses the page (Python's own ``html.parser``: no compiled dependency, tolerant of
the broken markup real pages have). The tree is walked once and turned into paragraphs: block
elements start a new paragraph, inline elements flow into the current one, headings become Markdown
headings and list items bullets, so passages can follow the page's sections. ``<pre>`` keeps its
lines.

The *main text* drops what surrounds an article on most sites — navigation, headers, footers,
sidebars, forms, scripts — and prefers ``<main>`` or the largest ``<article>`` when there is one.

Beautiful Soup is imported with the first page parsed, not with this module: it takes a noticeable
moment, and a search of an unchanged workspace (``imprint workspace search``) parses no page.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
    from bs4.element import Tag

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
    from bs4 import BeautifulSoup  # noqa: PLC0415 - see the module docstring

    return BeautifulSoup(markup, "html.parser")


def html_title(markup: str | bytes) -> str | None:
    """The page's ``<title>``, else its first ``<h1>``."""
    from bs4.element import Tag  # noqa: PLC0415 - see the module docstring

    soup = _parse(markup)
    for tag in (soup.title, soup.find("h1")):
        if isinstance(tag, Tag):
            text = _SPACES.sub(" ", tag.get_text(" ")).strip()
            if text:
                return text
    return None


def html_to_text(markup: str | bytes, *, main_only: bool = False) -> str:
    """The visible text of a page as paragraphs separated by blank lines."""
    from bs4.element import Tag  # noqa: PLC0415 - see the module docstring

    soup = _parse(markup)
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
    from bs4.element import Tag  # noqa: PLC0415 - see the module docstring

    main = root.find("main") or root.find(lambda tag: tag.get("role") == "main")
    if isinstance(main, Tag):
        return main
    articles = [tag for tag in root.find_all("article") if isinstance(tag, Tag)]
    if articles:
        return max(articles, key=lambda tag: len(tag.get_text()))
    return root


def _render(root: Tag) -> str:
    from bs4.element import Comment, Doctype, NavigableString, Tag  # noqa: PLC0415 - see above

    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = _SPACES.sub(" ", "".join(current)).strip()
        if text.strip("#- "):
            blocks.append(text)
        current.clear()

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, Comment | Doctype):
                continue
            if isinstance(child, NavigableString):
                current.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name == "br":
                current.append(" ")
            elif name == "pre":
                flush()
                blocks.append(child.get_text().strip("\n"))
            elif name in _BLOCKS:
                flush()
                if len(name) == 2 and name[0] == "h" and name[1].isdigit():
                    current.append("#" * int(name[1]) + " ")
                elif name == "li":
                    current.append("- ")
                walk(child)
                flush()
            else:
                walk(child)

    walk(root)
    flush()
    return "\n\n".join(block for block in blocks if block.strip())
