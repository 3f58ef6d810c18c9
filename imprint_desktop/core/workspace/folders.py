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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from imprint_desktop.core.workspace.files import is_hidden, name_text


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
