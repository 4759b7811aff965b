"""open-r1/verifiable-coding-problems-python: stdin tests and a gold solution."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import (
    Row,
    Skip,
    _decode_json,
    _fenced_code,
    _first_public,
    _io_record,
    _seconds,
    _timeout,
)
from codegrpo.errors import ProblemError


def map_verifiable_coding(row: Mapping[str, Any], number: int, where: str) -> Row:
    """open-r1/verifiable-coding-problems-python: problem_statement, verification_info ({"language",
    "test_cases": [{"input", "output", "type", "fn_name"}]}), gold_standard_solution (a ```python block),
    metadata.time_limit. No public/hidden split: the first test is public, as APPS's."""
    info = _decode_json(row["verification_info"], f"{where}: verification_info")
    if not isinstance(info, dict):
        raise ProblemError(f"{where}: verification_info must be an object with 'test_cases'")
    if str(info.get("language", "python")).lower() != "python":
        raise Skip("not Python")
    cases = info.get("test_cases") or []
    if not cases:
        raise Skip("no tests")
    if any(case.get("type", "stdin_stdout") != "stdin_stdout" or case.get("fn_name") for case in cases):
        raise Skip("function-call tests (their argument encoding is not documented)")
    tests = [{"input": case.get("input"), "output": case.get("output")} for case in cases]
    metadata = _decode_json(row.get("metadata"), f"{where}: metadata") or {}
    prompt = row.get("problem_statement", row.get("prompt"))
    record = _io_record(
        f"verifiable_coding/{row.get('problem_id', number)}",
        prompt,
        tests,
        None,
        None,
        _fenced_code(row.get("gold_standard_solution") or ""),
        "",
    )  # open-r1 runs `python3 -c code`
    return Row(record | _timeout(_seconds(metadata.get("time_limit"))) | _first_public(tests))
