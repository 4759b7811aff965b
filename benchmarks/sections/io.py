"""h. io: stdin problems with 10 tests each, programs/s and tests/s through our scorer (a fresh process in namespaces
of its own per test), binary reward with fail-fast off and on, vs an unsandboxed subprocess per test (`--only io`;
not in the default run)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import BENCH_TIMEOUT_S, Row, ints, timed
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.local import LocalSandbox

TITLE = "h. stdin problems, 10 tests each (programs/s)"
# What a grader makes of the corpus: whether each completion passed, its verdict (status, reward, reason; None
# for the unsandboxed grader, which has none), and how many tests it ran.
Graded = tuple[list[bool], list[tuple[Status, float | None, str]] | None, int]


IO_SOLUTIONS = {  # (problem kind, a right and a wrong solution): short stdin programs as contests have
    "sum": ("print(sum(map(int, input().split())))", "print(sum(map(int, input().split())) + 1)"),
    "sort": ("n = int(input())\nprint(*sorted(map(int, input().split())))", "input()\nprint(input())"),
    "lines": ("import sys\nprint(len(sys.stdin.read().splitlines()))", "print(1)"),
}


def io_corpus(problems_per_kind: int = 8, tests: int = 10) -> tuple[list[Problem], list[tuple[str, str]]]:
    """stdin/stdout problems with ``tests`` tests each, and a right and a wrong completion of each."""
    import random

    rng = random.Random(0)
    problems, corpus = [], []
    for kind, (right, wrong) in IO_SOLUTIONS.items():
        for n in range(problems_per_kind):
            cases = []
            for _ in range(tests):
                numbers = [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 50))]
                if kind == "sum":
                    cases.append(IOTest(" ".join(map(str, numbers)) + "\n", f"{sum(numbers)}\n"))
                elif kind == "sort":
                    cases.append(
                        IOTest(
                            f"{len(numbers)}\n{' '.join(map(str, numbers))}\n",
                            " ".join(map(str, sorted(numbers))) + "\n",
                        )
                    )
                else:
                    cases.append(IOTest("x\n" * len(numbers), f"{len(numbers)}\n"))
            problem = Problem(f"{kind}-{n}", kind, "", "stdio", tests=tuple(cases))
            problems.append(problem)
            corpus += [(problem.id, f"```python\n{right}\n# {n}\n```"), (problem.id, f"```python\n{wrong}\n# {n}\n```")]
    return problems, corpus


def bench_io(workers: list[int]) -> list[Row]:
    """stdin problems of 10 tests: our sandboxed scorer (every test a fresh process in namespaces of its own,
    all of a completion's tests in one request), binary reward with fail-fast off (every test runs) and on (a
    completion's runs stop at its first failing test, the default), vs human-eval-style unsandboxed execution, a
    subprocess per test that stops at the first failing test, with no isolation at all, at the same worker
    counts. tests/s counts the corpus's tests judged (480), whether a test ran or fail-fast skipped it."""
    problems, corpus = io_corpus()
    by_id = {p.id: p for p in problems}
    tests = sum(len(by_id[pid].tests) for pid, _ in corpus)

    def unsandboxed(n: int) -> Graded:
        ran = [0] * len(corpus)

        def one(number: int) -> bool:
            problem_id, completion = corpus[number]
            code = completion.split("```python\n", 1)[1].rsplit("```", 1)[0]
            for test in by_id[problem_id].tests:
                ran[number] += 1
                try:
                    done = subprocess.run(
                        [sys.executable, "-I", "-c", code],
                        input=test.input,
                        capture_output=True,
                        text=True,
                        timeout=BENCH_TIMEOUT_S,
                    )
                except subprocess.TimeoutExpired:
                    return False
                if done.stdout.split() != test.output.split():
                    return False
            return True

        with ThreadPoolExecutor(max_workers=n) as pool:
            return list(pool.map(one, range(len(corpus)))), None, sum(ran)

    def ours(n: int, fail_fast: bool) -> Graded:
        sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=n, timeout_s=BENCH_TIMEOUT_S))
        scorer = Scorer(
            problems, sandbox, get_language("python"), "binary", timeout_s=BENCH_TIMEOUT_S, fail_fast=fail_fast
        )
        try:
            scored = asyncio.run(scorer.score([p for p, _ in corpus], [c for _, c in corpus]))
            skipped = int(sandbox.stats().get("sandbox/skipped_runs", 0))
        finally:
            asyncio.run(sandbox.aclose())
        verdicts = [(s.verdict.status, s.verdict.reward, s.verdict.detail) for s in scored]
        return [s.verdict.reward == 1.0 for s in scored], verdicts, tests - skipped

    graders: dict[str, Callable[[int], Graded]] = {
        "unsandboxed subprocess per test": unsandboxed,
        "codegrpo local sandbox, fail-fast off": functools.partial(ours, fail_fast=False),
        "codegrpo local sandbox, fail-fast on": functools.partial(ours, fail_fast=True),
    }
    rows, best, verdicts, passes = [], {}, {}, {}
    for n in workers:  # the graders one after another at each worker count: side by side on a noisy machine
        for label, grader in graders.items():
            seconds, (passed, judged, ran) = timed(lambda grader=grader, n=n: grader(n))
            passes.setdefault(label, []).append(passed)
            if judged is not None:
                verdicts.setdefault(label, []).append(judged)
            note = (
                f"{sum(passed)}/{len(corpus)} passed; {tests / seconds:.0f} tests/s; "
                f"{ran} of {tests} tests run, {ran / seconds:.0f} runs/s"
            )
            print(f"[io] {label} x{n}: {len(corpus) / seconds:.1f} programs/s, {note}", file=sys.stderr)
            rows.append((f"{label}, {n} workers (programs/s)", len(corpus) / seconds, note))
            best[label] = max(best.get(label, 0.0), len(corpus) / seconds)
    off, on = verdicts["codegrpo local sandbox, fail-fast off"], verdicts["codegrpo local sandbox, fail-fast on"]
    agree = sum(a == b for run_off, run_on in zip(off, on, strict=True) for a, b in zip(run_off, run_on, strict=True))
    checked = len(corpus) * len(workers)
    unsandboxed_passes = passes["unsandboxed subprocess per test"]
    same = sum(
        a == b
        for x, y in zip(unsandboxed_passes, passes["codegrpo local sandbox, fail-fast on"], strict=True)
        for a, b in zip(x, y, strict=True)
    )
    print(f"[io] fail-fast on vs off: status, reward and reason agree on {agree}/{checked}", file=sys.stderr)
    rows.append(
        (
            "ratio fail-fast on / off (best of each)",
            best["codegrpo local sandbox, fail-fast on"] / best["codegrpo local sandbox, fail-fast off"],
            f"verdicts (status, reward, reason) agree on {agree}/{checked}",
        )
    )
    rows.append(
        (
            "ratio codegrpo (fail-fast on) / unsandboxed (best of each)",
            best["codegrpo local sandbox, fail-fast on"] / best["unsandboxed subprocess per test"],
            f"{len(corpus)} completions x 10 tests; pass or fail agree on {same}/{checked}",
        )
    )
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_io(ints(args.workers))
