"""The sandboxed chat template, without a model: rendering, tools both ways, and hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jinja2.exceptions import SecurityError

from imprint_desktop.core.errors import ChatTemplateError
from imprint_desktop.core.providers.base import Message, ToolCall
from imprint_desktop.core.providers.local.template import CHATML_TEMPLATE, ChatTemplate

# The shape of the starter model's template: ChatML with a default system message.
SMOL = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nDefault system.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# A template with tool support, printing what it is given so the test can read it back.
NATIVE = (
    "{% if tools %}TOOLS={{ tools | tojson }}{{ '\\n' }}{% endif %}"
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}"
    "{% if m.tool_calls %}CALLS={{ m.tool_calls | tojson }}{% endif %}"
    "{% if m.tool_call_id %}ID={{ m.tool_call_id }}{% endif %}{{ '\\n' }}{% endfor %}[assistant]"
)
NO_SYSTEM = (
    "{% for m in messages %}{% if m.role == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}<assistant>"
)
TOOL = {
    "type": "function",
    "function": {
        "name": "search_workspace",
        "description": "Search <the> workspace & more",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
CONVERSATION = (
    Message("system", "Research."),
    Message("user", "Who keeps the light?"),
    Message("assistant", "Looking.", (ToolCall("c1", "search_workspace", '{"query": "keeper"}'),)),
    Message("tool", "[1] Ada Brown.", tool_call_id="c1", name="search_workspace"),
    Message("tool", "[2] Since 1998.", tool_call_id="c2", name="search_workspace"),
)


def test_chatml_like_template_renders_the_conversation() -> None:
    template = ChatTemplate(SMOL)
    template.check()
    assert not template.supports_tools
    text = template.render((Message("user", "Hello?"),))
    assert text == (
        "<|im_start|>system\nDefault system.<|im_end|>\n<|im_start|>user\nHello?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_prompted_tools_describe_the_tools_and_write_history_as_text() -> None:
    text = ChatTemplate(SMOL).render(CONVERSATION, (TOOL,))
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nResearch.\n\nYou can use tools.")
    assert '"name": "search_workspace"' in system
    assert "<the> workspace & more" in system  # JSON without HTML escaping
    assert (
        '<|im_start|>assistant\nLooking.\n<tool_call>[{"name": "search_workspace", '
        '"arguments": {"query": "keeper"}}]</tool_call><|im_end|>' in text
    )
    # Both results in one user turn, so templates that insist on alternating roles accept it.
    assert (
        "<|im_start|>user\n<tool_response>\n[1] Ada Brown.\n</tool_response>\n"
        "<tool_response>\n[2] Since 1998.\n</tool_response><|im_end|>" in text
    )
    assert text.endswith("<|im_start|>assistant\n")


def test_tools_without_a_system_message_get_one() -> None:
    text = ChatTemplate(SMOL).render((Message("user", "Hi"),), (TOOL,))
    assert text.startswith("<|im_start|>system\nYou can use tools.")
    assert "Default system." not in text


def test_native_tools_get_the_openai_shapes() -> None:
    template = ChatTemplate(NATIVE)
    assert template.supports_tools
    text = template.render(CONVERSATION, (TOOL,))
    tools_line, *lines = text.splitlines()
    assert json.loads(tools_line.removeprefix("TOOLS=")) == [TOOL]
    calls = json.loads(lines[2].split("CALLS=")[1])
    assert calls[0]["function"] == {"name": "search_workspace", "arguments": {"query": "keeper"}}
    assert lines[3] == "[tool][1] Ada Brown.ID=c1"
    prompted = template.render(CONVERSATION, (TOOL,), native_tools=False)
    assert "TOOLS=" not in prompted
    assert "<tool_call>[" in prompted


def test_template_refusing_system_messages_gets_them_folded_into_the_user_turn() -> None:
    template = ChatTemplate(NO_SYSTEM)
    template.check()
    assert not template.system_role
    text = template.render((Message("system", "Be brief."), Message("user", "Hi")))
    assert text == "<user>Be brief.\n\nHi</user><assistant>"


def test_missing_template_falls_back_to_chatml() -> None:
    for source in (None, "", "  "):
        template = ChatTemplate(source)
        assert template.is_fallback
        assert template.source == CHATML_TEMPLATE
        text = template.render((Message("user", "Hi"),))
        assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_special_tokens_and_helpers_are_available() -> None:
    template = ChatTemplate(
        "{{ bos_token }}{{ strftime_now('%Y') | length }}{{ messages[0].content }}{{ eos_token }}",
        bos_token="<s>",
        eos_token="</s>",
    )
    assert template.render((Message("user", "x"),)) == "<s>4x</s>"


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
    "{{ raise_exception.__globals__['__builtins__']['open']('MARKER', 'w') }}",
    "{{ strftime_now.__globals__ }}",
    "{{ messages.__class__.__base__ }}",
    "{% set x = messages.append({'role': 'user', 'content': 'injected'}) %}",
    "{{ messages[0].update({'role': 'system'}) }}",
    "{{ '{0.__class__.__mro__}'.format(1) }}",
    "{{ self.__init__.__globals__ }}",
    "{{ lipsum.__globals__['os'].popen('touch MARKER').read() }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ (messages | attr('__class__')) }}",
]


@pytest.mark.parametrize("payload", ESCAPES)
def test_escape_attempts_fail_safely(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "escaped"
    template = ChatTemplate(payload.replace("MARKER", str(marker)), label="Evil model")
    with pytest.raises(ChatTemplateError, match="sandbox") as caught:
        template.render((Message("user", "Hi"),))
    assert isinstance(caught.value.__cause__, SecurityError)
    assert "Evil model" in str(caught.value)
    assert not marker.exists()


def test_runaway_output_is_stopped() -> None:
    template = ChatTemplate(
        "{% for i in range(100000) %}{% for j in range(100000) %}"
        "{{ 'x' * 1000 }}{% endfor %}{% endfor %}"
    )
    with pytest.raises(ChatTemplateError, match="too much text"):
        template.render((Message("user", "Hi"),))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError"),
        ("{{ raise_exception('no tools here') }}", "refused the conversation: no tools here"),
        ("{{ messages[5].content }}", "failed"),
    ],
)
def test_broken_templates_raise_a_clear_error(source: str, message: str) -> None:
    with pytest.raises(ChatTemplateError, match=message):
        ChatTemplate(source).render((Message("user", "Hi"),))


def test_invalid_jinja_is_reported_when_the_template_is_made() -> None:
    with pytest.raises(ChatTemplateError, match="not valid Jinja"):
        ChatTemplate("{% if %}")
