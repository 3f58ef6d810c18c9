"""Which files belong to a workspace, and which paths a tool may touch.

Two questions with one answer: the index walks the folder with :func:`scan`, and the tools turn a
model-supplied path into a real one with :func:`resolve_inside`. Both keep out hidden files and
folders (``.git``, ``.env``, editor state), because those are rarely documents and often secrets,
names with a ``:`` (on Windows ``notes.md:hidden`` is an NTFS alternate data stream, a second file
behind the one the person sees), and anything that leads outside the workspace. Paths are always
workspace-relative, with ``/`` separators, so an index built on one platform reads the same on
another.

Links are never followed: symbolic links, and on Windows directory junctions and the other
name-surrogate reparse points (:func:`is_link`), are not walked, and :func:`read_inside` opens a
file so that a link swapped in after the scan is refused rather than read (see there).

Names that are not text are kept whole. A POSIX name is bytes, and one that is not UTF-8 (common
from old ZIP archives and Windows shares: ``caf\\xe9.md``) reaches Python with the bytes it cannot
decode as lone surrogates (``surrogateescape``); on Windows a name may hold a lone UTF-16 surrogate
itself. Neither can be stored in SQLite, shown or given to the model, so every path this module
hands out is written in the workspace's *text form* (:func:`name_text`): each lone surrogate as a
``:`` escape, ``:E9`` for an undecodable byte (U+DC80-U+DCFF) and ``:uD800`` for any other. No
workspace name has a ``:`` (see above), so the form is unambiguous, and :func:`disk_name` maps it
back: :func:`read_inside`, :func:`clean_relative` and :func:`resolve_inside` take it, and
``read_document`` given ``caf:E9.md`` reads ``caf\\xe9.md``. Every other name (a newline in it,
names that differ only in Unicode normalisation) is text already and kept as it is.

Hard links are names too, and no platform says where a file's other names are: a hard link
inside the workspace to ``~/.ssh/id_ed25519`` or another person's file looks like any document.
So a regular file with more than one name (``st_nlink`` above 1, as ``fstat`` of the opened file
reports it) is not read: its other names may lie outside the workspace, and finding them would
mean searching every folder of the volume. The index reports it with that reason. Linux, macOS and
Windows (NTFS) all count a file's names; where a file system does not (it reports 1 or 0), files
are read as before. A person who wants such a file in the workspace copies it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from imprint_desktop.core.errors import DocumentError, PathOutsideWorkspaceError

#: Folders that hold tooling rather than documents; hidden folders are skipped as well.
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages"})

_DRIVE = re.compile(r"^[A-Za-z]:")
#: A lone surrogate, and the text form's escape of one (see the module docstring).
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(r":(?:u(D[89A-F][0-9A-F]{2})|([89A-F][0-9A-F]))", re.IGNORECASE)
#: Windows reparse tags with this bit set stand for another name (symbolic links, junctions);
#: others (OneDrive placeholders, deduplicated files) are ordinary files and folders.
_NAME_SURROGATE = 0x20000000
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_WALK_BY_FOLDER = bool(_NO_FOLLOW) and os.open in os.supports_dir_fd


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One candidate file found by :func:`scan`, with what the incremental index compares."""

    path: str  # workspace-relative, "/"-separated, in the text form (see the module docstring)
    size: int
    mtime_ns: int
    #: Why the file is not offered to the extractor although it is a document ("" when it is):
    #: for the index report, which lists it as skipped.
    skipped: str = ""


def size_limit_words(max_bytes: int) -> str:
    """The file size limit as a person set it (``workspace.max_file_mb``): "20 MB"."""
    if max_bytes % 2**20 == 0:
        return f"{max_bytes // 2**20} MB"
    return f"{max_bytes:,} bytes"


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def is_stream_name(name: str) -> bool:
    """A name with ``:``: on NTFS ``x.md:stream`` is an alternate data stream of ``x.md``."""
    return ":" in name


