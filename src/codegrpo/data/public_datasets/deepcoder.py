"""agentica-org/DeepCoder-Preview-Dataset, whose rows follow TACO's or LiveCodeBench's shapes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.livecodebench import _lcb_tests
from codegrpo.data.public_datasets.rows import (
    Row,
    Skip,
    _decode_json,
    _first_public,
    _input_output_tests,
    _io_record,
)


def map_deepcoder(row: Mapping[str, Any], number: int, where: str) -> Row:
    """agentica-org/DeepCoder-Preview-Dataset: problem and tests (JSON), in one of its sources' shapes:
    TACO's {"inputs", "outputs", "fn_name"?} (taco), LiveCodeBench's [{"input", "output", "testtype"}]
    with metadata.func_name (lcbv5), or [{"input", "output", "type"?, "fn_name"?}] (primeintellect,
    codeforces), whose fn_name rows follow TACO's call convention. Its rows keep no public/hidden split (the
    lcbv5 rows' public and private tests are one list): the first test is public, as APPS's."""
    given = _decode_json(row["tests"], f"{where}: tests")
    metadata = _decode_json(row.get("metadata"), f"{where}: metadata") or {}
    if given is None or given == []:
        raise Skip("no tests")
    # rLLM grades lcbv5 rows with LiveCodeBench's grader and the other sources with TACO's.
    preamble = "apps"
    if isinstance(given, dict):
        tests, fn_name = _input_output_tests(given, None, f"{where}: tests")
    elif isinstance(given, list) and given and isinstance(given[0], dict) and given[0].get("fn_name"):
        in_outs = {"inputs": [t.get("input") for t in given], "outputs": [t.get("output") for t in given]}
        tests, fn_name = _input_output_tests(in_outs, given[0]["fn_name"], f"{where}: tests")
    else:
        tests, fn_name = _lcb_tests(given, metadata.get("func_name"), f"{where}: tests")
        if given[0].get("testtype") in ("stdin", "functional"):  # LiveCodeBench's own test types
            preamble = "livecodebench"
    return Row(
        _io_record(f"deepcoder/{number}", row["problem"], tests, fn_name, row.get("starter_code"), "", preamble)
        | _first_public(tests)
    )
