"""The sandboxed chat template, without a model: rendering, tools both ways, and hostile input."""

from __future__ import annotations

import contextlib
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from jinja2.exceptions import SecurityError

from imprint_desktop.core.errors import ChatTemplateError
from imprint_desktop.core.providers.base import Message, ToolCall
from imprint_desktop.core.providers.local.sandbox.limits import MAX_VALUE, TemplateLimitError
from imprint_desktop.core.providers.local.sandbox.operators import check_printf
from imprint_desktop.core.providers.local.template import (
    CHATML_TEMPLATE,
    MAX_RENDER_SECONDS,
    ChatTemplate,
)
from tests.support.growth import growth

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
    assert system.startswith("<|im_start|>system\nResearch.\n\nYou can use tools:")
    # One short line a tool (a small model reads it before every question), text unescaped.
    assert (
        '\n{"name": "search_workspace", "arguments": {"query": "string, optional"}} — '
        "Search <the> workspace & more\n"
    ) in system
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
    assert text.startswith("<|im_start|>system\nYou can use tools:")
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
    "{{ joiner.__init__.__globals__['os'].popen('touch MARKER').read() }}",
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


# Each asks for hours of work or gigabytes of memory; the sandbox must refuse it within its time
# limit, before the work is done. "BIG" is half the most text one value may hold.
BIG = "('x' * 2097152)"
HOSTILE = {
    # Folded by Jinja's compiler inside from_string when "**" is not intercepted.
    "power folded at compile time": "{{ 10 ** (10 ** 10) }}",
    "power at render time": "{% set n = 10 %}{{ n ** (n ** n) }}",
    "silent nested loops": (
        "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
    ),
    "silent loops over text": (
        "{% for i in range(10000) %}{% for c in 'x' * 100000 %}{% endfor %}{% endfor %}"
    ),
    "silent recursive loop": (
        "{% for x in [1, 2] recursive %}{% if loop %}{{ loop([1, 2]) }}{% endif %}{% endfor %}"
    ),
    "silent macro fan-out": (
        "{% macro f(n) %}{% for i in range(100) %}{% if n %}{{ f(n - 1) }}{% endif %}"
        "{% endfor %}{% endmacro %}{{ f(10) }}"
    ),
    "huge range": "{% for i in range(10 ** 9) %}{% endfor %}",
    "string times a big number": "{{ 'x' * 10000000000 }}",
    "list times a big number": "{{ [0] * 10000000000 }}",
    "padding folded at compile time": "{{ 'x' | center(9999999999) }}",
    "padding method": "{{ 'x'.ljust(9999999999) }}",
    "indent": "{{ 'x\nx' | indent(99999999) }}",
    "printf width": "{{ '%0999999999d' % 1 }}",
    "printf filter": "{{ '%0999999999d' | format(1) }}",
    "format width": "{{ '{:>999999999}'.format(1) }}",
    "format fields": "{{ ('{0}' * 100000).format('x' * 100000) }}",
    "replace empty": "{{ ('x' * 100000).replace('', 'y' * 100000) }}",
    "replace filter": "{{ ('x' * 100000) | replace('', 'y' * 100000) }}",
    "join of references": f"{{{{ [{BIG}, {BIG}, {BIG}] | join }}}}",
    "join method": f"{{{{ ''.join([{BIG}, {BIG}, {BIG}]) }}}}",
    "printing references": f"{{{{ [{BIG}, {BIG}, {BIG}] }}}}",
    "tojson of references": f"{{{{ [{BIG}, {BIG}, {BIG}] | tojson }}}}",
    "list times a count": f"{{{{ [{BIG}] * 3 }}}}",
    "doubling with ~": (
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}"
    ),
    "doubling with +": (
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}"
    ),
    "recursion keeping big text": (
        f"{{% macro f(s) %}}{{{{ f(s ~ 'y') }}}}{{% endmacro %}}{{{{ f({BIG}) }}}}"
    ),
    "capturing output": (
        f"{{% set x %}}{{% for i in range(10000) %}}{{{{ {BIG} }}}}{{% endfor %}}{{% endset %}}"
    ),
    "growing a dict": (
        "{% set ns = namespace(d={}) %}{% for i in range(10000) %}"
        "{% set ns.d = dict(ns.d, **{('k' ~ i): 'x' * 1000000}) %}{% endfor %}"
    ),
    "batch fill": f"{{{{ [1] | batch(100000, {BIG}) | list }}}}",
    "too long": "x" * (2 * 1024 * 1024),
    # Its own size check was quadratic: each "%(" made it read on to the end looking for ")".
    "printf key that never closes": "{% set f = '%(' * 200000 %}{{ f % 1 }}",
    "printf key with parentheses": "{{ '%(a(b)c)999999999s' % {} }}",
    "printf star width": "{{ '%*d' % (999999999, 1) }}",
    "splitting into millions": "{{ ('ab ' * 1000000).split() | length }}",
    # A template may append to a list it made (Kimi K2 keeps a queue); not without bound.
    "appending big text": (
        "{% set ns = namespace(kept=[]) %}{% for i in range(1000) %}"
        "{% set _ = ns.kept.append('x' * 4000000 ~ i) %}{% endfor %}"
    ),
    "appending millions": (
        "{% set ns = namespace(kept=[]) %}{% for i in range(10000) %}{% for j in range(100) %}"
        "{% set _ = ns.kept.append(j) %}{% endfor %}{% endfor %}"
    ),
}

