"""The GBNF grammar that keeps a local model without tool support to an answer or valid calls.

Models without tool support (the 135M starter model among them) get the tools described in the
system prompt and the grammar of :func:`build_tool_grammar`, which admits exactly a plain answer or
one ``<tool_call>[...]</tool_call>`` batch of calls to the offered tools with arguments matching
their JSON schemas, so whatever such a model writes is either an answer or valid calls. Reading the
calls back is :mod:`imprint_desktop.core.providers.call_markup`'s job (no llama.cpp there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_cpp import llama_grammar

from imprint_desktop.core.providers.call_markup import CALL_CLOSE, CALL_OPEN, tool_function

#: Most calls one grammar-constrained reply may hold (a batch, not a runaway list).
MAX_GRAMMAR_CALLS = 8

#: llama-cpp-python's JSON-schema-to-GBNF converter (untyped upstream).
_SCHEMA_CONVERTER: Any = llama_grammar.SchemaConverter


def build_tool_grammar(
    tools: Sequence[Mapping[str, Any]], *, allow_calls: bool = True, require_calls: bool = False
) -> str:
    """A GBNF grammar (root rule ``root``) for a reply that is an answer or a batch of calls.

    The answer branch is any text not starting with ``<`` (so it cannot begin a call); the call
    branch is ``<tool_call>[`` one to :data:`MAX_GRAMMAR_CALLS` call objects ``]</tool_call>``, each
    naming an offered tool with arguments that match its JSON schema. With ``allow_calls`` false
    (``tool_choice="none"``) only the answer branch remains; with ``require_calls``
    (``tool_choice="required"``) only the call branch.
    """
    answer = r"answer ::= [^<\x00] [^\x00]*"
    if not allow_calls or not tools:
        return f"root ::= answer\n{answer}\n"
    converter: Any = _SCHEMA_CONVERTER(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    alternatives: list[str] = []
    for index, tool in enumerate(tools):
        function = tool_function(tool)
        name = str(function.get("name", ""))
        args_rule = _arguments_rule(converter, function.get("parameters"), f"tool{index}-args")
        head = _gbnf_literal(f'{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": ')
        alternatives.append(f'call-{index} ::= {head} {args_rule} "}}"')
    choice = " | ".join(f"call-{index}" for index in range(len(alternatives)))
    rules = [
        "root ::= call-batch" if require_calls else "root ::= call-batch | answer",
        f"call-batch ::= {_gbnf_literal(CALL_OPEN + '[')} call-any "
        f'( ", " call-any ){{0,{MAX_GRAMMAR_CALLS - 1}}} {_gbnf_literal("]" + CALL_CLOSE)}',
        f"call-any ::= {choice}",
        *alternatives,
        answer,
        str(converter.format_grammar()),
    ]
    return "\n".join(rules) + "\n"


def _arguments_rule(converter: Any, schema: object, name: str) -> str:
    """The converter's rule for a tool's parameters; any JSON object for an unusual schema."""
    if isinstance(schema, Mapping) and schema:
        try:
            resolved = converter.resolve_refs(_without_bounds(schema), name)
            return str(converter.visit(resolved, name))
        except (KeyError, ValueError, TypeError, AssertionError, NotImplementedError):
            pass  # a schema feature the converter lacks: fall back to any object
    return str(converter.visit({"type": "object"}, name))


#: Schema keywords left out of the grammar. Bounds such as ``maxLength: 500`` become hundreds of
#: nested optional repetitions, which llama.cpp's grammar parser refuses (and llama-cpp-python
#: then crashes on); the toolbox checks every bound anyway and answers with a readable error.
_BOUND_KEYWORDS = frozenset(
    {"maxLength", "minLength", "maxItems", "minItems", "pattern", "format", "minimum", "maximum"}
)


def _without_bounds(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without size, range and pattern bounds, at every depth."""
    relaxed: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _BOUND_KEYWORDS:
            continue
        if isinstance(value, Mapping):
            relaxed[key] = _without_bounds(value)
        elif isinstance(value, list):
            relaxed[key] = [
                _without_bounds(item) if isinstance(item, Mapping) else item for item in value
            ]
        else:
            relaxed[key] = value
    return relaxed


def _gbnf_literal(text: str) -> str:
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif char == "\n":
            escaped.append("\\n")
        elif char == "\r":
            escaped.append("\\r")
        elif char == "\t":
            escaped.append("\\t")
        elif ord(char) < 0x20:
            escaped.append(f"\\x{ord(char):02x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'
