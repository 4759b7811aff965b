"""The verdict, computed on the host: the sandbox only ever returns data."""

from __future__ import annotations

import enum
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from codegrpo.harness import REFUSED
from codegrpo.sandbox.base import Outcome, RunResult


class Status(str, enum.Enum):
    """How a completion's run ended, as the host judged it."""

    PASSED = "passed"
    FAILED = "failed"  # ran, but the answer is wrong (partial credit may still be above 0)
    ERROR = "error"  # an exception, a syntax error, a non-zero exit, a resource limit
    TIMEOUT = "timeout"
    NO_CODE = "no_code"
    INFRA = "infra"  # the sandbox failed: reward None, left out of the update


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(text: str) -> str:
    """Text from a sandbox made safe for every writer on the host (parquet, W&B, JSON, a terminal): lone
    surrogates (which a JSON escape can carry) and control characters but newline and tab as escapes."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


@dataclass(frozen=True)
class Verdict:
    """A completion's verdict: its status, its reward (None only where the sandbox failed) and why."""

    status: Status
    reward: float | None
    detail: str = ""

    def __post_init__(self) -> None:
        # Every reason shown anywhere is a verdict's detail: cleaned here, once.
        object.__setattr__(self, "detail", clean_text(self.detail))


@dataclass(frozen=True)
class Scored:
    """One scored completion: the problem, the code that ran, its verdict, how long its run took and the
    hack monitor's flags."""

    problem_id: str
    code: str
    verdict: Verdict
    latency_s: float
    flags: tuple[str, ...] = ()  # the reward-hack monitor's categories (reward/monitor/); never part of the verdict


def strict_equal(a: Any, b: Any) -> bool:
    """JSON values equal in type and value: True never equals 1, 2 equals 2.0, NaN equals NaN. Total:
    values too deep to compare are unequal."""
    try:
        return _strict_equal(a, b)
    except RecursionError:
        return False


def python_equal(a: Any, b: Any) -> bool:
    """Python's == on two JSON views, as APPS's, TACO's, LiveCodeBench's and LeetCode's graders compare a call's
    value: True equals 1, 2 equals 2.0 (a tuple returned is already a list). Total: values too deep are unequal."""
    try:
        return bool(a == b)
    except RecursionError:
        return False


def _strict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b  # exact for ints of any size against floats: never an OverflowError
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def parse_json(text: str) -> tuple[bool, Any]:
    """Parse JSON that came out of a sandbox; anything malformed, too deep or too big is (False, None)."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError, TypeError, MemoryError):
        return False, None


MAX_DEPTH = 120  # the harness refuses values nested deeper than 100
SAME_HASH = 8  # items of one set or dict keys with one hash: more is a collision attack on the host's CPU
_TAGS: dict[str, Callable[[list[Any]], Any]] = {"t": tuple, "s": set, "f": frozenset}


def _hashable_items(items: list[Any]) -> list[Any]:
    """``items`` for a set or dict keys, refused when many share a hash: the sandbox built them cheaply
    from one shared object, the host would compare every rebuilt copy with every other."""
    try:
        counts = Counter(map(hash, items))
    except TypeError as error:  # an unhashable item of a set or key of a dict
        raise ValueError(f"malformed typed value: {error}") from None
    if counts and max(counts.values()) > SAME_HASH:
        raise ValueError("too many items with one hash")
    return items


def decode_typed(node: Any, depth: int = 0) -> Any:
    """The Python value the harness's typed JSON describes (python_harness._typed): tuples, sets,
    frozensets, dicts with keys of any type, bytes, complex and big ints as Python had them.
    Raises ValueError for anything else."""
    plain, tag, body = _open(node, depth, decode_typed)
    if tag is None:
        return plain
    if tag in _TAGS and type(body) is list:
        items = [decode_typed(item, depth + 1) for item in body]
        return tuple(items) if tag == "t" else _TAGS[tag](_hashable_items(items))
    if tag == "d" and type(body) is list and all(type(pair) is list and len(pair) == 2 for pair in body):
        keys = _hashable_items([decode_typed(key, depth + 1) for key, _ in body])
        return dict(zip(keys, (decode_typed(item, depth + 1) for _, item in body), strict=True))
    if tag == "b" and type(body) is str:
        return bytes.fromhex(body)
    if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) is float for x in body):
        return complex(*body)
    return _big_int(tag, body)


def _open(node: Any, depth: int, decode: Callable[[Any, int], Any]) -> tuple[Any, str | None, Any]:
    """(value, None, None) for a scalar or a list (its items through ``decode``), else (None, tag, body)."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    if node is None or type(node) in (bool, int, float, str):
        return node, None, None
    if type(node) is list:
        return [decode(item, depth + 1) for item in node], None, None
    if type(node) is not dict or len(node) != 1:
        raise ValueError("malformed typed value")
    return None, *next(iter(node.items()))


