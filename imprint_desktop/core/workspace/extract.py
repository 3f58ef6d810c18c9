"""Turning a file's bytes into text with a title, line by line.

Every format ends up as plain lines, so passages, line ranges and ``read_document`` agree on what
"line 12" means whatever the file was. Markdown, reStructuredText, plain text and source files are
decoded as they are; HTML goes through Beautiful Soup over lxml (a real parser: tags, entities and
scripts are handled properly, which regular expressions do not; and in linear time); PDF text is
taken page by page with pypdf, and the line where each page starts is kept so citations can name
the page.

Decoding never fails: UTF-8 (with or without a byte-order mark), UTF-16 with a mark, then
Windows-1252, then Latin-1, which accepts any byte. A file that is binary after all, or that a
parser cannot read, raises :class:`DocumentError`; the index reports it and carries on.
"""

from __future__ import annotations

import codecs
import enum
import io
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from imprint_desktop.core.errors import DocumentError
from imprint_desktop.core.workspace.html import html_page
from imprint_desktop.core.workspace.passages import atx_heading

log = logging.getLogger(__name__)

#: Bumped when extraction or passage splitting changes, so existing indexes are rebuilt.
EXTRACTOR_VERSION = 1


class Format(enum.StrEnum):
    MARKDOWN = "markdown"
    RST = "rst"
    TEXT = "text"
    HTML = "html"
    PDF = "pdf"
    CODE = "code"


_BY_SUFFIX: dict[str, Format] = {
    **dict.fromkeys((".md", ".markdown", ".mdown", ".mkd"), Format.MARKDOWN),
    **dict.fromkeys((".rst", ".rest"), Format.RST),
    **dict.fromkeys((".txt", ".text", ".org", ".adoc", ".asciidoc", ".tex", ".log"), Format.TEXT),
    **dict.fromkeys((".html", ".htm", ".xhtml"), Format.HTML),
    ".pdf": Format.PDF,
}

#: Suffixes that are never text: skipped without being opened.
_BINARY_SUFFIX_LIST = """.png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .icns .heic .psd .svgz
    .mp3 .wav .flac .ogg .m4a .aac .mp4 .mkv .mov .avi .webm .wmv
    .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .whl .egg .deb .rpm .dmg .iso .img .apk
    .exe .dll .so .dylib .o .a .lib .obj .class .pyc .pyo .pyd .wasm .bin .dat
    .gguf .safetensors .pt .pth .onnx .ckpt .npy .npz .pkl .pickle .parquet .feather .h5 .hdf5
    .sqlite .sqlite3 .db .mdb .accdb .woff .woff2 .ttf .otf .eot
    .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub .mobi"""
BINARY_SUFFIXES = frozenset(_BINARY_SUFFIX_LIST.split())

_SNIFF_BYTES = 8192
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document as text: its title, its lines, and (for PDFs) the first line of each page."""

    title: str
    lines: tuple[str, ...]
    page_starts: tuple[int, ...] = ()  # 1-based line numbers; empty when there are no pages
    encoding: str = "utf-8"

    def page_of(self, line: int) -> int | None:
        """The 1-based page holding ``line``, or None for documents without pages."""
        page = None
        for number, start in enumerate(self.page_starts, start=1):
            if start > line:
                break
            page = number
        return page


def format_for(name: str) -> Format:
    """The format a file name suggests; unknown suffixes are tried as code/text."""
    return _BY_SUFFIX.get(PurePosixPath(name).suffix.lower(), Format.CODE)


def looks_binary(data: bytes) -> bool:
    """NUL bytes in the first few kilobytes mean binary, unless a UTF-16 mark explains them."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in data[:_SNIFF_BYTES]


def decode(data: bytes) -> tuple[str, str]:
    """``data`` as text and the encoding used; never fails (Latin-1 takes any byte)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace"), "utf-8"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace"), "utf-16"
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1"), "latin-1"


def split_lines(text: str) -> tuple[str, ...]:
    """Lines as an editor counts them: only CR, LF and CRLF end a line; control characters go."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROL.sub("", text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(line.rstrip() for line in lines)


def extract(name: str, data: bytes) -> Extracted:
    """The text of a file called ``name`` (for its suffix) whose content is ``data``.

    Raises :class:`DocumentError` for binary content and for files a parser cannot read.
    """
    fmt = format_for(name)
    stem = PurePosixPath(name).stem or PurePosixPath(name).name
    if fmt is Format.PDF:
        return _pdf(data, stem)
    if looks_binary(data):
        raise DocumentError(f"{name} looks like a binary file, not text.")
    text, encoding = decode(data)
    if fmt is Format.HTML:
        title, body = html_page(text)
        return Extracted(title or stem, split_lines(body), (), encoding)
    lines = split_lines(text)
    if fmt is Format.MARKDOWN:
        title = _markdown_title(lines)
    elif fmt is Format.RST:
        title = _rst_title(lines)
    else:
        title = None
    return Extracted(title or stem, lines, (), encoding)


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


def _pdf(data: bytes, stem: str) -> Extracted:
    # Imported here: pypdf takes a noticeable moment to import and most workspaces have few PDFs.
    from pypdf import PdfReader  # noqa: PLC0415

    lines: list[str] = []
    page_starts: list[int] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")
        pages = [] if locked else list(reader.pages)
        title = None if locked else _pdf_title(reader)
    except Exception as error:  # a damaged PDF can fail in any part of the parser
        raise DocumentError(f"The PDF cannot be read ({error}).") from error
    if locked:
        raise DocumentError("The PDF is encrypted with a password.")
    unreadable = 0
    for page in pages:
        page_starts.append(len(lines) + 1)
        try:
            text = page.extract_text() or ""
        except Exception as error:  # one bad page must not cost the others
            log.debug("PDF page %d unreadable: %s", len(page_starts), error)
            unreadable += 1
            text = ""
        page_lines = split_lines(text)
        lines.extend(page_lines or ("",))
    if pages and unreadable == len(pages):
        raise DocumentError("No page of the PDF could be read.")
    first_line = next((line.strip() for line in lines if line.strip()), "")
    return Extracted(title or first_line[:120] or stem, tuple(lines), tuple(page_starts), "pdf")


def _pdf_title(reader: object) -> str | None:
    try:
        metadata = getattr(reader, "metadata", None)
        title = getattr(metadata, "title", None) if metadata is not None else None
    except Exception:  # broken metadata is common and harmless
        return None
    if isinstance(title, str) and title.strip() and title.strip().lower() not in ("untitled",):
        return title.strip()
    return None
