"""Every real chat template the tests keep (``templates/``, see its README) through the path a
model's template takes when the model is loaded. (A larger corpus is checked outside the
repository: templates copied from other projects are not committed here.)

For each: :func:`~imprint_desktop.core.providers.local.loader.usable_template` (a hostile template
refuses the model, a broken one falls back to ChatML), then the template built and checked as the
loader does, then a research conversation with a follow-up question rendered both ways tools can
be written: natively (when the check kept the template's own tool format) and prompted. The
conversation, the call's arguments and its result must reach the prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint_desktop.core.providers.base import Message, ToolCall
from imprint_desktop.core.providers.local.loader import usable_template
from imprint_desktop.core.providers.local.template import ChatTemplate
from imprint_desktop.core.tools.specs import SPECS

CORPUS = Path(__file__).parent / "templates"
TEMPLATES = sorted(CORPUS.glob("*.jinja"))

#: "tool_use" variants that need their ``tools`` (or ``functions``) variable on every request:
#: a model file never carries one as its only template; given one, ChatML is used instead.
FALLS_BACK_TO_CHATML = frozenset(
    {
        "CohereForAI-c4ai-command-r-plus-tool_use",
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
        "fireworks-ai-llama-3-firefunction-v2",
    }
)
#: Templates that take a tool history but leave part of each call out of the prompt (LFM2 writes
#: calls only as the reply's own text; granite 3.3 drops the name): their tools are prompted.
HIDE_PART_OF_A_CALL = frozenset(
    {"LFM2-8B-A1B", "LFM2.5-Instruct", "ibm-granite-granite-3.3-2B-Instruct"}
)

TOOLS = tuple(spec.schema() for spec in SPECS.values())
QUESTION = "Who kept the Greyness Point light?"
ARGUMENTS = '{"query": "Greyness Point keeper"}'
RESULT = "[1] keepers.md:3 Ada Quill kept the light until 1971."
FOLLOW_UP = "And who came after her?"
CALLS = (ToolCall("call_7Hq2", "search_workspace", ARGUMENTS),)
CONVERSATION = (
    Message("system", "Research the documents."),
    Message("user", QUESTION),
    Message("assistant", "", CALLS),
    Message("tool", RESULT, tool_call_id="call_7Hq2", name="search_workspace"),
    Message("assistant", "Ada Quill kept it until 1971 [1]."),
    Message("user", FOLLOW_UP),
    Message("assistant", "", (ToolCall("call_9Zx1", "search_workspace", ARGUMENTS),)),
    Message("tool", RESULT, tool_call_id="call_9Zx1", name="search_workspace"),
)


def test_the_corpus_is_there_with_its_sources() -> None:
    assert len(TEMPLATES) >= 4
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert "MIT license" in readme
    for template in TEMPLATES:
        assert template.name in readme, f"{template.name} has no source in the README"


@pytest.mark.parametrize("path", TEMPLATES, ids=[path.stem for path in TEMPLATES])
def test_a_real_template_loads_and_renders_research(path: Path) -> None:
    name = path.stem
    source = usable_template(path.read_text(encoding="utf-8"), name)
    assert (source is None) == (name in FALLS_BACK_TO_CHATML)
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>", label=name)
    template.check()
    if name in HIDE_PART_OF_A_CALL:
        assert not template.supports_tools
    ways = (True, False) if template.supports_tools else (False,)
    for native in ways:
        text = template.render(CONVERSATION, TOOLS, native_tools=native)
        for said in (QUESTION, "Ada Quill kept the light until 1971.", FOLLOW_UP):
            assert said in text, f"{'native' if native else 'prompted'}: {said!r} is not shown"
        assert "Greyness Point keeper" in text, "the call's arguments are not shown"
