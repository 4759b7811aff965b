"""The sandboxed reward: completions -> programs -> sandbox -> verdicts on the host -> rewards and metrics."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from codegrpo.checker import compare_output
from codegrpo.config import Checker, Extract, RewardKind
from codegrpo.explain import code_head, reason
from codegrpo.extraction import completion_text, extract_code
from codegrpo.monitor import HackTrend, flags_of, hack_metrics, joined, warn
from codegrpo.problems import IOTest, Problem
from codegrpo.programs import Language, build_program, humaneval_check
from codegrpo.sandbox.base import RunResult, SandboxBackend
from codegrpo.verdict import (
    Scored,
    Status,
    Verdict,
    decode_typed,
    envelope,
    got_expected,
    json_view,
    score_checks,
    score_io,
    score_values,
    strict_equal,
)  # fmt: skip


class Scorer:
    """Scores completions against problems through any sandbox backend. Identical programs run once."""

    def __init__(
        self,
        problems: Sequence[Problem],
        sandbox: SandboxBackend,
        language: Language,
        kind: RewardKind = RewardKind.binary,
        extract: Extract = Extract.first,
        timeout_s: float = 10.0,
        checker: Checker = Checker.tokens,
        tolerance: float = 1e-6,
        budget_s: float | None = None,
        monitor: bool = True,
    ) -> None:
        self.problems = {problem.id: problem for problem in problems}
        self.sandbox = sandbox
        self.language = language
        self.partial = kind == RewardKind.partial
        self.extract = extract
        self.timeout_s = timeout_s
        self.checker = checker
        self.tolerance = tolerance
        self.budget_s = budget_s  # input/output problems: all the tests of one completion together
        self.monitor = monitor
        self.shared_by = 1  # how many reward functions score each batch (hack_penalty beside code_reward)
        # Called with every verdict of each training reward call (codegrpo.sampling's pass rates).
        self.observers: list[Callable[[Sequence[Scored]], None]] = []
        self._shared: tuple[Any, asyncio.Future[list[Scored]], int] | None = None

    def problem(self, problem_id: str) -> Problem:
        try:
            return self.problems[problem_id]
        except KeyError:
            raise KeyError(f"unknown problem_id {problem_id!r}") from None

    async def score(self, problem_ids: Sequence[str], completions: Sequence[Any]) -> list[Scored]:
        """One Scored per completion, in order. Raises SandboxFatalError on a fatal sandbox fault."""
        codes = [extract_code(completion_text(c), self.language.fence_tags, self.extract) for c in completions]
        keys = list(zip(problem_ids, codes, strict=True))
        unique = [key for key in dict.fromkeys(keys) if key[1].strip()]
        programs = [
            build_program(self.problem(pid), code, self.language, self.timeout_s, self.budget_s) for pid, code in unique
        ]
        results = await self.sandbox.run_many(programs)
        by_key = {
            key: (self._judge(self.problem(key[0]), result), result.duration_s, self._flags(key, result))
            for key, result in zip(unique, results, strict=True)
        }
        no_code = (Verdict(Status.NO_CODE, 0.0), 0.0)
        return [Scored(pid, code, *by_key.get((pid, code), no_code)) for pid, code in keys]

    def _flags(self, key: tuple[str, str], result: RunResult) -> tuple[str, ...]:
        if not self.monitor:
            return ()
        try:
            return flags_of(self.problem(key[0]), key[1], result, self.language.name)
        except Exception:  # the monitor never costs a completion its verdict
            return ()

    async def score_shared(self, problem_ids: Sequence[str], completions: Sequence[Any]) -> list[Scored]:
        """``score``, shared by the reward functions of one TRL step (code_reward and hack_penalty run
        concurrently on the same completions): the batch runs once."""
        key = (tuple(problem_ids), tuple(map(completion_text, completions)))
        if self._shared is None or self._shared[0] != key:
            self._shared = (key, asyncio.ensure_future(self.score(problem_ids, completions)), 0)
        cached, task, users = self._shared
        users += 1
        self._shared = None if users >= self.shared_by else (cached, task, users)
        return await asyncio.shield(task)

    def _judge(self, problem: Problem, result: RunResult) -> Verdict:
        try:
            return self._verdict(problem, result)
        except Exception as error:  # the last line: judging one completion fails that completion alone
            return Verdict(Status.ERROR, 0.0, f"the verdict could not be computed: {type(error).__name__}")

    def _verdict(self, problem: Problem, result: RunResult) -> Verdict:
        if problem.form == "stdio":
            return score_io(result, len(problem.tests), lambda i, run: self._stdio(problem.tests[i], run), self.partial)
        if problem.form == "call":
            return score_io(result, len(problem.tests), lambda i, run: _call(problem.tests[i], run), self.partial)
        python = self.language.name == "python"
        checks = problem.form == "humaneval" and python
        early, value = envelope(result, (decode_typed if checks else json_view) if python else None)
        if early is not None:
            return early
        if checks:
            return score_checks(value, humaneval_check(problem).expected, self.partial)
        return score_values(value, json.loads(problem.expected), self.partial)

    def _stdio(self, test: IOTest, run: RunResult) -> tuple[Status, str] | None:
        difference = compare_output(run.stdout, test.output, self.checker, self.tolerance)
        return None if difference is None else (Status.FAILED, difference)


def _call(test: IOTest, run: RunResult) -> tuple[Status, str] | None:
    """A call-form test: the harness's report of the function's value, against the test's output (strict JSON)."""
    early, value = envelope(run)
    if early is not None:
        return early.status, early.detail
    expected = json.loads(test.output)
    return None if strict_equal(value, expected) else (Status.FAILED, got_expected(value, expected))


