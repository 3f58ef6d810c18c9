"""The declarations of the tools the model sees (DESIGN §2): names, kinds, arguments, limits, and
how a call of each is put in words.

Descriptions are written for a small model: what the tool is for, when to use it, what comes back.
The argument limits are generous for real use and tight enough that a runaway call (a 1 MB query, a
thousand sections) is refused instead of carried out.

Every call is said in words from its spec alone (:func:`describe_call`): on the status line while
it runs — the engine's ``tool_started`` event, the window, ``imprint ask`` — and in the research
record afterwards. Light on purpose: the window imports this at startup, the toolbox with a reply.
"""

from __future__ import annotations

from collections.abc import Mapping

from imprint_desktop.core.tools.arguments import loose_arguments
from imprint_desktop.core.tools.tool import ToolKind, ToolSpec
from imprint_desktop.core.tools.words import (
    CallWords,
    line_range,
    plain,
    short_url,
    subject,
    text_of,
)


def _search_words(values: Mapping[str, object]) -> CallWords:
    query = text_of(values, "query")
    done = f"searched '{query}'" if query else "searched the workspace"
    return CallWords(f"Searching '{subject(values)}'", done)


def _read_words(values: Mapping[str, object]) -> CallWords:
    path = text_of(values, "path")
    lines = line_range(values.get("start_line"), values.get("end_line"))
    return CallWords(
        f"Reading {subject(values)}", f"read {path}{lines}" if path else "read a document"
    )


def _list_words(values: Mapping[str, object]) -> CallWords:
    folder = text_of(values, "folder")
    done = f"listed documents in {folder}" if folder else "listed documents"
    return CallWords("Listing documents", done)


def _fetch_words(values: Mapping[str, object]) -> CallWords:
    url = values.get("url") if text_of(values, "url", 400) else None
    done = f"fetched {short_url(url)}" if isinstance(url, str) else "fetched a web page"
    return CallWords(f"Fetching {subject(values)}", done)


def _write_words(values: Mapping[str, object]) -> CallWords:
    title = text_of(values, "title")
    done = f"wrote note '{title}'" if title else "wrote a note"
    return CallWords(f"Writing note '{subject(values)}'", done)


def _ask_words(values: Mapping[str, object]) -> CallWords:
    question = text_of(values, "question")
    done = f"asked you '{question}'" if question else "asked you a question"
    return CallWords("Asking you a question", done)


def _sections_words(values: Mapping[str, object]) -> CallWords:
    sections = values.get("sections")
    done = "researched in sections"
    if isinstance(sections, list):
        done = f"researched in {len(sections)} section{'' if len(sections) == 1 else 's'}"
    return CallWords("Researching sections", done)


