"""agentica-org/DeepCoder-Preview-Dataset rows (codegrpo.data.public_datasets.deepcoder): each source's shape of
tests (TACO's dict, LiveCodeBench's list, primeintellect's and codeforces' list), the grader's preamble each
source is scored with, and the first test shown."""

from __future__ import annotations

import json

import pytest

from codegrpo.data.public_datasets.deepcoder import map_deepcoder
from codegrpo.data.public_datasets.rows import Skip
from tests.helpers.public_datasets import by_id

# Moved unchanged from tests/data/test_public_datasets.py.


def test_deepcoder_maps_each_source_shape():
    problems = by_id("deepcoder")
    assert problems["deepcoder/0"].form == "stdio" and len(problems["deepcoder/0"].tests) == 5  # taco's dict
    assert [json.loads(t.output) for t in problems["deepcoder/1"].tests] == [3, 0, 30, 0, 4]  # taco call, unwrapped
    assert problems["deepcoder/4"].fn_name == "is_even"  # primeintellect's fn_name on the tests
    assert json.loads(problems["deepcoder/4"].tests[1].output) is False
    assert problems["deepcoder/7"].fn_name == "climbStairs"  # lcbv5: metadata.func_name
    assert json.loads(problems["deepcoder/7"].tests[4].input) == [10]
    # No public/hidden split in its rows: the first test is public, the rest hidden (as APPS's).
    assert all(p.public_tests == p.tests[:1] for p in problems.values() if len(p.tests) > 1)


def test_deepcoder_rows_get_the_preamble_of_the_grader_their_source_is_scored_by():
    preambles = {number: by_id("deepcoder")[f"deepcoder/{number}"].preamble for number in range(11)}
    # taco's dict (0, 1), primeintellect (2-4, 9, 10) and codeforces (8): TACO's grader; lcbv5 (5-7): LiveCodeBench's
    assert preambles == {n: "livecodebench" if n in (5, 6, 7) else "apps" for n in range(11)}


# map_deepcoder on rows of its own.


def _row(tests, metadata=None, **fields) -> dict:
    return {"problem": "Print a + b.", "tests": json.dumps(tests), "metadata": metadata} | fields


STDIO = [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}]


@pytest.mark.parametrize("tests", [None, "", "[]"])
def test_a_row_without_tests_is_skipped(tests):
    with pytest.raises(Skip, match="no tests"):
        map_deepcoder({"problem": "p", "tests": tests}, 0, "w")


def test_a_row_is_numbered_by_its_row_and_shows_its_first_test():
    record = map_deepcoder(_row([t | {"type": "stdin_stdout"} for t in STDIO]), 6, "w").record
    assert record["id"] == "deepcoder/6" and record["prompt"] == "Print a + b."
    assert record["tests"] == STDIO and record["public_tests"] == STDIO[:1]
    assert record["preamble"] == "apps" and "fn_name" not in record


def test_tacos_dict_is_read_as_tacos_input_output():
    given = {"fn_name": "add", "inputs": [[1, 2], [2, 2]], "outputs": [[3], [4]]}
    record = map_deepcoder(_row(given, starter_code="def add(a, b):\n"), 0, "w").record
    assert (record["fn_name"], record["starter_code"], record["preamble"]) == ("add", "def add(a, b):\n", "apps")
    assert record["tests"] == [{"input": [1, 2], "output": 3}, {"input": [2, 2], "output": 4}]


def test_a_list_whose_first_test_names_a_function_follows_tacos_call_convention():
    given = [
        {"input": [2], "output": [True], "fn_name": "is_even", "type": "function_call"},
        {"input": [3], "output": [False], "fn_name": "is_even", "type": "function_call"},
    ]
    record = map_deepcoder(_row(given), 0, "w").record
    assert record["fn_name"] == "is_even" and record["preamble"] == "apps"
    assert record["tests"] == [{"input": [2], "output": True}, {"input": [3], "output": False}]  # unwrapped


def test_livecodebenchs_functional_tests_take_the_function_name_from_the_metadata():
    given = [{"input": "[2, 7]\n9", "output": "[0, 1]", "testtype": "functional"}]
    record = map_deepcoder(_row(given, metadata=json.dumps({"func_name": "twoSum"})), 0, "w").record
    assert record["fn_name"] == "twoSum" and record["preamble"] == "livecodebench"
    assert record["tests"] == [{"input": [[2, 7], 9], "output": [0, 1]}]


@pytest.mark.parametrize(("testtype", "preamble"), [("stdin", "livecodebench"), ("stdin_stdout", "apps")])
def test_only_livecodebenchs_own_test_types_get_its_preamble(testtype, preamble):
    given = [t | {"testtype": testtype} for t in STDIO]
    record = map_deepcoder(_row(given), 0, "w").record
    assert record["preamble"] == preamble and record["tests"] == STDIO
