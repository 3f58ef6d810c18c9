"""PDFs with a known sentence on a known page, and page renderers that misbehave.

The renderers stand in for :func:`~imprint_desktop.core.workspace.formats.pdf_page.render_page`
inside the worker process (``ExtractionLimits.renderer``; the worker imports them by name).
"""

from __future__ import annotations

import threading
from pathlib import Path

from imprint_desktop.core.workspace.formats.pdf_page import PageRequest, RenderedPage

#: The sentence :func:`two_page_pdf` puts on its second page.
SENTENCE = "The keeper logged a cormorant nesting under the gallery rail in March."


def two_page_pdf(path: Path) -> Path:
    """A real PDF (fpdf2) of two pages and more, :data:`SENTENCE` near the top of page 2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Gannet Point")
    pdf.set_font("Helvetica", "", 11)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Gannet Point light station, its first page.", new_x="LMARGIN")
    for number in range(30):
        pdf.multi_cell(0, 6, f"Line {number} of the station's history.", new_x="LMARGIN")
    pdf.add_page()
    pdf.multi_cell(0, 6, "The second page begins with the log.", new_x="LMARGIN")
    pdf.multi_cell(0, 6, SENTENCE + " The relief boat came twice that spring.", new_x="LMARGIN")
    for number in range(10):
        pdf.multi_cell(0, 6, f"Entry {number} of the spring log.", new_x="LMARGIN")
    pdf.add_page()
    pdf.multi_cell(0, 6, "The third page holds the accounts.", new_x="LMARGIN")
    pdf.output(str(path))
    return path


def huge_page_pdf(path: Path) -> Path:
    """A PDF whose one page is 200 inches square, the largest a PDF may declare."""
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format=(14_400, 14_400))
    pdf.set_font("Helvetica", "", 11)
    pdf.add_page()
    pdf.cell(text=SENTENCE)
    pdf.output(str(path))
    return path


def hanging_renderer(data: bytes, request: PageRequest) -> RenderedPage:
    """Never returns (as PDFium stuck on a page's content would)."""
    threading.Event().wait()
    raise AssertionError("unreachable")
