"""A sandbox whose root cannot become nobody (issue 52, item 11): a container or microVM started with every
capability dropped runs programs as the machine's root without CAP_SETUID. The harness refuses to run a
completion as root (red team 6), and that refusal is the environment's: the reward is None, never 0, and the
start-up check, which runs its Python program through the same harness, stops such a sandbox at start.

The local sandbox never runs programs as the machine's root (sandbox.uid=0 is refused) and the Superserve
fake's VM root is a user namespace's, so the condition is made here for real: programs run on this machine as
root under ``setpriv`` with every capability dropped. Only the tests' own programs run there."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from codegrpo.data.problems import IOTest, Problem
from codegrpo.errors import SandboxFatalError
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend, program_result
from tests.helpers.run_if import SYSTEM_PYTHON, run_if
from tests.helpers.sandbox import PROBLEMS

pytestmark = [run_if(root=True, system_python=True), pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv")]

NO_CAPABILITIES = ("--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all")


class HostRoot(SandboxBackend):
    """Each program as this machine's root, as a VM's exec runs it; ``capabilities=False``: with none."""

    def __init__(self, capabilities: bool) -> None:
        self.prefix = [] if capabilities else [str(shutil.which("setpriv")), *NO_CAPABILITIES, "--"]

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        return [self._run(program) for program in programs]

    def _run(self, program: Program) -> RunResult:
        if program.inputs is None:
            return self._once(program, None)
        runs = [program.kept(index, self._once(program, stdin)) for index, stdin in enumerate(program.inputs)]
        return program_result(program, runs, 0.0)

    def _once(self, program: Program, stdin: str | None) -> RunResult:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, program.filename)
            path.write_text(program.source)
            path.chmod(0o444)
            done = subprocess.run(
                [*self.prefix, SYSTEM_PYTHON, "-I", str(path)],
                capture_output=True,
                text=True,
                **({"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}),
                timeout=program.timeout_s,
            )
        return RunResult(Outcome.EXITED, done.returncode, done.stdout, done.stderr)


def _scored(backend: SandboxBackend, completion: str):
    scorer = Scorer(list(PROBLEMS.values()), backend, get_language("python"), "binary", timeout_s=10.0)
    (scored,) = asyncio.run(scorer.score(["is_prime"], [completion]))
    return scored.verdict


def test_a_correct_completion_the_harness_refuses_to_run_as_root_is_none_not_zero():
    """It read `error`, reward 0, "nobody cannot read this Python's library" (a 0755 directory): 64 of 64
    correct completions scored 0 and trained as wrong."""
    verdict = _scored(HostRoot(capabilities=False), f"```python\n{PROBLEMS['is_prime'].reference}```")
    assert verdict.status is Status.INFRA and verdict.reward is None, verdict
    assert "CAP_SETUID" in verdict.detail and "cannot read" not in verdict.detail


# The call form (LeetCode, TACO, DeepCoder): one harness process per test, each refused on its own.
DOUBLE = Problem(
    "double",
    "Double it.",
    "",
    "call",
    fn_name="double",
    tests=tuple(IOTest(json.dumps([n]), json.dumps(2 * n)) for n in range(3)),
)
DOUBLE_CODE = "def double(x):\n    return 2 * x\n"


@pytest.mark.parametrize("fail_fast", [True, False])
@pytest.mark.parametrize("reward", ["binary", "partial"])
def test_a_correct_call_form_completion_the_harness_refuses_is_none_not_zero(fail_fast, reward):
    """Red team (issue 52, item 11's fix): each test's run read refused, the test INFRA, but the program's
    verdict was the first failing test's status with reward 0.0: status infra, reward 0, trained as wrong
    (and the multi-turn rollout, reading the status, left the episode out)."""
    scorer = Scorer(
        [DOUBLE], HostRoot(capabilities=False), get_language("python"), reward, timeout_s=10.0, fail_fast=fail_fast
    )
    (scored,) = asyncio.run(scorer.score(["double"], [f"```python\n{DOUBLE_CODE}```"]))
    assert scored.verdict.status is Status.INFRA and scored.verdict.reward is None, scored.verdict
    assert "CAP_SETUID" in scored.verdict.detail
    (report,) = asyncio.run(scorer.reports([DOUBLE], [DOUBLE_CODE]))  # the multi-turn rollout's feedback
    assert report.fault and report.verdict.reward is None, report.verdict
    where = HostRoot(capabilities=True)
    scorer = Scorer([DOUBLE], where, get_language("python"), reward, timeout_s=10.0, fail_fast=fail_fast)
    (scored,) = asyncio.run(scorer.score(["double"], [f"```python\n{DOUBLE_CODE}```"]))
    assert scored.verdict.status is Status.PASSED and scored.verdict.reward == 1.0, scored.verdict


def test_the_same_completion_passes_where_root_can_become_nobody():
    verdict = _scored(HostRoot(capabilities=True), f"```python\n{PROBLEMS['is_prime'].reference}```")
    assert verdict.status is Status.PASSED and verdict.reward == 1.0, verdict


FORGERIES = [
    # The refusal's own words, raised by the completion after the harness left root.
    'raise PermissionError("the completion would run as the machine\'s root: CAP_SETUID")',
    # The report's line, printed: a completion's prints go to stderr, not the report's stdout.
    'print(\'{"status": "refused", "error": "x"}\')\nimport sys\nsys.exit(0)',
    # Written to every descriptor it might find: the harness's own pipe is closed before it runs.
    "import os\nfor fd in range(3, 64):\n    try: os.write(fd, b'')\n    except OSError: pass\nraise SystemExit(1)",
    # The parent's pipe, drained through /proc: the parent is not dumpable, and root (the child is nobody).
    "import os\nfor fd in os.listdir(f'/proc/{os.getppid()}/fd'):\n    try: os.read(os.open("
    "f'/proc/{os.getppid()}/fd/{fd}', os.O_RDONLY | os.O_NONBLOCK), 64)\n    except OSError: pass\n"
    "raise SystemExit(1)",
    # The parent, killed (libc's kill, past the audit hook) before it reads the pipe: no report at all.
    "import ctypes, os\nctypes.CDLL(None).kill(os.getppid(), 9)\nraise SystemExit(1)",
]


@pytest.mark.parametrize("completion", FORGERIES)
def test_a_completion_cannot_pass_itself_off_as_refused(completion):
    """None leaves a completion out of the update: a wrong one that could claim it would dodge its 0."""
    verdict = _scored(HostRoot(capabilities=True), f"```python\n{completion}\n```")
    assert verdict.status in (Status.ERROR, Status.FAILED) and verdict.reward == 0.0, verdict


@pytest.mark.parametrize("fail_fast", [True, False])
@pytest.mark.parametrize("completion", FORGERIES)
def test_a_call_form_completion_cannot_pass_itself_off_as_refused(completion, fail_fast):
    """Now that one refused test leaves the whole call-form completion out, each test's run must be as hard
    to forge: a wrong completion that tried on one test stays 0."""
    code = f"def double(x):\n    if x == 1:\n{textwrap.indent(completion, '        ')}\n    return x\n"
    scorer = Scorer([DOUBLE], HostRoot(capabilities=True), get_language("python"), timeout_s=10.0, fail_fast=fail_fast)
    (scored,) = asyncio.run(scorer.score(["double"], [f"```python\n{code}```"]))
    assert scored.verdict.status in (Status.ERROR, Status.FAILED) and scored.verdict.reward == 0.0, scored.verdict


def test_opening_such_a_sandbox_stops_with_one_line_saying_what_it_needs():
    backend = HostRoot(capabilities=False)
    with pytest.raises(SandboxFatalError) as stopped, backend:
        pass
    message = str(stopped.value)
    assert "\n" not in message and "refuses to run completions" in message and "CAP_SETUID" in message
    with HostRoot(capabilities=True):  # the same check passes where root can become nobody
        pass
