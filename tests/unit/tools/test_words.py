"""Tool calls in words: each spec words its calls, for the status line and for the record."""

from __future__ import annotations

import pytest

from imprint_desktop.core.tools.specs import SPECS, describe_call, done_from_status
from imprint_desktop.core.tools.words import CallWords, plain

HOSTILE = "a\nb\u202e\x1b[31mc"


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        (
            "search_workspace",
            '{"query": "harbour light", "limit": 8}',
            CallWords("Searching 'harbour light'", "searched 'harbour light'"),
        ),
        (
            "read_document",
            {"path": "a.md", "start_line": 10, "end_line": 40},
            CallWords("Reading a.md", "read a.md lines 10–40"),
        ),
        (
            "read_document",
            {"path": "a.md", "start_line": 3},
            CallWords("Reading a.md", "read a.md from line 3"),
        ),
        ("list_documents", {}, CallWords("Listing documents", "listed documents")),
        (
            "list_documents",
            {"folder": "logs"},
            CallWords("Listing documents", "listed documents in logs"),
        ),
        (
            "fetch_url",
            {"url": "https://example.org/a?b=c"},
            CallWords("Fetching https://example.org/a?b=c", "fetched example.org/…"),
        ),
        (
            "write_note",
            {"title": "Dates", "content": "1862"},
            CallWords("Writing note 'Dates'", "wrote note 'Dates'"),
        ),
        (
            "ask_user",
            {"question": "Which light?"},
            CallWords("Asking you a question", "asked you 'Which light?'"),
        ),
        (
            "research_sections",
            {"sections": ["a"]},
            CallWords("Researching sections", "researched in 1 section"),
        ),
        ("frobnicate", {"x": "y"}, CallWords("Running frobnicate", "ran frobnicate")),
    ],
)
def test_a_call_in_words(name: str, arguments: object, words: CallWords) -> None:
    assert describe_call(name, arguments) == words


@pytest.mark.parametrize(
    ("name", "generic"),
    [
        ("search_workspace", "searched the workspace"),
        ("read_document", "read a document"),
        ("list_documents", "listed documents"),
        ("fetch_url", "fetched a web page"),
        ("write_note", "wrote a note"),
        ("ask_user", "asked you a question"),
        ("research_sections", "researched in sections"),
    ],
)
def test_arguments_that_say_nothing_usable_get_the_tool_s_own_words(
    name: str, generic: str
) -> None:
    for arguments in (None, "{not json", "[1]", {"unexpected": 3}):
        assert describe_call(name, arguments).done == generic


def test_the_status_line_shows_the_first_text_argument_cut_short() -> None:
    long = "x" * 200
    assert describe_call("search_workspace", {"query": long}).doing == f"Searching '{'x' * 59}…'"
    # As the model sent them: the first text argument, whatever its name.
    assert describe_call("write_note", {"content": "c", "title": "t"}).doing == "Writing note 'c'"


def test_the_record_s_words_are_one_plain_line() -> None:
    done = describe_call("search_workspace", {"query": HOSTILE + "x" * 200}).done
    assert "\n" not in done and "\u202e" not in done and "\x1b" not in done
    assert len(done) < 80 and done.endswith("…'")
    assert plain("  two\t words ") == "two words"


def test_every_status_line_begins_with_its_spec_s_verbs() -> None:
    for name, spec in SPECS.items():
        doing, _ = spec.verbs
        assert describe_call(name, dict.fromkeys(spec.properties, "v")).doing.startswith(doing)
        assert describe_call(name, None).doing.startswith(doing)


@pytest.mark.parametrize(
    ("name", "status", "done"),
    [
        ("search_workspace", "Searching 'quarry'", "searched 'quarry'"),
        ("read_document", "Reading a.md", "read a.md"),
        ("fetch_url", "Fetching https://example.org", "fetched https://example.org"),
        ("write_note", "Writing note 'Dates'", "wrote note 'Dates'"),
        ("list_documents", "Listing documents", "listed documents"),
        ("ask_user", "Asking you a question", "asked you a question"),
        ("research_sections", "Researching sections", "researched in sections"),
        ("frobnicate", "Running frobnicate", "ran frobnicate"),
        ("search_workspace", "", "searched the workspace"),
        ("frobnicate", "", "ran frobnicate"),
        ("frobnicate", "Doing its thing", "Doing its thing"),
    ],
)
def test_a_status_line_alone_is_put_in_the_past_tense(name: str, status: str, done: str) -> None:
    assert done_from_status(name, status) == done


def test_a_status_line_in_the_past_tense_matches_the_record_s_words() -> None:
    for name, arguments in [
        ("search_workspace", {"query": "harbour light"}),
        ("read_document", {"path": "a.md"}),
        ("write_note", {"title": "Dates"}),
        ("list_documents", {}),
    ]:
        words = describe_call(name, arguments)
        assert done_from_status(name, words.doing) == words.done
