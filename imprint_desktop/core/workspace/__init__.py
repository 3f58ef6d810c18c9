"""A workspace: the person's folder of documents, its full-text index, and safe access to its files.

Pure Python (no Qt), shared by the research engine's tools, the GUI and ``imprint workspace``.
Each module owns one thing, and each uses only those below it:

* :mod:`.workspace` — a folder as the tools see it: paths kept inside it, one document read;
* :mod:`.index` — the index a workspace holds: opened, brought up to date, asked;
* :mod:`.update` — one update: what changed on disk, read, parsed and committed as it goes;
* :mod:`.search` — the query as words, and the best passages by BM25;
* :mod:`.vectors`, :mod:`.embedding` — the passages' vectors and the embedders that make them;
  :mod:`.vector_file` and :mod:`.word_tokens` keep what a search needs on disk (the vectors as
  one file, each word's tokens), so the next process starts its search at once;
* :mod:`.records` — the rows the index keeps of each file and its passages;
* :mod:`.database` — the schema, where the database lives, one connection per thread;
* :mod:`.reader` — where a document is parsed: PDF, Office, e-books, images in the isolated
  worker, text formats here;
* :mod:`.isolation` — the reader worker process and its time and memory limits;
* :mod:`.extract`, :mod:`.html` — a file's bytes as titled lines, each format read by its own
  library (:mod:`.formats`), with the date it states;
* :mod:`.dating` — which version is current: a document's date, and whether it looks superseded;
* :mod:`.passages` — lines cut into the passages that are indexed and cited;
* :mod:`.files` — which files belong to the workspace, read without following a link."""

from __future__ import annotations

from imprint_desktop.core.workspace.database import index_path_for
from imprint_desktop.core.workspace.extract import Extracted, Format, extract
from imprint_desktop.core.workspace.files import (
    clean_relative,
    disk_name,
    read_inside,
    resolve_inside,
)
from imprint_desktop.core.workspace.index import DEFAULT_MAX_FILE_BYTES, WorkspaceIndex
from imprint_desktop.core.workspace.isolation import ExtractionLimits
from imprint_desktop.core.workspace.records import (
    DocumentInfo,
    IndexProblem,
    problem_counts,
    problem_summary,
)
from imprint_desktop.core.workspace.search import SearchHit
from imprint_desktop.core.workspace.update import IndexProgress, IndexReport
from imprint_desktop.core.workspace.workspace import Workspace

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DocumentInfo",
    "Extracted",
    "ExtractionLimits",
    "Format",
    "IndexProblem",
    "IndexProgress",
    "IndexReport",
    "SearchHit",
    "Workspace",
    "WorkspaceIndex",
    "clean_relative",
    "disk_name",
    "extract",
    "index_path_for",
    "problem_counts",
    "problem_summary",
    "read_inside",
    "resolve_inside",
]