# Each made its result before any check looked at it: hundreds of megabytes or more (in the old
# sandbox, the numbers below kept at a size this machine survives). A render is traced and its
# peak must stay far below that: the result is refused before it is made.
GREEDY = {
    "format width in an argument": "{{ '{0:>{1}}'.format('x', '300000000') }}",
    "format precision in an argument": "{{ '{0:.{1}f}'.format(1.5, '300000000') }}",
    "format_map width": "{{ '{a:>{b}}'.format_map({'a': 'x', 'b': '300000000'}) }}",
    "translate to long text": (
        "{% set y = 'y' * 1000000 %}{{ ('x' * 250).translate([" + "y, " * 121 + "]) }}"
    ),
    "cycler chain": (
        "{% set ns = namespace(c=none) %}{% for i in range(60) %}"
        "{% set ns.c = cycler(ns.c, 'x' * 4000000 ~ i) %}{% endfor %}"
    ),
    "namespace chain": (
        "{% set ns = namespace(c=none) %}{% for i in range(60) %}"
        "{% set ns.c = namespace(before=ns.c, text='x' * 4000000 ~ i) %}{% endfor %}"
    ),
    "list chain": (
        "{% set ns = namespace(c=none) %}{% for i in range(60) %}"
        "{% set ns.c = [ns.c, 'x' * 4000000 ~ i] %}{% endfor %}"
    ),
    "dict chain": (
        "{% set ns = namespace(c=none) %}{% for i in range(60) %}"
        "{% set ns.c = {'before': ns.c, 'text': 'x' * 4000000 ~ i} %}{% endfor %}"
    ),
    "strftime_now of a long format": "{{ strftime_now('%c' * 2000000) | length }}",
}


@pytest.mark.parametrize("source", GREEDY.values(), ids=GREEDY.keys())
def test_results_are_sized_before_they_are_made(source: str) -> None:
    tracemalloc.start()
    try:
        started = time.monotonic()
        with pytest.raises(ChatTemplateError, match="far more work") as caught:
            ChatTemplate(source, label="Greedy model").render((Message("user", "Hi"),))
        seconds = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(caught.value.__cause__, TemplateLimitError)
    assert seconds < 5.0
    assert peak < 4 * MAX_VALUE  # a few values at the most one may be, never their product


@pytest.mark.parametrize("piece", ["%(", "%", "%%", "% ", "%0", "%(a)s"])
def test_a_printf_format_is_checked_in_linear_time(piece: str) -> None:
    def check(size: int) -> None:
        with contextlib.suppress(TemplateLimitError):
            check_printf(piece * size, 1)

    assert growth(check, 20_000, 4) < 8


