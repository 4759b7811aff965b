"""deepmind/code_contests: public, private and generated stdin tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import Row, Skip, _first_python3, _io_record, _timeout
from codegrpo.errors import ProblemError

_CODE_CONTESTS_PYTHON3 = 3  # solutions.language: UNKNOWN_LANGUAGE 0, PYTHON (2) 1, CPP 2, PYTHON3 3, JAVA 4


def map_code_contests(row: Mapping[str, Any], number: int, where: str) -> Row:
    """deepmind/code_contests: public, private and generated tests ({"input": [...], "output": [...]}),
    the first Python 3 solution as reference, the row's time_limit ({"seconds", "nanos"})."""
    if row.get("input_file") or row.get("output_file"):
        raise Skip("reads a file, not stdin")
    tests, public = [], []
    for column in ("public_tests", "private_tests", "generated_tests"):
        given = row.get(column) or {"input": [], "output": []}
        inputs, outputs = given.get("input") or [], given.get("output") or []
        if len(inputs) != len(outputs):
            raise ProblemError(f"{where}: {column} has {len(inputs)} inputs and {len(outputs)} outputs")
        pairs = [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
        tests += pairs
        public += pairs if column == "public_tests" else []  # shown to the model under rollout=feedback
    if not tests:
        raise Skip("no tests")
    solutions = row.get("solutions") or {}
    python3 = [
        s
        for lang, s in zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False)
        if lang == _CODE_CONTESTS_PYTHON3
    ]
    limit = row.get("time_limit") or {}
    seconds = (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9
    record = _io_record(
        f"code_contests/{row['name']}", row["description"], tests, None, None, _first_python3(python3), ""
    )  # its grader runs the program as it is
    return Row(record | _timeout(seconds or None) | ({"public_tests": public} if public else {}))
