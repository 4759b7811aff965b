"""Build problems/transfer.jsonl and problems/transfer_unseen.jsonl from parametrised task families.

    python problems/generate_families.py            # writes both files; `--check` only checks them

A family is one kind of task with a parameter ("sum_above_{p}": the sum of the items greater than p),
graded by level (1: one operation, 2: a filter or a loop, 3: a small algorithm). Each parameter value is
one task in the expression form of problems/trivial.jsonl, with a list-valued test (so reward=partial
gives partial credit) and a reference solution.

The split is by family, so no sibling of an unseen task is trained on:
- transfer.jsonl holds the TRAIN families; problems.split=train/eval splits it by id (problems/transfer
  group), which gives every train family tasks on both sides: the same-family held-out split;
- transfer_unseen.jsonl holds the UNSEEN families, none of which is in transfer.jsonl.

feedback.jsonl holds the train families' tasks again, in the call form (problems/feedback group): each call
is a test, the first one public (rollout=feedback shows the model its result) and the others hidden (they
score it). Its ids are transfer.jsonl's, so it splits the same way.

livecodebench_cpu.jsonl holds those call-form tasks once more, in LiveCodeBench's own schema (functional
tests, public and private, metadata.func_name, difficulty from the level), for the paper recipes' CPU twins
(docs/recipes.md): a task of the eval split is released on or after 2024-08-01 (DeepCoder's evaluation
window opens there), one of the train split before, so problems.before/after give the same split by date.

The build stops with one line naming the family when a family has a side with no task, or when a
task's reference does not give what the family's spec says (the expected values come from the spec, a
plain Python function written apart from the reference source).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from codegrpo.data.problems import parse_problem
from codegrpo.data.public_tests import first_public
from codegrpo.data.sets import select_split
from codegrpo.errors import ProblemError

HERE = Path(__file__).resolve().parent
EVAL_FRACTION = 0.3  # of each train family's tasks, by id: conf/problems/transfer.yaml says the same
OUTPUTS = {
    "train": HERE / "transfer.jsonl",
    "unseen": HERE / "transfer_unseen.jsonl",
    "feedback": HERE / "feedback.jsonl",
    "livecodebench": HERE / "livecodebench_cpu.jsonl",
}
WINDOW_OPENS = date(2024, 8, 1)  # livecodebench_cpu.jsonl: eval tasks on or after it, train tasks before
DIFFICULTY = {1: "easy", 2: "medium", 3: "hard"}  # LiveCodeBench's three, by level


@dataclass(frozen=True)
class Family:
    """One task for each p in ``params``. The name, prompt and reference are templates of ``p`` (``{p}``,
    and ``{p0}``, ``{p1}``, ... for a tuple parameter; ``{ord}``: 1st, 2nd, ...); ``spec(p, *args)`` is the
    expected value of a call, written apart from the reference."""

    name: str  # the function name template, e.g. "sum_above_{p}"
    kind: str  # arithmetic, conditionals, lists, strings, dicts, loops, algorithms
    level: int  # 1 easy, 2 medium, 3 hard
    args: str  # the signature's parameters, e.g. "xs"
    prompt: str  # what it returns, e.g. "returns the sum of the numbers in the list xs greater than {p}."
    reference: str  # the body's source, e.g. "return sum(x for x in xs if x > {p})"
    spec: Callable[..., Any]  # spec(p, *args) -> the expected value
    inputs: Callable[[Any], Sequence[tuple]]  # the test's argument tuples for parameter p
    params: tuple

    @property
    def family_id(self) -> str:
        """The name with its parameters as N: sum_above_N, replace_N_with_N."""
        return re.sub(r"\{p\d?\}", "N", self.name)


def ordinal(k: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def fmt(template: str, p: Any) -> str:
    """str.format with p, p0, p1 (the items of a tuple parameter) and the ordinal of p."""
    values = {"p": p, "ord": ordinal(p) if isinstance(p, int) else ""}
    if isinstance(p, tuple):
        values |= {f"p{i}": item for i, item in enumerate(p)}
    return template.format(**values)


def same(*values: tuple) -> Callable[[Any], Sequence[tuple]]:
    """Inputs that do not depend on the parameter."""
    return lambda p: values


NUMS = ([3, 8, 1, 12, 5], [], [-4, 2, 7, 0], [10, 10, 3])
WORDS = ("the quick brown fox", "", "a bb ccc dddd", "hello   world of code")


TRAIN = [
    # arithmetic
    Family(
        "add_{p}",
        "arithmetic",
        1,
        "x",
        "returns x plus {p}.",
        "return x + {p}",
        lambda p, x: x + p,
        same((3,), (-4,), (0,)),
        (2, 5, 7, 10, 12, 20),
    ),
    Family(
        "times_{p}",
        "arithmetic",
        1,
        "x",
        "returns x multiplied by {p}.",
        "return x * {p}",
        lambda p, x: x * p,
        same((3,), (-4,), (0,)),
        (3, 4, 5, 6, 9, 11),
    ),
    Family(
        "mod_{p}",
        "arithmetic",
        1,
        "x",
        "returns the remainder of the non-negative integer x divided by {p}.",
        "return x % {p}",
        lambda p, x: x % p,
        same((10,), (17,), (0,), (23,)),
        (2, 3, 4, 5, 7, 9),
    ),
    Family(
        "is_multiple_of_{p}",
        "arithmetic",
        1,
        "n",
        "returns True if n is divisible by {p}, else False.",
        "return n % {p} == 0",
        lambda p, n: n % p == 0,
        lambda p: ((p * 3,), (p * 3 + 1,), (0,), (14,)),
        (3, 4, 5, 6, 7, 8),
    ),
    # conditionals
    Family(
        "cap_at_{p}",
        "conditionals",
        1,
        "x",
        "returns x, or {p} if x is greater than {p}.",
        "return {p} if x > {p} else x",
        lambda p, x: min(x, p),
        lambda p: ((p + 5,), (p - 3,), (p,), (-1,)),
        (10, 20, 50, 100, 7),
    ),
    Family(
        "passes_{p}",
        "conditionals",
        2,
        "score",
        "returns the string 'pass' if score is at least {p}, else the string 'fail'.",
        "return 'pass' if score >= {p} else 'fail'",
        lambda p, s: "pass" if s >= p else "fail",
        lambda p: ((p,), (p - 1,), (100,), (0,)),
        (40, 50, 60, 70, 80, 90),
    ),
    Family(
        "sign_word_{p}",
        "conditionals",
        2,
        "x",
        "returns 'above' if x is greater than {p}, 'below' if x is less than {p}, and 'equal' otherwise.",
        "return 'above' if x > {p} else 'below' if x < {p} else 'equal'",
        lambda p, x: "above" if x > p else "below" if x < p else "equal",
        lambda p: ((p + 2,), (p - 2,), (p,)),
        (0, 1, 5, 10, 100),
    ),
    # lists
    Family(
        "sum_above_{p}",
        "lists",
        2,
        "xs",
        "returns the sum of the numbers in the list xs that are greater than {p}.",
        "return sum(x for x in xs if x > {p})",
        lambda p, xs: sum(x for x in xs if x > p),
        same(*((n,) for n in NUMS)),
        (0, 2, 3, 5, 10, 1),
    ),
    Family(
        "count_below_{p}",
        "lists",
        2,
        "xs",
        "returns how many numbers in the list xs are less than {p}.",
        "return sum(1 for x in xs if x < {p})",
        lambda p, xs: sum(x < p for x in xs),
        same(*((n,) for n in NUMS)),
        (0, 3, 5, 10, 4, 8),
    ),
    Family(
        "add_{p}_to_all",
        "lists",
        1,
        "xs",
        "returns a new list with {p} added to every number in the list xs.",
        "return [x + {p} for x in xs]",
        lambda p, xs: [x + p for x in xs],
        same(*((n,) for n in NUMS[:3])),
        (1, 3, 10, 100, 5),
    ),
    Family(
        "first_{p}",
        "lists",
        1,
        "xs",
        "returns a list of the first {p} items of the list xs (all of xs if it is shorter).",
        "return xs[:{p}]",
        lambda p, xs: xs[:p],
        same(*((n,) for n in NUMS)),
        (1, 2, 3, 4, 7),
    ),
    Family(
        "every_{p}th",
        "lists",
        2,
        "xs",
        "returns a list of every {p}-th item of the list xs, starting with the first item.",
        "return xs[::{p}]",
        lambda p, xs: xs[::p],
        same(([1, 2, 3, 4, 5, 6, 7],), ([],), ([9, 8],)),
        (2, 3, 4, 5),
    ),
    Family(
        "sum_{p0}",
        "lists",
        2,
        "xs",
        "returns the sum of the {p1} numbers in the list xs.",
        "return sum(x for x in xs if x % 2 == {p2})",
        lambda p, xs: sum(x for x in xs if x % 2 == p[2]),
        same(*((n,) for n in NUMS)),
        (("evens", "even", 0), ("odds", "odd", 1)),
    ),
    Family(
        "top_{p}_items",
        "algorithms",
        3,
        "xs",
        "returns a list of the {p} largest numbers in the list xs, largest first.",
        "return sorted(xs, reverse=True)[:{p}]",
        lambda p, xs: sorted(xs, reverse=True)[:p],
        same(([3, 8, 1, 12, 5],), ([4, 4, 2],), ([7, -1, 3, 9, 0, 2],)),
        (1, 2, 3, 4, 5),
    ),
    Family(
        "kth_largest_{p}",
        "algorithms",
        3,
        "xs",
        "returns the {ord} largest number in the list xs (xs has at least {p} numbers; equal numbers count "
        "separately).",
        "return sorted(xs, reverse=True)[{p} - 1]",
        lambda p, xs: sorted(xs, reverse=True)[p - 1],
        same(([3, 8, 1, 12, 5],), ([4, 4, 2, 9],), ([7, -1, 3, 9, 0, 2],)),
        (1, 2, 3, 4),
    ),
    # strings
    Family(
        "count_{p}",
        "strings",
        1,
        "s",
        "returns how many times the letter '{p}' appears in the string s.",
        "return s.count('{p}')",
        lambda p, s: s.count(p),
        same(("banana",), ("",), ("test the best",), ("oboe",)),
        ("a", "e", "o", "s", "t", "n"),
    ),
    Family(
        "starts_with_{p}",
        "strings",
        1,
        "s",
        "returns True if the string s starts with '{p}', else False.",
        "return s.startswith('{p}')",
        lambda p, s: s.startswith(p),
        lambda p: ((p + "xyz",), ("",), ("z" + p,)),
        ("ab", "the", "x", "py", "re"),
    ),
    Family(
        "repeat_{p}",
        "strings",
        1,
        "s",
        "returns the string s repeated {p} times.",
        "return s * {p}",
        lambda p, s: s * p,
        same(("ab",), ("",), ("x",)),
        (2, 3, 4, 5),
    ),
    Family(
        "replace_{p0}_with_{p1}",
        "strings",
        2,
        "s",
        "returns s with every '{p0}' replaced by '{p1}'.",
        "return s.replace('{p0}', '{p1}')",
        lambda p, s: s.replace(*p),
        same(("banana",), ("",), ("hello world",)),
        (("a", "o"), ("e", "i"), ("o", "0"), ("l", "r"), ("n", "m")),
    ),
    Family(
        "first_{p}_chars",
        "strings",
        1,
        "s",
        "returns the first {p} characters of the string s (all of s if it is shorter).",
        "return s[:{p}]",
        lambda p, s: s[:p],
        same(("abcdef",), ("",), ("xy",)),
        (1, 2, 3, 5),
    ),
    Family(
        "words_over_{p}",
        "strings",
        2,
        "s",
        "returns the list of the words of s (split on whitespace) that have more than {p} characters.",
        "return [w for w in s.split() if len(w) > {p}]",
        lambda p, s: [w for w in s.split() if len(w) > p],
        same(*((w,) for w in WORDS)),
        (1, 2, 3, 4, 5),
    ),
    Family(
        "wrap_in_{p0}",
        "strings",
        1,
        "s",
        "returns the string s with '{p1}' before it and '{p2}' after it.",
        "return '{p1}' + s + '{p2}'",
        lambda p, s: p[1] + s + p[2],
        same(("hi",), ("",), ("a b",)),
        (("brackets", "[", "]"), ("parens", "(", ")"), ("stars", "*", "*"), ("angles", "<", ">"), ("braces", "{", "}")),
    ),
    # dicts
    Family(
        "get_or_{p}",
        "dicts",
        2,
        "d, k",
        "returns the value stored under the key k in the dictionary d, or {p} if d has no key k.",
        "return d.get(k, {p})",
        lambda p, d, k: d.get(k, p),
        same(({"a": 3}, "a"), ({"a": 3}, "b"), ({}, "x")),
        (0, 1, 10, 100, 7),
    ),
    Family(
        "keys_above_{p}",
        "dicts",
        2,
        "d",
        "returns the sorted list of the keys of the dictionary d whose values are greater than {p}.",
        "return sorted(k for k, v in d.items() if v > {p})",
        lambda p, d: sorted(k for k, v in d.items() if v > p),
        same(({"a": 3, "b": 12, "c": 6},), ({},), ({"z": 20, "y": 1, "x": 11},)),
        (0, 5, 10, 2, 15),
    ),
    Family(
        "count_value_{p}",
        "dicts",
        2,
        "d",
        "returns how many values in the dictionary d are equal to {p}.",
        "return sum(1 for v in d.values() if v == {p})",
        lambda p, d: sum(v == p for v in d.values()),
        lambda p: (({"a": 1, "b": 0, "c": 1},), ({},), ({"x": p, "y": p, "z": 0},)),
        (0, 1, 2, 3, 9),
    ),
    Family(
        "scale_values_by_{p}",
        "dicts",
        2,
        "d",
        "returns a new dictionary with the same keys as the dictionary d and every value multiplied by {p}.",
        "return {{k: v * {p} for k, v in d.items()}}",
        lambda p, d: {k: v * p for k, v in d.items()},
        same(({"a": 1, "b": -2},), ({},), ({"x": 5},)),
        (2, 3, 10, 5),
    ),
    # loops
    Family(
        "sum_multiples_of_{p}",
        "loops",
        2,
        "n",
        "returns the sum of the positive multiples of {p} that are at most n (0 if there are none).",
        "return sum(range({p}, n + 1, {p}))",
        lambda p, n: sum(range(p, n + 1, p)),
        same((10,), (0,), (21,)),
        (2, 3, 5, 7, 4),
    ),
    Family(
        "count_digit_{p}",
        "loops",
        2,
        "n",
        "returns how many times the digit {p} appears in the decimal digits of the non-negative integer n.",
        "return str(n).count('{p}')",
        lambda p, n: str(n).count(str(p)),
        same((1071,), (0,), (777,), (90919,)),
        (0, 1, 7, 9, 5),
    ),
    Family(
        "sum_of_powers_{p}",
        "loops",
        2,
        "n",
        "returns 1**{p} + 2**{p} + ... + n**{p}, the sum of the {p}-th powers of 1 to n (0 when n is 0).",
        "return sum(i ** {p} for i in range(1, n + 1))",
        lambda p, n: sum(i**p for i in range(1, n + 1)),
        same((3,), (0,), (5,)),
        (1, 2, 3, 4),
    ),
    # algorithms
    Family(
        "rotate_left_{p}",
        "algorithms",
        3,
        "xs",
        "returns the list xs rotated left by {p} positions: the first item moves to the end, {p} times (an "
        "empty list stays empty).",
        "return xs[{p} % len(xs):] + xs[:{p} % len(xs)] if xs else []",
        lambda p, xs: xs[p % len(xs) :] + xs[: p % len(xs)] if xs else [],
        same(([1, 2, 3, 4, 5],), ([],), ([7, 8],)),
        (1, 2, 3, 5),
    ),
    Family(
        "chunks_of_{p}",
        "algorithms",
        3,
        "xs",
        "returns the list xs split into consecutive lists of {p} items each (the last one may be shorter).",
        "return [xs[i:i + {p}] for i in range(0, len(xs), {p})]",
        lambda p, xs: [xs[i : i + p] for i in range(0, len(xs), p)],
        same(([1, 2, 3, 4, 5],), ([],), ([6, 7],)),
        (2, 3, 4, 1),
    ),
    Family(
        "to_base_{p}",
        "algorithms",
        3,
        "n",
        "returns the digits of the non-negative integer n written in base {p}, as a string ('0' for 0).",
        "digits = ''\n    while n > 0:\n        digits = str(n % {p}) + digits\n        n //= {p}\n"
        "    return digits or '0'",
        lambda p, n: _to_base(n, p),
        same((10,), (0,), (255,), (7,)),
        (2, 3, 5, 8),
    ),
    Family(
        "shift_{p}",
        "algorithms",
        3,
        "s",
        "returns the lowercase string s with every letter moved {p} places forward in the alphabet, wrapping "
        "around from z to a (other characters stay as they are).",
        "return ''.join(chr((ord(c) - 97 + {p}) % 26 + 97) if c.isalpha() else c for c in s)",
        lambda p, s: "".join(chr((ord(c) - 97 + p) % 26 + 97) if c.isalpha() else c for c in s),
        same(("abc",), ("",), ("xyz z",)),
        (1, 2, 3, 13, 5),
    ),
]

UNSEEN = [
    # level 1: one operation each, of kinds the train families do not have
    Family(
        "square_plus_{p}",
        "arithmetic",
        1,
        "x",
        "returns x times x, plus {p}.",
        "return x * x + {p}",
        lambda p, x: x * x + p,
        same((3,), (-2,), (0,)),
        (1, 4, 7, 10),
    ),
    Family(
        "is_greater_than_{p}",
        "conditionals",
        1,
        "x",
        "returns True if x is greater than {p}, else False.",
        "return x > {p}",
        lambda p, x: x > p,
        lambda p: ((p + 1,), (p,), (p - 3,)),
        (0, 5, 18, 100),
    ),
    Family(
        "is_longer_than_{p}",
        "strings",
        1,
        "s",
        "returns True if the string s has more than {p} characters, else False.",
        "return len(s) > {p}",
        lambda p, s: len(s) > p,
        same(("hello",), ("",), ("abc",), ("a longer sentence",)),
        (2, 3, 4, 10),
    ),
    Family(
        "contains_{p}",
        "lists",
        1,
        "xs",
        "returns True if the number {p} is in the list xs, else False.",
        "return {p} in xs",
        lambda p, xs: p in xs,
        lambda p: (([1, p, 3],), ([],), ([p + 1, p - 1],)),
        (0, 2, 7, 42),
    ),
    Family(
        "max_or_{p}",
        "lists",
        1,
        "xs",
        "returns the largest number in the list xs, or {p} if xs is empty.",
        "return max(xs) if xs else {p}",
        lambda p, xs: max(xs) if xs else p,
        same(*((n,) for n in NUMS)),
        (0, 1, 99, 5),
    ),
    Family(
        "length_times_{p}",
        "lists",
        1,
        "xs",
        "returns the length of the list xs multiplied by {p}.",
        "return len(xs) * {p}",
        lambda p, xs: len(xs) * p,
        same(*((n,) for n in NUMS)),
        (2, 3, 10, 0),
    ),
    Family(
        "between_{p0}_and_{p1}",
        "conditionals",
        2,
        "x",
        "returns True if x is at least {p0} and at most {p1}, else False.",
        "return {p0} <= x <= {p1}",
        lambda p, x: p[0] <= x <= p[1],
        lambda p: ((p[0],), (p[1] + 1,), ((p[0] + p[1]) // 2,), (p[0] - 1,)),
        ((1, 5), (0, 10), (10, 20), (3, 4)),
    ),
    Family(
        "distance_to_{p}",
        "arithmetic",
        1,
        "x",
        "returns the absolute difference between x and {p}.",
        "return abs(x - {p})",
        lambda p, x: abs(x - p),
        same((0,), (7,), (-3,), (150,)),
        (0, 5, 10, 100),
    ),
    Family(
        "round_down_to_{p}",
        "arithmetic",
        2,
        "x",
        "returns the integer x rounded down to a multiple of {p}.",
        "return x // {p} * {p}",
        lambda p, x: x // p * p,
        same((17,), (0,), (99,), (250,)),
        (5, 10, 100, 3),
    ),
    Family(
        "product_of_first_{p}",
        "loops",
        2,
        "xs",
        "returns the product of the first {p} numbers of the list xs (of all of them if xs is shorter; 1 for "
        "an empty list).",
        "result = 1\n    for x in xs[:{p}]:\n        result *= x\n    return result",
        lambda p, xs: _product(xs[:p]),
        same(([2, 3, 4, 5],), ([],), ([7],), ([1, -2, 3],)),
        (1, 2, 3),
    ),
    Family(
        "remove_{p}",
        "strings",
        1,
        "s",
        "returns the string s with every '{p}' removed.",
        "return s.replace('{p}', '')",
        lambda p, s: s.replace(p, ""),
        same(("banana",), ("",), ("hello world",)),
        ("a", "l", "o", "x"),
    ),
    Family(
        "word_{p}",
        "strings",
        2,
        "s",
        "returns the {ord} word of the string s split on whitespace, or '' if s has fewer words.",
        "words = s.split()\n    return words[{p} - 1] if len(words) >= {p} else ''",
        lambda p, s: s.split()[p - 1] if len(s.split()) >= p else "",
        same(*((w,) for w in WORDS)),
        (1, 2, 3),
    ),
    Family(
        "pad_left_{p}",
        "strings",
        2,
        "s",
        "returns the string s with '0' characters added on its left until it is {p} characters long (s itself "
        "if it is at least that long).",
        "return s.rjust({p}, '0')",
        lambda p, s: s.rjust(p, "0"),
        same(("7",), ("",), ("123456789",), ("42",)),
        (3, 4, 5, 8),
    ),
    Family(
        "has_key_{p}",
        "dicts",
        1,
        "d",
        "returns True if the dictionary d has the key '{p}', else False.",
        "return '{p}' in d",
        lambda p, d: p in d,
        lambda p: (({p: 0},), ({},), ({"other": p},)),
        ("a", "id", "name", "x"),
    ),
    Family(
        "sum_values_starting_{p}",
        "dicts",
        2,
        "d",
        "returns the sum of the values of the dictionary d whose keys start with '{p}' (0 if none do).",
        "return sum(v for k, v in d.items() if k.startswith('{p}'))",
        lambda p, d: sum(v for k, v in d.items() if k.startswith(p)),
        same(({"apple": 3, "avocado": 4, "berry": 5},), ({},), ({"xa": 1, "bx": 2, "b": 7},)),
        ("a", "b", "x"),
    ),
    Family(
        "countdown_by_{p}",
        "loops",
        2,
        "n",
        "returns the list n, n - {p}, n - 2*{p}, ... of those numbers that are greater than 0.",
        "return list(range(n, 0, -{p}))",
        lambda p, n: list(range(n, 0, -p)),
        same((10,), (0,), (7,)),
        (1, 2, 3, 5),
    ),
    Family(
        "index_above_{p}",
        "lists",
        2,
        "xs",
        "returns the index of the first number in the list xs that is greater than {p}, or -1 if there is none.",
        "return next((i for i, x in enumerate(xs) if x > {p}), -1)",
        lambda p, xs: next((i for i, x in enumerate(xs) if x > p), -1),
        same(*((n,) for n in NUMS)),
        (0, 5, 10, 2),
    ),
    Family(
        "replace_negatives_with_{p}",
        "lists",
        2,
        "xs",
        "returns a new list in which every negative number of the list xs is replaced by {p}.",
        "return [{p} if x < 0 else x for x in xs]",
        lambda p, xs: [p if x < 0 else x for x in xs],
        same(([3, -1, 0, -7],), ([],), ([5, 6],)),
        (0, 1, 9),
    ),
]


def _to_base(n: int, base: int) -> str:
    digits = ""
    while n:
        n, digit = divmod(n, base)
        digits = str(digit) + digits
    return digits or "0"


def _product(xs: list[int]) -> int:
    result = 1
    for x in xs:
        result *= x
    return result


def task(family: Family, p: Any) -> dict[str, Any]:
    """One task in the expression form, checked: the reference must give what the spec says."""
    fn = fmt(family.name, p)
    reference = f"def {fn}({family.args}):\n    {fmt(family.reference, p)}\n"
    calls = family.inputs(p)
    if not calls:
        raise ProblemError(f"family {family.family_id}: task {fn} has no test inputs")
    expected = [family.spec(p, *args) for args in calls]
    namespace: dict[str, Any] = {}
    try:  # our own reference source, not model output: run here, before any sandbox sees it
        exec(compile(reference, f"<{fn}>", "exec"), namespace)
        got = [namespace[fn](*json.loads(json.dumps(args))) for args in calls]
    except Exception as error:
        raise ProblemError(
            f"family {family.family_id}: the reference of {fn} raises {type(error).__name__}: {error}"
        ) from None
    if json.dumps(got) != json.dumps(expected):
        raise ProblemError(
            f"family {family.family_id}: the reference of {fn} gives {json.dumps(got)}, the spec {json.dumps(expected)}"
        )
    test = "[" + ", ".join(f"{fn}({', '.join(map(repr, args))})" for args in calls) + "]"
    return {
        "id": fn,
        "family": family.family_id,
        "kind": family.kind,
        "level": family.level,
        "prompt": f"{fn}({family.args}) that {fmt(family.prompt, p)}",
        "test": test,
        "expected": json.dumps(expected),
        "reference": reference,
    }


def call_task(family: Family, p: Any) -> dict[str, Any]:
    """The task in the call form: each call is a test, the first public when a hidden one expects another
    value (else a program that returns what it was shown would pass them all)."""
    record = task(family, p)  # checked against the spec
    calls = json.loads(json.dumps([list(args) for args in family.inputs(p)]))
    tests = [
        {"input": args, "output": value} for args, value in zip(calls, json.loads(record["expected"]), strict=True)
    ]
    shown = first_public(tests)
    if all(test["output"] == shown[0]["output"] for test in tests[len(shown) :]):  # shown or not, nothing hidden
        shown = []  # returning what the public test showed would pass every hidden one: no feedback
    return {
        "id": record["id"],
        "family": record["family"],
        "kind": record["kind"],
        "level": record["level"],
        "prompt": f"Write a function {record['prompt']}",
        "fn_name": record["id"],
        "tests": tests,
        "public_tests": shown,
        "reference": record["reference"],
    }


def livecodebench_row(record: dict[str, Any], released: date) -> dict[str, Any]:
    """A call-form task as a row of livecodebench/code_generation_lite (data/public_datasets/livecodebench.py)."""

    def cases(tests: list[dict[str, Any]]) -> str:
        return json.dumps(
            [
                {
                    "input": "\n".join(json.dumps(arg) for arg in test["input"]),
                    "output": json.dumps(test["output"]),
                    "testtype": "functional",
                }
                for test in tests
            ]
        )

    public = record["public_tests"]
    return {
        "question_title": record["id"],
        "question_content": record["prompt"],
        "platform": "codegrpo",
        "question_id": record["id"],
        "contest_id": record["family"],
        "contest_date": f"{released.isoformat()}T00:00:00",
        "starter_code": "",
        "difficulty": DIFFICULTY[record["level"]],
        "public_test_cases": cases(public),
        "private_test_cases": cases(record["tests"][len(public) :]),
        "metadata": json.dumps({"func_name": record["fn_name"]}),
    }


def livecodebench_rows(records: list[dict[str, Any]], eval_fraction: float) -> list[dict[str, Any]]:
    """The call-form tasks dated so that the eval split is released from WINDOW_OPENS on, a day apart."""
    problems = [parse_problem(r, r["id"]) for r in records]
    held_out = {p.id for p in select_split(problems, "eval", eval_fraction)}
    later, earlier = WINDOW_OPENS, WINDOW_OPENS - timedelta(days=len(records) - len(held_out))
    rows = []
    for record in records:
        if record["id"] in held_out:
            rows.append(livecodebench_row(record, later))
            later += timedelta(days=1)
        else:
            rows.append(livecodebench_row(record, earlier))
            earlier += timedelta(days=1)
    return rows


def build(
    train: Sequence[Family], unseen: Sequence[Family], eval_fraction: float = EVAL_FRACTION
) -> dict[str, list[dict[str, Any]]]:
    """The records of each file. ProblemError (one line, naming the family) when a side is empty, a family
    is on both sides, a train family has no task in the train or the eval split, or a reference fails."""
    for side, families in (("train", train), ("unseen", unseen)):
        if not families:
            raise ProblemError(f"the family split leaves the {side} side with no family")
        for family in families:
            if not family.params:
                raise ProblemError(f"family {family.family_id} ({side}): no parameters, so no tasks")
    shared = {f.family_id for f in train} & {f.family_id for f in unseen}
    if shared:
        raise ProblemError(f"family {sorted(shared)[0]} is both a train and an unseen family")
    records = {
        side: [task(f, p) for f in families for p in f.params]
        for side, families in (("train", train), ("unseen", unseen))
    }
    records["feedback"] = [call_task(f, p) for f in train for p in f.params]
    for family in train:
        problems = [parse_problem(r, r["id"]) for r in records["train"] if r["family"] == family.family_id]
        for split in ("train", "eval"):
            try:
                select_split(problems, split, eval_fraction)
            except ProblemError:
                raise ProblemError(
                    f"family {family.family_id}: none of its {len(problems)} tasks falls in the "
                    f"{split} split (eval_fraction {eval_fraction}): add a parameter"
                ) from None
    ids = [r["id"] for side in ("train", "unseen") for r in records[side]]
    if len(ids) != len(set(ids)):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ProblemError(f"task id {duplicate} is made by two families")
    records["livecodebench"] = livecodebench_rows(records["feedback"], eval_fraction)  # every family splits
    return records


def _level(record: dict[str, Any]) -> int:
    """A record's level; a LiveCodeBench row's from its difficulty."""
    return record["level"] if "level" in record else {v: k for k, v in DIFFICULTY.items()}[record["difficulty"]]


def lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def main(argv: Sequence[str]) -> int:
    try:
        records = build(TRAIN, UNSEEN)
    except ProblemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for side, path in OUTPUTS.items():
        if "--check" in argv:
            if not path.is_file() or path.read_text() != lines(records[side]):
                print(f"error: {path.name} is out of date: run python problems/generate_families.py", file=sys.stderr)
                return 1
        else:
            path.write_text(lines(records[side]))
        levels = {level: sum(_level(r) == level for r in records[side]) for level in (1, 2, 3)}
        families = len({r.get("family", r.get("contest_id")) for r in records[side]})
        print(
            f"{path.name}: {len(records[side])} tasks in {families} families (levels 1/2/3: "
            f"{levels[1]}/{levels[2]}/{levels[3]})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
