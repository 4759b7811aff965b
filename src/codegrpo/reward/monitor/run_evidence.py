"""Dynamic evidence, from the runs: the Python harness's audit tokens in its report line, a stdio
program's on its stderr, and what the runner saw printed."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from codegrpo.config.choices import Form, LanguageName
from codegrpo.reward.monitor.categories import CATEGORIES
from codegrpo.reward.monitor.text_rules import _report_like
from codegrpo.reward.programs import get_language
from codegrpo.reward.verdict import parse_json
from codegrpo.sandbox.base import RunResult


def _report(run: RunResult) -> dict[str, Any] | None:
    """The harness's report line of one run (its last stdout line), or None."""
    line = run.stdout.rstrip("\n").rpartition("\n")[2]
    ok, report = parse_json(line) if line.startswith("{") else (False, None)
    return report if ok and isinstance(report, dict) else None


AUDIT_MARK = "\ncodegrpo-audit "  # a token's line on a stdio program's stderr (harness/inprocess.py)


def _stderr_tokens(stderr: str) -> list[str]:
    """The tokens a stdio program's audit hook wrote on its stderr, each on a line of its own (at most 256)."""
    tokens: list[str] = []
    at = stderr.find(AUDIT_MARK)
    while at >= 0 and len(tokens) < 256:
        end = stderr.find("\n", at + len(AUDIT_MARK))
        tokens.append(stderr[at + len(AUDIT_MARK) : end if end >= 0 else len(stderr)])
        at = stderr.find(AUDIT_MARK, at + len(AUDIT_MARK)) if end >= 0 else -1
    return tokens


_TOKEN_LINE = re.compile(re.escape(AUDIT_MARK) + r"[^\n]*\n?")


def without_audit_lines(run: RunResult) -> RunResult:
    """The run as the program wrote it: its audit hook's token lines (each written as ``\n`` + mark + token +
    ``\n``) taken out of its stderr, once audit_flags has read them. They are the monitor's evidence, never
    an error's reason or a feedback message (red team 6: the last stderr line was the token)."""
    if AUDIT_MARK not in run.stderr:
        return run
    return dataclasses.replace(run, stderr=_TOKEN_LINE.sub("", run.stderr))


def audit_flags(run: RunResult) -> set[str]:
    """The categories of the harness parent's "audit" tokens, and of the tokens a stdio program's hook
    wrote on its stderr (unknown categories ignored). Either can only be added to by the completion: a
    token it forged is a flag against itself."""
    report = _report(run)
    tokens = report.get("audit") if report is not None else None
    found = list(tokens[:256]) if isinstance(tokens, list) else []
    found += _stderr_tokens(run.stderr)
    return {token.partition(":")[0] for token in found if isinstance(token, str)} & set(CATEGORIES)


def run_flags(run: RunResult, form: Form, language: LanguageName = LanguageName.python) -> set[str]:
    """What the runner saw: a report-like line printed by the completion (on stderr under the Python
    harness, where its prints go; a stdio program's stdout is its answer; a JavaScript expression program
    shares stdout with its report, the last line) or a second line on the Python harness's stdout."""
    flags = set()
    harness = get_language(language).has_harness
    if not form.harnessed:
        printed = run.stdout
    else:
        printed = run.stderr if harness else run.stderr + "\n" + run.stdout.rstrip("\n").rpartition("\n")[0]
    # The last 200 lines of the last 64K characters: a million short lines are never a million strings.
    if any(_report_like(line) and line.lstrip().startswith("{") for line in printed[-(1 << 16) :].splitlines()[-200:]):
        flags.add("forgery")
    if form.harnessed and harness and run.stdout.strip().count("\n") > 0:
        flags.add("forgery")  # the harness writes one line: anything else on its stdout is not its
    return flags
