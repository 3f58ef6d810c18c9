"""Tool calls of local models without a model: native formats, malformed calls, the grammar, and
how streamed text is held back while it may be a call."""

from __future__ import annotations

import json
import re

import pytest

from imprint_desktop.core.providers.base import ToolCall
from imprint_desktop.core.providers.call_markup import format_tool_calls, parse_tool_calls
from imprint_desktop.core.providers.local.grammar import MAX_GRAMMAR_CALLS, build_tool_grammar
from imprint_desktop.core.providers.local.provider import _AnswerStream

OFFERED = {"search_workspace", "read_document"}
TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "search_workspace",
            "description": "Search",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_document",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
)


def only(calls: tuple[ToolCall, ...]) -> ToolCall:
    assert len(calls) == 1
    return calls[0]


def test_hermes_single_call_with_text_before() -> None:
    parsed = parse_tool_calls(
        'Let me look.\n<tool_call>\n{"name": "search_workspace", "arguments": {"query": "fog"}}\n'
        "</tool_call>",
        OFFERED,
    )
    assert parsed.content == "Let me look."
    call = only(parsed.calls)
    assert call.name == "search_workspace"
    assert json.loads(call.arguments) == {"query": "fog"}
    assert call.id.startswith("call_")


def test_hermes_several_blocks_and_a_list_in_one_block() -> None:
    text = (
        '<tool_call>{"name": "search_workspace", "arguments": {"query": "a"}}</tool_call>\n'
        '<tool_call>[{"name": "read_document", "arguments": {"path": "x.md"}}, '
        '{"name": "search_workspace", "arguments": "{\\"query\\": \\"b\\"}"}]</tool_call>'
    )
    calls = parse_tool_calls(text, OFFERED).calls
    assert [call.name for call in calls] == [
        "search_workspace",
        "read_document",
        "search_workspace",
    ]
    assert calls[2].arguments == '{"query": "b"}'  # string arguments are kept as written
    assert len({call.id for call in calls}) == 3


def test_unclosed_block_at_the_end_still_parses() -> None:
    call = only(
        parse_tool_calls(
            '<tool_call>{"name": "read_document", "arguments": {"path": "a"}}', OFFERED
        ).calls
    )
    assert call.name == "read_document"


def test_llama3_json_calls() -> None:
    text = (
        '{"name": "search_workspace", "parameters": {"query": "tide"}}; '
        '{"name": "read_document", "parameters": {"path": "b.md"}}'
    )
    parsed = parse_tool_calls(text, OFFERED)
    assert parsed.content == ""
    assert [json.loads(call.arguments) for call in parsed.calls] == [
        {"query": "tide"},
        {"path": "b.md"},
    ]
    tagged = parse_tool_calls(
        '<|python_tag|>{"name": "read_document", "parameters": {"path": "c"}}', OFFERED
    )
    assert only(tagged.calls).name == "read_document"


def test_json_answer_naming_no_offered_tool_stays_an_answer() -> None:
    text = '{"name": "Ada Brown", "parameters": {"role": "keeper"}}'
    parsed = parse_tool_calls(text, OFFERED)
    assert parsed.calls == ()
    assert parsed.content == text


def test_mistral_formats() -> None:
    listed = parse_tool_calls(
        '[TOOL_CALLS][{"name": "search_workspace", "arguments": {"query": "gale"}, "id": "abc"}]',
        OFFERED,
    )
    call = only(listed.calls)
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "abc",
        "search_workspace",
        {"query": "gale"},
    )
    newer = parse_tool_calls('[TOOL_CALLS]read_document[ARGS]{"path": "d.md"}', OFFERED)
    call = only(newer.calls)
    assert (call.name, call.arguments) == ("read_document", '{"path": "d.md"}')


def test_malformed_call_is_reported_with_its_raw_text() -> None:
    raw = '{"name": "search_workspace", "arguments": {"query": "fog"'
    call = only(parse_tool_calls(f"<tool_call>{raw}</tool_call>", OFFERED).calls)
    assert call.name == "search_workspace"  # read from the text, so the tool error is specific
    assert call.arguments == raw
    nameless = only(parse_tool_calls("<tool_call>search for fog</tool_call>", OFFERED).calls)
    assert nameless.name == ""
    assert nameless.arguments == "search for fog"
    not_an_object = only(parse_tool_calls("<tool_call>[1, 2]</tool_call>", OFFERED).calls[:1])
    assert not_an_object.name == ""


def test_plain_answer_has_no_calls() -> None:
    parsed = parse_tool_calls("The keeper is Ada Brown [1].", OFFERED)
    assert parsed == type(parsed)("The keeper is Ada Brown [1].", ())


