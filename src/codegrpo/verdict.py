"""The verdict, computed on the host: the sandbox only ever returns data."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass
from typing import Any

from codegrpo.sandbox.base import Outcome, RunResult


class Status(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"  # ran, but the answer is wrong (partial credit may still be above 0)
    ERROR = "error"  # an exception, a syntax error, a non-zero exit, a resource limit
    TIMEOUT = "timeout"
    NO_CODE = "no_code"
    INFRA = "infra"  # the sandbox failed: reward None, left out of the update


@dataclass(frozen=True)
class Verdict:
    status: Status
    reward: float | None
    detail: str = ""


@dataclass(frozen=True)
class Scored:
    problem_id: str
    code: str
    verdict: Verdict
    latency_s: float


def strict_equal(a: Any, b: Any) -> bool:
    """JSON values equal in type and value: True never equals 1, 2 equals 2.0, NaN equals NaN."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def parse_json(text: str) -> tuple[bool, Any]:
    """Parse JSON that came out of a sandbox; anything malformed, too deep or too big is (False, None)."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError, TypeError):
        return False, None


def envelope(result: RunResult) -> tuple[Verdict | None, Any]:
    """Read the harness's one-line report from a finished run, or the verdict that ends scoring early."""
    if result.outcome is Outcome.SANDBOX_ERROR:
        return Verdict(Status.INFRA, None, result.error), None
    if result.outcome is Outcome.TIMEOUT:
        return Verdict(Status.TIMEOUT, 0.0, "wall-clock limit"), None
    if result.outcome is not Outcome.EXITED or result.exit_code != 0:
        return Verdict(Status.ERROR, 0.0, f"{result.outcome.value} (exit {result.exit_code})"), None
    last_line = result.stdout.rstrip("\n").rpartition("\n")[2]
    ok, report = parse_json(last_line)
    if not ok or not isinstance(report, dict) or report.get("status") not in ("ok", "error"):
        return Verdict(Status.ERROR, 0.0, "no report from the harness"), None
    if report["status"] == "error":
        return Verdict(Status.ERROR, 0.0, str(report.get("error", ""))[:500]), None
    return None, report.get("value")


VALUE_CHARS = 80


def show_value(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value as JSON text, cut to ``limit`` characters, for a reason a person reads."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def got_expected(actual: Any, expected: Any) -> str:
    # Built on the host after the run: the expected value never goes into the sandbox.
    return f"got {show_value(actual)}, expected {show_value(expected)}"


def score_values(actual: Any, expected: Any, partial: bool) -> Verdict:
    """Expression form: the whole value must match; with ``partial``, list positions count one by one."""
    if strict_equal(actual, expected):
        return Verdict(Status.PASSED, 1.0)
    comparable = isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected)
    if partial and comparable and expected:
        hits = sum(strict_equal(x, y) for x, y in zip(actual, expected, strict=True))
        return Verdict(Status.FAILED, hits / len(expected), got_expected(actual, expected))
    return Verdict(Status.FAILED, 0.0, got_expected(actual, expected))


def score_checks(records: Any, expected: list[Any], partial: bool) -> Verdict:
    """HumanEval form: one record per check; a value record is judged here, on the host.

    ``expected[i]`` says how (``programs.HumanEvalCheck``), or is None for an assert decided in the sandbox.
    """
    if not isinstance(records, list) or len(records) != len(expected):
        return Verdict(Status.ERROR, 0.0, "the checks did not all run")
    passed = 0
    first_failure = ""
    for number, (record, want) in enumerate(zip(records, expected, strict=True), start=1):
        ok = False
        if isinstance(record, list) and len(record) == 2:
            kind, value = record
            if kind == "value" and want is not None:
                ok = _value_passes(value, want)
            elif kind == "assert" and want is None:
                ok = value is True
        passed += ok
        if not ok and not first_failure:
            first_failure = _check_failure(number, record, want)
    total = len(expected)
    if passed == total:
        return Verdict(Status.PASSED, 1.0)
    detail = f"{passed}/{total} checks pass; {first_failure}"
    return Verdict(Status.FAILED, passed / total if partial and total else 0.0, detail)


def _check_failure(number: int, record: Any, want: list[Any] | None) -> str:
    """Why check ``number`` failed, judged on the host: got vs what the check wants."""
    if want is None or not (isinstance(record, list) and len(record) == 2 and record[0] == "value"):
        return f"check {number}: assert failed"
    value = record[1]
    how, *args = want
    if how == "eq":
        return f"check {number}: {got_expected(value, args[0])}"
    if how == "truthy":
        return f"check {number}: got {show_value(value)}, expected a {'true' if args[0] else 'false'} value"
    return f"check {number}: got {show_value(value)}, expected {show_value(args[0])} within {args[1]}"


def _value_passes(value: Any, want: list[Any]) -> bool:
    how, *args = want
    if how == "eq":
        return strict_equal(value, args[0])
    if how == "truthy":
        return bool(value) is args[0]
    target, tolerance, inclusive = args
    if type(value) not in (int, float) or math.isnan(value):
        return False
    distance = abs(value - target)
    return distance <= tolerance if inclusive else distance < tolerance
