"""Code extraction: which part of a completion is the program."""

from __future__ import annotations

import re

FENCE = "```"
_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+#.-]*)")


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(tag, code) of each block: an opening fence, an optional language tag and the rest of its line,
    then everything up to the closing fence or the end (a completion cut off at max_completion_length
    still has its code scored). One pass over the text: no pattern that backtracks on hostile input."""
    blocks, start = [], text.find(FENCE)
    while start != -1:
        line_end = text.find("\n", start)
        if line_end == -1:
            break
        tag_match = _TAG.match(text, start + len(FENCE), line_end)
        tag = tag_match.group(1) if tag_match else ""
        end = text.find(FENCE, line_end + 1)
        blocks.append((tag, text[line_end + 1 : len(text) if end == -1 else end]))
        start = -1 if end == -1 else text.find(FENCE, end + len(FENCE))
    return blocks


def extract_code(text: str, tags: frozenset[str], which: str = "first") -> str:
    """Return the code of the first (or last) fenced block tagged with one of ``tags`` or untagged.

    Blocks in other languages are skipped. With no fence at all, the whole text is the code.
    """
    if which not in ("first", "last"):
        raise ValueError(f"reward.extract must be 'first' or 'last', not {which!r}")
    if "```" not in text:
        return text
    blocks = [code for tag, code in _fenced_blocks(text) if tag.lower() in tags or not tag]
    if not blocks:
        return ""
    return blocks[0] if which == "first" else blocks[-1]


def completion_text(completion: object) -> str:
    """The text of a TRL completion: a plain string, or chat messages (the assistant's turn). Total: any other
    shape (None, a number, a message without content) is the text it holds, or empty."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        return ""
    return "".join(str(m.get("content") or "") if isinstance(m, dict) else m if isinstance(m, str) else ""
                   for m in completion)
