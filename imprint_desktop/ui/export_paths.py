"""Where an export is offered to be saved: named after what it holds, where the person keeps files.

Three kinds of file leave the window — a conversation as Markdown, a reply's research record as an
HTML report, a reply's trace — and each is offered under a name made from its conversation's title
or its question (:func:`file_name`: safe on every system), in the folder the person last saved that
kind to, or their Documents folder the first time (:func:`suggested_path`). Both are pure functions;
:func:`ask_save_path` puts them in front of the file dialog and remembers the folder chosen, per
kind, in the window's own state file (``window.ini`` in the data folder, beside its geometry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtWidgets import QFileDialog, QWidget

from imprint_desktop.core import paths

#: The longest stem offered, in characters and in UTF-8 bytes (file systems count bytes: 255).
MAX_STEM_CHARACTERS = 80
MAX_STEM_BYTES = 160


@dataclass(frozen=True, slots=True)
class ExportKind:
    """A kind of file the window exports."""

    name: str  # where the folder last used for it is remembered
    caption: str
    filter: str
    addition: str  # what its name adds to the title
    suffix: str
    fallback: str  # its name when there is no title

    @property
    def key(self) -> str:
        return f"exports/{self.name}_folder"


CONVERSATION = ExportKind(
    "conversation", "Export conversation", "Markdown (*.md)", "", ".md", "conversation"
)
REPORT = ExportKind(
    "report", "Export report", "HTML (*.html)", " - research record", ".html", "research-record"
)
TRACE = ExportKind(
    "trace", "Save trace", "JSON Lines (*.jsonl)", " - trace", ".jsonl", "imprint-trace"
)


#: What Windows refuses in a name (and "/" everywhere), control characters included.
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')
_SPACES = re.compile(r"\s+")
#: Names Windows reserves for devices, whatever follows the dot ("con.md" is CON too).
_RESERVED = frozenset(
    ("CON", "PRN", "AUX", "NUL", *(f"{port}{n}" for port in ("COM", "LPT") for n in range(1, 10)))
)


def file_name(title: str, kind: ExportKind) -> str:
    """A file name for ``kind`` made from ``title``: no path separators or characters a system
    refuses, no name Windows reserves, no leading dot (a hidden file) or trailing dot and space
    (which Windows drops), the stem cut at a word to :data:`MAX_STEM_CHARACTERS`; the kind's own
    name when nothing is left."""
    stem = _SPACES.sub(" ", _UNSAFE.sub(" ", title)).strip(" .")
    stem = _cut(stem).strip(" .")
    if not stem:
        return kind.fallback + kind.suffix
    if stem.split(".", 1)[0].strip().upper() in _RESERVED:
        stem = f"{stem} ({kind.fallback})"
    return stem + kind.addition + kind.suffix


def _cut(stem: str) -> str:
    if len(stem) <= MAX_STEM_CHARACTERS and len(stem.encode()) <= MAX_STEM_BYTES:
        return stem
    cut = stem[:MAX_STEM_CHARACTERS]
    while len(cut.encode()) > MAX_STEM_BYTES:
        cut = cut[:-1]
    word = cut.rsplit(" ", 1)[0]
    return word if len(word) >= len(cut) // 2 else cut


def suggested_path(kind: ExportKind, title: str, last_folder: str, documents: str) -> Path:
    """Where the save dialog for ``kind`` opens: :func:`file_name` in ``last_folder`` (the folder
    this kind was last saved to) while it exists, else in ``documents`` (the person's Documents
    folder) while that exists, else in their home folder."""
    for folder in (last_folder, documents):
        if folder and Path(folder).is_dir():
            return Path(folder) / file_name(title, kind)
    return Path.home() / file_name(title, kind)


def documents_folder() -> str:
    """The person's Documents folder as the platform names it ("" when it names none)."""
    return QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)


def _state() -> QSettings:
    return QSettings(str(paths.data_dir() / "window.ini"), QSettings.Format.IniFormat)


def ask_save_path(parent: QWidget, kind: ExportKind, title: str) -> Path | None:
    """Ask where to save a file of ``kind`` named after ``title`` (see the module's docstring);
    the path chosen, its folder remembered for the next time, or None when the person cancels."""
    state = _state()
    last = state.value(kind.key, "")
    offered = suggested_path(kind, title, str(last or ""), documents_folder())
    chosen, _filter = QFileDialog.getSaveFileName(parent, kind.caption, str(offered), kind.filter)
    if not chosen:
        return None
    path = Path(chosen)
    state.setValue(kind.key, str(path.parent))
    state.sync()
    return path
