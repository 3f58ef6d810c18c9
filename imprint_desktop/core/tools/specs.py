"""The declarations of the tools the model sees (DESIGN §2): names, kinds, arguments, limits.

Descriptions are written for a small model: what the tool is for, when to use it, what comes back.
The argument limits are generous for real use and tight enough that a runaway call (a 1 MB query, a
thousand sections) is refused instead of carried out.
"""

from __future__ import annotations

from imprint_desktop.core.tools.base import ToolKind, ToolSpec

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
    ),
)

#: Every tool, by name, in the order the model sees them.
SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in _SPEC_LIST}
