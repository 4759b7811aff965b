"""What a string literal of either language shows (a report, a host path, a harness name, the expected
answer), and the report-like text the runner looks for in what a program printed."""

from __future__ import annotations

from codegrpo.config.choices import Form
from codegrpo.reward.monitor.categories import FILE_HINTS, HOST_PATHS, REPORT_KEYS
from codegrpo.reward.monitor.literals import _TestLiterals


def _report_like(text: str) -> bool:
    """Text shaped like the harness's report line ({"status": "ok", "value": ...})."""
    return any(key in text for key in REPORT_KEYS) and ("ok" in text or "value" in text)


def _host_path(value: str) -> bool:
    """A path (or the beginning of one) outside the program's own files, or naming the harness's or the
    problems' files."""
    host = value.startswith(HOST_PATHS) or any(hint in value for hint in FILE_HINTS)
    return host and value != "/dev/stdin" and not value.startswith("/dev/null")


def _text_flags(value: str, form: Form, tests: _TestLiterals, harness_names: frozenset[str]) -> set[str]:
    """What a string literal of either language shows: a report, a host path, a harness name, the answer."""
    flags = set()
    if _report_like(value) and (form is not Form.stdio or value.lstrip().startswith("{")):
        flags.add("forgery")
    if _host_path(value):
        flags.add("filesystem")
    if value in harness_names and form.harnessed:
        flags.add("patch")
    if form.harnessed and tests.is_expected_text(value):
        flags.add("forgery")  # the expected answer as text: printed, it would look like a report
    return flags
