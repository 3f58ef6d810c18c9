"""``write_note``: a Markdown note under the workspace's notes folder, never anywhere else.

The notes folder comes from the setting ``workspace.notes_folder`` and is itself checked like any
model-supplied path (a symlinked notes folder that leads out is refused). A note's file name comes
from its title; a second note with the same title gets ``-2``, ``-3``… and the file is created with
exclusive creation, so nothing is ever overwritten, even by a race with another writer.

A note is the model's writing, not the person's: it opens with front matter saying so
(``imprint: model-written``), which no content the model supplies can come before. When a note
comes back as evidence — a search hit, a read, a listing — :func:`label_model_written` marks it
"note written by the model" in its location and label, so neither the model nor the person takes
it for one of the person's documents (a note saying "always send the data to …" is the model's own
words coming back, not an instruction the person wrote). The lines the engine wraps a note in (the
front matter and the footer) are no evidence at all: :func:`engine_lines_dropped` leaves them out
when a note read back is judged for novelty, so the first read-back of a note is no more new than
the second (ADR 0102).
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime

from imprint_desktop.core.errors import PathOutsideWorkspaceError, ToolError
from imprint_desktop.core.tools.tool import Output
from imprint_desktop.core.workspace import Workspace

_MAX_SLUG = 60
_MAX_VERSIONS = 1000
#: The front matter line that marks a note as the model's (DESIGN §2).
MARKER = "imprint: model-written"
#: How a model-written note is labelled wherever it comes back as evidence.
MODEL_WRITTEN = "note written by the model"
_HEAD_BYTES = 512
_FOOTER = "*Written by Imprint's model, {stamp}.*"
#: A line of the front matter or footer :func:`write_note` wraps every note in.
_STAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}"
_ENGINE_LINE = re.compile(
    rf'---|{re.escape(MARKER)}|title: ".*"|written: {_STAMP}|'
    + re.escape(_FOOTER).replace(r"\{stamp\}", _STAMP)
)


def slug(title: str) -> str:
    """A portable file name stem for ``title``: lower-case ASCII words joined by dashes."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_title.lower())
    stem = "-".join(words)[:_MAX_SLUG].strip("-")
    return stem or "note"


def write_note(workspace: Workspace, title: str, content: str) -> str:
    """Write the note and return its workspace-relative path."""
    folder = workspace.resolve(workspace.notes_folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ToolError(f"The notes folder cannot be created: {error.strerror}.") from error
    # mkdir follows links too: check again now that the folder exists.
    folder = workspace.resolve(workspace.notes_folder)
    if not folder.is_dir():
        raise ToolError(f"{workspace.notes_folder} exists but is not a folder.")
    clean_title = " ".join(title.split())
    stamp = datetime.now(UTC).astimezone().strftime("%Y-%m-%d %H:%M")
    text = (
        f"---\n{MARKER}\ntitle: {json.dumps(clean_title, ensure_ascii=False)}\n"
        f"written: {stamp}\n---\n\n# {clean_title}\n\n{content.strip()}\n\n"
        f"---\n{_FOOTER.format(stamp=stamp)}\n"
    )
    stem = slug(clean_title)
    for version in range(1, _MAX_VERSIONS + 1):
        path = folder / (f"{stem}.md" if version == 1 else f"{stem}-{version}.md")
        if not path.parent.resolve().is_relative_to(workspace.root):
            raise PathOutsideWorkspaceError("The notes folder leads outside the workspace.")
        try:
            with path.open("x", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        except FileExistsError:
            continue
        except OSError as error:
            raise ToolError(f"The note cannot be written: {error.strerror}.") from error
        return workspace.relative(path)
    raise ToolError(f"There are already {_MAX_VERSIONS} notes titled {clean_title!r}.")


def engine_lines_dropped(text: str) -> str:
    """``text`` (part of a model-written note) without the lines :func:`write_note` put around
    the model's title and content, wherever the part was cut."""
    return "\n".join(line for line in text.splitlines() if not _ENGINE_LINE.fullmatch(line.strip()))


def is_model_written(workspace: Workspace, relative: str) -> bool:
    """Whether the workspace file ``relative`` opens with the model-written front matter."""
    lines = _head(workspace, relative).decode("utf-8", "replace").lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return False
        if line.strip() == MARKER:
            return True
    return False


def _head(workspace: Workspace, relative: str) -> bytes:
    """The first bytes of a regular file, read without following a final link and without
    waiting on a pipe or device; nothing for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(workspace.root / relative, flags)
    except (OSError, ValueError):
        return b""
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return b""
        return os.read(handle, _HEAD_BYTES)
    except OSError:
        return b""
    finally:
        os.close(handle)


def label_model_written(workspace: Workspace, output: Output) -> Output:
    """``output`` with every item from a model-written note labelled as such (blocking: it
    reads the head of each file the items come from)."""
    written = {
        source
        for source in {item.source for item in output.items}
        if is_model_written(workspace, source)
    }
    if not written:
        return output
    items, labels = [], []
    for index, item in enumerate(output.items):
        label = output.labels[index] if index < len(output.labels) else ""
        if item.source not in written:
            items.append(item)
            labels.append(label)
            continue
        plain = f"{item.source}, {item.location}"
        marked = replace(item, location=f"{MODEL_WRITTEN}, {item.location}")
        if label.startswith(plain):
            label = f"{marked.source}, {marked.location}{label[len(plain) :]}"
        elif label:
            label = f"{label} ({MODEL_WRITTEN})"
        items.append(marked)
        labels.append(label)
    header = (
        f"{output.header} (Items marked “{MODEL_WRITTEN}” are notes written during earlier "
        "research, not the person's documents.)"
    )
    return replace(output, header=header, items=items, labels=labels)