def test_formatted_calls_parse_back_to_the_same_calls() -> None:
    calls = (
        ToolCall("a", "search_workspace", '{"query": "fog \\"signal\\""}'),
        ToolCall("b", "read_document", '{"path": "é.md"}'),
    )
    text = format_tool_calls(calls)
    assert text.startswith("<tool_call>[") and text.endswith("]</tool_call>")
    parsed = parse_tool_calls(text, OFFERED).calls
    assert [(c.name, json.loads(c.arguments)) for c in parsed] == [
        (c.name, json.loads(c.arguments)) for c in calls
    ]


# --- the grammar --------------------------------------------------------------------------------

_RULE = re.compile(r"^([a-zA-Z0-9-]+) ::= (.*)$")


def rules_of(grammar: str) -> dict[str, str]:
    rules = {}
    for line in grammar.splitlines():
        match = _RULE.match(line)
        if match:
            rules[match.group(1)] = match.group(2)
    return rules


def references(body: str) -> set[str]:
    without_literals = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', " ", body)
    return set(re.findall(r"[a-zA-Z][a-zA-Z0-9-]*", without_literals))


def test_grammar_rules_are_complete_and_name_each_offered_tool() -> None:
    grammar = build_tool_grammar(TOOLS)
    rules = rules_of(grammar)
    assert rules["root"] == "call-batch | answer"
    for name, body in rules.items():
        missing = references(body) - set(rules)
        assert not missing, f"{name} refers to undefined rules {missing}"
    assert '\\"name\\": \\"search_workspace\\"' in rules["call-0"]
    assert '\\"name\\": \\"read_document\\"' in rules["call-1"]
    assert f"{{0,{MAX_GRAMMAR_CALLS - 1}}}" in rules["call-batch"]
    # Required arguments are required: the path rule has no optional branch around it.
    assert "path" in grammar
    assert rules["answer"].startswith("[^<")


def test_grammar_without_calls_admits_only_an_answer() -> None:
    for grammar in (build_tool_grammar(TOOLS, allow_calls=False), build_tool_grammar(())):
        rules = rules_of(grammar)
        assert set(rules) == {"root", "answer"}


def test_grammar_falls_back_to_any_object_for_unusual_schemas() -> None:
    odd = (
        {"type": "function", "function": {"name": "odd", "parameters": {"$ref": "#/nowhere"}}},
        {"type": "function", "function": {"name": "bare"}},
    )
    rules = rules_of(build_tool_grammar(odd))
    for name, body in rules.items():
        assert not references(body) - set(rules), name


def test_quotes_in_tool_names_are_escaped() -> None:
    tool = {"type": "function", "function": {"name": 'we"ird\\', "parameters": {"type": "object"}}}
    body = rules_of(build_tool_grammar((tool,)))["call-0"]
    assert '\\"we\\\\\\"ird\\\\\\\\\\"' in body


# --- streaming ----------------------------------------------------------------------------------


def stream(pieces: list[str], *, holding: bool = True) -> str:
    shown: list[str] = []
    answer = _AnswerStream(shown.append, holding=holding)
    for piece in pieces:
        answer.feed(piece)
    answer.finish()
    return "".join(shown)


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        (["The keeper", " is Ada", "."], "The keeper is Ada."),
        (["Let me look.", "\n<tool", "_call>[{", '"name"'], "Let me look.\n"),
        (["<tool_call>", "[{}]"], ""),
        (['{"name": "search_workspace"', "}"], ""),
        (["a < b", " and c"], "a < b and c"),
        (["[TOOL", "_CALLS][]"], ""),
    ],
)
def test_stream_holds_back_calls(pieces: list[str], shown: str) -> None:
    assert stream(pieces) == shown


def test_stream_without_tools_shows_everything() -> None:
    assert stream(["<tool_call>", "x"], holding=False) == "<tool_call>x"


def test_the_grammar_for_the_real_tools_parses_in_llama_cpp() -> None:
    """Bounds such as maxLength must not blow the grammar up past what llama.cpp accepts."""
    import llama_cpp

    from imprint_desktop.core.tools.specs import SPECS

    grammar = build_tool_grammar([spec.schema() for spec in SPECS.values()])
    assert len(grammar) < 20_000
    assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) is not None


def test_grammar_with_required_calls_admits_only_calls() -> None:
    rules = rules_of(build_tool_grammar(TOOLS, require_calls=True))
    assert rules["root"] == "call-batch"
    for name, body in rules.items():
        assert not references(body) - set(rules), name


def test_the_required_calls_grammar_parses_in_llama_cpp() -> None:
    import llama_cpp

    from imprint_desktop.core.tools.specs import SPECS

    grammar = build_tool_grammar([s.schema() for s in SPECS.values()], require_calls=True)
    assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) is not None
