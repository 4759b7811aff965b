"""model.chat_template: tool_chatml renders tool calls for the offline model and TRL parses what it writes."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from codegrpo.config.choices import ChatTemplate
from codegrpo.errors import UsageError
from codegrpo.models.chat_templates import apply_chat_template_choice, check_tool_calling
from codegrpo.models.conversion import offline_model


def bash(command: str) -> str:
    """Run a shell command.

    Args:
        command: The command line.
    """
    return command


@pytest.fixture
def tokenizer():
    return AutoTokenizer.from_pretrained(offline_model())


def test_the_offline_models_own_template_cannot_render_tool_calls_and_the_error_names_the_fix(tokenizer):
    own = apply_chat_template_choice(tokenizer, ChatTemplate.own)
    with pytest.raises(UsageError, match=r"model\.chat_template=tool_chatml") as raised:
        check_tool_calling(own, "SmolLM2", ChatTemplate.own)
    assert "\n" not in str(raised.value)


def test_tool_chatml_renders_tools_calls_and_results_and_trl_parses_a_call(tokenizer):
    from trl.chat_template_utils import parse_response

    tokenizer = apply_chat_template_choice(tokenizer, ChatTemplate.tool_chatml)
    check_tool_calling(tokenizer, "SmolLM2")
    call = {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls -la"}}}
    messages = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "bash", "content": "a.py"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=[bash], tokenize=False, add_generation_prompt=True)
    assert '"name": "bash"' in text and "<tool_response>\na.py\n</tool_response>" in text
    assert text.startswith("<|im_start|>system\nYou are a careful software engineer.")
    assert text.endswith("<|im_start|>assistant\n")
    prompt = tokenizer.apply_chat_template(messages[:1], tools=[bash], add_generation_prompt=True, return_dict=False)
    written = '<tool_call>\n{"name": "bash", "arguments": {"command": "cat a.py"}}\n</tool_call><|im_end|>'
    reply = tokenizer(written, add_special_tokens=False)["input_ids"]
    parsed = parse_response(tokenizer, reply, prefix=prompt, tools=[bash])  # the completion, after its prompt
    assert parsed["tool_calls"][0]["function"] == {"name": "bash", "arguments": {"command": "cat a.py"}}


def test_a_tokenizer_without_chatml_tokens_is_refused_in_one_line():
    class NoChatML:
        def get_vocab(self):
            return {"<s>": 1}

    with pytest.raises(UsageError, match=r"tool_chatml is ChatML, and this tokenizer has no <\|im_start\|>"):
        apply_chat_template_choice(NoChatML(), ChatTemplate.tool_chatml)