def _escaped(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f":{point - 0xDC00:02X}" if 0xDC80 <= point <= 0xDCFF else f":u{point:04X}"


def name_text(name: str) -> str:
    """A name or path as the OS gave it, in the workspace's text form: each lone surrogate (an
    undecodable byte, or on Windows a lone UTF-16 unit) as its ``:`` escape. Text that holds none
    comes back as it is."""
    return _SURROGATE.sub(_escaped, name)


def _unescaped(match: re.Match[str]) -> str:
    wide, byte = match.groups()
    return chr(int(wide, 16) if wide else 0xDC00 + int(byte, 16))


def disk_name(text: str) -> str:
    """The name or path the OS knows for ``text`` in the workspace's text form (the inverse of
    :func:`name_text`). A ``:`` that begins no escape is left as it is."""
    return _ESCAPE.sub(_unescaped, text) if ":" in text else text


def _on_this_system(name: str) -> bool:
    """Can a file here be called ``name``? On POSIX only the lone surrogates that stand for a
    byte can (``os.fsencode``); Windows takes any."""
    try:
        os.fsencode(name)
    except UnicodeError:
        return False
    return True


def is_link(info: os.stat_result) -> bool:
    """``info`` (from ``lstat``) is a link: a symbolic link, or on Windows a junction or another
    reparse point that stands for a different path."""
    if stat.S_ISLNK(info.st_mode):
        return True
    return bool(getattr(info, "st_reparse_tag", 0) & _NAME_SURROGATE)


def scan(
    root: Path, *, max_file_bytes: int, skip_suffixes: frozenset[str], prefix: str = ""
) -> Iterator[FileEntry]:
    """Every regular file under ``root`` worth offering to the extractor.

    Skips hidden names, names with ``:``, tooling folders, links and junctions (a link could lead
    out of the workspace, index a file twice, or loop) and files whose suffix is known to be
    binary. A file over ``max_file_bytes`` is yielded with the reason it is not read
    (:attr:`FileEntry.skipped`), so the index report can say so. Folders that cannot be listed are
    skipped silently: a permission problem in one corner must not stop the rest. Order is stable —
    by name, a folder's files before its subfolders — so progress and reports read the same from
    run to run. Paths are in the text form (:func:`name_text`), below a folder whose name is not
    text as well. ``prefix`` begins every path (a folder's own path, "…/", when it is scanned
    for :func:`scan_changed`).
    """
    stack = [(root, prefix)]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        folders = []
        for entry in listed:
            name = entry.name
            if is_hidden(name) or is_stream_name(name):
                continue
            relative = f"{prefix}{name_text(name)}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if is_link(info):
                continue
            if stat.S_ISDIR(info.st_mode):
                if name not in SKIPPED_FOLDERS:
                    folders.append((Path(entry.path), f"{relative}/"))
                continue
            if (
                found := _file_entry(relative, name, info, max_file_bytes, skip_suffixes)
            ) is not None:
                yield found
        stack.extend(reversed(folders))  # popped in name order, after this folder's files


def scan_changed(
    root: Path, paths: Iterable[str], *, max_file_bytes: int, skip_suffixes: frozenset[str]
) -> Iterator[FileEntry]:
    """What :func:`scan` would yield at or under each of ``paths`` (in the text form, as
    :func:`name_text` gives them): the file at a path, every file under a folder's, nothing for a
    path that is gone or that :func:`scan` would not walk to (a hidden name, a tooling folder, a
    link on the way). A path under another of ``paths`` is scanned with it, once."""
    wanted = sorted(set(paths))
    for relative in wanted:
        parts = relative.split("/")
        if any("/".join(parts[:end]) in wanted for end in range(1, len(parts))):
            continue  # scanned with the folder it is in
        if any(
            is_hidden(part) or is_stream_name(disk_name(part)) or not part for part in parts
        ) or any(part in SKIPPED_FOLDERS for part in parts[:-1]):
            continue
        path = root
        info: os.stat_result | None = None
        for part in parts:
            path = path / disk_name(part)
            try:
                info = os.lstat(path)
            except OSError:
                info = None
                break
            if is_link(info):
                info = None
                break
        if info is None:
            continue
        if stat.S_ISDIR(info.st_mode):
            if parts[-1] not in SKIPPED_FOLDERS:
                yield from scan(
                    path,
                    max_file_bytes=max_file_bytes,
                    skip_suffixes=skip_suffixes,
                    prefix=f"{relative}/",
                )
            continue
        if (
            found := _file_entry(relative, parts[-1], info, max_file_bytes, skip_suffixes)
        ) is not None:
            yield found


def _file_entry(
    relative: str,
    name: str,
    info: os.stat_result,
    max_file_bytes: int,
    skip_suffixes: frozenset[str],
) -> FileEntry | None:
    """The entry of the file ``relative`` (named ``name``, its ``info`` from lstat), or None
    when it is no regular file or its suffix is skipped; one too large is noted as skipped."""
    if not stat.S_ISREG(info.st_mode):
        return None
    dot = name.rfind(".")  # the suffix as PurePosixPath(name).suffix has it, cheaper
    if 0 < dot < len(name) - 1 and name[dot:].lower() in skip_suffixes:
        return None
    skipped = ""
    if info.st_size > max_file_bytes:
        limit = size_limit_words(max_file_bytes)
        skipped = f"larger than the {limit} limit (workspace.max_file_mb)"
    return FileEntry(relative, info.st_size, info.st_mtime_ns, skipped)


def clean_relative(user_path: str) -> str:
    """A model-supplied path as a clean relative POSIX path, or :class:`PathOutsideWorkspaceError`.

    Refuses before touching the disk: empty paths, NUL bytes, absolute POSIX paths, Windows drive
    and UNC paths (``C:\\x``, ``C:x``, ``\\\\server\\share``), any ``..`` component, home shortcuts,
    hidden components and any ``:`` in a component (an NTFS alternate data stream such as
    ``notes.md:hidden``) but the text form's escapes, and a name no file on this system can have.
    Backslashes count as separators, since a model trained on Windows paths may send them. The
    result is in the text form, its escapes as :func:`name_text` writes them (a lone surrogate
    sent as such is written so too), so it is the index's key for the file.
    """
    if not isinstance(user_path, str) or not user_path.strip():
        raise PathOutsideWorkspaceError("The path is empty; give a path inside the workspace.")
    text = user_path.strip()
    if "\x00" in text:
        raise PathOutsideWorkspaceError("The path contains a NUL character.")
    text = text.replace("\\", "/")
    name = disk_name(text)  # "a:E9.md" is a name, "C:x" a drive
    if text.startswith(("/", "~")) or _DRIVE.match(name):
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
    if any(is_stream_name(disk_name(part)) for part in parts):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} has a ':' in a name, which workspace paths never have (on Windows it "
            "names a hidden alternate data stream); use the path as list_documents shows it."
        )
    if not _on_this_system(name):
        raise PathOutsideWorkspaceError(
            f"{user_path!r} names no file this system can hold (its name is not valid text); use "
            "the path as list_documents shows it."
        )
    return name_text(disk_name("/".join(parts)))


