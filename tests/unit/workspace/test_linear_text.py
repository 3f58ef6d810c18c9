"""Every line of every document is read by these: their time grows linearly with the text.

The lines are the ones that made a regular expression backtrack: ``# a``, a long run of spaces,
then ``b`` (a 3 KB file took minutes to index, on every launch). Growth is measured as a ratio
(:mod:`tests.support.growth`), so the tests hold on any machine.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from imprint_desktop.core.workspace.extract import extract
from imprint_desktop.core.workspace.passages import atx_heading, split_passages
from tests.support.growth import growth

FACTOR = 4

#: Lines that look like the start of a heading, then go on and on.
LINES: dict[str, Callable[[int], str]] = {
    "spaces then text": lambda size: "# a" + " " * size + "b",
    "spaces then marks then text": lambda size: "# a" + " " * size + "#" * size + "b",
    "marks and spaces": lambda size: "# " + "# " * size + "x",
    "tabs": lambda size: "## a" + "\t" * size + "b ##",
}


@pytest.mark.parametrize("line", LINES.values(), ids=LINES.keys())
def test_headings_are_found_in_linear_time(line: Callable[[int], str]) -> None:
    assert growth(lambda size: split_passages([line(size), "text"]), 200, FACTOR) < 2 * FACTOR


@pytest.mark.parametrize("line", LINES.values(), ids=LINES.keys())
def test_a_markdown_title_is_found_in_linear_time(line: Callable[[int], str]) -> None:
    def title(size: int) -> str:
        return extract("notes.md", (line(size) + "\n").encode()).title

    assert growth(title, 200, FACTOR) < 2 * FACTOR


#: Markup that made Python's html.parser (before its 2025 fixes) take quadratic time.
MARKUP: dict[str, Callable[[int], str]] = {
    "unclosed tags": lambda size: "<x " * size,
    "unclosed attributes": lambda size: "<x a=" * size,
    "unclosed comments": lambda size: "<p>text</p><!--" * size,
    "dense links": lambda size: "<a href='x'>text " * size,
}


@pytest.mark.parametrize("markup", MARKUP.values(), ids=MARKUP.keys())
def test_html_is_read_in_linear_time(markup: Callable[[int], str]) -> None:
    def read(size: int) -> str:
        return extract("page.html", markup(size).encode()).title

    assert growth(read, 2000, FACTOR) < 2 * FACTOR


def test_deeply_nested_html_is_read() -> None:
    extracted = extract("deep.html", ("<div>" * 20_000 + "the keeper's log").encode())
    assert extracted.lines == ("the keeper's log",)


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("# Title", "Title"),
        ("  ## Title ##  ", "Title"),
        ("### Title #####", "Title"),
        ("# C#", "C#"),  # a closing run counts only after a space
        ("# a" + " " * 50 + "b", "a" + " " * 50 + "b"),
        ("#", None),
        ("#  ", None),
        ("# ##", None),
        ("#Title", None),
        ("####### Seven", None),
        ("    # Indented four", None),
        ("Text # not a heading", None),
    ],
)
def test_atx_headings_are_read_as_before(line: str, heading: str | None) -> None:
    assert atx_heading(line) == heading


def test_a_markdown_title_comes_from_its_first_heading() -> None:
    assert extract("a.md", b"intro\n\n## The  Title ##\n").title == "The  Title"
    assert extract("a.md", b"The Title\n=====\n").title == "The Title"
    assert extract("a.md", b"  # Indented\n").title == "a"  # a title starts its line
