"""open-r1/verifiable-coding-problems-python rows (codegrpo.data.public_datasets.verifiable_coding): stdin tests,
the gold solution out of its fence, the time limit from the metadata, and the rows skipped."""

from __future__ import annotations

import json

import pytest

from codegrpo.data.public_datasets.rows import Skip
from codegrpo.data.public_datasets.verifiable_coding import map_verifiable_coding
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import by_id

# Moved unchanged from tests/data/test_public_datasets.py.


def test_verifiable_coding_reference_out_of_its_fence_and_time_limit():
    problem = by_id("verifiable_coding")["verifiable_coding/vfc_1"]
    assert problem.reference == "a, b = map(int, input().split())\nprint(a + b)\n"
    assert problem.timeout_s == 2.0 and problem.prompt.endswith("Print a + b.")
    assert problem.public_tests == problem.tests[:1] and len(problem.tests) > 1


# map_verifiable_coding on rows of its own.

CASES = [
    {"input": "1 2\n", "output": "3\n", "type": "stdin_stdout", "fn_name": None},
    {"input": "2 2\n", "output": "4\n", "type": "stdin_stdout", "fn_name": None},
]


def _row(cases=CASES, language="python", **fields) -> dict:
    return {
        "problem_id": "vfc_9",
        "problem_statement": "Print a + b.",
        "gold_standard_solution": "```python\nprint(sum(map(int, input().split())))\n```",
        "verification_info": json.dumps({"language": language, "test_cases": cases}),
        "metadata": json.dumps({"time_limit": "1.5 seconds"}),
    } | fields


def test_a_row_is_a_stdio_record_with_its_gold_solution_time_limit_and_first_test_shown():
    record = map_verifiable_coding(_row(), 0, "w").record
    assert record == {
        "id": "verifiable_coding/vfc_9",
        "prompt": "Print a + b.",
        "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}],
        "language": "python",
        "reference": "print(sum(map(int, input().split())))\n",
        "timeout_s": 1.5,
        "public_tests": [{"input": "1 2\n", "output": "3\n"}],
    }  # no preamble: open-r1 runs `python3 -c code`


def test_a_row_without_an_id_prompt_solution_or_metadata_falls_back():
    row = _row(gold_standard_solution=None, metadata=None, prompt="Add.")
    del row["problem_id"], row["problem_statement"]
    record = map_verifiable_coding(row, 4, "w").record
    assert (record["id"], record["prompt"]) == ("verifiable_coding/4", "Add.")
    assert "reference" not in record and "timeout_s" not in record


def test_the_problem_statement_is_the_prompt_over_a_prompt_column():
    assert map_verifiable_coding(_row(prompt="Other."), 0, "w").record["prompt"] == "Print a + b."


@pytest.mark.parametrize("language", ["python", "Python", "PYTHON"])
def test_python_is_python_in_any_case(language):
    assert map_verifiable_coding(_row(language=language), 0, "w").record["tests"]


def test_a_row_without_a_language_is_python():
    row = _row(verification_info=json.dumps({"test_cases": CASES}))
    assert len(map_verifiable_coding(row, 0, "w").record["tests"]) == 2


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (_row(language="cpp"), "not Python"),
        (_row(cases=[]), "no tests"),
        (_row(cases=None), "no tests"),
        (_row(cases=[CASES[0], CASES[1] | {"type": "function_call"}]), "function-call tests"),
        (_row(cases=[CASES[0] | {"fn_name": "add"}, CASES[1]]), "function-call tests"),
    ],
)
def test_a_row_it_cannot_run_is_skipped_saying_why(row, why):
    with pytest.raises(Skip, match=why):
        map_verifiable_coding(row, 0, "w")


def test_a_case_without_a_type_is_a_stdin_test():
    cases = [{"input": "1\n", "output": "1\n"}]
    assert map_verifiable_coding(_row(cases=cases), 0, "w").record["tests"] == cases


@pytest.mark.parametrize("info", ["[]", '"python"', None])
def test_verification_info_that_is_not_an_object_names_the_row(info):
    with pytest.raises(ProblemError, match=r"^row 2: verification_info must be an object with 'test_cases'$"):
        map_verifiable_coding(_row(verification_info=info), 2, "row 2")
