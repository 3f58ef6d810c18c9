"""Turning a file's bytes into text with a title, line by line.

Every format ends up as an :class:`~.formats.text.Extracted` (titled lines, with pages and named
places), so passages, line ranges and ``read_document`` agree on what "line 12" means whatever the
file was. Markdown, reStructuredText, plain text and source files are decoded as they are; HTML
goes through Beautiful Soup over lxml (a real parser, linear in time); every other format is read
by a well-kept library made for it
(:mod:`.formats`): PDF with pypdfium2, Word, PowerPoint and Excel with python-docx, python-pptx and
openpyxl, OpenDocument with odfpy, EPUB with ebooklib, RTF with striprtf, and page images with
tesseract where OCR is on. Those run in the reader worker (:mod:`.isolation`), never here.

Decoding never fails: UTF-8 (with or without a byte-order mark), UTF-16 with a mark, then
Windows-1252, then Latin-1, which accepts any byte. A file that is binary after all, or that a
parser cannot read, raises :class:`DocumentError`; the index reports it and carries on. Each
document also gets the dates it gives itself, in its text or its properties (:mod:`.dating`).

No document gives more than ``max_chars`` of text (``workspace.max_text_mb``): the library readers
stop generating there (:class:`~.formats.text.LineWriter`), text files are cut there, and either
says so in the document's ``gaps`` (read only in part). A document read by a library that holds
no text at all says so too ("no text was found in it"): a file is never indexed as silently empty.
"""

from __future__ import annotations

import codecs
import dataclasses
import enum
import importlib
import logging
import re
import warnings
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import cast

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace import dating, formats
from imprint_desktop.core.workspace.formats.text import (
    MAX_CHARS,
    MAX_LINES,
    Extracted,
    Place,
    decode,
    split_lines,
    text_size,
)
from imprint_desktop.core.workspace.passages import atx_heading

__all__ = ["Extracted", "Place", "decode", "split_lines"]

log = logging.getLogger(__name__)

#: Bumped when extraction or passage splitting changes, so existing indexes are rebuilt.
EXTRACTOR_VERSION = 3


class Format(enum.StrEnum):
    MARKDOWN = "markdown"
    RST = "rst"
    TEXT = "text"
    HTML = "html"
    PDF = "pdf"
    CODE = "code"
    DOCX = "docx"
    XLSX = "xlsx"
    PPTX = "pptx"
    ODT = "odt"
    ODS = "ods"
    ODP = "odp"
    EPUB = "epub"
    RTF = "rtf"
    IMAGE = "image"


_BY_SUFFIX: dict[str, Format] = {
    **dict.fromkeys((".md", ".markdown", ".mdown", ".mkd"), Format.MARKDOWN),
    **dict.fromkeys((".rst", ".rest"), Format.RST),
    **dict.fromkeys((".txt", ".text", ".org", ".adoc", ".asciidoc", ".tex", ".log"), Format.TEXT),
    **dict.fromkeys((".html", ".htm", ".xhtml"), Format.HTML),
    ".pdf": Format.PDF,
    **dict.fromkeys((".docx", ".docm"), Format.DOCX),
    **dict.fromkeys((".xlsx", ".xlsm"), Format.XLSX),
    **dict.fromkeys((".pptx", ".pptm"), Format.PPTX),
    ".odt": Format.ODT,
    ".ods": Format.ODS,
    ".odp": Format.ODP,
    ".epub": Format.EPUB,
    ".rtf": Format.RTF,
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp"), Format.IMAGE),
}

#: What a person calls a file of each format a library reads, for the reasons given about it.
KINDS: dict[Format, str] = {
    Format.PDF: "a PDF",
    Format.DOCX: "a Word document",
    Format.XLSX: "an Excel workbook",
    Format.PPTX: "a PowerPoint presentation",
    Format.ODT: "an OpenDocument text",
    Format.ODS: "an OpenDocument spreadsheet",
    Format.ODP: "an OpenDocument presentation",
    Format.EPUB: "an EPUB book",
    Format.RTF: "an RTF document",
    Format.IMAGE: "an image",
}

#: Formats parsed by a library that may take long, need much memory or crash: read in the worker.
ISOLATED = frozenset(Format) - {
    Format.MARKDOWN,
    Format.RST,
    Format.TEXT,
    Format.HTML,
    Format.CODE,
}

#: Suffixes that are never text: skipped without being opened.
_BINARY_SUFFIX_LIST = """.gif .ico .icns .heic .psd .svgz
    .mp3 .wav .flac .ogg .m4a .aac .mp4 .mkv .mov .avi .webm .wmv
    .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .whl .egg .deb .rpm .dmg .iso .img .apk
    .exe .dll .so .dylib .o .a .lib .obj .class .pyc .pyo .pyd .wasm .bin .dat
    .gguf .safetensors .pt .pth .onnx .ckpt .npy .npz .pkl .pickle .parquet .feather .h5 .hdf5
    .sqlite .sqlite3 .db .mdb .accdb .woff .woff2 .ttf .otf .eot
    .doc .xls .ppt .mobi"""
BINARY_SUFFIXES = frozenset(_BINARY_SUFFIX_LIST.split())

_SNIFF_BYTES = 8192
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def format_for(name: str) -> Format:
    """The format a file name suggests; unknown suffixes are tried as code/text."""
    return _BY_SUFFIX.get(PurePosixPath(name).suffix.lower(), Format.CODE)


