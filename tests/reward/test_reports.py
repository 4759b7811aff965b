"""Per-test reports (Scorer.reports, codegrpo.reward.reports), on the public in-memory backend: each code
answered with what CPython and the harness print for it (tests/reward/test_scorer.py runs real programs)."""

from __future__ import annotations

import asyncio
import math

from codegrpo.config.choices import Form
from codegrpo.data.problems import IOTest, Problem
from codegrpo.data.public_tests import public
from codegrpo.reward.verdict import Status
from tests.helpers.feedback import DOUBLE, SAME, SUM, scorer_of
from tests.helpers.sandbox import answering


def test_public_runs_keep_what_each_test_printed_raised_or_returned():
    add = Problem(
        id="add",
        prompt="",
        test="",
        form=Form.call,
        fn_name="add",
        tests=(IOTest("[1, 2]", "3"), IOTest("[2, 2]", "4")),
    )
    problems = [public(SUM, SAME), public(SUM, SAME), add, public(DOUBLE, SAME)]
    codes = [
        "print(1/0)",
        "a, b = map(int, input().split())\nprint(a * b)",
        "def add(a, b):\n    return a * b",
        "print(1)",
    ]
    sandbox = answering(
        prints={
            codes[0]: lambda stdin: f"{1 / 0}\n",
            codes[1]: lambda stdin: f"{math.prod(map(int, stdin.split()))}\n",
        },
        defines={codes[2]: {"add": lambda a, b: a * b}},
    )  # print(1) has no answer: DOUBLE has no public tests, nothing may run it
    crash, wrong, call, untested = asyncio.run(scorer_of(sandbox, problems).reports(problems, codes))
    assert crash.verdict.status is Status.ERROR and "ZeroDivisionError" in crash.runs[0].error
    assert wrong.verdict.status is Status.FAILED and wrong.runs[0].got == "2\n"
    assert [r.status for r in call.runs] == [Status.FAILED, Status.PASSED] and call.runs[0].got == "2"
    assert untested.verdict.status is Status.NO_CODE and untested.runs == ()  # no public tests: nothing ran
