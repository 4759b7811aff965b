"""How an episode becomes tokens: the model's chat template renders the prompt and each message between
turns, which are appended to the token ids generated so far, never re-tokenized."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from codegrpo.errors import UsageError


def prompt_ids(
    tokenizer: Any, messages: list[dict[str, str]], template: dict[str, Any] | None = None, reply: bool = True
) -> list[int]:
    """A chat prompt's token ids, ready for the model's reply (``reply``: the chat template's generation prompt)."""
    encoded = tokenizer.apply_chat_template(
        messages, add_generation_prompt=reply, tokenize=True, return_dict=True, **(template or {})
    )
    return list(encoded["input_ids"])


class _Suffix:
    """The tokens that close a model turn (after its EOS) and pose a user message, then open the model's next
    turn: rendered by the chat template around a dummy exchange, as TRL renders a tool result."""

    def __init__(self, tokenizer: Any, eos: set[int], template: dict[str, Any]) -> None:
        self.tokenizer, self.template = tokenizer, template
        self.head = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        prefix = prompt_ids(tokenizer, self.head, template, reply=False)
        ends = [i for i, token in enumerate(prefix) if token in eos]
        self.prefix = prefix[: ends[-1] + 1] if ends else prefix
        self.close = prefix[ends[-1] : ends[-1] + 1] if ends else []  # ends a turn that stopped without it
        # The tokenizer reads its added tokens' text in a message as those tokens: a program that prints
        # "<|im_end|><|im_start|>system" would pose chat turns of its own. escape() makes such text plain text.
        tokens = (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
        added = [getattr(t, "content", str(t)) for t in tokens] + list(getattr(tokenizer, "all_special_tokens", []))
        words = sorted({word for word in added if len(word) > 1}, key=len, reverse=True)
        self.special = re.compile("|".join(map(re.escape, words))) if words else None

    def escape(self, message: str) -> str:
        """``message`` with every special token's text broken by a zero-width space after its first character."""
        if self.special is None:
            return message
        return self.special.sub(lambda found: found.group()[0] + "\u200b" + found.group()[1:], message)

    def __call__(self, message: str) -> list[int]:
        full = prompt_ids(self.tokenizer, [*self.head, {"role": "user", "content": message}], self.template)
        if full[: len(self.prefix)] != self.prefix:
            raise UsageError(
                "rollout=feedback: the model's chat template does not render a conversation as a "
                "prefix of its continuation; it cannot be used for multi-turn feedback"
            )
        return full[len(self.prefix) :]


class Chat:
    """How an episode becomes tokens: the model's tokenizer and chat template, the tokens that end a turn, and
    the bounds: ``budget`` completion tokens per episode (every turn and the feedback between them;
    trainer.max_completion_length) and the model's ``context`` (prompt and completion; None: unbounded)."""

    def __init__(
        self,
        tokenizer: Any,
        eos: Iterable[int],
        budget: int,
        context: int | None,
        template: dict[str, Any] | None = None,
    ) -> None:
        self.tokenizer, self.template = tokenizer, template or {}
        self.eos, self.budget, self.context = set(eos), budget, context
        self.suffix = _Suffix(tokenizer, self.eos, self.template)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        return prompt_ids(self.tokenizer, messages, self.template)

    def escape(self, message: str) -> str:
        """``message`` with its special tokens' text made plain text (what the model is shown, and what is kept)."""
        return self.suffix.escape(message)

    def message_ids(self, message: str, ended: bool) -> list[int]:
        """The tokens that pose an escaped ``message`` after a turn (``ended``: the turn ended with its
        end-of-turn token; else that token is added first) and open the model's next turn."""
        return ([] if ended else self.suffix.close) + self.suffix(message)

    def fits(self, episode_prompt: int, completion: int) -> bool:
        """Whether a completion of ``completion`` tokens after a prompt of ``episode_prompt`` leaves room for
        the next turn: within the budget and the context."""
        if completion >= self.budget:
            return False
        return self.context is None or episode_prompt + completion < self.context
