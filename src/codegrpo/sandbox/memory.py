"""MemoryBackend: a sandbox backend for tests, answered by a function (httpx's MockTransport, for sandboxes)."""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox.base import SKIPPED_RUN, Outcome, Program, RunResult, SandboxBackend, program_result

# handler(program, stdin) -> the run's result, or an awaitable of it: stdin is None for a program without inputs.
Handler = Callable[[Program, str | None], RunResult | Awaitable[RunResult]]


class MemoryBackend(SandboxBackend):
    """A SandboxBackend for tests, answered by ``handler``: it executes nothing and isolates nothing.

    It is for testing code that runs programs through a sandbox (a reward function, a Scorer, a rollout)
    without bubblewrap or a cloud account, as httpx's ``MockTransport`` is for code that sends requests:
    never for judging model-written code, as the handler decides every result.

    ``handler(program, stdin)`` answers one run with its ``RunResult`` (a plain function or an ``async``
    one): a program without ``inputs`` is one run, with ``stdin=None``; a program with inputs is one run
    per input, in order, with that input's text. The rest is what the real backends do:

    - each run goes through ``program.kept(index, run)`` as it is answered (the Scorer judges it there);
    - the runs go in index order, and once ``program.failed`` says a run failed the later inputs are not
      asked: those runs come back SKIPPED (the Scorer's binary reward fails fast so);
    - a program with inputs gets one result, outcome EXITED, its runs in ``runs`` and their durations
      added up in ``duration_s``; a program without inputs gets its one run, as kept;
    - a handler that raises, or answers ``Outcome.SANDBOX_ERROR``, is a failed sandbox: that program's
      result is SANDBOX_ERROR (the exception in ``error``) and its later inputs are not asked; the batch
      goes on. A ``SandboxFatalError`` it raises ends the batch, as a fatal fault does.

    ``programs`` lists every program it was asked to run, in order; ``stats()`` counts them as the local
    sandbox does (``sandbox/runs``, ``sandbox/<outcome>``). The programs of one ``run_many`` are answered
    concurrently (an async handler's awaits interleave). Opening it checks nothing: there is no sandbox.

    Example::

        import asyncio
        from codegrpo import MemoryBackend, Outcome, Program, RunResult

        def handler(program, stdin):
            return RunResult(Outcome.EXITED, 0, stdout=stdin.upper(), duration_s=0.01)

        sandbox = MemoryBackend(handler)
        [result] = asyncio.run(sandbox.run_many([Program("print(input().upper())", inputs=("a\\n", "b\\n"))]))
        assert [run.stdout for run in result.runs] == ["A\\n", "B\\n"]
        assert sandbox.programs[0].inputs == ("a\\n", "b\\n")
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.programs: list[Program] = []
        self._counts: Counter[str] = Counter()

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        self.programs.extend(programs)
        return list(await asyncio.gather(*map(self._run, programs)))

    async def _run(self, program: Program) -> RunResult:
        runs: list[RunResult] = []
        duration_s = 0.0
        inputs = (None,) if program.inputs is None else program.inputs
        for index, stdin in enumerate(inputs):
            run = await self._answer(program, stdin)
            if run.outcome is Outcome.SANDBOX_ERROR:  # the program's result is unknown, as a failed worker's
                result = run
                break
            duration_s += run.duration_s
            runs.append(program.kept(index, run))
            if program.inputs is not None and program.fails_at(index, runs[-1]):
                # In index order, the first failing run is the lowest: the rest are not asked.
                if left := len(inputs) - len(runs):
                    self._counts["skipped_runs"] += left
                runs += [SKIPPED_RUN] * left
                result = program_result(program, runs, duration_s)
                break
        else:
            result = program_result(program, runs, duration_s)
        self._counts["runs"] += 1
        self._counts[result.outcome.value] += 1
        return result

    async def _answer(self, program: Program, stdin: str | None) -> RunResult:
        try:
            answer = self.handler(program, stdin)
            if inspect.isawaitable(answer):
                answer = await answer
        except SandboxFatalError:
            raise
        except Exception as error:  # a transient fault of the sandbox it stands for: this program's alone
            return RunResult(Outcome.SANDBOX_ERROR, error=f"the handler raised {error!r}")
        if not isinstance(answer, RunResult):  # a mistake in the test, not a fault it simulates
            raise TypeError(f"MemoryBackend's handler returned {type(answer).__name__}, not a RunResult")
        return answer

    async def check(self) -> None:
        """Nothing to check: no sandbox runs anything (the handler is never asked the trivial program)."""

    def stats(self) -> dict[str, float]:
        return {f"sandbox/{name}": float(count) for name, count in self._counts.items()}
