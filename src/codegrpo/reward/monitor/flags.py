"""A completion's flags: the static evidence of its source and the dynamic evidence of its runs, in
CATEGORIES order."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from codegrpo.config.choices import LanguageName
from codegrpo.data.problems import Problem
from codegrpo.reward.monitor.categories import CATEGORIES
from codegrpo.reward.monitor.javascript_rules import _javascript_flags
from codegrpo.reward.monitor.python_rules import _python_flags
from codegrpo.reward.monitor.run_evidence import audit_flags, run_flags
from codegrpo.sandbox.base import RunResult

# Each language's static rules: its own parser's view of the source.
_RULES: dict[LanguageName, Callable[[str, Problem | None], set[str]]] = {
    LanguageName.python: _python_flags,
    LanguageName.javascript: _javascript_flags,
}


def static_flags(code: str, problem: Problem | None = None, language: LanguageName = LanguageName.python) -> set[str]:
    """The categories the completion's source shows, on the host. Total: code that does not parse, or
    is too deep for Python's parser, shows none (it is an error verdict anyway); JavaScript longer than
    JS_MAX_CHARS shows none either."""
    return _RULES[language](code, problem) if code.strip() else set()


def flags_of(
    problem: Problem, code: str, result: RunResult | None, language: LanguageName = LanguageName.python
) -> tuple[str, ...]:
    """Every category the evidence supports, in CATEGORIES order. Total: a broken report gives fewer
    flags, never an exception."""
    found = static_flags(code, problem, language)
    runs = (result.runs or (result,)) if result is not None else ()
    for run in runs:
        try:
            found |= audit_flags(run) | run_flags(run, problem.form, language)
        except Exception:  # one unreadable run adds nothing; the others still count
            continue
    return tuple(category for category in CATEGORIES if category in found)


def joined(flags: Iterable[str]) -> str:
    """The flags as one table cell: "exit,patch", "" when clean."""
    return ",".join(flags)
