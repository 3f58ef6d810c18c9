"""Which files belong to a workspace, and which paths a tool may touch.

Two questions with one answer: the index walks the folder with :func:`scan`, and the tools turn a
model-supplied path into a real one with :func:`resolve_inside`. Both keep out hidden files and
folders (``.git``, ``.env``, editor state), because those are rarely documents and often secrets,
names with a ``:`` (on Windows ``notes.md:hidden`` is an NTFS alternate data stream, a second file
behind the one the person sees), and anything that leads outside the workspace. Paths are always
workspace-relative, with ``/`` separators, so an index built on one platform reads the same on
another.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from imprint_desktop.core.errors import PathOutsideWorkspaceError

#: Folders that hold tooling rather than documents; hidden folders are skipped as well.
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages"})

_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One candidate file found by :func:`scan`, with what the incremental index compares."""

    path: str  # workspace-relative, "/"-separated
    size: int
    mtime_ns: int


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def is_stream_name(name: str) -> bool:
    """A name with ``:``: on NTFS ``x.md:stream`` is an alternate data stream of ``x.md``."""
    return ":" in name


def scan(root: Path, *, max_file_bytes: int, skip_suffixes: frozenset[str]) -> Iterator[FileEntry]:
    """Every regular file under ``root`` worth offering to the extractor.

    Skips hidden names, names with ``:``, tooling folders, symlinks (a link could lead out of the
    workspace or index a file twice), files over ``max_file_bytes`` and files whose suffix is known
    to be binary. Folders that cannot be listed are skipped silently: a permission problem in one
    corner must not stop the rest. Order is stable (sorted) so progress and reports read the same
    from run to run.
    """
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name, reverse=True)
        except OSError:
            continue
        for entry in listed:
            name = entry.name
            if is_hidden(name) or is_stream_name(name):
                continue
            relative = f"{prefix}{name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if name not in SKIPPED_FOLDERS:
                    stack.append((Path(entry.path), f"{relative}/"))
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_file_bytes:
                continue
            if PurePosixPath(name).suffix.lower() in skip_suffixes:
                continue
            yield FileEntry(relative, info.st_size, info.st_mtime_ns)


def clean_relative(user_path: str) -> str:
    """A model-supplied path as a clean relative POSIX path, or :class:`PathOutsideWorkspaceError`.

    Refuses before touching the disk: empty paths, NUL bytes, absolute POSIX paths, Windows drive
    and UNC paths (``C:\\x``, ``C:x``, ``\\\\server\\share``), any ``..`` component, home shortcuts,
    hidden components and any ``:`` in a component (an NTFS alternate data stream such as
    ``notes.md:hidden``). Backslashes count as separators, since a model trained on Windows paths
    may send them.
    """
    if not isinstance(user_path, str) or not user_path.strip():
        raise PathOutsideWorkspaceError("The path is empty; give a path inside the workspace.")
    text = user_path.strip()
    if "\x00" in text:
        raise PathOutsideWorkspaceError("The path contains a NUL character.")
    text = text.replace("\\", "/")
    if text.startswith(("/", "~")) or _DRIVE.match(text):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} is not a workspace path: use a path relative to the workspace, "
            "such as 'notes/plan.md'."
        )
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts:
        raise PathOutsideWorkspaceError("The path names the workspace itself, not a file in it.")
    if ".." in parts:
        raise PathOutsideWorkspaceError(f"{user_path!r} leads outside the workspace ('..').")
    if any(is_hidden(part) for part in parts):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} is a hidden file or folder, which is not part of the workspace."
        )
    if any(is_stream_name(part) for part in parts):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} has a ':' in a name, which workspace paths never have (on Windows it "
            "names a hidden alternate data stream); use the path as list_documents shows it."
        )
    return "/".join(parts)


def resolve_inside(root: Path, user_path: str) -> Path:
    """The real path of ``user_path`` inside ``root``; refuses one that leads out (symlinks too).

    ``root`` must already be resolved. The file need not exist (``write_note`` creates one), but
    every symlink on the way is followed, and the result must still be inside ``root``.
    """
    relative = clean_relative(user_path)
    candidate = (root / relative).resolve(strict=False)
    if not candidate.is_relative_to(root):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} leads outside the workspace (through a symbolic link)."
        )
    if any(is_hidden(part) for part in candidate.relative_to(root).parts):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} leads to a hidden file or folder, which is not part of the workspace."
        )
    return candidate


def relative_posix(root: Path, path: Path) -> str:
    """``path`` (inside the resolved ``root``) as a workspace-relative POSIX path."""
    return path.relative_to(root).as_posix()