def _big_int(tag: str, body: Any) -> int:
    if tag == "i" and type(body) is str:
        return int(body, 16)  # base 16: no limit on digits
    raise ValueError("malformed typed value")


def json_view(node: Any, depth: int = 0) -> Any:
    """The harness's typed JSON as the guide's JSON sees it (tuples are lists, dicts have str keys),
    built without a set or a dict of other keys ever existing on the host. ValueError where JSON has no
    such value."""
    plain, tag, body = _open(node, depth, json_view)
    if tag is None:
        return plain
    if tag == "t" and type(body) is list:
        return [json_view(item, depth + 1) for item in body]
    if tag == "d" and type(body) is list and all(type(pair) is list and len(pair) == 2 for pair in body):
        if not all(type(key) is str for key, _ in body):
            raise ValueError("not JSON data: dict keys must be str")
        return {key: json_view(item, depth + 1) for key, item in body}
    names = {"s": "set", "f": "frozenset", "b": "bytes", "c": "complex"}
    if tag in names:
        raise ValueError(f"not JSON data: {names[tag]}")
    return _big_int(tag, body)


def envelope(result: RunResult, decode: Callable[[Any], Any] | None = json_view) -> tuple[Verdict | None, Any]:
    """Read the harness's one-line report from a finished run, or the verdict that ends scoring early.
    ``decode`` reads the Python harness's typed JSON: json_view (expression and call forms) or
    decode_typed (HumanEval checks); None for plain JSON (the JavaScript program)."""
    if result.outcome is Outcome.SANDBOX_ERROR:
        return Verdict(Status.INFRA, None, result.error), None
    if result.outcome is Outcome.TIMEOUT:
        return Verdict(Status.TIMEOUT, 0.0, "wall-clock limit"), None
    if result.outcome is not Outcome.EXITED or result.exit_code != 0:
        return Verdict(Status.ERROR, 0.0, f"{result.outcome.value} (exit {result.exit_code})"), None
    last_line = result.stdout.rstrip("\n").rpartition("\n")[2]
    ok, report = parse_json(last_line)
    # Only the Python harness refuses, from outside the completion's process; a JavaScript completion shares
    # its program's stdout, so a "refused" there is its own and no report.
    statuses = ("ok", "error", REFUSED) if decode is not None else ("ok", "error")
    if not ok or not isinstance(report, dict) or report.get("status") not in statuses:
        return Verdict(Status.ERROR, 0.0, "no report from the harness"), None
    if report["status"] == REFUSED:  # the harness would not run the completion here: the sandbox's fault
        return Verdict(Status.INFRA, None, f"the sandbox cannot run completions: {report.get('error', '')}"[:500]), None
    if report["status"] == "error":
        return Verdict(Status.ERROR, 0.0, str(report.get("error", ""))[:500]), None
    if decode is None:
        return None, report.get("value")
    try:
        return None, decode(report.get("value"))
    except (ValueError, RecursionError, MemoryError) as error:
        return Verdict(Status.ERROR, 0.0, f"unscorable value: {error}"), None


VALUE_CHARS = 80


