"""Public and hidden tests: the tests a model may see (rollout=feedback runs its code on them and shows it the
results) and the tests that decide its reward (never shown, in any prompt or feedback message).

A problem's ``tests`` are every test it has; its ``public_tests`` are the ones that may be shown, either a
subset of ``tests`` or tests of their own. ``hidden(problem)`` is what the reward scores: the tests that are
not public. Where every test is public there is nothing hidden to score on, so the problem is not split at
all: no public tests (one turn, no feedback) and every test hidden, as ``codegrpo-validate`` warns.

Each source maps its own split (codegrpo.data.public_datasets): CodeContests' ``public_tests`` against its
private and generated ones, LiveCodeBench's public against its private test cases, and for APPS and TACO,
which have no split, the first ``FIRST_PUBLIC`` tests (usually the statement's example) when more follow; a
problem file's ``public_tests`` field, shaped like ``tests`` (data.problems parses it).

A test the reward cannot tell from a public one is public too, whatever its place: judges' hidden tests often
repeat the statement's examples at another precision ("0.500000" for a shown "0.5"), and kept hidden such a test
pays code that prints what the model was shown. What the reward can tell apart is the reward's to say: the
split takes a ``SameTest``, codegrpo.reward.checker.same_test for the run's checker and tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from codegrpo.config.choices import Form
from codegrpo.data.problems import IOTest, Problem

FIRST_PUBLIC = 1  # APPS and TACO: the first test is public (usually the statement's example), the rest hidden

# same(form, shown, test): whether every program that passes ``shown`` (a public test) passes ``test`` too
# because it printed or returned what ``shown`` expects, on the same input.
SameTest = Callable[[Form, IOTest, IOTest], bool]


def _words(test: IOTest) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(test.input.split()), tuple(test.output.split())


def same_words(form: Form, shown: IOTest, test: IOTest) -> bool:
    """Equal but for whitespace: a ``SameTest`` every checker but ``exact`` agrees with, for where the
    reward's settings are not at hand (the load-time cap on tests, data.sets)."""
    return _words(shown) == _words(test)


def split_tests(problem: Problem, same: SameTest) -> tuple[tuple[IOTest, ...], tuple[IOTest, ...]]:
    """(public, hidden) tests of an input/output problem. Hidden: ``tests`` less any that is public
    (``is_shown``). A problem without public tests, of another form, or whose tests are all public, is (),
    tests: nothing is shown."""
    shown = problem.public_tests
    if not problem.form.per_test or not shown:
        return (), problem.tests
    public_test = is_shown(problem, same)
    rest = tuple(test for test in problem.tests if not public_test(test))
    return ((), problem.tests) if not rest else (shown, rest)


def is_shown(problem: Problem, same: SameTest = same_words) -> Callable[[IOTest], bool]:
    """Whether a test of ``problem`` is one of its public tests, or one the reward cannot tell from one
    (``same``; by default equal but for whitespace, as data.sets' cap on tests reads it)."""
    shown, form = frozenset(problem.public_tests), problem.form
    return lambda test: test in shown or any(same(form, public_test, test) for public_test in problem.public_tests)


def moved_tests(problem: Problem, same: SameTest) -> list[tuple[int, int]]:
    """(test, public test) numbers, from 1, of each test that is not one of the public tests but counts as
    public because the reward cannot tell it from that one (``codegrpo-validate`` names them)."""
    if not problem.form.per_test or not problem.public_tests:
        return []
    exact, moved = frozenset(problem.public_tests), []
    for number, test in enumerate(problem.tests, start=1):
        if test not in exact:
            alike = (n for n, shown in enumerate(problem.public_tests, start=1) if same(problem.form, shown, test))
            if (shown_number := next(alike, None)) is not None:
                moved.append((number, shown_number))
    return moved


def public(problem: Problem, same: SameTest) -> Problem:
    """``problem`` with only its public tests (none: the problem gives no feedback), as its ``tests``: one
    side of the split, which says nothing of the other."""
    return dataclasses.replace(problem, tests=split_tests(problem, same)[0], public_tests=())


def hidden(problem: Problem, same: SameTest) -> Problem:
    """``problem`` with only its hidden tests: what rollout=feedback's final code is scored on. It keeps its
    public tests, never run, so the hack monitor flags code that hard-codes what the model was shown."""
    if not problem.form.per_test:
        return problem
    return dataclasses.replace(problem, tests=split_tests(problem, same)[1])


class Sides(NamedTuple):
    """A problem set's two sides, made once (build.sides) and passed on: ``public``, each problem with the
    tests the model may see (rollout=feedback runs its code on them), and ``hidden``, each problem with the
    tests its reward scores. Both follow the set's order."""

    public: list[Problem]
    hidden: list[Problem]


def sides_of(problems: Sequence[Problem], same: SameTest) -> Sides:
    return Sides([public(p, same) for p in problems], [hidden(p, same) for p in problems])


def first_public(tests: Sequence[Any], count: int = FIRST_PUBLIC) -> list[Any]:
    """APPS's and TACO's rule: the first ``count`` tests are public, provided one test at least is left hidden."""
    return list(tests[: min(count, len(tests) - 1)]) if len(tests) > 1 else []


def split_warning(problem: Problem, same: SameTest) -> str | None:
    """What ``codegrpo-validate`` says of a problem whose public tests leave none hidden, or None."""
    shown = problem.public_tests
    if shown and problem.form.per_test and not split_tests(problem, same)[0]:
        return (
            f"problem {problem.id}: its public tests are all of its tests, so none is hidden: rollout=feedback "
            "gives it no feedback and scores it on every test"
        )
    return None