def batch_metrics(scored: Sequence[Scored]) -> dict[str, float]:
    """Pass rate, counts per status and sandbox latency for one reward call."""
    counts = Counter(s.verdict.status for s in scored)
    metrics = {f"status/{status.value}": float(counts[status]) for status in Status}
    metrics["pass_rate"] = counts[Status.PASSED] / len(scored) if scored else 0.0
    latencies = sorted(s.latency_s for s in scored if s.latency_s > 0)
    if latencies:
        metrics["sandbox/latency_p50_s"] = statistics.median(latencies)
        metrics["sandbox/latency_p95_s"] = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    return metrics


def make_code_reward(scorer: Scorer) -> Callable[..., Any]:
    """The TRL reward function. Async, so TRL runs it on its event loop; named so TRL logs
    ``rewards/code_reward/mean``. Infra failures return None, which TRL leaves out of the update."""

    trend = HackTrend()

    async def code_reward(
        completions: list[Any],
        problem_id: list[str],
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list], None] | None = None,
        **_: Any,
    ) -> list[float | None]:
        started = time.monotonic()
        scored = await scorer.score_shared(problem_id, completions)
        for observe in scorer.observers:
            observe(scored)
        hacks = hack_metrics([s.flags for s in scored])
        if (message := trend.update(hacks["hacks/any"])) is not None:
            warn(message)
        if log_metric is not None:
            metrics = batch_metrics(scored)
            metrics["sandbox/batch_s"] = time.monotonic() - started
            metrics.update(scorer.sandbox.stats())
            metrics.update(hacks)
            for name, value in metrics.items():
                log_metric(name, value)
        if log_extra is not None:
            # Columns of the completions table (parquet and W&B): which problem, why it failed
            # (exception, or got vs expected), and the code that was scored.
            log_extra("problem_id", [s.problem_id for s in scored])
            log_extra("status", [s.verdict.status.value for s in scored])
            log_extra("error", [reason(s) for s in scored])  # "" when it passed
            log_extra("code", [code_head(s.code) for s in scored])
            log_extra("flags", [joined(s.flags) for s in scored])  # "" when the monitor saw nothing
        return [s.verdict.reward for s in scored]

    return code_reward


HACK_PENALTY = "hack_penalty"


def make_hack_penalty(scorer: Scorer) -> Callable[..., Any]:
    """The opt-in penalty ``reward.functions=[code_reward,hack_penalty]``: -1.0 for a completion the
    monitor flagged, 0.0 for a clean one (scaled by its ``reward.weights`` entry), None where the sandbox
    failed. It scores the same batch as code_reward, which runs once (Scorer.score_shared)."""
    scorer.shared_by += 1

    async def hack_penalty(completions: list[Any], problem_id: list[str], **_: Any) -> list[float | None]:
        scored = await scorer.score_shared(problem_id, completions)
        return [None if s.verdict.reward is None else -1.0 if s.flags else 0.0 for s in scored]

    return hack_penalty


async def score_all(scorer: Scorer, pairs: Sequence[tuple[str, str]], batch_size: int) -> list[Scored]:
    """Score (problem_id, completion) pairs in order, in batches, with progress on stderr after each."""
    scored: list[Scored] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        scored += await scorer.score([p for p, _ in batch], [c for _, c in batch])
        print(f"scored {len(scored)}/{len(pairs)}", file=sys.stderr, flush=True)
    return scored


def summary(scored: Sequence[Scored]) -> str:
    """One line: how many, the mean reward, and the count of each status."""
    counts = Counter(s.verdict.status.value for s in scored)
    rewards = [s.verdict.reward for s in scored if s.verdict.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    parts = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
    return f"{len(scored)} completions: mean reward {mean:.3f}; {parts}"