def looks_binary(data: bytes) -> bool:
    """NUL bytes in the first few kilobytes mean binary, unless a UTF-16 mark explains them."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in data[:_SNIFF_BYTES]


def extract(name: str, data: bytes, max_chars: int = MAX_CHARS) -> Extracted:
    """The text of a file called ``name`` (for its suffix) whose content is ``data``, at most
    ``max_chars`` of it.

    Raises :class:`DocumentError` for binary content and for files a parser cannot read.
    """
    fmt = format_for(name)
    stem = PurePosixPath(name).stem or PurePosixPath(name).name
    reader = _reader(fmt)
    if reader is not None:
        with warnings.catch_warnings():
            # The libraries warn about oddities of the files they read (a missing default style,
            # a huge image); the file is read all the same, and a reason is what the index keeps.
            warnings.simplefilter("ignore")
            document = reader(data, stem, max_chars)
        if not document.gaps and not document.has_text:
            document = _with_gaps(document, "no text was found in it")
        return _dated(document)
    if looks_binary(data):
        raise DocumentError(f"{name} looks like a binary file, not text.")
    text, encoding = decode(data)
    if fmt is Format.HTML:
        from imprint_desktop.core.workspace.html import html_page  # noqa: PLC0415 - see _READERS

        title, body = html_page(text)
        lines, cut = bounded(split_lines(body), max_chars)
        return _dated(Extracted(title or stem, lines, (), encoding, gaps=cut))
    lines, cut = bounded(split_lines(text), max_chars)
    if fmt is Format.MARKDOWN:
        title = _markdown_title(lines)
    elif fmt is Format.RST:
        title = _rst_title(lines)
    else:
        title = None
    return _dated(Extracted(title or stem, lines, (), encoding, gaps=cut))


def bounded(lines: tuple[str, ...], max_chars: int) -> tuple[tuple[str, ...], str]:
    """``lines`` cut to at most ``max_chars`` of text (a line break counted as a character) and
    :data:`~.formats.text.MAX_LINES` lines, and why they were cut ("" when they were not).

    For text read in this process, whose size the file's own limit (``workspace.max_file_mb``)
    already bounds, and for a worker's answer, which must not hold more than it was asked for.
    """
    size = 0
    for count, line in enumerate(lines):
        size += len(line) + 1
        if size > max_chars:
            return lines[:count], (
                f"it holds more text than the {text_size(max_chars)} one document may give "
                "(workspace.max_text_mb), so only its beginning was read"
            )
        if count >= MAX_LINES:
            return lines[:count], f"only its first {MAX_LINES:,} lines were read"
    return lines, ""


def _with_gaps(document: Extracted, gaps: str) -> Extracted:
    return dataclasses.replace(document, gaps=gaps)


def _dated(document: Extracted) -> Extracted:
    """``document`` with the dates it gives itself — in its text, and the reader's from its
    properties — best first (:mod:`.dating`); which one it is dated by is chosen when the file's
    own timestamps are known (:func:`.dating.chosen`)."""
    dates = dating.ranked((*dating.stated_dates(document.lines), *document.dates))
    if dates == document.dates:
        return document
    return dataclasses.replace(document, dates=dates)


#: The reader of each format a library reads: its module under ``formats`` and its function (with
#: the OpenDocument kind). Imported when a file of the format is read — in the reader worker —
#: so opening or searching the index loads none of the libraries.
_READERS: dict[Format, tuple[str, str, str]] = {
    Format.PDF: ("pdf", "read_pdf", ""),
    Format.DOCX: ("office", "read_docx", ""),
    Format.XLSX: ("office", "read_xlsx", ""),
    Format.PPTX: ("office", "read_pptx", ""),
    Format.ODT: ("opendocument", "read_opendocument", "odt"),
    Format.ODS: ("opendocument", "read_opendocument", "ods"),
    Format.ODP: ("opendocument", "read_opendocument", "odp"),
    Format.EPUB: ("books", "read_epub", ""),
    Format.RTF: ("books", "read_rtf", ""),
    Format.IMAGE: ("pdf", "read_image", ""),
}


def _reader(fmt: Format) -> Callable[[bytes, str, int], Extracted] | None:
    found = _READERS.get(fmt)
    if found is None:
        return None
    module, name, kind = found
    function = getattr(importlib.import_module(f"{formats.__name__}.{module}"), name)
    if kind:
        return lambda data, stem, max_chars: cast(Extracted, function(data, stem, kind, max_chars))
    return cast(Callable[[bytes, str, int], Extracted], function)


def _markdown_title(lines: tuple[str, ...]) -> str | None:
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        for number, line in enumerate(lines[1:40], start=1):
            if line.strip() in ("---", "..."):
                start = number + 1
                break
            key, _, value = line.partition(":")
            if key.strip().lower() == "title" and value.strip():
                return value.strip().strip("\"'")
    for index in range(start, min(len(lines), start + 200)):
        line = lines[index]
        heading = atx_heading(line, indent=0)
        if heading is not None:
            return heading
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and following.startswith("=") and not following.strip().strip("="):
            return line.strip()
    return None


def _rst_title(lines: tuple[str, ...]) -> str | None:
    for index in range(min(len(lines) - 1, 200)):
        line, under = lines[index].strip(), lines[index + 1].strip()
        if (
            line
            and len(under) >= len(line)
            and len(set(under)) == 1
            and under[0] in "=-~^*#+`'\":._"
            and not set(line) <= set(under)
        ):
            return line
    return None
