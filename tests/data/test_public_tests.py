"""Public and hidden tests (codegrpo.data.public_tests): what a model may be shown, and what the reward scores."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from codegrpo.config.choices import Checker, Form, RewardKind
from codegrpo.data.problems import IOTest, Problem
from codegrpo.data.public_tests import first_public, hidden, moved_tests, public, split_tests, split_warning
from codegrpo.reward.checker import same_test
from codegrpo.reward.monitor import static_flags
from tests.helpers.feedback import DOUBLE, HIDDEN, PUBLIC, SAME, SUM, fenced, scorer_of, stdio_problem, with_public


def test_the_split_shows_the_public_tests_and_scores_the_rest():
    assert split_tests(SUM, SAME) == ((PUBLIC,), HIDDEN)
    assert public(SUM, SAME).tests == (PUBLIC,) and hidden(SUM, SAME).tests == HIDDEN
    assert hidden(SUM, SAME).public_tests == (PUBLIC,)  # kept, never run: the monitor knows what the model was shown
    # Public tests of their own (CodeContests: public vs private + generated) split the same way.
    separate = with_public(dataclasses.replace(SUM, tests=HIDDEN), (PUBLIC,))
    assert split_tests(separate, SAME) == ((PUBLIC,), HIDDEN)
    assert split_tests(DOUBLE, SAME) == ((), DOUBLE.tests) and public(DOUBLE, SAME).tests == ()
    assert split_warning(SUM, SAME) is None and split_warning(DOUBLE, SAME) is None


def test_code_that_hard_codes_a_public_test_is_flagged_and_earns_nothing_hidden(local_sandbox):
    shown = IOTest("3 4 5\n", "12 60\n")
    problem = stdio_problem(
        "perimeter_area",
        "Print the perimeter and the area of a right triangle.",
        (shown, IOTest("6 8 10\n", "24 240\n")),
        (shown,),
    )
    hard_coded = "s = input()\nif s == '3 4 5':\n    print('12 60')\nelse:\n    print(0)\n"
    assert "hardcode" in static_flags(hard_coded, hidden(problem, SAME))
    (scored,) = asyncio.run(
        scorer_of(local_sandbox, [hidden(problem, SAME)], RewardKind.partial).score(
            ["perimeter_area"], [fenced(hard_coded)]
        )
    )
    assert scored.verdict.reward == 0.0 and "hardcode" in scored.flags


def test_a_public_test_repeated_with_other_whitespace_is_not_hidden():
    """Kept hidden, it would pay code that prints what the public test showed."""
    repeated = with_public(
        dataclasses.replace(SUM, tests=(PUBLIC, IOTest("1 2", "3"), IOTest("1  2\r\n", "3\r\n"), *HIDDEN)), (PUBLIC,)
    )
    assert split_tests(repeated, SAME) == ((PUBLIC,), HIDDEN)


# A judge's hidden tests that repeat the statement's example in another spelling the reward accepts.
HALF = IOTest("1 2\n", "0.5\n")
SPELLINGS = {
    "a float at another precision": (HALF, IOTest("1 2", "0.500000")),
    "a float within the tolerance": (HALF, IOTest("1 2\n", "0.5000000001\n")),
    "a fraction in the input at another precision": (IOTest("0.5\n", "2\n"), IOTest("0.50\n", "2\n")),
}
CALL_SPELLINGS = {
    "a float return value for an int": (IOTest("[1, 1]", "2"), IOTest("[1, 1]", "2.0")),
    "an int argument as a float": (IOTest("[1, 1]", "2"), IOTest("[1.0, 1]", "2")),
    "argument dicts in another key order": (IOTest('[{"a": 1, "b": 2}]', "3"), IOTest('[{"b": 2, "a": 1}]', "3")),
}


def _twin_problem(form, shown, twin, *rest):
    return with_public(
        Problem(
            id="twin",
            prompt="P",
            test="",
            form=form,
            tests=(shown, twin, *rest),
            fn_name="f" if form is Form.call else "",
        ),
        (shown,),
    )


@pytest.mark.parametrize("case", SPELLINGS)
def test_a_hidden_test_the_checker_cannot_tell_from_a_public_one_is_public(case):
    shown, twin = SPELLINGS[case]
    other = IOTest("40 2\n", "20\n")
    problem = _twin_problem(Form.stdio, shown, twin, other)
    assert split_tests(problem, SAME) == ((shown,), (other,))
    assert moved_tests(problem, SAME) == [(2, 1)]
    # Nothing hidden left but twins: not split, as for exact duplicates.
    assert split_tests(_twin_problem(Form.stdio, shown, twin), SAME) == ((), (shown, twin))


@pytest.mark.parametrize("case", CALL_SPELLINGS)
def test_a_call_form_test_strictly_equal_to_a_public_one_is_public(case):
    shown, twin = CALL_SPELLINGS[case]
    other = IOTest("[40, 2]", "42")
    problem = _twin_problem(Form.call, shown, twin, other)
    assert split_tests(problem, SAME) == ((shown,), (other,)) and moved_tests(problem, SAME) == [(2, 1)]


def test_tests_the_checker_tells_apart_stay_hidden():
    """The split follows the run's checker: what it can tell apart, printing the shown answer fails."""
    shown = IOTest("1 2\n", "0.5\n")
    for twin, same in (
        (IOTest("1 2\n", "0.500000\n"), same_test(Checker.exact)),
        (IOTest("1 2\n", "0.500000\n"), same_test(Checker.lines)),
        (IOTest("1 2\n", "0.51\n"), SAME),
        (IOTest("1 3\n", "0.5\n"), SAME),
    ):  # another input: a program must compute it
        problem = _twin_problem(Form.stdio, shown, twin)
        assert split_tests(problem, same) == ((shown,), (twin,)) and moved_tests(problem, same) == []
    call = _twin_problem(Form.call, IOTest("[1]", "true"), IOTest("[1]", "1"))  # True is not 1 to the verdict
    assert split_tests(call, SAME)[1] == (IOTest("[1]", "1"),)


