"""MemoryBackend: the in-memory backend for tests answers as the real backends do (per-input runs, digests as
runs arrive, a failed handler as SANDBOX_ERROR), records what it was asked, and its documented example runs."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap

import pytest

import codegrpo
from codegrpo import MemoryBackend, Outcome, Program, RunResult
from codegrpo.errors import SandboxFatalError
from codegrpo.resources import PROJECT_ROOT


def echo(program: Program, stdin: str | None) -> RunResult:
    """Prints its input back (its source without one), in 0.25 s."""
    return RunResult(Outcome.EXITED, 0, stdout=program.source if stdin is None else stdin, duration_s=0.25)


def test_a_program_without_inputs_is_one_run_answered_with_no_stdin():
    asked: list[tuple[Program, str | None]] = []

    def handler(program: Program, stdin: str | None) -> RunResult:
        asked.append((program, stdin))
        return RunResult(Outcome.EXITED, 3, "out", "err", 0.5)

    sandbox = MemoryBackend(handler)
    program = Program("print(1)")
    assert asyncio.run(sandbox.run_many([program])) == [RunResult(Outcome.EXITED, 3, "out", "err", 0.5)]
    assert asked == [(program, None)] and sandbox.programs == [program]


def test_a_program_with_inputs_runs_once_per_input_in_order_each_kept_as_it_arrives():
    kept: list[tuple[int, str]] = []

    def digest(index: int, run: RunResult) -> RunResult:
        kept.append((index, run.stdout))
        return RunResult(run.outcome, run.exit_code, f"judged {index}", duration_s=run.duration_s)

    program = Program("echo", inputs=("a\n", "b\n", "c\n"), digest=digest)
    [result] = asyncio.run(MemoryBackend(echo).run_many([program]))
    assert kept == [(0, "a\n"), (1, "b\n"), (2, "c\n")]
    # As the local backend returns it: EXITED, every run as its digest kept it, the runs' time together.
    assert (result.outcome, result.exit_code, result.duration_s) == (Outcome.EXITED, None, 0.75)
    assert [run.stdout for run in result.runs] == ["judged 0", "judged 1", "judged 2"]


def test_a_failing_run_ends_the_runs_there_when_the_program_asks_and_the_rest_come_back_skipped():
    """Program.failed (the binary reward's fail-fast): in index order, the first failing run is the lowest, so
    the later inputs are never asked; without it, every input is."""
    asked: list[str | None] = []

    def handler(program: Program, stdin: str | None) -> RunResult:
        asked.append(stdin)
        return RunResult(Outcome.EXITED, 1 if stdin == "b\n" else 0, stdout=stdin or "", duration_s=0.25)

    inputs = ("a\n", "b\n", "c\n", "d\n")
    stopping = Program("io", inputs=inputs, failed=lambda index, run: run.exit_code != 0)
    sandbox = MemoryBackend(handler)
    [result] = asyncio.run(sandbox.run_many([stopping]))
    assert asked == ["a\n", "b\n"]
    assert [run.outcome for run in result.runs] == [Outcome.EXITED, Outcome.EXITED, Outcome.SKIPPED, Outcome.SKIPPED]
    assert result.duration_s == 0.5 and sandbox.stats()["sandbox/skipped_runs"] == 2.0
    asked.clear()
    [every] = asyncio.run(sandbox.run_many([Program("io", inputs=inputs)]))
    assert asked == list(inputs) and Outcome.SKIPPED not in {run.outcome for run in every.runs}
    assert every.runs[:2] == result.runs[:2]  # the runs up to the first failing one are the same


def test_a_handler_that_raises_is_that_programs_sandbox_error_and_the_batch_goes_on():
    asked: list[str | None] = []

    def handler(program: Program, stdin: str | None) -> RunResult:
        asked.append(stdin)
        if stdin == "b\n" or program.source == "down":
            raise ConnectionError("the sandbox went away")
        return echo(program, stdin)

    kept: list[int] = []
    failing = Program("io", inputs=("a\n", "b\n", "c\n"), digest=lambda index, run: kept.append(index) or run)
    results = asyncio.run(MemoryBackend(handler).run_many([failing, Program("down"), Program("up")]))
    assert [r.outcome for r in results] == [Outcome.SANDBOX_ERROR, Outcome.SANDBOX_ERROR, Outcome.EXITED]
    assert results[0].error == "the handler raised ConnectionError('the sandbox went away')"
    assert results[0].runs == () and results[0].is_infra_failure and results[2].stdout == "up"
    assert asked == ["a\n", "b\n", None, None] and kept == [0]  # "c\n" never asked; the failed run never kept


def test_a_sandbox_error_answered_is_the_programs_result_and_is_never_kept():
    def handler(program: Program, stdin: str | None) -> RunResult:
        return RunResult(Outcome.SANDBOX_ERROR, error="no worker") if stdin == "b\n" else echo(program, stdin)

    kept: list[int] = []
    program = Program("io", inputs=("a\n", "b\n"), digest=lambda index, run: kept.append(index) or run)
    [result] = asyncio.run(MemoryBackend(handler).run_many([program]))
    assert result == RunResult(Outcome.SANDBOX_ERROR, error="no worker") and kept == [0]


def test_a_fatal_error_ends_the_batch_and_an_answer_that_is_no_run_result_is_a_type_error():
    def fatal(program: Program, stdin: str | None) -> RunResult:
        raise SandboxFatalError("the account is out of credit")

    with pytest.raises(SandboxFatalError, match="out of credit"):
        asyncio.run(MemoryBackend(fatal).run_many([Program("x")]))
    with pytest.raises(TypeError, match="handler returned str, not a RunResult"):
        asyncio.run(MemoryBackend(lambda program, stdin: "42\n").run_many([Program("x")]))


def test_an_async_handler_answers_the_programs_of_a_batch_concurrently():
    async def run() -> list[RunResult]:
        first_asked = asyncio.Event()

        async def handler(program: Program, stdin: str | None) -> RunResult:
            if program.source == "first":
                first_asked.set()
            else:  # answered only once the first program is being answered too
                await asyncio.wait_for(first_asked.wait(), 5)
            return echo(program, stdin)

        return await MemoryBackend(handler).run_many([Program("second"), Program("first")])

    assert [result.stdout for result in asyncio.run(run())] == ["second", "first"]


def test_opening_it_asks_the_handler_nothing_and_stats_count_as_the_local_sandboxs():
    def handler(program: Program, stdin: str | None) -> RunResult:
        if program.source == "print(6 * 7)":
            raise AssertionError("the trivial check program reached the handler")
        return RunResult(Outcome.TIMEOUT) if program.source == "loop" else echo(program, stdin)

    with MemoryBackend(handler) as sandbox:
        assert sandbox.programs == [] and sandbox.stats() == {}
        asyncio.run(sandbox.run_many([Program("a"), Program("loop"), Program("b", inputs=("1\n",))]))
    assert sandbox.stats() == {"sandbox/runs": 3.0, "sandbox/exited": 2.0, "sandbox/timeout": 1.0}


def test_it_is_exported_with_the_interface_and_the_sandbox_configs():
    from codegrpo import sandbox
    from codegrpo.config.sandbox import SANDBOX_KINDS, SandboxConfig
    from codegrpo.sandbox import base, memory

    assert codegrpo.MemoryBackend is sandbox.MemoryBackend is memory.MemoryBackend
    assert (codegrpo.SandboxBackend, codegrpo.Program, codegrpo.RunResult, codegrpo.Outcome) == (
        base.SandboxBackend,
        base.Program,
        base.RunResult,
        base.Outcome,
    )
    configs = [SandboxConfig, *SANDBOX_KINDS.values()]
    assert [getattr(codegrpo, config.__name__) for config in configs] == configs


def test_its_docstrings_example_runs():
    exec(textwrap.dedent(MemoryBackend.__doc__.split("Example::")[1]), {})


def test_the_documented_example_prints_what_it_says():
    doc = (PROJECT_ROOT / "docs" / "reward-design.md").read_text()
    [example] = re.findall(r"```python\n(.*?)```\n", doc[doc.index("## Testing your own reward code") :], re.DOTALL)
    done = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == re.findall(r"^print\(.*\)  # (.+)$", example, re.MULTILINE)
