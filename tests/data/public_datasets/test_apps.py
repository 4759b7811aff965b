"""codeparrot/apps and BAAI/TACO rows (codegrpo.data.public_datasets.apps): a row as a stdio or call problem,
its id, its reference, its public test and TACO's time limit; and the sample files in each one's schema."""

from __future__ import annotations

import json

import pytest

from codegrpo.data.public_datasets.apps import map_apps, map_taco
from codegrpo.data.public_datasets.rows import Skip
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import by_id


def _row(**fields) -> dict:
    return {
        "question": "Print a + b.",
        "solutions": json.dumps(["print(sum(map(int, input().split())))\n"]),
        "starter_code": "",
        "input_output": json.dumps({"inputs": ["1 2\n", "2 2\n"], "outputs": ["3\n", "4\n"]}),
    } | fields


# Moved unchanged from tests/data/test_public_datasets.py.


def test_apps_rows_map_stdio_and_call_forms_with_their_references():
    problems = by_id("apps")
    first = problems["apps/0"]
    assert first.form == "stdio" and first.prompt.startswith("Read two integers")
    assert (first.tests[0].input, first.tests[0].output) == ("1 2\n", "3\n")
    assert "raw_input" not in first.reference and "print(a + b)" in first.reference  # the Python 2 one is passed over
    wrapped = problems["apps/8"]  # every output a one-element list: unwrapped to the returned list
    assert (wrapped.form, wrapped.fn_name) == ("call", "reverse_list")
    assert wrapped.starter_code == "def reverse_list(items):\n"
    assert [json.loads(t.output) for t in wrapped.tests] == [[3, 2, 1], [], ["b", "a"], [5], [2, 1, 1]]
    assert json.loads(wrapped.tests[0].input) == [[1, 2, 3]]
    kept = problems["apps/9"]  # some outputs are not one-element lists: left as they are
    assert [json.loads(t.output) for t in kept.tests][:2] == [[1, 3], [5, 5]]
    assert [json.loads(t.output) for t in problems["apps/7"].tests] == [True, False, True, True, False]


def test_taco_lines_joined_and_time_limits_per_test():
    problems = by_id("taco")
    squares = problems["taco/2"]  # inputs and outputs given as lists of lines
    assert [(t.input, t.output) for t in squares.tests][1] == ("3", "1\n4\n9")
    assert [problems[f"taco/{n}"].timeout_s for n in range(3)] == [2.0, 1.5, None]
    assert problems["taco/3"].reference.startswith("import sys")  # the Python 2 solution comes first in the row


# map_apps and map_taco on rows of their own.


@pytest.mark.parametrize("mapper", [map_apps, map_taco])
@pytest.mark.parametrize("input_output", [None, "", "  "])
def test_a_row_without_input_output_is_skipped_as_having_no_tests(mapper, input_output):
    with pytest.raises(Skip, match="no tests"):
        mapper(_row(input_output=input_output), 0, "row 0")


@pytest.mark.parametrize("mapper", [map_apps, map_taco])
def test_a_row_whose_input_output_is_not_an_object_names_the_row(mapper):
    with pytest.raises(ProblemError, match=r"row 4: input_output must be a JSON object"):
        mapper(_row(input_output="[1, 2]"), 4, "row 4")


def test_an_apps_id_is_its_problem_id_else_its_id_else_its_row_number():
    assert map_apps(_row(problem_id=12, id=99), 3, "w").record["id"] == "apps/12"
    assert map_apps(_row(id=99), 3, "w").record["id"] == "apps/99"
    assert map_apps(_row(), 3, "w").record["id"] == "apps/3"


def test_a_stdio_row_is_a_python_record_with_the_apps_preamble_and_its_first_test_public():
    record = map_apps(_row(problem_id=1), 0, "w").record
    assert record == {
        "id": "apps/1",
        "prompt": "Print a + b.",
        "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}],
        "language": "python",
        "reference": "print(sum(map(int, input().split())))\n",
        "preamble": "apps",
        "public_tests": [{"input": "1 2\n", "output": "3\n"}],
    }


def test_a_row_of_one_test_shows_none_and_one_without_solutions_has_no_reference():
    one = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})
    record = map_apps(_row(input_output=one, solutions=""), 0, "w").record
    assert "public_tests" not in record and "reference" not in record


def test_a_call_row_keeps_its_function_name_and_starter_code():
    in_outs = json.dumps({"fn_name": "add", "inputs": [[1, 2], [2, 2]], "outputs": [[3], [4]]})
    record = map_apps(_row(input_output=in_outs, starter_code="def add(a, b):\n"), 0, "w").record
    assert (record["fn_name"], record["starter_code"]) == ("add", "def add(a, b):\n")
    assert [t["output"] for t in record["tests"]] == [3, 4]  # one-element lists unwrapped
    no_starter = map_apps(_row(input_output=in_outs, starter_code=None), 0, "w").record
    assert no_starter["starter_code"] == ""


def test_a_taco_row_is_numbered_by_its_row_and_runs_the_apps_preamble():
    mapped = map_taco(_row(problem_id=12), 7, "w")
    assert mapped.record["id"] == "taco/7" and mapped.record["preamble"] == "apps"
    assert mapped.released is None


@pytest.mark.parametrize(
    ("time_limit", "timeout_s"),
    [("2 seconds", 2.0), ("1.5 s", 1.5), ("300 seconds", 60.0), ("0 seconds", None), (None, None), ("fast", None)],
)
def test_a_taco_time_limit_becomes_the_problems_timeout_cut_to_60_seconds(time_limit, timeout_s):
    record = map_taco(_row(time_limit=time_limit), 0, "w").record
    assert record.get("timeout_s") == timeout_s


def test_an_apps_row_keeps_no_time_limit():
    assert "timeout_s" not in map_apps(_row(time_limit="2 seconds"), 0, "w").record
