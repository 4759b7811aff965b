"""Issue 32, finding 4, through the real reward: a result of a standard-library type that compares as a
plain value (Counter, defaultdict, OrderedDict, a namedtuple, a Fraction or Decimal that is an exact
number) scores as that value in the call form, the expression form and HumanEval's checks; a value with
an == of its own still scores 0. Warm, cold, and in Superserve chunks.
"""

from __future__ import annotations

import asyncio
import json
import textwrap

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import backends

pytestmark = run_if(bwrap=True)

CALL = Problem(
    "count",
    "Count the letters.",
    "",
    "call",
    fn_name="count",
    tests=(
        IOTest(json.dumps(["abca"]), json.dumps({"a": 2, "b": 1, "c": 1})),
        IOTest(json.dumps([""]), json.dumps({})),
    ),
)
PAIR = Problem(
    "pair", "The first two.", "", "call", fn_name="pair", tests=(IOTest(json.dumps([[3, 4, 5]]), json.dumps([3, 4])),)
)
HALF = Problem(
    "half",
    "Half of it.",
    "",
    "call",
    fn_name="half",
    tests=(IOTest(json.dumps([5]), json.dumps(2.5)), IOTest(json.dumps([4]), json.dumps(2))),
)
EXPRESSION = Problem(
    "tally", "tally(s) counts the letters of s.", "tally('aab')", "expression", expected=json.dumps({"a": 2, "b": 1})
)
CHECKS = Problem(
    "freq",
    "Count each item.",
    "def check(c):\n    assert c([10, 10, 20]) == {10: 2, 20: 1}\n    assert sorted(c([1]).items()) == [(1, 1)]\n",
    "humaneval",
    entry_point="freq_count",
)
ALL = [CALL, PAIR, HALF, EXPRESSION, CHECKS]

RIGHT = {
    "Counter": ("count", "from collections import Counter\ndef count(s):\n    return Counter(s)\n"),
    "defaultdict": (
        "count",
        """
        from collections import defaultdict
        def count(s):
            seen = defaultdict(int)
            for c in s:
                seen[c] += 1
            return seen
    """,
    ),
    "OrderedDict": (
        "count",
        """
        from collections import OrderedDict
        def count(s):
            return OrderedDict((c, s.count(c)) for c in sorted(set(s), reverse=True))
    """,
    ),
    "namedtuple": (
        "pair",
        "from collections import namedtuple\nP = namedtuple('P', 'a b')\ndef pair(xs):\n    return P(xs[0], xs[1])\n",
    ),
    "Fraction": ("half", "from fractions import Fraction\ndef half(n):\n    return Fraction(n, 2)\n"),
    "Decimal": ("half", "from decimal import Decimal\ndef half(n):\n    return Decimal(n) / 2\n"),
    "expression form": ("tally", "from collections import Counter\ndef tally(s):\n    return Counter(s)\n"),
    "HumanEval checks": ("freq", "from collections import Counter\ndef freq_count(xs):\n    return Counter(xs)\n"),
}
WRONG = {
    "an __eq__ of its own": (
        "count",
        """
        class Anything(dict):
            def __eq__(self, other):
                return True
        def count(s):
            return Anything()
    """,
    ),
    "an __eq__ of its own, HumanEval checks": (
        "freq",
        """
        class Anything(dict):
            def __eq__(self, other):
                return True
            __hash__ = None
        def freq_count(xs):
            return Anything()
    """,
    ),
}


backend = backends("warm", "cold", "superserve")


def rewards(backend, cases: dict[str, tuple[str, str]]) -> dict[str, float]:
    scorer = Scorer(ALL, backend, get_language("python"), "binary", timeout_s=5.0)
    ids, codes = zip(*[(pid, textwrap.dedent(code)) for pid, code in cases.values()], strict=True)
    scored = asyncio.run(scorer.score(list(ids), list(codes)))
    return {name: (s.verdict.reward, s.verdict.detail) for name, s in zip(cases, scored, strict=True)}


def test_standard_library_results_score_as_the_plain_values_they_equal(backend):
    got = rewards(backend, RIGHT)
    assert all(reward == 1.0 for reward, _ in got.values()), got


def test_results_with_an_eq_of_their_own_still_score_zero(backend):
    got = rewards(backend, WRONG)
    assert all(reward == 0.0 for reward, _ in got.values()), got
