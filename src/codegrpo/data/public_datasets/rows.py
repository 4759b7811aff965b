"""What every source's mapper shares: a mapped row, a skipped row, JSON columns, time limits, test lists."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from codegrpo.config.values import MAX_TIMEOUT_S
from codegrpo.data.problems import json_value
from codegrpo.data.public_tests import first_public
from codegrpo.errors import ProblemError


class Skip(Exception):
    """A row that cannot be used (no tests, no Python, ...): counted, not an error."""


@dataclass
class Row:
    """One dataset row mapped for parse_problem, with its release date when the dataset has one."""

    record: dict[str, Any]
    released: datetime | None = None


def _decode_json(value: Any, name: str) -> Any:
    """A column holding JSON text (or already decoded by the datasets library); None when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, (str, bytes)):
        return value
    try:
        return json_value(value)
    except ValueError as error:
        raise ProblemError(f"{name} is not valid JSON ({error})") from None


def _text(value: Any) -> Any:
    """APPS/TACO stdio tests: an input or output given as a list of lines is those lines joined."""
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    return value


def _is_python3(source: str) -> bool:
    """Whether ``source`` compiles as Python 3 (a Python 2 ``print x`` does not). Compiling runs nothing."""
    try:
        compile(source, "<solution>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _first_python3(solutions: Iterable[Any]) -> str:
    return next((s for s in solutions if isinstance(s, str) and s.strip() and _is_python3(s)), "")


# A number starts only where no digit or dot precedes it, so the search is linear in the text's length.
_SECONDS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:s\b|sec|second)", re.IGNORECASE)
_SECONDS_TEXT = 100  # characters: a longer field is not a time limit ("2 seconds", "1.5 s")


def _seconds(text: Any) -> float | None:
    """A time limit written as text ("2 seconds", "1.5 s") in seconds, or None."""
    match = _SECONDS.search(text) if isinstance(text, str) and len(text) <= _SECONDS_TEXT else None
    return float(match.group(1)) if match and float(match.group(1)) > 0 else None


def _input_output_tests(in_outs: Any, fn_name: Any, name: str) -> tuple[list[dict[str, Any]], str | None]:
    """APPS/TACO's ``{"inputs": [...], "outputs": [...], "fn_name"?}`` as tests of the stdio form, or of the
    call form when there is a fn_name. Call-based outputs are wrapped in a one-element list in most rows
    (APPS's harness accepts ``output == expected`` or ``output == expected[0]``): a problem whose every
    output is a one-element list is unwrapped, any other keeps its outputs as they are."""
    if not isinstance(in_outs, dict):
        raise ProblemError(f"{name} must be a JSON object with 'inputs' and 'outputs'")
    inputs, outputs = in_outs.get("inputs"), in_outs.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ProblemError(f"{name} must hold two lists 'inputs' and 'outputs' of the same length")
    fn_name = fn_name or in_outs.get("fn_name")
    if not inputs:
        raise Skip("no tests")
    if not fn_name:
        return [{"input": _text(i), "output": _text(o)} for i, o in zip(inputs, outputs, strict=True)], None
    if all(isinstance(o, list) and len(o) == 1 for o in outputs):
        outputs = [o[0] for o in outputs]
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)], str(fn_name)


def _naive_utc(moment: datetime) -> datetime:
    """Dates with and without a zone compare: a zoned one becomes UTC without its zone."""
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


def _date(value: Any, name: str) -> datetime:
    try:
        return _naive_utc(value if isinstance(value, datetime) else datetime.fromisoformat(str(value)))
    except ValueError:
        raise ProblemError(f"{name} is not an ISO date: {value!r}") from None


def _fenced_code(text: str) -> str:
    """open-r1's gold_standard_solution is a ```python block; the code inside it."""
    match = re.search(r"```[A-Za-z0-9_+-]*\n(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def _io_record(
    problem_id: str,
    prompt: Any,
    tests: list[dict[str, Any]],
    fn_name: str | None,
    starter_code: Any,
    reference: str,
    preamble: str,
) -> dict[str, Any]:
    """A record for parse_problem; ``preamble`` names the imports the dataset's own grader runs first."""
    record: dict[str, Any] = {"id": problem_id, "prompt": prompt, "tests": tests, "language": "python"}
    if fn_name:
        record["fn_name"] = fn_name
        record["starter_code"] = starter_code or ""
    if reference:
        record["reference"] = reference
    if preamble:
        record["preamble"] = preamble
    return record


def _timeout(seconds: float | None) -> dict[str, float]:
    """A row's time limit, cut to MAX_TIMEOUT_S (parse_problem refuses one that is not above 0)."""
    return {"timeout_s": min(seconds, MAX_TIMEOUT_S)} if seconds else {}


def _first_public(tests: list[dict[str, Any]]) -> dict[str, Any]:
    """The public tests of a source with no public/hidden split (APPS, TACO, DeepCoder, verifiable-coding):
    the first test, when one is left hidden (codegrpo.data.public_tests.first_public)."""
    shown = first_public(tests)
    return {"public_tests": shown} if shown else {}
