"""Per-test reports: a program run on a problem's tests, each test's run judged on the host and described for
a person or a model (what it printed or returned, and why it failed). ``Scorer.reports`` makes them; the
multi-turn rollout (codegrpo.rollout.feedback) shows them to the model, so nothing outside reward/ reads a
verdict's internals. Reports are for input/output problems; a problem without tests has none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from codegrpo.config.choices import Form
from codegrpo.config.values import MAX_SHOWN_CHARS
from codegrpo.data.problems import Problem
from codegrpo.reward.monitor import without_audit_lines
from codegrpo.reward.verdict import Status, Verdict, clean_text, envelope, score_io, show_value
from codegrpo.sandbox.base import Outcome, RunResult


@dataclass(frozen=True)
class RunReport:
    """One test's run, judged on the host."""

    status: Status
    detail: str  # the verdict's reason; for a wrong answer it quotes the expected output
    got: str  # what the code printed (stdin/stdout) or returned (call form), cut to MAX_SHOWN_CHARS
    error: str  # why it failed when it did not finish cleanly: the end of stderr, or the harness's report


@dataclass(frozen=True)
class ProgramReport:
    """A code's verdict on a problem's tests and each test's run (None: it did not run)."""

    verdict: Verdict
    runs: tuple[RunReport | None, ...] = ()

    @property
    def passed(self) -> bool:
        return self.verdict.status is Status.PASSED

    @property
    def fault(self) -> bool:
        """The sandbox failed: the code's fault is unknown."""
        return self.verdict.status is Status.INFRA

    @property
    def no_code(self) -> bool:
        return self.verdict.status is Status.NO_CODE


NO_CODE = ProgramReport(Verdict(Status.NO_CODE, 0.0))


def _got(problem: Problem, run: RunResult) -> str:
    if problem.form is Form.call:
        early, value = envelope(run)
        return "" if early is not None else show_value(value, MAX_SHOWN_CHARS)
    return run.stdout[:MAX_SHOWN_CHARS]


class TestReports:
    """A program's runs on a problem's tests, judged by ``judge(index, run)`` as the sandbox returns each (its
    ``digest``): the host keeps a cut copy of what each showed, never the whole output."""

    __test__ = False  # not a pytest class

    def __init__(self, problem: Problem, judge: Callable[[int, RunResult], Verdict], partial: bool) -> None:
        self.problem, self.judge, self.partial = problem, judge, partial
        self.runs: dict[int, RunReport] = {}

    def digest(self, index: int, run: RunResult) -> RunResult:
        run = without_audit_lines(run)  # the monitor's tokens are never shown
        verdict = self.judge(index, run)
        try:
            got = _got(self.problem, run)
        except Exception:  # what a run shows never costs it its verdict
            got = ""
        stderr = run.stderr.strip()
        error = verdict.detail if self.problem.form is Form.call or not stderr else stderr[-MAX_SHOWN_CHARS:]
        self.runs[index] = RunReport(verdict.status, verdict.detail, clean_text(got), clean_text(error))
        return dataclasses.replace(run, stdout="", stderr="")

    def report(self, result: RunResult) -> ProgramReport:
        for index, run in enumerate(result.runs):  # a backend that does not digest (a user's own)
            if index not in self.runs and run.outcome not in (Outcome.SANDBOX_ERROR, Outcome.SKIPPED):
                self.digest(index, run)
        total = len(self.problem.tests)

        def failure(index: int, _: RunResult) -> tuple[Status, str] | None:
            run = self.runs.get(index)
            if run is None:
                return Status.ERROR, "did not run"
            return None if run.status is Status.PASSED else (run.status, run.detail)

        verdict = score_io(result, total, failure, self.partial)
        return ProgramReport(verdict, tuple(self.runs.get(index) for index in range(total)))
