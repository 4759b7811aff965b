"""The standard checker: a stdin/stdout test's printed output against the expected output, on the host.

Stricter than the anchors (docs/reward-design.md): a correct prefix, an extra line, reordered lines or a
change of case always fail. ``tokens`` (the default) compares whitespace-separated tokens in order, a
number where the expected token has a fraction or an exponent within a tolerance, an expected integer
exactly as text; ``lines`` compares lines without their trailing whitespace; ``exact`` compares the bytes.
Trailing blank lines never count, except in ``exact``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator

from codegrpo.config.choices import Checker, Form
from codegrpo.data.problems import IOTest, json_value
from codegrpo.data.public_tests import SameTest
from codegrpo.reward.verdict import strict_equal

# Unambiguous (no two ways to split a run of digits), ASCII digits only: linear on any token.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
_WORD = re.compile(r"\S+")  # str.split()'s tokens: the same Unicode whitespace
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


def _first_difference(got: Iterator[str], want: list[str], equal, what: str) -> str | None:
    # ``got`` is read lazily: a million-token output is compared, never held as a million strings.
    count = 0
    for want_item in want:
        got_item = next(got, None)
        if got_item is None:
            return f"the output ends early: got {count} {what}, expected {len(want)}"
        if not equal(got_item, want_item):
            return f"got {_quote(got_item)}, expected {_quote(want_item)}"
        count += 1
    extra = sum(1 for _ in got)
    return f"extra output: got {count + extra} {what}, expected {len(want)}" if extra else None


def _lines(text: str) -> Iterator[str]:
    """Lines without their trailing whitespace, trailing blank lines left out."""
    blanks, start = 0, 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        row, start = text[start:end].rstrip(), end + 1
        if not row:
            blanks += 1
            continue
        yield from [""] * blanks
        blanks = 0
        yield row


def _words(text: str) -> Iterator[str]:
    return (match.group() for match in _WORD.finditer(text))


def compare_output(got: str, want: str, checker: Checker = Checker.tokens, tolerance: float = 1e-6) -> str | None:
    """None when ``got`` matches ``want`` under ``checker``; else how they first differ, for a person."""
    if checker is Checker.exact:
        return None if got == want else f"got {_quote(got)}, expected {_quote(want)}"
    if checker is Checker.lines:
        return _first_difference(_lines(got), list(_lines(want)), str.__eq__, "lines")
    return _first_difference(_words(got), want.split(), lambda a, b: _tokens_equal(a, b, tolerance), "tokens")


def same_test(checker: Checker = Checker.tokens, tolerance: float = 1e-6) -> SameTest:
    """The reward's own ``SameTest`` (codegrpo.data.public_tests): ``test`` is a public test's twin when its
    input is the shown one's (the same tokens, a fraction equal as a number) and the shown expected output,
    printed, passes it under ``checker``; in the call form, when the decoded arguments and return values
    are strictly equal (2 and 2.0, dicts in any key order), as the verdict compares them."""

    def same(form: Form, shown: IOTest, test: IOTest) -> bool:
        if form is Form.call:
            return _same_value(shown.input, test.input) and _same_value(shown.output, test.output)
        return (
            compare_output(test.input, shown.input, Checker.tokens, 0.0) is None
            and compare_output(shown.output, test.output, checker, tolerance) is None
        )

    return same


def _same_value(a: str, b: str) -> bool:
    try:
        return a == b or strict_equal(json_value(a), json_value(b))
    except ValueError:
        return False
