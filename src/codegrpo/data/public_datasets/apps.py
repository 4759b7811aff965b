"""codeparrot/apps and BAAI/TACO (the APPS schema with a time limit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import (
    Row,
    Skip,
    _decode_json,
    _first_public,
    _first_python3,
    _input_output_tests,
    _io_record,
    _seconds,
    _timeout,
)


def _apps_record(row: Mapping[str, Any], problem_id: str, where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The record of an APPS-schema row, and its tests; TACO's testing_util runs APPS's imports too."""
    in_outs = _decode_json(row["input_output"], f"{where}: input_output")
    if in_outs is None:
        raise Skip("no tests")
    tests, fn_name = _input_output_tests(in_outs, None, f"{where}: input_output")
    solutions = _decode_json(row["solutions"], f"{where}: solutions") or []
    record = _io_record(
        problem_id, row["question"], tests, fn_name, row.get("starter_code"), _first_python3(solutions), "apps"
    )
    return record, tests


def map_apps(row: Mapping[str, Any], number: int, where: str) -> Row:
    """codeparrot/apps: question, solutions (JSON list), input_output (JSON, fn_name for call-based
    rows), starter_code, problem_id."""
    record, tests = _apps_record(row, f"apps/{row.get('problem_id', row.get('id', number))}", where)
    return Row(record | _first_public(tests))


def map_taco(row: Mapping[str, Any], number: int, where: str) -> Row:
    """BAAI/TACO: the APPS schema (no id column) with a time_limit such as "2 seconds"."""
    record, tests = _apps_record(row, f"taco/{number}", where)
    return Row(record | _timeout(_seconds(row.get("time_limit"))) | _first_public(tests))
