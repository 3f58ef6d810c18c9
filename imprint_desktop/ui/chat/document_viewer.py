"""Imprint's own viewer for evidence: the cited source, scrolled to the cited lines.

A cited file is untrusted, and so is its name. Handing it to the system would *run* it when it is a
script or a shortcut — ``.cmd``, ``.js``, ``.vbs``, ``.lnk``, ``.desktop`` files are indexed as
text and can be cited — so evidence always opens here, as plain text, with the lines numbered the
way the index and ``read_document`` number them (Markdown as written, HTML as its text, a PDF as
its page text) and the cited lines highlighted. Only a document type on :data:`SYSTEM_SAFE` (PDF,
images, office formats that hold no macros) may go on to the system viewer, and only when the
person presses the button.

The file is read from the workspace the reply researched (stored with it), never the one chosen
now, the way the tools read one: the same path checks, opened without following a link
(:func:`~imprint_desktop.core.workspace.read_inside`), and parsed by a
:class:`~imprint_desktop.core.workspace.reader.DocumentReader` — a PDF in the isolated worker under
its time and memory limits, never in the window's process. Reading and extracting happen off the
GUI thread; when the file cannot be read (moved, too big, outside the workspace, a link, a reply
saved before Imprint kept its workspace), the viewer shows the excerpt saved with the evidence and
says why.

A PDF (or an image: a scan) opens at its page as it looks, in front of the text (the Page tab of
:class:`~.page_view.PageView`): drawn by the same isolated worker, the sentence the answer drew on
marked there (:func:`quoted_sentence`: of the excerpt's sentences, the one sharing most words with
the answer's sentences citing it), else the excerpt, else the cited lines on that page. Office files
and e-books keep the text view alone.

A line is laid out whole, so one of :data:`LINE_CHARS` characters at most is shown (a Markdown
note with an embedded image holds a megabyte of base64 on one line); the rest of it is replaced by
a note of how much is left out, and the numbering stays the document's.
"""

from __future__ import annotations

import bisect
import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QGuiApplication,
    QPalette,
    QTextBlockFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from imprint_desktop.ui.chat.numbered_text import NumberedText
from imprint_desktop.ui.chat.page_view import PageView
from imprint_desktop.ui.inert import is_web_link

if TYPE_CHECKING:
    from imprint_desktop.core.research import events as ev
    from imprint_desktop.core.workspace import Extracted
    from imprint_desktop.core.workspace.reader import DocumentReader

