"""Several folders in one workspace: what each is called in a document's path, and which folder a
path leads to.

A workspace is its first folder (``workspace.path``) and any number more
(``workspace.more_folders``). Each keeps its own index beside its files (:mod:`.database`), so
every Imprint process that opens the folder, alone or with others, shares it, under its own lock.
The first folder's documents keep the paths they always had (``plans/2026.md``); another folder's
are named by the folder's name first (``Reports/2026/q1.pdf``), so a path says where a document
is, the tools need nothing else, and an answer's sources read the same in the history. A folder's
name is its own name on disk, numbered (``Reports 2``) when the first folder already has an entry
of that name or another folder took it.

A folder that does not exist, is the first one again, or lies inside or around another is left
out, and :func:`named_folders` says why, so the person can fix the setting; removing a folder from
the setting removes its passages from answers (its index stays on disk for when it comes back).

Which folder a name stood for is kept beside the first folder's index (:func:`remember`), so a
cited source (``Reports/q1.md``) of a saved reply opens from where it was researched
(:func:`source_file`), as a first folder's source opens from the folder the history keeps. Every
process that opens the workspace writes it (atomically: a temporary file renamed over it); the
last one opened wins.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from imprint_desktop.core.workspace.database import index_path_for
from imprint_desktop.core.workspace.files import clean_relative, is_hidden, name_text

#: The file beside the first folder's index that names the other folders.
_KEPT = "folders.json"


@dataclass(frozen=True, slots=True)
class Folder:
    """One folder of a workspace: ``name`` starts its documents' paths ("" for the first folder,
    whose paths have no prefix), ``root`` is where it is (resolved)."""

    name: str
    root: Path

    def path_of(self, relative: str) -> str:
        """The workspace path of ``relative`` (a path inside this folder)."""
        return f"{self.name}/{relative}" if self.name and relative else self.name or relative


def folder_lines(text: str) -> list[Path]:
    """The folders a ``workspace.more_folders`` value names, one per line (blank lines and
    spaces around a line dropped, ``~`` expanded), in order, each once."""
    seen: list[Path] = []
    for line in text.splitlines():
        if line.strip():
            path = Path(line.strip()).expanduser()
            if path not in seen:
                seen.append(path)
    return seen


def named_folders(first: Path, more: Iterable[Path]) -> tuple[tuple[Folder, ...], tuple[str, ...]]:
    """The workspace's folders, the first one first, each with its name, and a sentence for each
    folder of ``more`` that is left out."""
    root = first.expanduser().resolve()
    folders = [Folder("", root)]
    try:
        taken = {name_text(entry.name).casefold() for entry in root.iterdir()}
    except OSError:
        taken = set()
    problems: list[str] = []
    for given in more:
        path = given.expanduser()
        if not path.is_absolute():
            problems.append(f"{given} is not a full path to a folder: it is left out.")
            continue
        resolved = path.resolve()
        if not resolved.is_dir():
            problems.append(f"{given} is not a folder (any more): it is left out.")
            continue
        clash = next((folder for folder in folders if _overlap(folder.root, resolved)), None)
        if clash is not None:
            where = "the workspace folder" if not clash.name else f"the folder {clash.name}"
            problems.append(f"{given} is or holds part of {where}: it is left out.")
            continue
        name = _free_name(name_text(resolved.name) or "folder", taken)
        taken.add(name.casefold())
        folders.append(Folder(name, resolved))
    return tuple(folders), tuple(problems)


def _overlap(one: Path, other: Path) -> bool:
    return one == other or one.is_relative_to(other) or other.is_relative_to(one)


def _free_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name 2``, ``name 3``… the first that no entry of the first folder and no
    other folder has (case aside, as on macOS and Windows). A hidden name loses its dot: hidden
    paths are never workspace paths."""
    name = name.lstrip(".") if is_hidden(name) else name
    name = name.replace(":", "_") or "folder"
    candidate, number = name, 1
    while candidate.casefold() in taken:
        number += 1
        candidate = f"{name} {number}"
    return candidate


def folder_of(folders: Sequence[Folder], path: str) -> tuple[Folder, str]:
    """The folder a clean workspace path (:func:`~.files.clean_relative`) leads to, and the path
    inside it: another folder's when its first part is that folder's name, else the first
    folder's. A folder's own name alone gives it with an empty path."""
    head, _, rest = path.partition("/")
    for folder in folders[1:]:
        if head == folder.name:
            return folder, rest
    return folders[0], path


def remember(folders: Sequence[Folder], index_path: Path | None = None) -> None:
    """Keep which folder each name stands for beside the first folder's index (at
    ``index_path``, by default where :func:`~.database.index_path_for` puts it). Nothing is
    written when it is kept already; a failure to write only loses the opening of other
    folders' sources from old replies."""
    place = (index_path or index_path_for(folders[0].root)).with_name(_KEPT)
    named = {folder.name: str(folder.root) for folder in folders[1:]}
    if _kept(place) == named:
        return
    try:
        place.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=place.parent, prefix=".folders-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(named, out, ensure_ascii=False)
        Path(temporary).replace(place)
    except OSError:
        return


def _kept(place: Path) -> dict[str, str]:
    try:
        kept = json.loads(place.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def source_file(first: Path, source: str) -> tuple[Path, str]:
    """The folder a cited workspace path ``source`` is in, for a reply that researched the
    workspace whose first folder is ``first``, and the clean path inside it: another folder's
    when its name, as last kept (:func:`remember`), begins the path. Refuses a path that leads
    out (:func:`~.files.clean_relative`)."""
    clean = clean_relative(source)
    head, _, rest = clean.partition("/")
    if rest:
        root = _kept(index_path_for(first).with_name(_KEPT)).get(head)
        if isinstance(root, str):
            return Path(root), rest
    return first, clean
