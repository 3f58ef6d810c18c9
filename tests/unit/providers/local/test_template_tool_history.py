"""What a native chat template accepts of a tool conversation, learned once at load (check())."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from imprint_desktop.core.errors import ChatTemplateError
from imprint_desktop.core.providers.base import Message, ToolCall
from imprint_desktop.core.providers.call_markup import parse_tool_calls
from imprint_desktop.core.providers.local.template import ChatTemplate
from imprint_desktop.core.providers.local.tool_history import one_call_per_turn, short_call_ids

TOOL = {
    "type": "function",
    "function": {"name": "search_workspace", "parameters": {"type": "object"}},
}
CALLS = (
    ToolCall("call_0123456789abcdef", "search_workspace", '{"query": "a"}'),
    ToolCall("abcDEF123", "search_workspace", '{"query": "b"}'),
)
CONVERSATION = (
    Message("system", "Research carefully."),
    Message("user", "Who?"),
    Message("assistant", "", CALLS),
    Message("tool", "second", tool_call_id=CALLS[1].id, name="search_workspace"),
    Message("tool", "first", tool_call_id=CALLS[0].id, name="search_workspace"),
)
# Prints every message, and what it was given, so a test can read the layout back.
ECHO = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}[call {{ c.id }} {{ c.function.name }}]{% endfor %}"
    "{% for c in m.tool_calls or [] %}({{ c.function.arguments | tojson }}){% endfor %}"
    "{% if m.tool_call_id %}[for {{ m.tool_call_id }}]{% endif %}{% endfor %}"
    "{% if tools %}[{{ tools | length }} tools]{% endif %}"
)
NINE = (
    "{% for m in messages %}{% for c in m.tool_calls or [] %}{% if c.id | length != 9 %}"
    "{{ raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}"
    "{% endif %}{% endfor %}{% endfor %}" + ECHO
)
ONE_CALL = (
    "{% for m in messages %}{% if m.tool_calls and m.tool_calls | length != 1 %}"
    "{{ raise_exception('This model only supports single tool-calls at once!') }}"
    "{% endif %}{% endfor %}" + ECHO
)
NO_HISTORY = (
    "{% for m in messages %}{% if m.role == 'tool' %}"
    "{{ raise_exception('no tool results, ever') }}{% endif %}{% endfor %}" + ECHO
)
SYSTEM_ONLY_LAST = (
    "{% set system = messages[0].content if messages[0].role == 'system' else '' %}"
    "{% for m in messages if m.role != 'system' %}"
    "{% if m.role == 'user' and loop.last %}<user>{{ system }} {{ m.content }}"
    "{% elif m.role == 'user' %}<user>{{ m.content }}{% else %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}{{ c.function.name }}{{ c.function.arguments | tojson }}"
    "{% endfor %}{% endif %}{% endfor %}{% if tools %}{{ tools | length }}{% endif %}"
)
# Takes the history, but shows the model only part of it (real templates do each of these).
WITHOUT_ARGUMENTS = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }}</call>{% endfor %}{% endfor %}"
    "{% if tools %}{{ tools | tojson }}{% endif %}"
)
WITHOUT_NAMES = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}"
    "{% if tools %}{{ tools | tojson }}{% endif %}"
)
WITHOUT_RESULTS = (
    "{% for m in messages if m.role != 'tool' %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}{{ c.function.name }}{{ c.function.arguments | tojson }}"
    "{% endfor %}{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}"
)
# User and assistant must take turns (as in many templates without tool support).
STRICT_TURNS = (
    "{% for m in messages if m.role != 'system' %}"
    "{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}<assistant>"
)


def checked(source: str) -> ChatTemplate:
    template = ChatTemplate(source, label="Test model")
    template.check()
    return template


def test_a_tolerant_template_gets_the_history_as_it_is() -> None:
    template = checked(ECHO)
    assert template.supports_tools and template.system_role
    assert not template.short_call_ids and not template.one_call_per_turn
    text = template.render(CONVERSATION, (TOOL,))
    assert "[call call_0123456789abcdef search_workspace][call abcDEF123 search_workspace]" in text


def test_a_template_wanting_nine_character_ids_gets_stable_digests() -> None:
    template = checked(NINE)
    assert template.short_call_ids and not template.one_call_per_turn
    text = template.render(CONVERSATION, (TOOL,))
    long_id = short_call_ids([{"role": "tool", "tool_call_id": CALLS[0].id}])[0]["tool_call_id"]
    assert len(long_id) == 9 and long_id.isalnum()
    assert f"[call {long_id} search_workspace][call abcDEF123 search_workspace]" in text
    assert f"<tool>first[for {long_id}]" in text and "<tool>second[for abcDEF123]" in text
    assert template.render(CONVERSATION, (TOOL,)) == text


def test_a_template_wanting_one_call_per_turn_gets_each_call_with_its_result() -> None:
    template = checked(ONE_CALL)
    assert template.one_call_per_turn and not template.short_call_ids
    text = template.render(CONVERSATION, (TOOL,))
    assert text.index("[call call_0123456789abcdef") < text.index("<tool>first")
    assert text.index("<tool>first") < text.index("[call abcDEF123") < text.index("<tool>second")


def test_results_without_their_call_stay_after_the_calls() -> None:
    chat = [
        {"role": "assistant", "content": "Two.", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "content": "stray", "tool_call_id": "z"},
        {"role": "tool", "content": "for b", "tool_call_id": "b"},
        {"role": "user", "content": "next"},
    ]
    laid_out = [(entry["role"], entry["content"]) for entry in one_call_per_turn(chat)]
    assert laid_out == [
        ("assistant", "Two."),
        ("assistant", ""),
        ("tool", "for b"),
        ("tool", "stray"),
        ("user", "next"),
    ]


def test_a_template_refusing_any_tool_history_gets_tools_in_the_prompt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    template = checked(NO_HISTORY)
    assert not template.supports_tools
    assert "no tool results, ever" in caplog.text
    text = template.render(CONVERSATION, (TOOL,))
    assert "<tool_call>[" in text and "<tool_response>" in text and "<tool>" not in text


@pytest.mark.parametrize(
    ("source", "unseen"),
    [
        (WITHOUT_ARGUMENTS, "the arguments"),
        (WITHOUT_NAMES, "the name"),
        (WITHOUT_RESULTS, "the result"),
    ],
    ids=["arguments", "names", "results"],
)
def test_a_template_hiding_part_of_a_tool_call_gets_tools_in_the_prompt(
    source: str, unseen: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The model must see what it called, with what, and what came back; a template that leaves
    one out (granite 3.x and LFM2 drop the arguments) is not used for tools."""
    template = checked(source)
    assert not template.supports_tools
    assert f"leaves {unseen} of a tool call out of the prompt" in caplog.text
    text = template.render(CONVERSATION, (TOOL,))
    assert '<tool_call>[{"name": "search_workspace", "arguments": {"query": "a"}}' in text
    assert "<tool_response>\nfirst\n</tool_response>" in text


