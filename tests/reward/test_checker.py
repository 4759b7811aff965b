"""The standard checker: every comparison rule of a stdin/stdout test (docs/reward-design.md)."""

from __future__ import annotations

import pytest

from codegrpo.config.choices import Checker
from codegrpo.reward.checker import compare_output

TOKENS, LINES, EXACT = Checker.tokens, Checker.lines, Checker.exact


@pytest.mark.parametrize(
    ("got", "want", "checker", "passes"),
    [
        ("3\n", "3", TOKENS, True),  # trailing newline
        ("1  2\t3\n\n\n", "1 2 3\n", TOKENS, True),  # any whitespace between tokens, trailing blank lines
        ("1 2\n3\n", "1 2 3\n", TOKENS, True),  # tokens ignore line breaks
        ("Yes\n", "YES\n", TOKENS, False),  # case matters
        ("1 2\n", "1 2 3\n", TOKENS, False),  # a correct prefix
        ("1 2 3 4\n", "1 2 3\n", TOKENS, False),  # an extra token
        ("3 2 1\n", "1 2 3\n", TOKENS, False),  # reordered
        ("b\na\n", "a\nb\n", LINES, False),  # reordered lines
        ("0.3333333\n", "0.333333333\n", TOKENS, True),  # within 1e-6
        ("0.334\n", "0.333333333\n", TOKENS, False),
        ("1000000.5\n", "1000000.0\n", TOKENS, True),  # relative to the expected
        ("1\n", "1.000000\n", TOKENS, True),  # the expected has a fraction: numbers
        ("123456789012345678902\n", "123456789012345678901\n", TOKENS, False),  # integers: exact
        ("999999507.0\n", "1000000007\n", TOKENS, False),  # an expected integer is exact: no float near it
        ("1e9\n", "1000000007\n", TOKENS, False),
        ("5.0\n", "5\n", TOKENS, False),
        ("\u0661\n", "1.0\n", TOKENS, False),  # Arabic-Indic digits are no number here
        ("007\n", "7\n", TOKENS, False),
        ("nan\n", "nan\n", TOKENS, True),  # the same text
        ("inf\n", "1e999\n", TOKENS, False),  # never a number that is not finite
        ("1e999\n", "1e999\n", TOKENS, True),
        ("", "\n", TOKENS, True),
        ("", "0\n", TOKENS, False),
        ("a b  \nc\n\n", "a b\nc", LINES, True),  # trailing whitespace and blank lines
        ("a  b\n", "a b\n", LINES, False),  # inner whitespace counts in lines
        ("1.0000001\n", "1\n", LINES, False),  # no tolerance in lines
        ("3\n", "3\n", EXACT, True),
        ("3", "3\n", EXACT, False),
    ],
)
def test_comparison_rules(got, want, checker, passes):
    assert (compare_output(got, want, checker) is None) is passes


def test_a_long_token_costs_linear_time():
    import time

    started = time.monotonic()
    for token in ("1" * 200_000 + "x", "1" * 200_000 + ".5", "." + "1" * 200_000):
        assert compare_output(token, "1.5") is not None
    assert time.monotonic() - started < 1.0  # an ambiguous pattern took 18 s on 20,000 digits


def test_the_tolerance_is_configurable():
    assert compare_output("0.31\n", "0.3\n", TOKENS, tolerance=0.1) is None
    assert compare_output("0.31\n", "0.3\n", TOKENS, tolerance=1e-3) is not None


def test_reasons_say_how_the_output_differs():
    assert compare_output("3\n", "4\n") == 'got "3", expected "4"'
    assert compare_output("1\n", "1 2\n") == "the output ends early: got 1 tokens, expected 2"
    assert compare_output("1 2 3\n", "1 2\n") == "extra output: got 3 tokens, expected 2"
    assert len(compare_output("x" * 10_000, "y")) < 120  # cut
