"""Benchmark of reading one document again (issue 28): ``read_document`` on a 50-page PDF.

The model reads a long document a range of lines at a time, so the same file is read again and
again. Builds a 50-page PDF from the pages of the sample workspace's report (pypdf writes it), and
reads it through :meth:`Workspace.read` as the tool does: the first read parses it in the isolated
PDF worker (already started by another PDF, so starting it is not counted), the second finds the
text kept for the unchanged file. Repeated ``--runs`` times with a fresh copy of the file each time;
medians. Target: the second read at least 10x faster than the first. Exits 1 when missed.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from imprint_desktop.core.workspace import Workspace  # noqa: E402

TARGET_RATIO = 10.0
SAMPLE_PDF = ROOT / "resources" / "sample-workspace" / "reports" / "annual-report-1998.pdf"


def long_pdf(pages: int, copy: int) -> bytes:
    """A real PDF of ``pages`` pages, the sample report's pages over and over; ``copy`` makes the
    bytes of each copy differ."""
    from pypdf import PdfReader, PdfWriter  # noqa: PLC0415

    source = PdfReader(SAMPLE_PDF)
    writer = PdfWriter()
    while len(writer.pages) < pages:
        for page in source.pages:
            if len(writer.pages) < pages:
                writer.add_page(page)
    writer.add_metadata({"/Title": f"Fifty pages, copy {copy}"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="imprint-bench-read-"))
    firsts: list[float] = []
    seconds: list[float] = []
    try:
        root = scratch / "w"
        root.mkdir()
        shutil.copy(SAMPLE_PDF, root / "warm-up.pdf")
        with Workspace(root, db_path=scratch / "index.sqlite3") as workspace:
            workspace.read("warm-up.pdf")  # starts the PDF worker
            for copy in range(args.runs):
                name = f"long{copy}.pdf"
                (root / name).write_bytes(long_pdf(args.pages, copy))
                started = time.perf_counter()
                _, first = workspace.read(name)
                middle = time.perf_counter()
                _, again = workspace.read(name)
                ended = time.perf_counter()
                assert again == first and len(first.page_starts) == args.pages
                firsts.append(middle - started)
                seconds.append(ended - middle)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first, second = statistics.median(firsts), statistics.median(seconds)
    ratio = first / second
    print(
        f"read_document of a {args.pages}-page PDF, median of {args.runs}: first read "
        f"{first * 1000:.1f} ms, second read {second * 1000:.2f} ms = {ratio:.0f}x faster "
        f"(target >= {TARGET_RATIO:.0f}x)"
    )
    if ratio < TARGET_RATIO:
        print("MISSED: second read")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("IMPRINT_DATA_DIR", tempfile.gettempdir())
    sys.exit(main())
