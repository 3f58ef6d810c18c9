"""The read tools over the workspace: ``search_workspace``, ``read_document``, ``list_documents``.

Each is a plain blocking function returning an :class:`Output`; the toolbox runs them in a worker
thread. Sizes are planned against the result cap here, where it is known what can be left out
(fewer lines, shorter passages), so the generic cap in :func:`render` rarely has to cut.
"""

from __future__ import annotations

import threading

from imprint_desktop.core.errors import ToolArgumentError
from imprint_desktop.core.tools.tool import EvidenceItem, Output
from imprint_desktop.core.workspace import Workspace, clean_relative
from imprint_desktop.core.workspace.passages import (
    focus,
    query_terms,
    split_passages,
    term_weights,
)

#: Characters set aside for a result's header, labels and footer when planning sizes.
_OVERHEAD = 400
_MIN_PASSAGE_CHARS = 240


def search_workspace(workspace: Workspace, query: str, limit: int, max_chars: int) -> Output:
    hits = workspace.search(query, limit)
    if not hits:
        standing = f" Note: {workspace.standing}." if workspace.standing else ""
        return Output(
            f"No passages in the workspace match {query!r}. Try other words, or "
            f"list_documents.{standing}",
            status="empty",
        )
    room = max((max_chars - _OVERHEAD) // len(hits) - 60, _MIN_PASSAGE_CHARS)
    terms = query_terms(query)
    weights = term_weights(terms, [hit.text for hit in hits])
    items = [
        EvidenceItem(
            hit.path, hit.location, focus(hit.text, terms, room, weights), hit.title, hit.currency
        )
        for hit in hits
    ]
    labels = [
        f"{hit.path}, {hit.location} — {hit.title}"
        + (f" › {hit.section}" if hit.section and hit.section != hit.title else "")
        + (f" ({hit.currency})" if hit.currency else "")
        for hit in hits
    ]
    note = ""
    if any(hit.superseded for hit in hits) and not all(hit.superseded for hit in hits):
        note = (
            " Some passages come from documents that look superseded (marked so): where they "
            "disagree with a current document, the current one holds."
        )
    if workspace.standing:  # background indexing is behind: say what was searched
        note += f" Note: {workspace.standing}."
    return Output(
        f"{len(hits)} passage(s) from the workspace for {query!r}, best first. "
        f"read_document shows more of a file.{note}",
        items,
        labels=labels,
    )


def read_document(
    workspace: Workspace,
    path: str,
    start_line: int,
    end_line: int | None,
    max_chars: int,
    *,
    stop: threading.Event | None = None,
) -> Output:
    """Lines of one document; a document read in the isolated reader ends the read as soon as
    ``stop`` is set (the caller gave up on the call: its worker thread does not run on)."""
    relative, document = workspace.read(path, stop)
    total = len(document.lines)
    if total == 0:
        return Output(f"{relative} is empty (no text could be taken from it).", status="empty")
    if start_line > total:
        raise ToolArgumentError(
            f"read_document: {relative} has {total} lines; start_line {start_line} is past the end."
        )
    if end_line is not None and end_line < start_line:
        raise ToolArgumentError(
            f"read_document: end_line ({end_line}) is before start_line ({start_line})."
        )
    last = total if end_line is None else min(end_line, total)
    budget, used, end = max_chars - _OVERHEAD, 0, start_line - 1
    while end < last and used + len(document.lines[end]) + 16 <= budget:
        used += len(document.lines[end]) + 16
        end += 1
    end = max(end, start_line)  # always at least one line, however long (render cuts it)
    lines = document.lines[start_line - 1 : end]
    currency = workspace.currency(relative)
    items = []
    for passage in split_passages(lines):
        first, final = passage.start_line + start_line - 1, passage.end_line + start_line - 1
        page, place = document.page_of(first), document.place_of(first, final)
        where = f"lines {first}-{final}"
        if place or page is not None:
            where = f"{place or f'page {page}'}, {where}"
        items.append(EvidenceItem(relative, where, passage.text, document.title, currency))
    footer = ""
    if end < total:
        footer = (
            f"(Lines {end + 1}-{total} not shown: call read_document with start_line={end + 1}"
            " to continue.)"
        )
    standing = f" ({currency})" if currency else ""
    return Output(
        f"{relative} — {document.title}{standing} — lines {start_line}-{end} of {total}.",
        items,
        footer,
        status="ok" if items else "empty",
    )


def list_documents(workspace: Workspace, folder: str) -> Output:
    prefix = "" if folder.strip() in ("", ".", "./") else clean_relative(folder)
    documents = workspace.documents(prefix)
    where = f"in {prefix}/" if prefix else "in the workspace"
    if not documents:
        return Output(f"No documents {where}.{_where_to_look(workspace, prefix)}", status="empty")
    items = [
        EvidenceItem(document.path, "listing", f"{document.title} ({_size(document.size)})")
        for document in documents
    ]
    labels = [document.path for document in documents]
    return Output(f"{len(documents)} document(s) {where}:", items, labels=labels)


def _where_to_look(workspace: Workspace, prefix: str) -> str:
    """For an empty folder: the folders there are, so the model's next call can do better."""
    if not prefix:
        return ""
    paths = (document.path for document in workspace.documents(""))
    folders = sorted({path.split("/", 1)[0] + "/" for path in paths if "/" in path})
    there = f" The workspace's folders are: {', '.join(folders[:20])}." if folders else ""
    return (
        f"{there} Call list_documents with no folder to list every document, or "
        "search_workspace to find passages by their words."
    )


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 2**20:.1f} MB"
