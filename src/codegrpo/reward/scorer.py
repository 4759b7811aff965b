"""The sandboxed reward: completions -> programs -> sandbox -> verdicts on the host -> rewards and metrics."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from codegrpo.config.choices import Checker, Extract, Form, LanguageName, RewardKind
from codegrpo.config.reward import RewardConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward import metric_names as keys
from codegrpo.reward.checker import compare_output
from codegrpo.reward.extraction import completion_text, extract
from codegrpo.reward.metric_names import HACK_PENALTY
from codegrpo.reward.monitor import CATEGORIES, audit_flags, flags_of, run_flags, without_audit_lines
from codegrpo.reward.programs import Language, build_program, get_language, humaneval_check
from codegrpo.reward.reports import NO_CODE, ProgramReport, TestReports
from codegrpo.reward.verdict import (
    Failure,
    Scored,
    Status,
    Verdict,
    decode_typed,
    envelope,
    failure_of,
    got_expected,
    json_view,
    python_equal,
    score_checks,
    score_io,
    score_values,
)
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend


class Scorer:
    """Scores completions against problems through any sandbox backend. Identical programs run once."""

    def __init__(
        self,
        problems: Sequence[Problem],
        sandbox: SandboxBackend,
        language: Language,
        kind: RewardKind = RewardKind.binary,
        *,
        extract: Extract = Extract.first,
        timeout_s: float = 10.0,
        checker: Checker = Checker.tokens,
        tolerance: float = 1e-6,
        budget_s: float | None = None,
        fail_fast: bool = True,
    ) -> None:
        self.problems = {problem.id: problem for problem in problems}
        self.sandbox = sandbox
        self.language = language
        self.kind = RewardKind(kind)  # a script may name it
        self.partial = self.kind is RewardKind.partial
        self.extract = extract
        self.timeout_s = timeout_s
        self.checker = checker
        self.tolerance = tolerance
        self.budget_s = budget_s  # input/output problems: all the tests of one completion together
        # Binary reward, input/output problems: a program's runs stop at its first failing test (by index),
        # the verdict unchanged (docs/reward-design.md); partial reward and reports run every test.
        self.fail_fast = fail_fast

    @property
    def stops_early(self) -> bool:
        """Whether ``score`` stops a program's runs at its first failing test: fail-fast, binary reward."""
        return self.fail_fast and not self.partial

    def problem(self, problem_id: str) -> Problem:
        try:
            return self.problems[problem_id]
        except KeyError:
            raise KeyError(f"unknown problem_id {problem_id!r}") from None

    async def score(self, problem_ids: Sequence[str], completions: Sequence[Any]) -> list[Scored]:
        """One Scored per completion, in order. Raises SandboxFatalError on a fatal sandbox fault."""
        found = [extract(completion_text(c), self.language.fence_tags, self.extract) for c in completions]
        keys = [(pid, extraction.code) for pid, extraction in zip(problem_ids, found, strict=True)]
        unique = [key for key in dict.fromkeys(keys) if key[1].strip()]
        judged = [_Judged(self, self.problem(pid)) for pid, _ in unique]
        programs = [
            self._program(j.problem, code, digest=j.digest, failed=j.failed if self.stops_early else None)
            for j, (_, code) in zip(judged, unique, strict=True)
        ]
        results = await self.sandbox.run_many(programs)
        by_key = {
            key: (j.verdict(result), result.duration_s, self._flags(j, key[1], result))
            for key, j, result in zip(unique, judged, results, strict=True)
        }
        # No code: the verdict says what extraction expected and did not find (never a run on prose).
        return [
            Scored(pid, code, *by_key.get((pid, code), (Verdict(Status.NO_CODE, 0.0, extraction.reason), 0.0)))
            for (pid, code), extraction in zip(keys, found, strict=True)
        ]

    async def reports(self, problems: Sequence[Problem], codes: Sequence[str]) -> list[ProgramReport]:
        """Each code run on its own problem's tests (problems, not ids: the multi-turn rollout's public
        problems are not this scorer's), judged as ``score`` judges, with a report of each test's run (what it
        printed or returned, and why it failed). Identical (problem, code) pairs run once; a code without text
        or a problem without tests runs nothing (NO_CODE)."""
        keys = [(problem.id, code) for problem, code in zip(problems, codes, strict=True)]
        by_key = dict(zip(keys, problems, strict=True))
        unique = [key for key in by_key if key[1].strip() and by_key[key].tests]
        reporting = [
            TestReports(by_key[key], functools.partial(self.judge_run, by_key[key]), self.partial) for key in unique
        ]
        programs = [
            self._program(r.problem, code, digest=r.digest) for r, (_, code) in zip(reporting, unique, strict=True)
        ]
        results = await self.sandbox.run_many(programs) if programs else []
        judged = {key: r.report(result) for key, r, result in zip(unique, reporting, results, strict=True)}
        return [judged.get(key, NO_CODE) for key in keys]

    def _program(self, problem: Problem, code: str, **fields: Any) -> Program:
        return dataclasses.replace(build_program(problem, code, self.language, self.timeout_s, self.budget_s), **fields)

    def _flags(self, judged: _Judged, code: str, result: RunResult) -> tuple[str, ...]:
        try:
            judged.fill(result)
            static = flags_of(judged.problem, code, None, self.language.name)
            return tuple(category for category in CATEGORIES if category in judged.evidence or category in static)
        except Exception:  # the monitor never costs a completion its verdict
            return ()

    def judge_run(self, problem: Problem, index: int, run: RunResult) -> Verdict:
        """Run ``index`` of a program for ``problem``, judged on its own: for the input/output forms, test
        ``index``'s outcome (PASSED, or how it failed); for the others the whole verdict. Total: a verdict
        that cannot be computed is that completion's ERROR."""
        try:
            if problem.form is Form.stdio:
                return _as_verdict(failure_of(run, lambda run: self._stdio(problem.tests[index], run)))
            if problem.form is Form.call:
                return _as_verdict(failure_of(run, lambda run: _call(problem.tests[index], run)))
            return self._single(problem, run)
        except Exception as error:  # the last line: judging one completion fails that completion alone
            return Verdict(Status.ERROR, 0.0, f"the verdict could not be computed: {type(error).__name__}")

    def _single(self, problem: Problem, result: RunResult) -> Verdict:
        harness = self.language.has_harness
        checks = problem.form is Form.humaneval and harness
        early, value = envelope(result, (decode_typed if checks else json_view) if harness else None)
        if early is not None:
            return early
        if checks:
            return score_checks(value, humaneval_check(problem).expected, self.partial)
        return score_values(value, json.loads(problem.expected), self.partial)

    def _stdio(self, test: IOTest, run: RunResult) -> Failure | None:
        difference = compare_output(run.stdout, test.output, self.checker, self.tolerance)
        return None if difference is None else (Status.FAILED, difference)


