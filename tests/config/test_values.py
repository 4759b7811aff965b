"""The value checks every group shares (codegrpo.config.values): each refuses a bool, NaN, infinity or a value out
of range in one line that says the value and what it must be."""

from __future__ import annotations

import math

import pytest

from codegrpo.config.values import (
    check_at_least,
    check_count,
    check_positive,
    check_seconds,
    check_tolerance,
    host_memory_mb,
)
from codegrpo.errors import UsageError


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: check_seconds("x", math.nan, 60), "x=nan must be a number of seconds above 0 and at most 60"),
        (lambda: check_seconds("x", 61, 60), "x=61 must be a number of seconds above 0 and at most 60"),
        (lambda: check_at_least("x", True, 0), "x=True must be an integer of at least 0"),
        (lambda: check_at_least("x", 2, 3, "why"), "x=2 must be an integer of at least 3 (why)"),
        (lambda: check_count("x", 0, "problems"), "x=0 must be an integer of at least 1 (problems)"),
        (lambda: check_positive("x", math.inf), "x=inf must be a finite number above 0"),
        (lambda: check_positive("x", 0, "why"), "x=0 must be a finite number above 0 (why)"),
        (lambda: check_tolerance("x", -1), "x=-1 must be a finite number at least 0"),
    ],
)
def test_a_value_out_of_range_is_one_line_naming_it(check, message):
    with pytest.raises(UsageError) as raised:
        check()
    assert str(raised.value) == message


def test_values_in_range_pass():
    check_seconds("x", 60, 60)
    check_at_least("x", 0, 0)
    check_count("x", None, "problems")  # null: no limit
    check_positive("x", 1e-9)
    check_tolerance("x", 0)  # 0 compares exactly
    assert host_memory_mb() > 0