#: Types the system viewer may open: documents that run nothing (no scripts, no macros, no
#: shortcuts). Everything else — and any executable or script type — is shown only here.
SYSTEM_SAFE = frozenset(
    {
        *(".pdf", ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff"),
        *(".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub"),
    }
)
READ_POLL_MS = 20
#: The most of one line the viewer lays out.
LINE_CHARS = 4_000
_LINES = re.compile(r"lines?\s+(\d+)(?:\s*[-–]\s*(\d+))?")
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n\s*\n")
#: Words this short say little about which sentence is meant ("a", "of", "the").
_SHORT_WORD = 3


def cited_lines(location: str) -> tuple[int, int] | None:
    """``"lines 3-8"`` or ``"page 2, lines 10-14"`` → (3, 8) / (10, 14); None without lines."""
    match = _LINES.search(location)
    if match is None:
        return None
    first = int(match.group(1))
    return first, max(first, int(match.group(2) or first))


def sentences(text: str) -> list[str]:
    """``text`` cut after each full stop, question or exclamation mark, and at blank lines."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def citing_sentences(answer: str, number: int) -> list[str]:
    """The sentences of ``answer`` that cite ``[number]`` (alone or in a list: ``[1, 3]``)."""
    mark = re.compile(rf"\[(?:\d+\s*,\s*)*{number}(?:\s*,\s*\d+)*\]")
    return [sentence for sentence in sentences(answer) if mark.search(sentence)]


def quoted_sentence(excerpt: str, claims: list[str]) -> str:
    """The sentence of ``excerpt`` that the answer's ``claims`` (its sentences citing it) draw
    on: the one sharing the most of their words; "" when none shares any."""
    said = {word for claim in claims for word in _WORD.findall(claim.lower())}
    said = {word for word in said if len(word) >= _SHORT_WORD and not word.isdigit()}
    best, best_score = "", 0
    for sentence in sentences(excerpt):
        score = len(said & set(_WORD.findall(sentence.lower())))
        if score > best_score:
            best, best_score = sentence, score
    return best


def system_safe(name: str) -> bool:
    """May a file called ``name`` be handed to the system viewer? Only an allow-listed type."""
    return PurePosixPath(name.replace("\\", "/")).suffix.lower() in SYSTEM_SAFE


@dataclass(frozen=True, slots=True)
class SourceText:
    """A cited source as the viewer shows it: its lines, where pages start, and where it is."""

    lines: tuple[str, ...]
    highlight: tuple[int, int] | None  # 1-based lines, inclusive
    page_starts: tuple[int, ...] = ()
    title: str = ""
    path: Path | None = None  # the file, when it was read from the workspace
    note: str = ""  # what the person should know: the excerpt is shown instead, or it changed
    #: The file's bytes, kept for a document whose pages can be drawn (a PDF), else empty.
    data: bytes = b""

    def page_of(self, line: int) -> int:
        """The page (1-based) that line ``line`` is on; 1 for a document without pages."""
        return max(bisect.bisect_right(self.page_starts, line), 1)

    def cited_on_page(self) -> tuple[int, str]:
        """The page the highlight starts on, and the highlighted lines on it."""
        if self.highlight is None:
            return 1, ""
        first, last = self.highlight
        page = self.page_of(first)
        if page < len(self.page_starts):
            last = min(last, self.page_starts[page] - 1)
        return page, "\n".join(self.lines[first - 1 : last])


def excerpt_source(item: ev.EvidenceItemView, note: str) -> SourceText:
    """The excerpt saved with the evidence, all of it highlighted (it is what was cited)."""
    lines = tuple(item.excerpt.splitlines()) or ("",)
    return SourceText(lines, (1, len(lines)), note=note)


def shown_line(line: str) -> str:
    """``line`` as the viewer shows it: whole, or its first :data:`LINE_CHARS` characters and a
    note of how many more there are."""
    if len(line) <= LINE_CHARS:
        return line
    return f"{line[:LINE_CHARS]} … [{len(line) - LINE_CHARS:,} more characters on this line]"


def read_source(
    item: ev.EvidenceItemView,
    workspace: Path | None,
    max_bytes: int,
    reader: DocumentReader,
    stop: threading.Event | None = None,
) -> SourceText:
    """The document ``item`` cites, read from ``workspace`` (blocking: call off the GUI thread).

    Web pages and the person's answers are shown as saved; a workspace file is read through the
    tools' own path checks and extracted the way the index extracted it, so line n is the line n
    the citation names.
    """
    from imprint_desktop.core.errors import ImprintError  # noqa: PLC0415 - on the reading thread

    if is_web_link(QUrl(item.source)):
        return excerpt_source(item, f"A passage of the web page {item.source}, as it was read.")
    if item.source == "user":
        return excerpt_source(item, "Your answer to the model's question.")
    if workspace is None:
        return excerpt_source(
            item,
            "This reply was saved before Imprint kept the folder it researched, so the passage "
            "saved with it is shown.",
        )
    try:
        path, data, document = _workspace_file(workspace, item.source, max_bytes, reader, stop)
    except (ImprintError, OSError) as error:
        reason = str(error).rstrip(".")
        return excerpt_source(item, f"{reason}. The passage saved with the evidence is shown.")
    span = cited_lines(item.location)
    if span is not None and span[0] > len(document.lines):
        span = None
    note = ""
    if span is not None and not _contains(document.lines[span[0] - 1 : span[1]], item.excerpt):
        note = "The document has changed since it was cited: the highlighted lines may differ."
    kept = data if reader.drawable(path.name) else b""
    return SourceText(document.lines, span, document.page_starts, document.title, path, note, kept)


def _workspace_file(
    workspace: Path,
    source: str,
    max_bytes: int,
    reader: DocumentReader,
    stop: threading.Event | None,
) -> tuple[Path, bytes, Extracted]:
    """The cited file inside ``workspace``, its bytes and its text, or an error that says why
    not."""
    from imprint_desktop.core.errors import DocumentError  # noqa: PLC0415 - on the reading thread
    from imprint_desktop.core.workspace import disk_name, read_inside  # noqa: PLC0415
    from imprint_desktop.core.workspace.extract import BINARY_SUFFIXES  # noqa: PLC0415
    from imprint_desktop.core.workspace.folders import source_file  # noqa: PLC0415

    # The folder the path names (another folder of the workspace: "Reports/q1.md"); a path
    # leading out is refused.
    root, relative = source_file(workspace.resolve(), source)
    path = root / disk_name(relative)  # a name that is not UTF-8 is kept in its text form
    if path.suffix.lower() in BINARY_SUFFIXES:
        raise DocumentError(f"{source} is not a text document.")
    if not path.is_file():
        raise DocumentError(f"{source} is no longer in {root}.")
    # Opened one folder at a time without following a link (the index never follows one), the
    # size checked on the open file.
    data, _ = read_inside(root, relative, max_bytes=max_bytes)
    return path, data, reader.read(relative.rsplit("/", 1)[-1], data, stop)


def _contains(lines: tuple[str, ...], excerpt: str) -> bool:
    """Do ``lines`` still hold the words of ``excerpt`` (an excerpt may be shortened with …)?"""
    words = _WORD.findall(" ".join(lines).lower())
    wanted = _WORD.findall(excerpt.lower())[:40]
    text = " ".join(words)
    return not wanted or " ".join(wanted[: max(1, len(wanted) - 1)]) in text


class SourceViewer(QDialog):
    """One piece of evidence in its document, the cited lines highlighted and in view; a PDF
    also as its page, the quoted sentence marked there (:class:`~.page_view.PageView`), the
    text one tab away."""

    #: The source was read and is shown. Payload: the :class:`SourceText`.
    sig_loaded = Signal(object)

    def __init__(
        self,
        item: ev.EvidenceItemView,
        workspace: Path | None,
        *,
        max_bytes: int,
        reader: DocumentReader,
        stop: threading.Event | None = None,
        quoted: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.item = item
        #: The excerpt's sentence the answer drew on, marked on a PDF's page ("" when unknown).
        self.quoted = quoted
        self.source: SourceText | None = None
        self.page_view: PageView | None = None
        self._reader, self._stop = reader, stop
        self.setWindowTitle(item.source)
        self.setAccessibleName(f"Source {item.source}")
        self.resize(780, 620)
        self.heading = _plain_label(f"[{item.id}] {item.source} · {item.location}")
        self.heading.setObjectName("sourceHeading")
        bold = self.heading.font()
        bold.setBold(True)
        self.heading.setFont(bold)
        self.heading.setAccessibleName("Cited source")
        self.note = _plain_label("")
        self.note.setAccessibleName("About this source")
        self.note.hide()
        self.view = NumberedText()
        self.view.setObjectName("sourceText")
        self.view.setAccessibleName("Document text")
        self.view.setPlainText("Reading…")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self.system_button = QPushButton("Open in the &System Viewer")
        self.system_button.setAccessibleName("Open in the system viewer")
        self.system_button.clicked.connect(self._open_in_system)
        self.web_button = QPushButton("Open in Web &Browser")
        self.web_button.setAccessibleName("Open the web page in the browser")
        self.web_button.clicked.connect(self._open_in_browser)
        buttons.addButton(self.system_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.web_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.system_button.hide()  # (adding a button shows it) offered once the file is read
        self.web_button.setVisible(is_web_link(QUrl(item.source)))
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.note)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("sourceTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.setTabBarAutoHide(True)  # a document without pages has its text only
        self.tabs.addTab(self.view, "&Text")
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        self._reading: Future[SourceText] = Future()
        self._poll = QTimer(self)  # the reading thread touches no Qt object: the viewer asks it
        self._poll.setInterval(READ_POLL_MS)
        self._poll.timeout.connect(self._check_read)
        self._read(workspace, max_bytes, reader, stop)

    @property
    def loaded(self) -> bool:
        return self.source is not None

    def _read(
        self,
        workspace: Path | None,
        max_bytes: int,
        reader: DocumentReader,
        stop: threading.Event | None,
    ) -> None:
        """Read and extract on a thread (a PDF can take a while; ``stop`` ends its worker); the
        result is collected on the GUI thread by a timer, so a viewer closed meanwhile leaves
        nothing to call back."""
        item, reading = self.item, self._reading

        def read() -> None:
            try:
                text = read_source(item, workspace, max_bytes, reader, stop)
            except Exception as error:  # a parser can fail anywhere; the excerpt still shows
                text = excerpt_source(item, f"The document could not be read ({error}).")
            reading.set_result(text)

        threading.Thread(target=read, name="source-read", daemon=True).start()
        self._poll.start()

    @Slot()
    def _check_read(self) -> None:
        if self._reading.done():
            self._poll.stop()
            self._show(self._reading.result())

    def _show(self, source: SourceText) -> None:
        self.source = source
        self.view.page_starts = source.page_starts
        self.view.setPlainText("\n".join(map(shown_line, source.lines)))
        self.note.setText(source.note)
        self.note.setVisible(bool(source.note))
        if source.title and source.title != self.item.source:
            self.heading.setText(f"{self.heading.text()} — {source.title}")
        self.system_button.setVisible(source.path is not None and system_safe(source.path.name))
        if source.highlight is not None:
            self._highlight(*source.highlight)
        self.view.setFocus()
        if source.data and source.path is not None:
            self._show_page(source, source.path.name)
        self.sig_loaded.emit(source)

    def _show_page(self, source: SourceText, name: str) -> None:
        """Add the Page tab, in front: the cited page drawn, the quoted sentence marked (the
        sentence the answer drew on, else the excerpt, else the cited lines on that page: the
        first of them the page holds)."""
        page, cited = source.cited_on_page()
        sentences = tuple(text for text in (self.quoted, self.item.excerpt, cited) if text.strip())
        self.page_view = PageView(
            self._reader,
            name,
            source.data,
            page=page,
            sentences=sentences,
            page_count=len(source.page_starts),
            stop=self._stop,
        )
        self.tabs.insertTab(0, self.page_view, "&Page")
        self.tabs.setCurrentIndex(0)
        self.page_view.setFocus()
        self.page_view.start()

    def _highlight(self, first: int, last: int) -> None:
        """Shade the cited lines across the whole width (wrapped lines too) and bring them into
        view: a short passage centred whole, a long one from its first line."""
        document = self.view.document()
        shade = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        shade.setAlpha(60)
        marked = QTextBlockFormat()
        marked.setBackground(shade)
        edit = QTextCursor(document)
        edit.beginEditBlock()
        for number in range(first - 1, min(last, document.blockCount())):
            QTextCursor(document.findBlockByNumber(number)).mergeBlockFormat(marked)
        edit.endEditBlock()
        middle = (first + last) // 2 if last - first < 20 else first
        self.view.setTextCursor(QTextCursor(document.findBlockByNumber(middle - 1)))
        self.view.centerCursor()
        self.view.setTextCursor(QTextCursor(document.findBlockByNumber(first - 1)))

    def highlighted_lines(self) -> list[str]:
        """The text of the highlighted lines (what the person sees marked)."""
        lines = []
        block = self.view.document().begin()
        while block.isValid():
            if block.blockFormat().background().style() != Qt.BrushStyle.NoBrush:
                lines.append(block.text())
            block = block.next()
        return lines

    @Slot()
    def _open_in_system(self) -> None:
        source = self.source
        if source is None or source.path is None or not system_safe(source.path.name):
            return  # the button is hidden then; the check stays where the opening happens
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(source.path)))

    @Slot()
    def _open_in_browser(self) -> None:
        url = QUrl(self.item.source)
        if is_web_link(url):  # the person pressed the button with the address in the heading
            QDesktopServices.openUrl(url)


def _plain_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def confirm_web_link(url: QUrl, parent: QWidget) -> QMessageBox:
    """Ask before a web address the model wrote opens in the browser (window-modal, not exec).

    The full address and its host (in the encoded form, so a look-alike name shows as the
    ``xn--`` name it is) are in front of the person; Cancel is the default.
    """
    address = url.toString(QUrl.ComponentFormattingOption.FullyEncoded)
    box = QMessageBox(
        QMessageBox.Icon.Question,
        "Open a link from the answer?",
        "",
        QMessageBox.StandardButton.Cancel,
        parent,
    )
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(
        "The model wrote this link. Open it in your web browser?\n\n"
        f"Site: {url.host(QUrl.ComponentFormattingOption.FullyEncoded)}\n"
        f"Address: {address}"
    )
    open_button = box.addButton("&Open in Browser", QMessageBox.ButtonRole.AcceptRole)
    copy_button = box.addButton("&Copy Address", QMessageBox.ButtonRole.ActionRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)

    def done(_result: int) -> None:
        if box.clickedButton() is open_button and is_web_link(QUrl(address)):
            QDesktopServices.openUrl(QUrl(address))
        elif box.clickedButton() is copy_button:
            QGuiApplication.clipboard().setText(address)
        box.deleteLater()

    box.finished.connect(done)
    box.open()
    return box