# What a program's runs keep of their output once judged (for people: explain, tests), all runs together:
# the verdict and the monitor's evidence are taken from each run as it arrives, so the host holds a
# program's output one run at a time, whatever its number of tests (docs/security.md).
KEPT_OUTPUT_CHARS = 1 << 14


def make_scorer(
    problems: Sequence[Problem],
    sandbox: SandboxBackend,
    language: LanguageName,
    reward: RewardConfig,
    timeout_s: float,
) -> Scorer:
    """The Scorer of ``reward``'s settings, the one place both callers make one: build.scorer (a run's config)
    and CodeReward (its arguments)."""
    return Scorer(
        problems,
        sandbox,
        get_language(language),
        reward.kind,
        extract=reward.extract,
        timeout_s=timeout_s,
        checker=reward.checker,
        tolerance=reward.float_tolerance,
        budget_s=reward.time_budget_s,
        # hack_penalty pays on the monitor's evidence, which a run that fail-fast skips never gives: with it,
        # every test runs, so the reward is the same either way.
        fail_fast=reward.fail_fast and HACK_PENALTY not in reward.functions,
    )


class _Judged:
    """One program's runs, judged as the backend receives them (``digest``): each run's verdict and the
    monitor's evidence are kept, its output only within KEPT_OUTPUT_CHARS."""

    def __init__(self, scorer: Scorer, problem: Problem) -> None:
        self.scorer = scorer
        self.problem = problem
        self.verdicts: dict[int, Verdict] = {}
        self.evidence: set[str] = set()
        self.room = KEPT_OUTPUT_CHARS

    def digest(self, index: int, run: RunResult) -> RunResult:
        with contextlib.suppress(Exception):  # one unreadable run adds nothing; the others still count
            self.evidence |= audit_flags(run) | run_flags(run, self.problem.form, self.scorer.language.name)
        run = without_audit_lines(run)  # read: from here on its stderr is the program's own
        self.verdicts[index] = self.scorer.judge_run(self.problem, index, run)
        stdout = run.stdout if len(run.stdout) <= self.room else ""
        stderr = run.stderr[-max(0, self.room - len(stdout)) :] if self.room > len(stdout) else ""
        self.room -= len(stdout) + len(stderr)
        return dataclasses.replace(run, stdout=stdout, stderr=stderr)

    def failed(self, index: int, _: RunResult) -> bool:
        """Whether test ``index``'s run, just digested, failed (``Program.failed``: fail-fast)."""
        verdict = self.verdicts.get(index)
        return verdict is not None and verdict.status is not Status.PASSED

    def fill(self, result: RunResult) -> None:
        """Judge the runs a backend returned without digesting them (a backend of a user's own)."""
        for index, run in enumerate(result.runs or (result,)):
            if index not in self.verdicts and run.outcome not in (Outcome.SANDBOX_ERROR, Outcome.SKIPPED):
                self.digest(index, run)

    def verdict(self, result: RunResult) -> Verdict:
        self.fill(result)
        if not self.problem.form.per_test:
            if result.outcome is Outcome.SANDBOX_ERROR:
                return Verdict(Status.INFRA, None, result.error)
            return self.verdicts[0]
        return score_io(
            result, len(self.problem.tests), lambda index, _: _failure(self.verdicts[index]), self.scorer.partial
        )


def _as_verdict(failure: Failure | None) -> Verdict:
    return Verdict(Status.PASSED, 1.0) if failure is None else Verdict(failure[0], 0.0, failure[1])


def _failure(verdict: Verdict) -> Failure | None:
    return None if verdict.status is Status.PASSED else (verdict.status, verdict.detail)


def _call(test: IOTest, run: RunResult) -> Failure | None:
    """A call-form test: the harness's report of the function's value, against the test's output (Python's ==,
    as the datasets' own graders compare it)."""
    early, value = envelope(run)
    if early is not None:
        return early.status, early.detail
    expected = json.loads(test.output)
    return None if python_equal(value, expected) else (Status.FAILED, got_expected(value, expected))


def batch_metrics(scored: Sequence[Scored]) -> dict[str, float]:
    """Pass rate, counts per status and sandbox latency for one reward call."""
    counts = Counter(s.verdict.status for s in scored)
    metrics = {keys.status(status): float(counts[status]) for status in Status}
    metrics[keys.PASS_RATE] = counts[Status.PASSED] / len(scored) if scored else 0.0
    latencies = sorted(s.latency_s for s in scored if s.latency_s > 0)
    if latencies:
        metrics[keys.LATENCY_P50_S] = statistics.median(latencies)
        metrics[keys.LATENCY_P95_S] = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    return metrics


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
