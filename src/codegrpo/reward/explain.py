"""Why a completion got its reward, in a form a person reads: the problem, the status, the reason (the
exception, or got vs expected, computed on the host) and the first lines of the code that was scored.

Used wherever a verdict is shown: the completions tables, `score reasons=true`, `validate`, eval.json.
"""

from __future__ import annotations

from typing import Any

from codegrpo.reward.verdict import Scored, Status, clean_text

CODE_LINES = 3
CODE_CHARS = 240


def code_head(code: str, lines: int = CODE_LINES, chars: int = CODE_CHARS) -> str:
    """The first ``lines`` lines of the scored code (blank lines before and after it dropped), cut to ``chars``;
    '...' marks a cut. Valid text for every writer (a completions file may hold lone surrogates)."""
    rows = [row.rstrip() for row in clean_text(code).strip("\n").splitlines()]
    head = "\n".join(rows[:lines])
    cut = len(rows) > lines or len(head) > chars
    head = head[:chars]
    return head + "\n..." if cut else head


ERROR_CHARS = 160


def first_error_line(scored: Scored) -> str:
    """The first line of why a completion did not pass (exception type and message), truncated; '' if it passed."""
    if scored.verdict.status is Status.PASSED:
        return ""
    lines = [line.strip() for line in scored.verdict.detail.splitlines() if line.strip()]
    if not lines:
        return "wrong answer" if scored.verdict.status is Status.FAILED else scored.verdict.status.value
    line = lines[0]
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 3] + "..."


def reason(scored: Scored) -> str:
    """One line: '' when it passed; else the exception type and message, or got vs expected."""
    if scored.verdict.status is Status.NO_CODE and not scored.verdict.detail:  # extraction's reason, else this
        return "no code: the completion is empty, or its code blocks are all in another language or empty"
    return first_error_line(scored)


def explain(scored: Scored) -> dict[str, Any]:
    """The record shown for one verdict (JSON-able)."""
    return {
        "problem_id": scored.problem_id,
        "status": scored.verdict.status.value,
        "reward": scored.verdict.reward,
        "reason": reason(scored),
        "code": code_head(scored.code),
        "flags": list(scored.flags),
    }
