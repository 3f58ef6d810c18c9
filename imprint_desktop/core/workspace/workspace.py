"""One workspace as the tools see it: a resolved root, its index, and guarded file access.

Reading a document for a tool follows the index's rules: no link is followed
(:func:`~.files.read_inside`), a PDF is parsed in a worker process under the same limits (the index
and the workspace both leave that choice to :class:`~.reader.DocumentReader`; the workspace keeps
one, whose worker starts at the first PDF read and stops with :meth:`Workspace.close`), and a file
the index skipped (and that has not changed since) is refused with the recorded reason rather than
parsed again. A document read before and unchanged since is not parsed again either: the reader
keeps its text under the file's stamp.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from imprint_desktop.core.chosen import embedder_file
from imprint_desktop.core.config import WorkspaceConfig
from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES, Extracted
from imprint_desktop.core.workspace.files import read_inside, relative_posix, resolve_inside
from imprint_desktop.core.workspace.index import DEFAULT_MAX_FILE_BYTES, WorkspaceIndex
from imprint_desktop.core.workspace.isolation import DEFAULT_LIMITS, ExtractionLimits, Stop
from imprint_desktop.core.workspace.reader import DocumentReader, FileStamp

#: The settings' default (``workspace.notes_folder``), also where notes go when it is empty. The
#: app opens a workspace with :meth:`Workspace.from_config`; the constructor's defaults serve the
#: tests and benches that open one without settings (a test keeps them equal to the schema's).
DEFAULT_NOTES_FOLDER = "notes"


class Workspace:
    """The folder at ``root`` with its index; every path a tool passes goes through :meth:`resolve`.

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
    ) -> None:
        self.index = WorkspaceIndex(
            root,
            db_path=db_path,
            max_file_bytes=max_file_bytes,
            extraction=extraction,
            embedder=embedder,
        )
        self.root = self.index.root
        self.notes_folder = notes_folder or DEFAULT_NOTES_FOLDER
        self.max_file_bytes = max_file_bytes
        self._reader = DocumentReader(extraction)

    @classmethod
    def from_config(
        cls, root: Path, settings: WorkspaceConfig, *, db_path: Path | None = None
    ) -> Workspace:
        """The workspace at ``root`` as the ``workspace.*`` settings configure it."""
        return cls(
            root,
            notes_folder=settings.notes_folder,
            max_file_bytes=settings.max_file_mb * 2**20,
            db_path=db_path,
            embedder=embedder_file(settings.embedder),
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
        self.index.close()

    def resolve(self, user_path: str) -> Path:
        """The real path for a workspace-relative ``user_path``; refuses anything leading out."""
        return resolve_inside(self.root, user_path)

    def relative(self, path: Path) -> str:
        return relative_posix(self.root, path)

    def read(self, user_path: str, cancel: Stop | None = None) -> tuple[str, Extracted]:
        """The workspace-relative path and the text of one document.

        Raises :class:`PathOutsideWorkspaceError` for paths leading out, :class:`DocumentError`
        for missing, oversized, binary, unreadable or skipped files, and
        :class:`~imprint_desktop.core.errors.Cancelled` when ``cancel`` stops a PDF being parsed.
        """
        path = self.resolve(user_path)
        relative = self.relative(path)
        if not path.is_file():
            hint = "it is a folder" if path.is_dir() else "no such file"
            raise DocumentError(
                f"{relative} is not a document ({hint}); list_documents shows what there is."
            )
        if PurePosixPath(path.name).suffix.lower() in BINARY_SUFFIXES:
            raise DocumentError(f"{relative} is a binary file, not a text document.")
        try:
            data, info = read_inside(self.root, relative, max_bytes=self.max_file_bytes)
        except OSError as error:
            raise DocumentError(f"{relative} cannot be read: {error.strerror}.") from error
        skipped = self.index.skipped_reason(relative, info.st_size, info.st_mtime_ns)
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
