"""No message is too big for the transcript: what reaches Qt's layout is bounded, the rest is one
click away in a view that lays out only what is seen.

Qt lays out a big table, a long unbreakable run and many links with work that grows faster than
their size, so the proof here is not a stopwatch but the size of what is laid out: doubling the
message leaves it the same. The whole message stays readable: *Show all* opens it, a 10,000-row
table in a table view that asks for the rows in view only.
"""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QTextDocument, QTextTable
from pytestqt.qtbot import QtBot

from imprint_desktop.ui.chat import transcript_bounds
from imprint_desktop.ui.chat.full_message import SEGMENT_CHARS, FullMessage
from imprint_desktop.ui.chat.markdown import ChatMessage
from imprint_desktop.ui.chat.transcript_bounds import (
    MESSAGE_CHARS,
    RUN_CHARS,
    TABLE_CELLS,
    TABLE_ROWS,
    Table,
)
from imprint_desktop.ui.chat.view import SHOWN_CHARS, ChatView
from tests.qt.transcript_links import anchors, click_link

WAIT_MS = 10_000
_RUN = re.compile(r"\S+")


def table_markdown(rows: int, columns: int = 50) -> str:
    header = "| " + " | ".join(f"col {c}" for c in range(columns)) + " |"
    rule = "|" + "---|" * columns
    body = "\n".join(
        "| " + " | ".join(f"r{r}c{c}" for c in range(columns)) + " |" for r in range(rows)
    )
    return f"The figures:\n\n{header}\n{rule}\n{body}\n\nThat is all."


def laid_out_cells(document: QTextDocument) -> int:
    cells = 0
    for frame in document.rootFrame().childFrames():
        if isinstance(frame, QTextTable):
            cells += frame.rows() * frame.columns()
    return cells


def longest_run(text: str) -> int:
    return max((len(match.group(0)) for match in _RUN.finditer(text)), default=0)


def shown(qtbot: QtBot, markdown: str) -> ChatView:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show_messages([ChatMessage("you", "Show me."), ChatMessage("assistant", markdown, 1)])
    view.show()
    qtbot.waitExposed(view)
    view.document().size()
    return view


def open_all(qtbot: QtBot, view: ChatView) -> FullMessage:
    click_link(qtbot, view, "Show all")
    full = view.full_message
    assert full is not None
    qtbot.waitExposed(full)
    return full


def test_a_big_table_lays_out_the_same_bounded_part_however_big_it_is(qtbot: QtBot) -> None:
    laid_out = []
    for rows in (2_500, 5_000):  # 5,000 × 50 cells once took minutes and 758 MB
        view = shown(qtbot, table_markdown(rows))
        cells = laid_out_cells(view.document())
        laid_out.append((cells, view.document().characterCount()))
        shown_rows = cells // 50 - 1
        assert f"The table has {rows - shown_rows:,} more rows." in view.toPlainText()
    assert laid_out[0] == laid_out[1]
    assert 0 < laid_out[0][0] <= TABLE_CELLS + 50


def test_show_all_opens_a_ten_thousand_row_table_that_reads_only_the_rows_in_view(
    qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = 0
    row_cells = Table.row_cells

    def counted(table: Table, row: int) -> tuple[str, ...]:
        nonlocal split
        split += 1
        return row_cells(table, row)

    monkeypatch.setattr(transcript_bounds.Table, "row_cells", counted)
    reads = []
    for rows in (10_000, 20_000):
        view = shown(qtbot, table_markdown(rows))
        split = 0
        full = open_all(qtbot, view)
        (table,) = full.tables
        model = table.model()
        assert (model.rowCount(), model.columnCount()) == (rows, 50)
        assert model.headerData(3, table.horizontalHeader().orientation()) == "col 3"
        table.grab()
        table.scrollToBottom()
        table.grab()
        last = model.index(rows - 1, 49)
        assert model.data(last) == f"r{rows - 1}c49"  # the last row can be read
        reads.append(split)
        full.close()
    assert reads[1] <= reads[0] + 10, reads  # rows in view, not rows in the table
    assert reads[0] < 500


def test_a_long_unbroken_run_lays_out_cut_and_reads_whole_in_show_all(qtbot: QtBot) -> None:
    laid_out = []
    for size in (1_000_000, 2_000_000):  # a 2 MB line once took over 400 s
        payload = "QUJD" * (size // 4)
        view = shown(qtbot, f"An image:\n\n![x](data:image/png;base64,{payload})\n\nAfter it.")
        text = view.toPlainText()
        laid_out.append(view.document().characterCount())
        assert longest_run(text) <= RUN_CHARS + 1
        assert "Some of this message is not shown here." in text
    assert laid_out[0] == laid_out[1]
    full = open_all(qtbot, view)
    document = full.text.document()
    assert document.characterCount() > 2_000_000  # all of it is there to read
    assert "After it." in document.toPlainText()
    longest_block = 0
    block = document.begin()
    while block.isValid():
        longest_block = max(longest_block, block.length())
        block = block.next()
    assert longest_block <= SEGMENT_CHARS + 1  # and no line of it is laid out whole
    full.text.grab()


def test_many_links_lay_out_the_same_bounded_number(qtbot: QtBot) -> None:
    counts = []
    for links in (50_000, 100_000):  # 100k links took 4 s, 2.7 s of it making them inert
        text = " ".join(f"[{n}](https://example.org/{n})" for n in range(links))
        view = shown(qtbot, text)
        counts.append(len(anchors(view.document())))
    assert counts[0] == counts[1]
    assert 0 < counts[0] <= MESSAGE_CHARS // 8


def test_a_streamed_huge_reply_lays_out_no_more_than_a_finished_one(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view.begin_live("Thinking…")
    table = table_markdown(3_000)
    for start in range(0, len(table), 50_000):
        renders = view.renders
        view.append_text(table[start : start + 50_000])
        qtbot.waitUntil(lambda renders=renders: view.renders > renders, timeout=WAIT_MS)
        assert laid_out_cells(view.document()) <= TABLE_CELLS + 50
        assert view.document().characterCount() <= 2 * MESSAGE_CHARS
    view.end_live(ChatMessage("assistant", table, 1))
    assert laid_out_cells(view.document()) <= TABLE_CELLS + 50
    assert "Show all" in view.toPlainText()
    full = open_all(qtbot, view)
    assert full.tables[0].model().rowCount() == 3_000


def test_a_conversation_of_huge_messages_opens_with_a_bounded_part(qtbot: QtBot) -> None:
    big = "word " * (MESSAGE_CHARS // 5)
    messages = [ChatMessage("you" if n % 2 else "assistant", big, n) for n in range(40)]
    view = ChatView()
    qtbot.addWidget(view)
    view.show_messages(messages)
    assert view.document().characterCount() <= SHOWN_CHARS + MESSAGE_CHARS
    assert "earlier messages" in view.toPlainText()
    before = view.document().characterCount()
    view.show_earlier()  # each step shows as much again, never all at once
    assert before < view.document().characterCount() <= 2 * SHOWN_CHARS + MESSAGE_CHARS


def test_a_table_of_a_few_rows_is_laid_out_whole(qtbot: QtBot) -> None:
    view = shown(qtbot, table_markdown(TABLE_ROWS // 5, 5))
    assert laid_out_cells(view.document()) == (TABLE_ROWS // 5 + 1) * 5
    assert "Show all" not in view.toPlainText()