def show_value(value: Any, limit: int = VALUE_CHARS, python: bool = False) -> str:
    """A value as JSON text (or with ``python``, as Python's repr: a tuple is not a list there), cut to
    ``limit`` characters, for a reason a person reads. Total: any value gives some text."""
    try:
        text = repr(value) if python else json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError, MemoryError):
        try:
            text = repr(value)
        except (ValueError, RecursionError, MemoryError):  # an int past Python's 4300 digits, say
            text = f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def got_expected(actual: Any, expected: Any, python: bool = False) -> str:
    # Built on the host after the run: the expected value never goes into the sandbox.
    return f"got {show_value(actual, python=python)}, expected {show_value(expected, python=python)}"


def score_values(actual: Any, expected: Any, partial: bool) -> Verdict:
    """Expression form: the whole value must match; with ``partial``, list positions count one by one."""
    if strict_equal(actual, expected):
        return Verdict(Status.PASSED, 1.0)
    comparable = isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected)
    if partial and comparable and expected:
        hits = sum(strict_equal(x, y) for x, y in zip(actual, expected, strict=True))
        return Verdict(Status.FAILED, hits / len(expected), got_expected(actual, expected))
    return Verdict(Status.FAILED, 0.0, got_expected(actual, expected))


class CheckKind(enum.Enum):
    """How the host judges a HumanEval check from the candidate's value: the check's own Python operation."""

    EQ = "eq"  # value == literal
    IS = "is"  # value is constant (True, None, ...)
    TRUTHY = "truthy"  # bool(value) is the wanted truth
    NEAR = "near"  # abs(value - target) < tolerance (<= when inclusive)


@dataclass(frozen=True)
class ValueCheck:
    """One HumanEval check the host judges (programs.humaneval_check): what it wants never enters the sandbox.
    ``want`` is the literal as Python builds it (tuples, sets and dict keys keep their types), the constant,
    the truth, or the target of a NEAR check."""

    kind: CheckKind
    want: Any
    tolerance: float = 0.0  # NEAR only
    inclusive: bool = False  # NEAR only: <= rather than <


def score_checks(records: Any, expected: Sequence[ValueCheck | None], partial: bool) -> Verdict:
    """HumanEval form: one record per check; a value record is judged here, on the host.

    ``expected[i]`` says how (``programs.HumanEvalCheck``), or is None for an assert decided in the sandbox.
    """
    if not isinstance(records, (list, tuple)) or len(records) != len(expected):
        return Verdict(Status.ERROR, 0.0, "the checks did not all run")
    passed = 0
    first_failure = ""
    for number, (record, want) in enumerate(zip(records, expected, strict=True), start=1):
        ok = False
        if isinstance(record, (list, tuple)) and len(record) == 2:
            kind, value = record
            if kind == "value" and want is not None:
                ok = check_passes(value, want)
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


def _check_failure(number: int, record: Any, want: ValueCheck | None) -> str:
    """Why check ``number`` failed, judged on the host: got vs what the check wants, or the exception the
    candidate raised, quoted as the other forms quote it (``TypeError: ...``)."""
    if isinstance(record, (list, tuple)) and len(record) in (2, 3) and record[0] == "raised":
        name, message = str(record[1]), str(record[2]) if len(record) == 3 else ""
        if name == "AssertionError" and not message:
            return f"check {number}: assert failed"
        return f"check {number}: {name}: {message}" if message else f"check {number}: {name}"
    is_value = isinstance(record, (list, tuple)) and len(record) == 2 and record[0] == "value"
    if want is None or not is_value:
        return f"check {number}: assert failed"
    value = record[1]
    if want.kind in (CheckKind.EQ, CheckKind.IS):
        return f"check {number}: {got_expected(value, want.want, python=True)}"
    got = show_value(value, python=True)
    if want.kind is CheckKind.TRUTHY:
        return f"check {number}: got {got}, expected a {'true' if want.want else 'false'} value"
    return f"check {number}: got {got}, expected {show_value(want.want)} within {want.tolerance}"


