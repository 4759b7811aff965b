"""Score programs through the Superserve backend against the fake API, with faults injected.

    python -m tests.fakes.superserve_demo [--programs 24] [--concurrency 8] [--seed 0]

Needs no account and no network: the fake (benchmarks.fakes.superserve_api) answers the real SDK and
runs each program in the local bubblewrap sandbox. Prints one row per program, the counters, and
``sandboxes created: X, killed: X``; exits 1 if a sandbox leaked, the cap was exceeded, or a program
that got a result got the wrong one.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time

from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve, Fault

from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.sandbox.base import Outcome, Program, RunResult
from codegrpo.sandbox.superserve import SuperserveSandbox

KEY_ENV = "CODEGRPO_FAKE_SUPERSERVE_KEY"  # never the user's real SUPERSERVE_API_KEY

# (name, source, expected outcome, expected last line of stdout)
CASES: list[tuple[str, str, Outcome, str]] = [
    ("pass", "def add(a, b):\n    return a + b\n\nprint(add(2, 40))\n", Outcome.EXITED, "42"),
    ("wrong answer", "def add(a, b):\n    return a - b\n\nprint(add(2, 40))\n", Outcome.EXITED, "-38"),
    ("exception", "raise ValueError('no idea')\n", Outcome.EXITED, ""),
    ("infinite loop", "while True:\n    pass\n", Outcome.TIMEOUT, ""),
]

LATENCY = {"create": 0.2, "write": 0.02, "exec": 0.02, "kill": 0.02}
FAULT_RATES: dict[str, dict[Fault | str, float]] = {
    "create": {Fault.RATE_LIMITED: 0.15, Fault.SERVER_ERROR: 0.1, Fault.TIMEOUT: 0.05, Fault.LOST_RESPONSE: 0.1},
    "write": {Fault.RESET: 0.1, Fault.UNAVAILABLE: 0.1},
    "exec": {Fault.SERVER_ERROR: 0.1, Fault.UNAUTHORIZED: 0.05, Fault.SLOW: 0.05},
    "kill": {Fault.SERVER_ERROR: 0.15, Fault.UNAVAILABLE: 0.1},
}


def _programs(n: int, timeout_s: float) -> list[tuple[str, Program, Outcome, str]]:
    picked = [CASES[i % len(CASES)] for i in range(n)]
    return [(name, Program(source, timeout_s=timeout_s), outcome, out) for name, source, outcome, out in picked]


def _as_expected(result: RunResult, outcome: Outcome, last_line: str) -> bool:
    if result.outcome is not outcome:
        return False
    if outcome is Outcome.EXITED and last_line:
        return result.exit_code == 0 and result.stdout.rstrip().rpartition("\n")[2] == last_line
    return outcome is not Outcome.EXITED or result.exit_code != 0


async def _score(backend: SuperserveSandbox, programs: list[Program]) -> list[RunResult]:
    try:
        return await backend.run_many(programs)
    finally:
        await backend.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds before a program is killed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    os.environ[KEY_ENV] = FAKE_API_KEY
    cases = _programs(args.programs, args.timeout)
    with FakeSuperserve(
        latency=LATENCY, fault_rates=FAULT_RATES, seed=args.seed, max_sandboxes=args.concurrency
    ) as fake:
        cfg = SuperserveSandboxConfig(
            api_key_env=KEY_ENV,
            base_url=fake.base_url,
            max_concurrency=args.concurrency,
            backoff_base_s=0.05,
            backoff_max_s=0.5,
        )
        backend = SuperserveSandbox(cfg)
        started = time.monotonic()
        results = asyncio.run(_score(backend, [program for _, program, _, _ in cases]))
        elapsed = time.monotonic() - started
        summary = fake.summary()

    print(f"{'#':>3}  {'program':<14} {'outcome':<14} {'exit':>4}  {'stdout':<8} {'secs':>5}  check")
    wrong = 0
    for i, ((name, _, outcome, last_line), result) in enumerate(zip(cases, results, strict=True)):
        if result.is_infra_failure:
            check = f"infra failure: {result.error}"
        elif _as_expected(result, outcome, last_line):
            check = "ok"
        else:
            check = f"WRONG, expected {outcome.value}"
            wrong += 1
        stdout = result.stdout.rstrip().rpartition("\n")[2][:8]
        exit_code = "" if result.exit_code is None else result.exit_code
        row = f"{i:>3}  {name:<14} {result.outcome.value:<14} {exit_code:>4}  {stdout:<8} {result.duration_s:>5.2f}"
        print(f"{row}  {check}")

    stats = backend.stats()
    print(f"\n{len(results)} programs in {elapsed:.1f}s with at most {args.concurrency} sandboxes at once")
    print("faults injected: " + ", ".join(f"{k}={v}" for k, v in summary["faults"].items()))
    print("requests: " + ", ".join(f"{k}={v}" for k, v in sorted(summary["requests"].items())))
    print("backend: " + ", ".join(f"{k.removeprefix('sandbox/')}={v:g}" for k, v in stats.items()))
    print(f"fake server: alive={summary['alive']}, max alive={summary['max_alive']}")
    created, killed = int(stats["sandbox/created"]), int(stats["sandbox/killed"])
    print(f"sandboxes created: {created}, killed: {killed}")

    problems = []
    if created != killed or summary["created"] != summary["killed"] or summary["alive"] or stats["sandbox/alive"]:
        problems.append("sandboxes leaked")
    if created != summary["created"]:
        problems.append(f"the backend counted {created} sandboxes, the server made {summary['created']}")
    if summary["max_alive"] > args.concurrency:
        problems.append(f"{summary['max_alive']} sandboxes were alive at once, above the cap of {args.concurrency}")
    if wrong:
        problems.append(f"{wrong} programs got a wrong result")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
