"""Every tool-call template family of the recommended models, through the local provider's code.

For each family the real chat template (``templates/``, as llama.cpp's test suite keeps them)
renders a research conversation with Imprint's own tools — the system prompt, the question, the
engine's seed search and its result — and a reply in that family's own call format is parsed. The
parsed calls then go back into the history for the next round, which must render too: that is
where templates refuse ids or call batches they were not trained on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from imprint_desktop.core.models.recommended import TemplateFamily, load_catalogue
from imprint_desktop.core.providers.base import Message, ToolCall
from imprint_desktop.core.providers.call_markup import parse_tool_calls, tool_names
from imprint_desktop.core.providers.local.template import ChatTemplate
from imprint_desktop.core.research.prompts import research_system
from imprint_desktop.core.research.seed import SEED_CALL_ID
from imprint_desktop.core.tools.specs import SPECS

TEMPLATES = Path(__file__).parent / "templates"

#: The template of one model of each family, and the special tokens llama.cpp hands it.
FAMILIES: dict[TemplateFamily, tuple[str, str, str]] = {
    TemplateFamily.HERMES: ("Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>"),
    TemplateFamily.QWEN3: ("Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>"),
    TemplateFamily.LLAMA3: (
        "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    TemplateFamily.MISTRAL: ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>"),
}

#: A reply in each family's own format, and the calls it holds (name, arguments).
SAMPLES: dict[TemplateFamily, tuple[str, list[tuple[str, dict[str, object]]]]] = {
    TemplateFamily.HERMES: (
        "I will look further.\n"
        '<tool_call>\n{"name": "search_workspace", "arguments": {"query": "keeper 1971"}}\n'
        "</tool_call>\n"
        '<tool_call>\n{"name": "read_document", "arguments": {"path": "keepers.md", '
        '"start_line": 1}}\n</tool_call>',
        [
            ("search_workspace", {"query": "keeper 1971"}),
            ("read_document", {"path": "keepers.md", "start_line": 1}),
        ],
    ),
    TemplateFamily.QWEN3: (
        # Reasoning that mentions a call, its opening tag in the prompt: only the real call counts.
        'Let me think about <tool_call>\n{"name": "list_documents", "arguments": {}}</tool_call>'
        " hmm\n</think>\n\n"
        '<tool_call>\n{"name": "read_document", "arguments": {"path": "keepers.md"}}\n</tool_call>',
        [("read_document", {"path": "keepers.md"})],
    ),
    TemplateFamily.LLAMA3: (
        '{"name": "read_document", "parameters": {"path": "keepers.md", "start_line": 1}}',
        [("read_document", {"path": "keepers.md", "start_line": 1})],
    ),
    TemplateFamily.MISTRAL: (
        '[TOOL_CALLS][{"name": "read_document", "arguments": {"path": "keepers.md"}, '
        '"id": "a1B2c3D4e"}, {"name": "search_workspace", "arguments": {"query": "fog days"}}]',
        [("read_document", {"path": "keepers.md"}), ("search_workspace", {"query": "fog days"})],
    ),
}

TOOLS = tuple(spec.schema() for spec in SPECS.values())
OFFERED = tool_names(TOOLS)
QUESTION = "Who was the last keeper of Greyness Point, and when did she leave?"
SEED_ARGUMENTS = '{"query": "last keeper Greyness Point leave"}'
SEED_RESULT = (
    "[1] keepers.md:3-3\nThe last keeper of Greyness Point was Ada Quill, who left in 1971."
)
FIRST_ROUND = (
    Message("system", research_system("")),
    Message("user", QUESTION),
    Message("assistant", "", (ToolCall(SEED_CALL_ID, "search_workspace", SEED_ARGUMENTS),)),
    Message("tool", SEED_RESULT, tool_call_id=SEED_CALL_ID, name="search_workspace"),
)


def template_of(family: TemplateFamily) -> ChatTemplate:
    name, bos, eos = FAMILIES[family]
    template = ChatTemplate(
        (TEMPLATES / name).read_text(encoding="utf-8"), bos_token=bos, eos_token=eos, label=name
    )
    template.check()
    return template


def test_every_family_has_a_template_and_a_sample() -> None:
    assert set(FAMILIES) == set(TemplateFamily) == set(SAMPLES)
    used = {model.template_family for model in load_catalogue()}
    assert used <= set(FAMILIES)


@pytest.mark.parametrize("family", list(TemplateFamily), ids=str)
def test_research_prompt_renders_natively_and_the_families_calls_parse(
    family: TemplateFamily,
) -> None:
    template = template_of(family)
    assert template.supports_tools, "the family's own tool format is used, not the prompted one"

    prompt = template.render(FIRST_ROUND, TOOLS)
    assert QUESTION in prompt
    assert "You are Imprint, a research assistant." in prompt
    assert "Ada Quill, who left in 1971" in prompt
    for name in OFFERED:  # every tool is declared to the model
        assert f'"name": "{name}"' in prompt, name
    assert '"maxLength": 500' in prompt, "schemas reach the model whole"

    text, expected = SAMPLES[family]
    parsed = parse_tool_calls(text, OFFERED)
    assert [(call.name, json.loads(call.arguments)) for call in parsed.calls] == expected
    assert len({call.id for call in parsed.calls}) == len(parsed.calls)

    second = (
        *FIRST_ROUND,
        Message("assistant", parsed.content, parsed.calls),
        *(
            Message("tool", f"[{n}] result of {call.name}", tool_call_id=call.id, name=call.name)
            for n, call in enumerate(parsed.calls, 2)
        ),
    )
    next_prompt = template.render(second, TOOLS)
    for number in range(2, 2 + len(parsed.calls)):
        assert f"[{number}] result of" in next_prompt
    assert next_prompt.count("keepers.md") >= 2


def test_hermes_writes_tools_and_calls_in_its_own_tags() -> None:
    prompt = template_of(TemplateFamily.HERMES).render(FIRST_ROUND, TOOLS)
    assert "<tools>\n" + json.dumps(TOOLS[0], ensure_ascii=False) in prompt
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "search_workspace", "arguments": '
        '{"query": "last keeper Greyness Point leave"}}\n</tool_call><|im_end|>' in prompt
    )
    assert "<|im_start|>user\n<tool_response>\n[1] keepers.md:3-3" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_qwen3_is_asked_to_answer_without_thinking() -> None:
    prompt = template_of(TemplateFamily.QWEN3).render(FIRST_ROUND, TOOLS)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert "<tool_call>\n" + '{"name": "search_workspace"' in prompt


def test_llama3_gets_one_call_per_turn_each_with_its_result() -> None:
    template = template_of(TemplateFamily.LLAMA3)
    assert template.one_call_per_turn and not template.short_call_ids
    calls = parse_tool_calls(SAMPLES[TemplateFamily.HERMES][0], OFFERED).calls
    conversation = (
        *FIRST_ROUND,
        Message("assistant", "", calls),
        Message("tool", "second result", tool_call_id=calls[1].id, name=calls[1].name),
        Message("tool", "first result", tool_call_id=calls[0].id, name=calls[0].name),
    )
    prompt = template.render(conversation, TOOLS)
    turns = re.findall(
        r"<\|start_header_id\|>(assistant|ipython)<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>",
        prompt,
        re.DOTALL,
    )
    assert [role for role, _ in turns] == ["assistant", "ipython"] * 3
    assert json.loads(turns[2][1]) == {
        "name": "search_workspace",
        "parameters": {"query": "keeper 1971"},
    }
    assert "first result" in turns[3][1], "each call is followed by its own result"
    assert json.loads(turns[4][1])["name"] == "read_document"
    assert "second result" in turns[5][1]
    assert "Environment: ipython" in prompt
    assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_mistral_gets_nine_character_ids_the_same_in_every_round() -> None:
    template = template_of(TemplateFamily.MISTRAL)
    assert template.short_call_ids and not template.one_call_per_turn
    prompt = template.render(FIRST_ROUND, TOOLS)
    assert prompt.startswith("<s>")
    # Its template writes the system message only before a final user turn; tool turns follow the
    # question, so the research instructions go into the question itself.
    assert not template.system_role
    assert "[INST]You are Imprint, a research assistant." in prompt
    assert prompt.count("[AVAILABLE_TOOLS]") == 1
    [seed_id] = re.findall(r'\[TOOL_CALLS\]\[\{.*?"id": "([^"]*)"\}\]</s>', prompt)
    assert re.fullmatch(r"[A-Za-z0-9]{9}", seed_id)
    assert f'"call_id": "{seed_id}"}}[/TOOL_RESULTS]' in prompt
    assert template.render(FIRST_ROUND, TOOLS) == prompt, (
        "the same ids every time: the KV cache holds"
    )

    calls = parse_tool_calls(SAMPLES[TemplateFamily.MISTRAL][0], OFFERED).calls
    assert calls[0].id == "a1B2c3D4e", "the model's own id is kept"
    later = template.render(
        (
            *FIRST_ROUND,
            Message("assistant", "", calls),
            *(Message("tool", "x", tool_call_id=c.id, name=c.name) for c in calls),
        ),
        TOOLS,
    )
    assert '"id": "a1B2c3D4e"' in later and '"call_id": "a1B2c3D4e"' in later
    ids = re.findall(r'"call_id": "([^"]*)"', later)
    assert len(ids) == 3 and all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)
    assert later.startswith(prompt.split("[INST]")[0])
