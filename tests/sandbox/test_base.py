"""The backend interface's own types, without a sandbox: runtimes, programs, and the trivial check on opening."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from codegrpo.errors import SandboxFatalError
from codegrpo.sandbox.base import (
    RUNTIMES,
    TRIVIAL,
    Outcome,
    Program,
    RunResult,
    Runtime,
    SandboxBackend,
    trivial_program,
)

# What the trivial programs answer: the harness's report (Python), node's print.
ANSWERS = {Runtime.python: '{"status": "ok", "value": 42}\n', Runtime.node: "42\n"}


class Prints(SandboxBackend):
    """Runs nothing: every program "prints" what ``answers`` holds for its runtime; the programs are kept."""

    def __init__(self, **answers: str) -> None:
        self.answers = {Runtime(name): text for name, text in answers.items()}
        self.programs: list[Program] = []

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        self.programs += programs
        return [RunResult(Outcome.EXITED, 0, self.answers.get(p.runtime, ANSWERS[p.runtime])) for p in programs]


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
        (Runtime.python, "check.py", trivial_program(Runtime.python).source),
        (Runtime.node, "check.js", TRIVIAL[Runtime.node]),
    ]
    assert TRIVIAL[Runtime.python] in backend.programs[0].source and "\ndef main(" in backend.programs[0].source
    failing = Prints(node="41\n")
    failing.runtimes = (Runtime.node,)
    with pytest.raises(SandboxFatalError, match="the node sandbox cannot run a trivial program"):
        asyncio.run(failing.check())


@pytest.mark.parametrize(
    ("printed", "why"),
    [
        ("42\n", "no report from the harness"),  # a bare print is no longer the Python check's answer
        ('{"status": "ok", "value": 41}\n', "the harness answered"),
        ('{"status": "refused", "error": "PermissionError: no CAP_SETUID"}\n', "refuses to run completions there"),
    ],
)
def test_the_python_check_reads_the_harness_report_and_a_refusal_stops_the_start(printed, why):
    """A sandbox whose harness refuses every completion (item 11 of issue 52: a root that cannot become
    nobody) would score every reward None: the start-up check stops it, one line, instead."""
    backend = Prints(python=printed)
    backend.runtimes = (Runtime.python,)
    with pytest.raises(SandboxFatalError, match=why) as stopped:
        asyncio.run(backend.check())
    assert "\n" not in str(stopped.value)
