"""Chat templates by name (model.chat_template), for models whose own template cannot render tool calls.

TRL's tool loop needs a template that renders an assistant's ``tool_calls`` and the ``tool`` messages, and a
parser of the calls the model writes. ``tool_chatml`` is ChatML with Hermes-style calls, as Qwen2.5 writes
them (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), parsed by TRL's Qwen3 response template;
it fits any model whose tokenizer has ChatML's ``<|im_start|>`` and ``<|im_end|>`` (SmolLM2 among them).
"""

from __future__ import annotations

import copy
from typing import Any

from codegrpo.config.choices import ChatTemplate
from codegrpo.errors import UsageError

DEFAULT_SYSTEM = "You are a careful software engineer. You work in a repository through the tools you are given."

TOOL_CHATML = (
    "{%- if messages[0].role == 'system' %}{%- set system = messages[0].content %}{%- set rest = messages[1:] %}"
    "{%- else %}{%- set system = '" + DEFAULT_SYSTEM + "' %}{%- set rest = messages %}{%- endif %}"
    "{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call these functions. Their signatures:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nTo call one, reply with:\\n<tool_call>\\n"
    '{"name": <function-name>, "arguments": <args-json-object>}'
    "\\n</tool_call>' }}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- for message in rest %}"
    "{%- if message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + (message.content or '') }}"
    "{%- for call in (message.tool_calls or []) %}"
    "{%- set function = call.function if call.function is defined else call %}"
    '{{- \'<tool_call>\\n{"name": "\' + function.name + \'", "arguments": \' + (function.arguments | tojson)'
    " + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def apply_chat_template_choice(tokenizer: Any, choice: ChatTemplate, tools: bool = False) -> Any:
    """``tokenizer`` with the chosen template (and the parser of its tool calls) in place of its own; auto keeps
    its own unless ``tools`` (rollout=tools) needs tool calls its own cannot render, then tool_chatml."""
    if choice is ChatTemplate.auto:
        choice = ChatTemplate.tool_chatml if tools and not _renders_tools(tokenizer) else ChatTemplate.own
    if choice is ChatTemplate.own:
        return tokenizer
    vocabulary = tokenizer.get_vocab()
    missing = [token for token in ("<|im_start|>", "<|im_end|>") if token not in vocabulary]
    if missing:
        raise UsageError(
            f"model.chat_template={choice.value} is ChatML, and this tokenizer has no {', '.join(missing)}: "
            "use a model with ChatML tokens, or model.chat_template=own with a template that renders tool calls"
        )
    from trl.chat_template_utils import qwen3_schema, qwen3_template

    tokenizer.chat_template = TOOL_CHATML
    if _parses_templates():
        tokenizer.response_template = copy.deepcopy(qwen3_template)
    else:
        tokenizer.response_schema = copy.deepcopy(qwen3_schema)
    return tokenizer


def _parses_templates() -> bool:
    """Whether transformers parses responses by template (5.13 and later), else by schema."""
    from trl.chat_template_utils import _SUPPORTS_RESPONSE_TEMPLATE

    return bool(_SUPPORTS_RESPONSE_TEMPLATE)


def _renders_tools(tokenizer: Any) -> bool:
    from trl.chat_template_utils import supports_tool_calling

    return bool(getattr(tokenizer, "chat_template", None)) and bool(supports_tool_calling(tokenizer))


def check_tool_calling(tokenizer: Any, name: str, choice: ChatTemplate = ChatTemplate.auto) -> None:
    """One line, naming the setting that fixes it, where ``tokenizer`` (``name``'s, with ``choice`` applied)
    cannot render a tool-calling conversation."""
    if not _renders_tools(tokenizer):
        fix = "a model whose template renders tool calls"
        if choice is ChatTemplate.own:
            fix = "model.chat_template=tool_chatml (ChatML with tool calls; auto picks it)"
        raise UsageError(f"{name}'s chat template cannot render tool calls, which rollout=tools needs: use {fix}")
