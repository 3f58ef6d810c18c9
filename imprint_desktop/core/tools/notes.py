"""``write_note``: a Markdown note under the workspace's notes folder, never anywhere else.

The notes folder comes from the setting ``workspace.notes_folder`` and is itself checked like any
model-supplied path (a symlinked notes folder that leads out is refused). A note's file name comes
from its title; a second note with the same title gets ``-2``, ``-3``… and the file is created with
exclusive creation, so nothing is ever overwritten, even by a race with another writer.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

from imprint_desktop.core.errors import PathOutsideWorkspaceError, ToolError
from imprint_desktop.core.workspace import Workspace

_MAX_SLUG = 60
_MAX_VERSIONS = 1000


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
    text = f"# {clean_title}\n\n{content.strip()}\n\n---\n*Written by Imprint, {stamp}.*\n"
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