_SPEC_LIST = (
    ToolSpec(
        "search_workspace",
        ToolKind.READ,
        "Full-text search of the person's documents. Returns the best matching passages, each with "
        "its file path and line range. Use specific words that the answer would contain.",
        {
            "query": {
                "type": "string",
                "description": "Words to look for; put an exact phrase in double quotes.",
                "minLength": 1,
                "maxLength": 500,
            },
            "limit": {
                "type": "integer",
                "description": "How many passages to return (default 8).",
                "minimum": 1,
                "maximum": 50,
                "default": 8,
            },
        },
        required=("query",),
        defaults={"limit": 8},
        words=_search_words,
        verbs=("Searching ", "searched "),
    ),
    ToolSpec(
        "read_document",
        ToolKind.READ,
        "Read lines of one document in the workspace (text, Markdown, HTML or PDF text). Use the "
        "path and line numbers that search_workspace or list_documents gave.",
        {
            "path": {
                "type": "string",
                "description": "Path relative to the workspace, e.g. 'reports/2023.md'.",
                "minLength": 1,
                "maxLength": 1000,
            },
            "start_line": {
                "type": "integer",
                "description": "First line to read (default 1).",
                "minimum": 1,
                "default": 1,
            },
            "end_line": {
                "type": ["integer", "null"],
                "description": "Last line to read (default: as much as fits).",
                "minimum": 1,
                "default": None,
            },
        },
        required=("path",),
        defaults={"start_line": 1, "end_line": None},
        words=_read_words,
        verbs=("Reading ", "read "),
    ),
    ToolSpec(
        "list_documents",
        ToolKind.READ,
        "List the documents in the workspace (or in one folder of it) with sizes and titles.",
        {
            "folder": {
                "type": "string",
                "description": "Folder relative to the workspace; empty for all documents.",
                "maxLength": 1000,
                "default": "",
            },
        },
        defaults={"folder": ""},
        words=_list_words,
        verbs=("Listing documents", "listed documents"),
    ),
    ToolSpec(
        "fetch_url",
        ToolKind.READ,
        "Fetch a web page over http or https and return its main text.",
        {
            "url": {
                "type": "string",
                "description": "The full URL, starting with http:// or https://.",
                "minLength": 1,
                "maxLength": 4000,
            },
        },
        required=("url",),
        words=_fetch_words,
        verbs=("Fetching ", "fetched "),
    ),
    ToolSpec(
        "write_note",
        ToolKind.WRITE,
        "Save a Markdown note in the workspace's notes folder (always a new file; nothing is "
        "overwritten).",
        {
            "title": {
                "type": "string",
                "description": "The note's title; it also names the file.",
                "minLength": 1,
                "maxLength": 200,
            },
            "content": {
                "type": "string",
                "description": "The note's text, in Markdown.",
                "minLength": 1,
                "maxLength": 100_000,
            },
        },
        required=("title", "content"),
        words=_write_words,
        verbs=("Writing note ", "wrote note "),
    ),
    ToolSpec(
        "ask_user",
        ToolKind.ASK,
        "Ask the person a short question when the documents cannot settle something only they "
        "know (a preference, a missing detail). Research waits for the answer.",
        {
            "question": {
                "type": "string",
                "description": "One clear question.",
                "minLength": 1,
                "maxLength": 1000,
            },
        },
        required=("question",),
        words=_ask_words,
        verbs=("Asking you a question", "asked you a question"),
    ),
    ToolSpec(
        "research_sections",
        ToolKind.COORDINATOR,
        "Split a broad question into sections researched one by one; returns what each found. "
        "Use for questions with several distinct parts.",
        {
            "sections": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 500},
                "description": "Two to eight short section questions.",
                "minItems": 1,
                "maxItems": 8,
            },
        },
        required=("sections",),
        words=_sections_words,
        verbs=("Researching sections", "researched in sections"),
    ),
)

#: Every tool, by name, in the order the model sees them.
SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in _SPEC_LIST}

#: How a call of a tool that does not exist is said (a model may call anything).
_UNKNOWN_VERBS = ("Running ", "ran ")


def describe_call(name: str, arguments: object) -> CallWords:
    """A call of tool ``name`` in words, from its arguments as the model sent them (JSON text or
    a mapping; anything else counts as none)."""
    spec = SPECS.get(name)
    if spec is None:
        # The name is the model's: as bounded and as plain as any argument.
        shown = plain(name if isinstance(name, str) else repr(name), 40)
        return CallWords(f"{_UNKNOWN_VERBS[0]}{shown}", f"{_UNKNOWN_VERBS[1]}{shown}")
    return spec.words(loose_arguments(arguments))


def done_from_status(name: str, status: str) -> str:
    """What a call did, in the record's words, when only its status line is known (an event
    without its arguments): the status line put in the past tense."""
    status = plain(status)
    for doing, done in (*(spec.verbs for spec in SPECS.values()), _UNKNOWN_VERBS):
        if status.startswith(doing):
            return done + status[len(doing) :]
    if name in SPECS:
        return describe_call(name, None).done
    return status or describe_call(name, None).done
