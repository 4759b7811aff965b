"""The standard checker: a stdin/stdout test's printed output against the expected output, on the host.

Stricter than the anchors (docs/reward-design.md): a correct prefix, an extra line, reordered lines or a
change of case always fail. ``tokens`` (the default) compares whitespace-separated tokens in order, a
number where the expected token has a fraction or an exponent within a tolerance, an expected integer
exactly as text;
``lines`` compares lines without their trailing whitespace; ``exact`` compares the bytes. Trailing blank
lines never count, except in ``exact``.
"""

from __future__ import annotations

import json
import math
import re

from codegrpo.config import Checker

# Unambiguous (no two ways to split a run of digits), ASCII digits only: linear on any token.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
NUMBER_CHARS = 100  # a longer token is no float a checker compares within a tolerance: exact text
SHOWN = 40  # characters of a token or line a reason shows


def _quote(text: str) -> str:
    return json.dumps(text if len(text) <= SHOWN else text[: SHOWN - 3] + "...")


def _tokens_equal(got: str, want: str, tolerance: float) -> bool:
    if got == want:
        return True
    if len(got) > NUMBER_CHARS or len(want) > NUMBER_CHARS or _INTEGER.fullmatch(want):
        return False  # an expected integer is a count or an index: exact, never "1e9" or "5.0" within a tolerance
    if not (_NUMBER.fullmatch(got) and _NUMBER.fullmatch(want)):
        return False
    a, b = float(got), float(want)
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tolerance * max(1.0, abs(b))


def _first_difference(got: list[str], want: list[str], equal, what: str) -> str | None:
    for got_item, want_item in zip(got, want, strict=False):
        if not equal(got_item, want_item):
            return f"got {_quote(got_item)}, expected {_quote(want_item)}"
    if len(got) < len(want):
        return f"the output ends early: got {len(got)} {what}, expected {len(want)}"
    if len(got) > len(want):
        return f"extra output: got {len(got)} {what}, expected {len(want)}"
    return None


def _lines(text: str) -> list[str]:
    rows = [row.rstrip() for row in text.split("\n")]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def compare_output(got: str, want: str, checker: Checker = Checker.tokens, tolerance: float = 1e-6) -> str | None:
    """None when ``got`` matches ``want`` under ``checker``; else how they first differ, for a person."""
    if checker is Checker.exact:
        return None if got == want else f"got {_quote(got)}, expected {_quote(want)}"
    if checker is Checker.lines:
        return _first_difference(_lines(got), _lines(want), str.__eq__, "lines")
    return _first_difference(got.split(), want.split(), lambda a, b: _tokens_equal(a, b, tolerance), "tokens")