def test_prompted_tools_keep_user_and_assistant_taking_turns() -> None:
    """Tool results come back as a user turn; a follow-up question after them is merged into it,
    so a template that insists on strict turns takes every research round."""
    template = checked(STRICT_TURNS)
    assert not template.supports_tools and template.system_role
    follow_up = (*CONVERSATION, Message("assistant", "Ada."), Message("user", "And after her?"))
    for conversation in (CONVERSATION, (*CONVERSATION, Message("user", "Go on.")), follow_up):
        text = template.render(conversation, (TOOL,))
        assert text.endswith("</user><assistant>")
    text = template.render((*CONVERSATION, Message("user", "Go on.")), (TOOL,))
    assert "first\n</tool_response>\n\nGo on.</user>" in text


def test_a_system_message_dropped_when_tools_follow_is_folded_into_the_question() -> None:
    template = checked(SYSTEM_ONLY_LAST)
    assert not template.system_role
    text = template.render(CONVERSATION, (TOOL,))
    assert text.startswith("<user>Research carefully.\n\nWho?")


def test_a_sandbox_escape_in_the_tool_path_is_not_taken_for_a_quirk() -> None:
    hostile = (
        "{% for m in messages %}{% if m.tool_calls %}{{ m.__class__.__mro__ }}{% endif %}"
        "{{ m.content }}{% endfor %}{{ tools }}"
    )
    template = checked(hostile)  # the tool path is not probed into a workaround
    assert template.supports_tools and not template.short_call_ids
    assert not template.one_call_per_turn and template.system_role
    with pytest.raises(ChatTemplateError, match="sandbox") as caught:
        template.render(CONVERSATION, (TOOL,))
    assert isinstance(caught.value.__cause__, SecurityError)


def test_thinking_is_switched_off_and_a_leading_reasoning_block_is_not_the_reply() -> None:
    template = checked(
        "{{ messages[0].content }}{% if enable_thinking is defined and enable_thinking is false %}"
        "<think>\n\n</think>\n\n{% endif %}"
    )
    assert template.render((Message("user", "Hi"),)) == "Hi<think>\n\n</think>\n\n"
    offered = {"search_workspace"}
    mused = (
        '<think>Maybe <tool_call>{"name": "search_workspace", "arguments": {}}</tool_call>? '
        "No.</think>\nAda Quill [1]."
    )
    assert parse_tool_calls(mused, offered).calls == ()
    opened_in_prompt = 'hmm\n</think>\n\n<tool_call>{"name": "search_workspace", "arguments": {}}'
    parsed = parse_tool_calls(opened_in_prompt, offered)
    assert [call.name for call in parsed.calls] == ["search_workspace"] and parsed.content == ""
    plain = "An answer that mentions </think> in passing."
    assert parse_tool_calls(plain, offered).content == plain