def resolve_inside(root: Path, user_path: str) -> Path:
    """The real path of ``user_path`` inside ``root``; refuses one that leads out (symlinks too).

    ``root`` must already be resolved. The file need not exist (``write_note`` creates one), but
    every symlink on the way is followed, and the result must still be inside ``root``.
    """
    relative = clean_relative(user_path)
    candidate = (root / disk_name(relative)).resolve(strict=False)
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
    """``path`` (inside the resolved ``root``) as a workspace-relative POSIX path, in the text
    form."""
    return name_text(path.relative_to(root).as_posix())


def read_inside(root: Path, relative: str, *, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``relative`` (in the text form, as :func:`scan` and
    :func:`clean_relative` give it) under the resolved ``root``, and its ``fstat``.

    Nothing on the way is followed: where the platform allows (Linux, macOS, the BSDs) the path is
    opened one folder at a time relative to the one before, each with ``O_NOFOLLOW``, so a link or
    a folder swapped in after :func:`scan` cannot redirect the read. Elsewhere (Windows) every
    component is checked to be no link or junction, the file is opened, and the opened file must be
    the one at that path (same file id) whose real path is still inside ``root``. The file is opened
    non-blocking, so a FIFO put in its place cannot stall the read; only regular files up to
    ``max_bytes`` are read, and only files with one name (no hard link: see the module docstring).
    Raises :class:`DocumentError` (with the reason) or ``OSError``.
    """
    parts = disk_name(relative).split("/")
    descriptor = _open_walking(root, parts) if _WALK_BY_FOLDER else _open_checked(root, parts)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(f"{relative} is not a regular file any more")
        if info.st_nlink > 1:
            raise DocumentError(
                f"{relative} has {info.st_nlink} names (hard links), and the others may lie "
                "outside the workspace: it is not read (copy it into the workspace instead)"
            )
        if info.st_size > max_bytes:
            raise DocumentError(
                f"{relative} is larger than the {size_limit_words(max_bytes)} limit"
            )
        chunks = []
        left = info.st_size + 1  # one byte more tells a file still growing
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise DocumentError(
                f"{relative} is larger than the {size_limit_words(max_bytes)} limit"
            )
        return data, info
    finally:
        os.close(descriptor)


_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_walking(root: Path, parts: list[str]) -> int:
    folder = os.open(root, _FOLDER_FLAGS)
    try:
        for part in parts[:-1]:
            inner = _open_at(folder, part, _FOLDER_FLAGS)
            os.close(folder)
            folder = inner
        return _open_at(folder, parts[-1], _READ_FLAGS)
    finally:
        os.close(folder)


def _open_at(folder: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags | _NO_FOLLOW, dir_fd=folder)
    except OSError as error:
        # A link refused by O_NOFOLLOW: ELOOP on Linux and macOS, EMLINK on FreeBSD, and ENOTDIR
        # when a folder was asked for (O_DIRECTORY is checked first).
        if error.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR) and _is_link_at(folder, name):
            shown = name_text(name)
            raise DocumentError(f"{shown} is a link, and links are not followed") from error
        raise


def _is_link_at(folder: int, name: str) -> bool:
    try:
        return is_link(os.stat(name, dir_fd=folder, follow_symlinks=False))
    except OSError:
        return False


def _open_checked(root: Path, parts: list[str]) -> int:
    path = root
    for part in parts:
        path = path / part
        if is_link(os.lstat(path)):
            raise DocumentError(f"{name_text(part)} is a link, and links are not followed")
    descriptor = os.open(path, _READ_FLAGS)
    if not _still_at(descriptor, path, root):
        os.close(descriptor)
        raise DocumentError(f"{name_text('/'.join(parts))} changed while it was opened")
    return descriptor


def _still_at(descriptor: int, path: Path, root: Path) -> bool:
    """The open file is the one now at ``path``, which is no link and really inside ``root``."""
    try:
        opened, named = os.fstat(descriptor), os.lstat(path)
        real = Path(os.path.realpath(path))
    except OSError:
        return False
    same = (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)
    return same and not is_link(named) and real.is_relative_to(root)
