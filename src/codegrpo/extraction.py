"""Code extraction: which part of a completion is the program."""

from __future__ import annotations

import re

# An opening fence with an optional language tag, then everything up to the closing fence or the end
# (a completion cut off at max_completion_length still has its code scored).
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(text: str, tags: frozenset[str], which: str = "first") -> str:
    """Return the code of the first (or last) fenced block tagged with one of ``tags`` or untagged.

    Blocks in other languages are skipped. With no fence at all, the whole text is the code.
    """
    if which not in ("first", "last"):
        raise ValueError(f"reward.extract must be 'first' or 'last', not {which!r}")
    if "```" not in text:
        return text
    blocks = [m.group(2) for m in _FENCE.finditer(text) if m.group(1).lower() in tags or not m.group(1)]
    if not blocks:
        return ""
    return blocks[0] if which == "first" else blocks[-1]


def completion_text(completion: str | list[dict[str, str]]) -> str:
    """The text of a TRL completion: a plain string, or chat messages (the assistant's turn)."""
    if isinstance(completion, str):
        return completion
    return "".join(str(message.get("content") or "") for message in completion)