def test_a_template_may_keep_a_queue_in_a_list_of_its_own() -> None:
    """Kimi K2's templates queue call ids with ``append`` and ``pop``: allowed on lists the
    template made, never on the ones it was given (see ``ESCAPES`` for ``messages.append``)."""
    source = (
        "{% set queue = namespace(ids=[]) %}{% for m in messages %}"
        "{% set _ = queue.ids.append(m.role) %}{% endfor %}"
        "{{ queue.ids.pop(0) }},{{ queue.ids | join(',') }}"
    )
    text = ChatTemplate(source).render((Message("user", "a"), Message("assistant", "b")))
    assert text == "user,assistant"


def test_text_methods_inside_loops_and_blocks_take_jinjas_own_arguments() -> None:
    """Jinja passes the variables set in a loop or block to every call made there; the bounded
    text methods must take them like any call does (several real templates call ``.replace()``
    and ``.join()`` inside ``{% for %}``)."""
    source = (
        "{% for m in messages %}{{ m.content.replace('a', 'o') }}|{{ ', '.join([m.role, 'x']) }}|"
        "{{ m.content.split(' ') | length }}|{{ '{0:>4}'.format(loop.index) }}{% endfor %}"
        "{% block tail %}{% for i in [1] %}{{ '-'.join(['a', 'b']) }}{% endfor %}{% endblock %}"
    )
    text = ChatTemplate(source).render((Message("user", "a cat sat"),))
    assert text == "o cot sot|user, x|3|   1a-b"


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_work_is_refused_quickly(source: str) -> None:
    started = time.monotonic()
    with pytest.raises(ChatTemplateError, match="far more work") as caught:
        ChatTemplate(source, label="Greedy model").render((Message("user", "Hi"),))
    assert time.monotonic() - started < MAX_RENDER_SECONDS + 1.0
    assert isinstance(caught.value.__cause__, TemplateLimitError)
    assert "Greedy model" in str(caught.value)


def test_output_is_capped_even_when_each_piece_is_small() -> None:
    template = ChatTemplate(
        "{% for i in range(10000) %}{% for j in range(10000) %}"
        "{{ 'x' * 1000 }}{% endfor %}{% endfor %}"
    )
    with pytest.raises(ChatTemplateError, match="its output") as caught:
        template.render((Message("user", "Hi"),))
    assert isinstance(caught.value.__cause__, TemplateLimitError)


def test_a_long_conversation_renders_well_within_the_limits() -> None:
    """Real templates do real work: loops over every message, macros, filters, JSON, ``~``."""
    source = (
        "{% macro show(m) %}{{ m.role | upper }}: {{ m.content | trim }}{% endmacro %}"
        "{% set ns = namespace(system='') %}"
        "{% for m in messages if m.role == 'system' %}{% set ns.system = ns.system ~ m.content %}"
        "{% endfor %}{{ ns.system }}\n{{ tools | tojson(indent=2) }}\n"
        "{% for m in messages %}{% if m.role != 'system' %}{{ show(m) }}"
        "{{ '\n' }}{% endif %}{% endfor %}{{ messages | map(attribute='role') | join(',') }}"
    )
    conversation = [Message("system", "Research.")]
    for number in range(400):
        conversation.append(Message("user", f"Question {number}? " + "word " * 400))
        conversation.append(Message("assistant", f"Answer {number}."))
    started = time.monotonic()
    text = ChatTemplate(source, label="Busy model").render(tuple(conversation), (TOOL,))
    assert time.monotonic() - started < 1.0
    assert text.count("USER: Question") == 400
    assert len(text) > 800_000


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ raise_exception('no tools here') }}", "refused the conversation: no tools here"),
        ("{{ messages[5].content }}", "failed"),
        ("{{ 'x' | wordwrap(5) }}", "cannot be used"),  # a filter chat templates never need
    ],
)
def test_broken_templates_raise_a_clear_error(source: str, message: str) -> None:
    with pytest.raises(ChatTemplateError, match=message):
        ChatTemplate(source).render((Message("user", "Hi"),))


def test_endless_recursion_is_stopped_as_too_much_work() -> None:
    with pytest.raises(ChatTemplateError, match="nest more than") as caught:
        ChatTemplate("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").render(
            (Message("user", "Hi"),)
        )
    assert isinstance(caught.value.__cause__, TemplateLimitError)


def test_invalid_jinja_is_reported_when_the_template_is_made() -> None:
    with pytest.raises(ChatTemplateError, match="not valid Jinja"):
        ChatTemplate("{% if %}")
