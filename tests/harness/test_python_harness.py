"""Issue 32, finding 4: the harness turns a result that compares as plain values (Counter, defaultdict,
OrderedDict, a namedtuple, an IntEnum, a Fraction or Decimal that is an exact int or float, ...) into
those plain values, and refuses anything with comparisons of its own. Checked against Python's own ==
on generated pairs: the converted value equals a plain value exactly when the original does.
"""

from __future__ import annotations

import collections
import dataclasses
import decimal
import enum
import fractions
import math
import random
import typing

import pytest

from codegrpo.harness.python_harness import MAX_DEPTH, _plain, _typed

REFUSED = "refused"


def converted(value):
    try:
        result = _plain(value)
    except ValueError:
        return REFUSED
    _typed(result)  # exact builtin values only, as the harness's parent requires
    return result


def equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a comparison that raises is no equality
        return False


# -- generated pairs --------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


class Pair(typing.NamedTuple):
    first: object
    second: object


class Sub(int):
    """A subclass that keeps int's comparisons."""


class Text(str):
    pass


class Items(list):
    pass


class Row(tuple):
    pass


class Table(dict):
    pass


class Group(set):
    pass


class Raw(bytes):
    pass


class Real(float):
    pass


def plain_value(rng: random.Random, depth: int = 0):
    """A random plain value: numbers, text, bytes and containers of them (keys hashable)."""
    kinds = ["int", "float", "str", "bytes", "bool"] + (["list", "tuple", "dict", "set"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, 1, -3, 7, 2**70, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -2.25, 3.0, 1e300, 0.1, rng.randint(-50, 50) / 4])
    if kind == "str":
        return rng.choice(["", "a", "abc", "é", str(rng.randint(0, 99))])
    if kind == "bytes":
        return rng.choice([b"", b"ab", bytes([rng.randint(0, 255)])])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "list":
        return [plain_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "tuple":
        return tuple(plain_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    keys = [rng.choice([rng.randint(0, 9), str(rng.randint(0, 9)), (rng.randint(0, 3),)]) for _ in range(3)]
    if kind == "set":
        return set(keys)
    return {key: plain_value(rng, depth + 1) for key in keys}


def wrapped(rng: random.Random, value, key: bool = False):
    """``value``, or a standard-library value that Python's == finds equal to it (items wrapped too); with
    ``key``, a hashable one."""
    kind = type(value)
    if kind is tuple:
        value = tuple(wrapped(rng, item, key) for item in value)
        options = [value, Row(value)]
        if len(value) == 2:
            options += [Point(*value), Pair(*value)]
        return rng.choice(options)
    if kind is bytes:
        return rng.choice([value, Raw(value)] + ([] if key else [bytearray(value)]))
    if kind is list:
        value = [wrapped(rng, item) for item in value]
        return rng.choice([value, Items(value), collections.UserList(value), collections.deque(value)])
    if kind is dict:
        value = {wrapped(rng, name, True): wrapped(rng, item) for name, item in value.items()}
        return rng.choice(
            [
                value,
                collections.Counter(value),
                collections.OrderedDict(value),
                collections.defaultdict(int, value),
                collections.UserDict(value),
                Table(value),
                value.items(),
                value.keys(),
                value.values(),
            ]
        )
    if kind is set:
        value = {wrapped(rng, item, True) for item in value}
        return rng.choice([value, frozenset(value), Group(value), dict.fromkeys(value).keys()])
    if kind is int:
        number = enum.IntEnum("Number", {"N": value}).N if -(2**63) < value < 2**63 else value
        return rng.choice([value, Sub(value), number, fractions.Fraction(value), decimal.Decimal(value)])
    if kind is float:
        return rng.choice(
            [value, Real(value), fractions.Fraction(value), decimal.Decimal(value), decimal.Decimal(repr(value))]
        )
    if kind is str:
        return rng.choice([value, Text(value), collections.UserString(value), enum.StrEnum("Word", {"W": value}).W])
    return value


def near(rng: random.Random, value):
    """Plain values to compare with: ``value`` itself, equal values of other types, and near misses."""
    kind = type(value)
    probes = [value]
    if kind in (int, bool):
        probes += [value + 1, float(value) if abs(value) < 2**53 else value - 1, str(value)]
    elif kind is float:
        probes += [value * 2 + 1, int(value) if value.is_integer() else value / 3, math.nan]
    elif kind is str:
        probes += [value + "x", value.encode()]
    elif kind is bytes:
        probes += [value + b"x", value.decode("latin-1")]
    elif kind in (list, tuple):
        probes += [list(value), tuple(value), [*value, 0], set(value) if all(_hashable(v) for v in value) else None]
    elif kind is dict:
        items = tuple(value.items())
        probes += [{**value, "extra": 1}, set(value), set(items) if _hashable(items) else None, list(value)]
    elif kind is set:
        probes += [frozenset(value), list(value), {*value, "extra"}]
    return [probe for probe in probes if probe is not None]


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def test_generated_pairs_compare_as_python_compares_them():
    rng = random.Random(32)
    accepted = refused = 0
    for _ in range(3000):
        plain = plain_value(rng)
        value = wrapped(rng, plain)
        result = converted(value)
        if result is REFUSED:
            refused += 1
        else:
            accepted += 1
            assert equal(result, value) or not equal(value, value), (value, result)  # NaN is not even itself
        for probe in near(rng, plain):
            expected = equal(value, probe)
            assert (result is not REFUSED and equal(result, probe)) == expected, (value, probe, result)
    assert accepted > 1000 and refused > 100  # both sides were exercised


STANDARD = {
    "Counter": (collections.Counter("abca"), {"a": 2, "b": 1, "c": 1}),
    "defaultdict": (collections.defaultdict(list, {1: [2]}), {1: [2]}),
    "OrderedDict": (collections.OrderedDict([("b", 1), ("a", 2)]), {"a": 2, "b": 1}),
    "namedtuple": (Point(1, 2), (1, 2)),
    "typing.NamedTuple": (Pair("x", [Point(3, 4)]), ("x", [(3, 4)])),
    "IntEnum": (enum.IntEnum("Color", "RED GREEN").GREEN, 2),
    "IntFlag": (enum.IntFlag("Perm", "R W").W, 2),
    "StrEnum": (enum.StrEnum("Word", {"A": "a"}).A, "a"),
    "Fraction, whole": (fractions.Fraction(6, 3), 2),
    "Fraction, a float": (fractions.Fraction(3, 4), 0.75),
    "Decimal, whole": (decimal.Decimal("1E+2"), 100),
    "Decimal, a float": (decimal.Decimal("2.5"), 2.5),
    "Decimal, infinite": (decimal.Decimal("-Infinity"), -math.inf),
    "bytearray": (bytearray(b"ab"), b"ab"),
    "UserList": (collections.UserList([collections.Counter("a")]), [{"a": 1}]),
    "dict keys": ({1: 2}.keys(), {1}),
    "nested": ([collections.Counter({fractions.Fraction(1, 2): 3})], [{0.5: 3}]),
}


@pytest.mark.parametrize("name", STANDARD)
def test_standard_library_values_become_the_plain_values_they_equal(name):
    value, plain = STANDARD[name]
    result = converted(value)
    assert result == plain and result == value and value == plain
    assert type(result) is type(plain)


class Always:
    def __eq__(self, other):
        return True


@dataclasses.dataclass
class Record:
    x: int


class Tally(collections.Counter):
    def __eq__(self, other):
        return True


class Loose(list):
    def __eq__(self, other):
        return True

    __hash__ = None


CUSTOM = {
    "a class of the user's": Always(),
    "an int subclass made with type() with its own __eq__": type(
        "Int", (int,), {"__eq__": lambda self, other: True, "__hash__": int.__hash__}
    )(3),
    "a hash of its own": type("Key", (str,), {"__hash__": lambda self: 0})("a"),
    "an ordering of its own": type("Num", (float,), {"__lt__": lambda self, other: True})(1.0),
    "a list subclass with its own __eq__": Loose([1]),
    "a Counter subclass with its own __eq__": Tally("ab"),
    "a dataclass": Record(1),
    "an Enum": enum.Enum("Color", "RED").RED,
    "a deque (never equal to a list)": collections.deque([1]),
    "a range": range(3),
    "dict values": {1: 2}.values(),
    "a Fraction no float equals": fractions.Fraction(1, 3),
    "a Decimal no float equals": decimal.Decimal("0.1"),
    "a Decimal NaN": decimal.Decimal("NaN"),
    "inside a list": [1, Always()],
    "a dict's value": {"k": Always()},
    "a dict's key": {Record(1).__class__.__name__: 1, enum.Enum("Key", "A").A: 2},
}


@pytest.mark.parametrize("name", CUSTOM)
def test_values_with_comparisons_of_their_own_are_refused(name):
    assert converted(CUSTOM[name]) == REFUSED


def test_nesting_past_the_limit_is_refused_however_it_is_built():
    deep = []
    for _ in range(MAX_DEPTH + 1):
        deep = Items([deep])
    assert converted(deep) == REFUSED
    loop = collections.UserList()
    loop.data = loop
    assert converted(loop) == REFUSED
