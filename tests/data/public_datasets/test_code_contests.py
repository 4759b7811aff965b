"""deepmind/code_contests rows (codegrpo.data.public_datasets.code_contests): public, private and generated tests
in that order, the public ones shown, the first Python 3 solution, the time limit, and the rows skipped."""

from __future__ import annotations

import pytest

from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.code_contests import map_code_contests
from codegrpo.data.public_datasets.rows import Skip
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import by_id, dataset_cfg, jsonl_file, one_line

# Moved unchanged from tests/data/test_public_datasets.py.


def test_code_contests_tests_references_and_time_limit():
    problems = by_id("code_contests")
    total = problems["code_contests/1_A. Sum"]
    # public, then private, then generated
    assert [t.input for t in total.tests] == ["1 2\n", "-5 5\n", "100 23\n", "7 8\n", "0 0\n"]
    assert total.reference.startswith("a, b = map(int, input()")  # C++ and Python 2 solutions passed over
    assert total.timeout_s == 2.0 and problems["code_contests/2_A. Reverse"].timeout_s == 1.5
    assert problems["code_contests/5_A. Factorial"].reference.startswith("import math")  # after a Java one


def test_code_contests_time_limits_are_cut_to_60_seconds_and_bad_ones_name_the_row(tmp_path):
    row = {
        "name": "1_A",
        "description": "Sum.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": None,
        "generated_tests": None,
        "solutions": None,
        "input_file": "",
        "output_file": "",
    }
    limits = [{"seconds": 10**10, "nanos": 0}, {"seconds": 1, "nanos": 500_000_000}, None]
    rows = [row | {"name": f"{n}_A", "time_limit": limit} for n, limit in enumerate(limits)]
    problems = read_dataset(dataset_cfg("code_contests", jsonl_file(tmp_path, rows), hub_path="json")).problems
    assert [p.timeout_s for p in problems] == [60.0, 1.5, None]
    with pytest.raises(ProblemError) as error:
        read_dataset(
            dataset_cfg("code_contests", jsonl_file(tmp_path, [row | {"time_limit": {"seconds": -3}}]), hub_path="json")
        )
    assert "row 0: field 'timeout_s' must be a number of seconds above 0 and at most 60, not -3" in one_line(error)
    with pytest.raises(ProblemError) as error:
        read_dataset(
            dataset_cfg(
                "code_contests", jsonl_file(tmp_path, [row | {"time_limit": {"seconds": "2"}}]), hub_path="json"
            )
        )
    assert "row 0: a malformed row (TypeError: " in one_line(error)


# map_code_contests on rows of its own.

PYTHON2, CPP, PYTHON3, JAVA = 1, 2, 3, 4  # solutions.language


def _row(**fields) -> dict:
    return {
        "name": "7_B. Sum",
        "description": "Print a + b.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["2 2\n"], "output": ["4\n"]},
        "generated_tests": {"input": ["0 5\n", "9 1\n"], "output": ["5\n", "10\n"]},
        "solutions": {"language": [PYTHON3], "solution": ["print(sum(map(int, input().split())))\n"]},
        "input_file": "",
        "output_file": "",
        "time_limit": {"seconds": 2, "nanos": 0},
    } | fields


def test_a_row_is_a_stdio_record_named_for_its_contest_problem_shown_its_public_tests_only():
    record = map_code_contests(_row(), 0, "w").record
    assert record["id"] == "code_contests/7_B. Sum" and record["prompt"] == "Print a + b."
    assert [t["input"] for t in record["tests"]] == ["1 2\n", "2 2\n", "0 5\n", "9 1\n"]
    assert record["public_tests"] == [{"input": "1 2\n", "output": "3\n"}]
    assert "fn_name" not in record and "preamble" not in record  # its grader runs the program as it is
    assert record["timeout_s"] == 2.0


def test_a_row_without_public_tests_shows_none():
    record = map_code_contests(_row(public_tests=None), 0, "w").record
    assert "public_tests" not in record and len(record["tests"]) == 3


@pytest.mark.parametrize("field", ["input_file", "output_file"])
def test_a_row_that_reads_or_writes_a_file_is_skipped(field):
    with pytest.raises(Skip, match="reads a file, not stdin"):
        map_code_contests(_row(**{field: "input.txt"}), 0, "w")


def test_a_row_without_any_test_is_skipped():
    empty = {"input": [], "output": []}
    with pytest.raises(Skip, match="no tests"):
        map_code_contests(_row(public_tests=empty, private_tests=None, generated_tests=empty), 0, "w")


@pytest.mark.parametrize("column", ["public_tests", "private_tests", "generated_tests"])
@pytest.mark.parametrize(("inputs", "outputs"), [(2, 1), (1, 2)])
def test_tests_that_do_not_pair_up_name_the_row_and_column(column, inputs, outputs):
    given = {"input": ["1\n"] * inputs, "output": ["1\n"] * outputs}
    with pytest.raises(ProblemError, match=f"row 5: {column} has {inputs} inputs and {outputs} outputs"):
        map_code_contests(_row(**{column: given}), 5, "row 5")


def test_the_reference_is_the_first_python3_solution_that_compiles():
    solutions = {
        "language": [CPP, PYTHON2, JAVA, PYTHON3, PYTHON3],
        "solution": ["int main() {}", "print 1\n", "class A {}", "print 'x'\n", "print(3)\n"],
    }
    assert map_code_contests(_row(solutions=solutions), 0, "w").record["reference"] == "print(3)\n"
    only_cpp = {"language": [CPP], "solution": ["print(3)\n"]}  # Python's text, but labelled C++
    assert "reference" not in map_code_contests(_row(solutions=only_cpp), 0, "w").record
    assert "reference" not in map_code_contests(_row(solutions=None), 0, "w").record


@pytest.mark.parametrize(
    ("limit", "timeout_s"),
    [
        ({"seconds": 3, "nanos": 0}, 3.0),
        ({"seconds": 0, "nanos": 250_000_000}, 0.25),
        ({"seconds": 1, "nanos": None}, 1.0),
        ({"seconds": 0, "nanos": 0}, None),
        ({}, None),
        (None, None),
        ({"seconds": 61}, 60.0),
    ],
)
def test_the_time_limit_is_its_seconds_and_nanos_cut_to_60(limit, timeout_s):
    assert map_code_contests(_row(time_limit=limit), 0, "w").record.get("timeout_s") == timeout_s
