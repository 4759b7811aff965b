"""Fail-fast's problem and programs (a program's runs stop at its first failing test, binary reward), and
scoring them through a sandbox with each RunResult kept: the local sandbox's tests (tests/sandbox/
test_fail_fast.py) and sandbox=ray's (tests/sandbox/test_ray_cluster.py)."""

from __future__ import annotations

import asyncio

from codegrpo.config.choices import Form
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Scored
from codegrpo.sandbox.base import Outcome, RunResult, SandboxBackend
from tests.helpers.sandbox import Recording

TESTS = 10
# Test i reads i and expects 2 * i.
DOUBLE = Problem(
    "double",
    "Print twice the integer read.",
    "",
    Form.stdio,
    tests=tuple(IOTest(f"{i}\n", f"{2 * i}\n") for i in range(TESTS)),
)
RIGHT = "n = int(input())\nprint(2 * n)\n"
WRONG = "n = int(input())\nprint(2 * n + 1)\n"
WRONG_FIRST = "n = int(input())\nprint(2 * n + (n == 0))\n"  # fails test 1 of 10 alone
# Each fails several tests, differently: the first failing test (by index) decides the status and the reason.
MIXED = {
    "wrong, then an error, then a timeout": (
        "n = int(input())\nif n == 8:\n    while True: pass\n"
        "if n == 5:\n    raise ValueError(n)\nprint(2 * n + (n == 2))\n"
    ),
    "an error, then wrong answers": "n = int(input())\nif n == 1:\n    raise ValueError(n)\nprint(2 * n + (n >= 4))\n",
    "a timeout, then a wrong answer": "n = int(input())\nif n == 3:\n    while True: pass\nprint(2 * n + (n == 7))\n",
    "a wrong answer last": "n = int(input())\nprint(2 * n + (n == 9))\n",
    "an exit status everywhere": "raise SystemExit(3)\n",
}
TIMEOUT_S = 1.0


def scorer(sandbox: SandboxBackend, kind: str = "binary", fail_fast: bool = True, problem: Problem = DOUBLE) -> Scorer:
    return Scorer([problem], sandbox, get_language("python"), kind, timeout_s=TIMEOUT_S, fail_fast=fail_fast)


def score(sandbox: SandboxBackend, codes: list[str], **settings) -> tuple[list[Scored], list[RunResult]]:
    recording = Recording(sandbox)
    scored = asyncio.run(scorer(recording, **settings).score([DOUBLE.id] * len(codes), codes))
    return scored, recording.results


def skipped(result: RunResult) -> int:
    return sum(run.outcome is Outcome.SKIPPED for run in result.runs)