def check_passes(value: Any, check: ValueCheck) -> bool:
    """Whether the check's own Python operation holds for the candidate's value (exact builtin data the
    host rebuilt): ``==`` for eq, identity of a constant for is, truth, or ``abs(value - target) < tol``.
    Total: what would raise in the check (a huge int against a float, say) fails it, as the assert would."""
    want = check.want
    try:
        if check.kind is CheckKind.EQ:
            return bool(value == want)
        if check.kind is CheckKind.IS:
            return type(value) is type(want) and value == want
        if check.kind is CheckKind.TRUTHY:
            return bool(value) is want
        distance = abs(value - want)
        return bool(distance <= check.tolerance if check.inclusive else distance < check.tolerance)
    except (ArithmeticError, TypeError, ValueError, RecursionError, MemoryError):
        return False


Failure = tuple[Status, str]  # how one test failed, and why


def failure_of(run: RunResult, judge: Callable[[RunResult], Failure | None]) -> Failure | None:
    """How one test's run failed (None: it passed): a run that did not exit cleanly, else ``judge``'s
    verdict on its output."""
    if run.outcome is Outcome.TIMEOUT:
        return Status.TIMEOUT, "timed out (reward.time_budget_s ran out)" if run.budget_cut else "timed out"
    if run.outcome is Outcome.EXITED and run.exit_code == 0:
        return judge(run)
    last = next((line.strip() for line in reversed(run.stderr.splitlines()) if line.strip()), "")
    why = f"{run.outcome.value} (exit {run.exit_code})"
    return Status.ERROR, f"{why}: {last[:200]}" if last else why


def score_io(
    result: RunResult, total: int, failure: Callable[[int, RunResult], Failure | None], partial: bool
) -> Verdict:
    """Input/output forms: one run per test (``total`` of them), test i failed as ``failure(i, run)`` says
    (None when it passed; ``failure_of`` judges a run). The reward is the fraction of tests passed with
    ``partial``, else all or nothing; the status and the reason are the first failing test's: "test 2 of
    5: got "3", expected "4"". A sandbox failure of any run leaves the whole completion out (infra, reward
    None), and so does a test ``failure`` says is INFRA (the harness refused to run it: envelope).

    A SKIPPED run (fail-fast: a lower test failed, so it never ran) is neither passed nor a reason; it
    only ever follows a failing test, so the first failing test, and with binary reward the whole
    verdict, is the one every test's run gives. Skipped runs with no failing test are the sandbox's fault.
    A run the time budget never started or cut (RunResult.budget_cut) is a timeout that decides the status
    and reason only where no test failed by itself: a failure found before the budget ended wins, in both
    modes, whichever tests the budget reached."""
    if result.outcome is Outcome.SANDBOX_ERROR or any(run.outcome is Outcome.SANDBOX_ERROR for run in result.runs):
        errors = [run.error for run in result.runs if run.error]
        return Verdict(Status.INFRA, None, result.error or (errors[0] if errors else "sandbox error"))
    if len(result.runs) != total:
        return Verdict(Status.ERROR, 0.0, f"{len(result.runs)} of {total} tests ran")
    passed, first, cut, skipped = 0, None, None, 0
    for number, run in enumerate(result.runs):
        if run.outcome is Outcome.SKIPPED:
            skipped += 1
            continue
        failed = failure(number, run)
        if failed is None:
            passed += 1
        elif failed[0] is Status.INFRA:  # its run's verdict is the sandbox's (the harness refused): as above
            return Verdict(Status.INFRA, None, f"test {number + 1} of {total}: {failed[1]}")
        elif run.budget_cut:  # no fault of its own: it decides only where no test failed by itself
            cut = cut or (failed[0], f"test {number + 1} of {total}: {failed[1]}")
        elif first is None:
            first = (failed[0], f"test {number + 1} of {total}: {failed[1]}")
    first = first or cut
    if first is None:
        if skipped:
            return Verdict(Status.INFRA, None, f"{skipped} of {total} tests were skipped, and none failed")
        return Verdict(Status.PASSED, 1.0)
    return Verdict(first[0], passed / total if partial else 0.0, first[1])