def test_a_code_contests_private_test_repeating_the_example_at_another_precision_is_public():
    """Through the real CodeContests mapper: judges' private tests often begin with the statement's example."""
    from codegrpo.data.problems import parse_problem
    from codegrpo.data.public_datasets.code_contests import map_code_contests

    row = {
        "name": "1A",
        "description": "Print a / b.",
        "public_tests": {"input": ["1 2\n"], "output": ["0.5\n"]},
        "private_tests": {"input": ["1 2\n", "3 4\n"], "output": ["0.500000000\n", "0.750000000\n"]},
        "generated_tests": {"input": [], "output": []},
        "solutions": {"language": [], "solution": []},
    }
    problem = parse_problem(map_code_contests(row, 1, "row 1").record, "row 1")
    assert [t.output for t in hidden(problem, SAME).tests] == ["0.750000000\n"]
    assert moved_tests(problem, SAME) == [(2, 1)]


@pytest.mark.parametrize("form", [Form.stdio, Form.call])
def test_printing_what_the_feedback_showed_earns_nothing_hidden(local_sandbox, form):
    """The finding, end to end: a judge's copy of the example at another precision no longer pays the code
    that prints the example's answer, under binary and partial reward alike."""
    if form is Form.stdio:
        shown, twin, other = HALF, IOTest("1 2", "0.500000"), IOTest("3 4\n", "0.75\n")
        hard_coded, honest = "input()\nprint(0.5)\n", "a, b = map(int, input().split())\nprint(a / b)\n"
    else:
        shown, twin, other = IOTest("[1, 1]", "2"), IOTest("[1, 1]", "2.0"), IOTest("[40, 2]", "42")
        hard_coded, honest = "def f(a, b):\n    return 2\n", "def f(a, b):\n    return a + b\n"
    problem = hidden(_twin_problem(form, shown, twin, other), SAME)
    for kind in (RewardKind.binary, RewardKind.partial):
        scored = asyncio.run(
            scorer_of(local_sandbox, [problem], kind).score(["twin", "twin"], [fenced(hard_coded), fenced(honest)])
        )
        assert [s.verdict.reward for s in scored] == [0.0, 1.0]


def test_public_tests_that_are_all_the_tests_are_no_split_and_a_warning():
    everything = with_public(dataclasses.replace(SUM, id="all"), SUM.tests)
    assert split_tests(everything, SAME) == ((), SUM.tests)  # nothing shown: nothing hidden would be left to score
    assert "public tests are all of its tests" in (split_warning(everything, SAME) or "")


def test_apps_and_taco_make_the_first_test_public_when_one_is_left_hidden():
    assert first_public([1, 2, 3]) == [1] and first_public([1]) == [] and first_public([]) == []
    assert first_public([1, 2, 3], count=5) == [1, 2]
