"""A stopped reply's evidence is shown as quoted text, never as live Markdown (issue 41, item 13):
a document's "# Title" in the labelled fallback was drawn as a page-wide heading."""

from __future__ import annotations

from PySide6.QtGui import QTextDocument

from imprint_desktop.core.research.final import FALLBACK_LABEL
from imprint_desktop.core.research.sources import EVIDENCE_GATHERED, literal_evidence, with_sources

PASSAGE = (
    "# Board minutes, October 2026\n\n"
    "| item | cost |\n|---|---|\n| new press | **£12,400** |\n\n"
    "- approved by the chair"
)
FALLBACK = (
    f"{FALLBACK_LABEL}: you stopped the research.\n\n{EVIDENCE_GATHERED}\n\n"
    f"[1] minutes/board-2026-10.docx, lines 1-8:\n{PASSAGE}"
)


def headings_lists_and_tables(markdown: str) -> tuple[int, int, int]:
    document = QTextDocument()
    document.setMarkdown(markdown)
    headings = lists = 0
    block = document.begin()
    while block.isValid():
        headings += block.blockFormat().headingLevel() > 0
        lists += block.textList() is not None
        block = block.next()
    frames = document.rootFrame().childFrames()
    return headings, lists, len(frames)


def test_the_evidence_of_a_fallback_is_drawn_as_written() -> None:
    assert headings_lists_and_tables(FALLBACK) != (0, 0, 0)  # as it was: live Markdown
    shown = with_sources(FALLBACK, (), strong="**")
    assert headings_lists_and_tables(shown) == (0, 0, 0)
    document = QTextDocument()
    document.setMarkdown(shown)
    text = document.toPlainText()
    for written in ("# Board minutes, October 2026", "| new press | **£12,400** |", "- approved"):
        assert written in text
    assert text.startswith(f"{FALLBACK_LABEL}: you stopped the research.")
    assert "[1] minutes/board-2026-10.docx, lines 1-8:" in text  # the passage's line, a link


def test_the_terminal_and_any_other_answer_are_unchanged() -> None:
    assert with_sources(FALLBACK, ()) == FALLBACK  # plain text: nothing to escape
    answer = "# Not a fallback\n\nThe model's own *Markdown* stays."
    assert literal_evidence(answer) == answer
