"""The backend interface's own types, without a sandbox: runtimes, programs, and the trivial check on opening."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox.base import RUNTIMES, TRIVIAL, Outcome, Program, RunResult, Runtime, SandboxBackend


class Prints(SandboxBackend):
    """Runs nothing: every program "prints" ``stdout``; the programs it was given are kept."""

    def __init__(self, stdout: str = "42\n") -> None:
        self.stdout = stdout
        self.programs: list[Program] = []

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        self.programs += programs
        return [RunResult(Outcome.EXITED, 0, self.stdout) for _ in programs]


def test_runtimes_keep_their_config_names_and_say_how_their_programs_run():
    assert [str(runtime) for runtime in Runtime] == ["python", "node"]
    assert set(RUNTIMES) == set(TRIVIAL) == set(Runtime)
    assert Runtime.python.runs_warm and not Runtime.node.runs_warm
    assert (Runtime.python.suffix, Runtime.node.suffix) == (".py", ".js")


def test_a_program_takes_a_runtime_or_its_name():
    named = Program("console.log(1)", "node", filename="solution.js")  # the name a user passes
    assert named == Program("console.log(1)", Runtime.node, filename="solution.js")
    assert named.runtime is Runtime.node and named.argv == ("node", "/tmp/solution.js") and not named.runs_warm
    assert Program("print(1)").runtime is Runtime.python and Program("print(1)").runs_warm
    assert not Program("print(1)", command=("python3", "-c", "print(1)")).runs_warm  # the caller's argv
    with pytest.raises(ValueError, match="cobol"):
        Program("", "cobol")


def test_opening_runs_a_trivial_program_of_each_runtime_in_a_file_of_its_own():
    backend = Prints()
    backend.runtimes = (Runtime.python, "node")  # a name set by hand works too
    with backend:
        pass
    assert [(p.runtime, p.filename, p.source) for p in backend.programs] == [
        (Runtime.python, "check.py", TRIVIAL[Runtime.python]),
        (Runtime.node, "check.js", TRIVIAL[Runtime.node]),
    ]
    failing = Prints("41\n")
    failing.runtimes = (Runtime.node,)
    with pytest.raises(SandboxFatalError, match="the node sandbox cannot run a trivial program"):
        asyncio.run(failing.check())
