"""One workspace as the tools see it: its folders, their indexes, and guarded file access.

A workspace is one folder or several (:mod:`.folders`): the first is :attr:`Workspace.root`, where
notes are written, and every folder has its own index. A path names its folder
(:func:`~.folders.folder_of`), and :meth:`Workspace.search`, :meth:`Workspace.documents` and
:meth:`Workspace.read` go to the folder a path leads to, or ask every folder and merge what they
say. :attr:`Workspace.standing` says, while the window's background indexing is behind the
folders, that the index is searched as it stands.

Reading a document for a tool follows the index's rules: no link is followed
(:func:`~.files.read_inside`), a PDF is parsed in a worker process under the same limits (the index
and the workspace both leave that choice to :class:`~.reader.DocumentReader`; the workspace keeps
one, whose worker starts at the first PDF read and stops with :meth:`Workspace.close`), and a file
the index skipped (and that has not changed since) is refused with the recorded reason rather than
parsed again. A document read before and unchanged since is not parsed again either: the reader
keeps its text under the file's stamp.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from imprint_desktop.core.chosen import embedder_file, workspace_folder
from imprint_desktop.core.config import WorkspaceConfig
from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES, Extracted
from imprint_desktop.core.workspace.files import (
    clean_relative,
    read_inside,
    relative_posix,
    resolve_inside,
)
from imprint_desktop.core.workspace.folders import (
    Folder,
    folder_lines,
    folder_of,
    named_folders,
    remember,
)
from imprint_desktop.core.workspace.index import DEFAULT_MAX_FILE_BYTES, WorkspaceIndex
from imprint_desktop.core.workspace.isolation import DEFAULT_LIMITS, ExtractionLimits, Stop
from imprint_desktop.core.workspace.reader import DocumentReader, FileStamp
from imprint_desktop.core.workspace.records import DocumentInfo, IndexProblem
from imprint_desktop.core.workspace.search import SearchHit, SearchMode

#: The settings' default (``workspace.notes_folder``), also where notes go when it is empty. The
#: app opens a workspace with :meth:`Workspace.from_config`; the constructor's defaults serve the
#: tests and benches that open one without settings (a test keeps them equal to the schema's).
DEFAULT_NOTES_FOLDER = "notes"


class Workspace:
    """The folder at ``root`` (and ``more_folders``) with their indexes; every path a tool passes
    goes through :meth:`resolve`.

    Thread-safe in the way the engine needs: reads and searches may come from any thread (blocking
    work runs in ``asyncio.to_thread``); index updates are serialised by the index itself.
    """

    def __init__(
        self,
        root: Path,
        *,
        notes_folder: str = DEFAULT_NOTES_FOLDER,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        db_path: Path | None = None,
        extraction: ExtractionLimits = DEFAULT_LIMITS,
        embedder: Path | None = None,
        more_folders: Sequence[Path] = (),
    ) -> None:
        #: The first folder's index (the only one of a one-folder workspace).
        self.index = WorkspaceIndex(
            root,
            db_path=db_path,
            max_file_bytes=max_file_bytes,
            extraction=extraction,
            embedder=embedder,
        )
        self.root = self.index.root
        folders, problems = named_folders(self.root, more_folders)
        remember(folders, self.index.db_path)
        #: Why a folder of ``more_folders`` was left out, a sentence each.
        self.folder_problems = problems
        #: Every folder with its index, the first folder first.
        self.indexes: tuple[tuple[Folder, WorkspaceIndex], ...] = (
            (folders[0], self.index),
            *(
                (
                    folder,
                    WorkspaceIndex(
                        folder.root,
                        max_file_bytes=max_file_bytes,
                        extraction=extraction,
                        embedder=embedder,
                    ),
                )
                for folder in folders[1:]
            ),
        )
        self.notes_folder = notes_folder or DEFAULT_NOTES_FOLDER
        self.max_file_bytes = max_file_bytes
        #: While background indexing is behind the folders: what a search tells the model of
        #: the index it searched ("" when the index is current). Set by whoever keeps the index
        #: current (the window's background indexing); a plain attribute, read whole.
        self.standing = ""
        self._reader = DocumentReader(extraction)

    @property
    def folders(self) -> tuple[Folder, ...]:
        return tuple(folder for folder, _ in self.indexes)

    @classmethod
    def from_config(
        cls, root: Path, settings: WorkspaceConfig, *, db_path: Path | None = None
    ) -> Workspace:
        """The workspace at ``root`` as the ``workspace.*`` settings configure it: with the
        folders of ``workspace.more_folders`` when ``root`` is the folder ``workspace.path``
        chooses (they belong to that workspace, not to a folder named for one command)."""
        chosen = workspace_folder(settings.path).expanduser().resolve()
        more = folder_lines(settings.more_folders) if root.expanduser().resolve() == chosen else []
        return cls(
            root,
            notes_folder=settings.notes_folder,
            max_file_bytes=settings.max_file_mb * 2**20,
            db_path=db_path,
            embedder=embedder_file(settings.embedder),
            more_folders=more,
            extraction=ExtractionLimits(
                ocr=settings.ocr,
                ocr_page_seconds=float(settings.ocr_page_seconds),
                max_text_chars=settings.max_text_mb * 2**20,
            ),
        )

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()
        for _, index in self.indexes:
            index.close()

    def locate(self, user_path: str) -> tuple[Folder, WorkspaceIndex, str]:
        """The folder ``user_path`` leads to, its index, and the clean path inside it ("" for
        the folder itself); refuses a path that leads out (:func:`~.files.clean_relative`)."""
        folder, inner = folder_of(self.folders, clean_relative(user_path))
        return folder, dict(self.indexes)[folder], inner

    def resolve(self, user_path: str) -> Path:
        """The real path for a workspace-relative ``user_path``; refuses anything leading out."""
        folder, _, inner = self.locate(user_path)
        return resolve_inside(folder.root, inner) if inner else folder.root

    def relative(self, path: Path) -> str:
        """The workspace path of ``path``, which is inside one of the folders."""
        for folder in reversed(self.folders):  # another folder before the first: never inside
            if path.is_relative_to(folder.root):
                return folder.path_of(relative_posix(folder.root, path))
        return relative_posix(self.root, path)  # raises: outside every folder

    def search(
        self, query: str, limit: int = 8, mode: SearchMode = SearchMode.HYBRID
    ) -> list[SearchHit]:
        """The best passages for ``query`` in every folder, best first
        (:meth:`WorkspaceIndex.search`). Each folder ranks its own; their scores are each
        scaled by the folder's best (:func:`~.search.fuse`), so the lists are merged by score,
        a folder's order kept."""
        if len(self.indexes) == 1:
            return self.index.search(query, limit, mode)
        merged: list[SearchHit] = []
        for folder, index in self.indexes:
            hits = index.search(query, limit, mode)
            merged.extend(dataclasses.replace(hit, path=folder.path_of(hit.path)) for hit in hits)
        merged.sort(key=lambda hit: -hit.score)
        return merged[:limit]

    def documents(self, prefix: str = "") -> list[DocumentInfo]:
        """The indexed documents under ``prefix`` (a clean workspace path; empty for all), by
        path, each folder's after the first's."""
        if not prefix:
            chosen = [(folder, index, "") for folder, index in self.indexes]
        else:
            folder, index, inner = self.locate(prefix)
            chosen = [(folder, index, inner)]
        found: list[DocumentInfo] = []
        for folder, index, inner in chosen:
            found.extend(
                dataclasses.replace(document, path=folder.path_of(document.path))
                for document in index.documents(inner)
            )
        return found

    def currency(self, path: str) -> str:
        """How the indexed document at ``path`` stands (:meth:`WorkspaceIndex.currency`)."""
        _, index, inner = self.locate(path)
        return index.currency(inner) if inner else ""

    def problems(self) -> list[IndexProblem]:
        """The files the folders' last updates skipped and why, by workspace path."""
        return [
            dataclasses.replace(problem, path=folder.path_of(problem.path))
            for folder, index in self.indexes
            for problem in index.problems()
        ]

    def read(self, user_path: str, cancel: Stop | None = None) -> tuple[str, Extracted]:
        """The workspace-relative path and the text of one document.

        Raises :class:`PathOutsideWorkspaceError` for paths leading out, :class:`DocumentError`
        for missing, oversized, binary, unreadable or skipped files, and
        :class:`~imprint_desktop.core.errors.Cancelled` when ``cancel`` stops a PDF being parsed.
        """
        folder, index, inner = self.locate(user_path)
        path = self.resolve(user_path)
        relative = folder.path_of(relative_posix(folder.root, path)) if inner else folder.name
        if not path.is_file():
            hint = "it is a folder" if path.is_dir() else "no such file"
            raise DocumentError(
                f"{relative} is not a document ({hint}); list_documents shows what there is."
            )
        if PurePosixPath(path.name).suffix.lower() in BINARY_SUFFIXES:
            raise DocumentError(f"{relative} is a binary file, not a text document.")
        try:
            inside = relative_posix(folder.root, path)
            data, info = read_inside(folder.root, inside, max_bytes=self.max_file_bytes)
        except OSError as error:
            raise DocumentError(f"{relative} cannot be read: {error.strerror}.") from error
        skipped = index.skipped_reason(inside, info.st_size, info.st_mtime_ns)
        if skipped is not None:
            raise DocumentError(
                f"{relative} was skipped when the workspace was indexed: {skipped}."
            )
        try:
            name = relative.rsplit("/", 1)[-1]  # in the text form: the title may be its stem
            return relative, self._reader.read(name, data, cancel, stamp=FileStamp.of(info))
        except DocumentError as error:
            if not self._reader.isolated(path.name):
                raise  # a sentence already
            # The worker's reason is a fragment ("reading it took longer than …"): name the file.
            raise DocumentError(f"{relative} cannot be read: {error}.") from error
