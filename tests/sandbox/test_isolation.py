"""Issue 32, finding 1: a run of a program with tests knows nothing of the others. Not its index, the
test count, another test's input or size, nor the budget, by any frame (every thread's), any object the
garbage collector tracks, /proc/self or an inherited descriptor; in the stdio form and the call form, in
every local mode (warm and cold, cgroups and rlimits) and in Superserve chunks (the real SDK against the
fake). Scored through the real reward: the probe prints (or returns) what it found, and the tests
expect an empty list.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import textwrap
import uuid

import pytest

from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.harness import runner
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Program, RunResult, program_limits
from codegrpo.sandbox.superserve import KEY_ENV as BUNDLE_KEY_ENV
from codegrpo.sandbox.superserve import CommandResult, _chunk_results, chunk_script
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import Recording, backend_in

pytestmark = run_if(bwrap=True)

MODES = ["warm-cgroups", "cold-cgroups", "warm-rlimits", "cold-rlimits", "superserve", "ray"]
PREFIX = f"needle-{uuid.uuid4().hex}-"
TESTS = 5
BASE, STEP = 40009, 101  # input k is BASE + STEP * k bytes long: every size is distinct and rare
BUDGET = 97.53125  # seconds for all the tests: exact in binary, and found by no accident


@pytest.fixture(scope="module", params=MODES)
def backend(request):
    with backend_in(request.param) as box:
        yield box


def score(backend, problem: Problem, completion: str):
    # Every test runs (no fail-fast), so that what each run saw can be looked at; a program's reward is the
    # same either way, and one that passes ran every test in a random order whether or not it fails fast.
    recording = Recording(backend)
    scorer = Scorer(
        [problem], recording, get_language("python"), "binary", timeout_s=10.0, budget_s=BUDGET, fail_fast=False
    )
    (scored,) = asyncio.run(scorer.score([problem.id], [textwrap.dedent(completion)]))
    (result,) = recording.results
    return scored, result


def needle(k: int, size: int) -> str:
    """Test k's distinctive text, ``size`` characters long (ASCII: as many bytes)."""
    head = f"{PREFIX}{k}#"
    return head + "x" * (size - len(head))


def stdio_problem(pid: str, outputs: list[str], inputs: list[str] | None = None) -> Problem:
    inputs = inputs or [needle(k, BASE + STEP * k - 1) + "\n" for k in range(TESTS)]
    tests = tuple(IOTest(text, output) for text, output in zip(inputs, outputs, strict=True))
    return Problem(pid, "Print what is asked.", "", "stdio", tests=tests)


def call_problem(pid: str, outputs: list[str], inputs: list[str] | None = None) -> Problem:
    inputs = inputs or [json.dumps([needle(k, BASE + STEP * k - 4)]) for k in range(TESTS)]
    tests = tuple(IOTest(text, output) for text, output in zip(inputs, outputs, strict=True))
    return Problem(pid, "Return what is asked.", "", "call", tests=tests, fn_name="probe")


# What a run can reach of the runner: every frame of every thread (and any frame an object keeps), every
# container the collector tracks, one level into each frame's locals, /proc/self and every descriptor.
PROBE = r"""
import gc, os, re, sys, time, types

MARK = re.compile(MARK_PATTERN + r"(\d+)#")
NAMES = {"index", "pieces", "sizes", "offsets", "budget", "budget_end", "deadline", "request", "inputs", "spec"}
KEYS = {"inputs", "budget", "uids", "pieces", "sizes"}


def scan(own_text, allowed=()):
    own = int(MARK.search(own_text).group(1))
    base, step, budget = int(BASE_TEXT), int(STEP_TEXT), float(BUDGET_TEXT)
    others = range(base, base + step * 1000, step)  # the sizes inputs have in this test, its own aside
    now = time.monotonic()
    found = set()

    def atom(value, where):
        kind = type(value)
        if kind in (str, bytes, bytearray):
            text = value if kind is str else bytes(value).decode("latin-1")
            if any(int(m.group(1)) != own for m in MARK.finditer(text)):
                found.add(f"another test's input in {where}")
        elif kind is int and value != base + step * own and value in others:
            found.add(f"another test's size ({value}) in {where}")
        elif kind is float and (value == budget or budget - 60 < value - now <= budget + 1):
            found.add(f"the budget ({value}) in {where}")

    def container(value, where):
        kind = type(value)
        if kind is dict:
            for key, item in list(value.items()):
                if type(key) is str and key in KEYS:
                    found.add(f"a request's key {key!r} in {where}")
                atom(key, where)
                atom(item, where)
        elif kind in (list, tuple, set, frozenset):
            for item in list(value):
                atom(item, where)
        elif kind is types.CellType:
            try:
                atom(value.cell_contents, where)
            except ValueError:
                pass

    mine = {scan.__code__, atom.__code__, container.__code__}

    def frame(f):
        code = f.f_code
        if code in mine:
            return
        where = f"{code.co_name} ({code.co_filename})"
        suspect = NAMES & set(code.co_varnames)
        if suspect and code.co_filename != "/tmp/solution.py":  # the harness's names are its own
            found.add(f"a frame of {where} with {sorted(suspect)}")
        for name, value in list(f.f_locals.items()):
            atom(name, where)
            atom(value, where)
            container(value, where)

    for top in list(sys._current_frames().values()):
        f = top
        while f is not None:
            frame(f)
            f = f.f_back
    cells = {id(cell) for function in (atom, container, frame) for cell in function.__closure__ or ()}
    objects = gc.get_objects()
    for value in objects:
        if type(value) is types.FrameType:
            frame(value)
        elif value is not objects and id(value) not in cells:  # not the probe's own closures
            container(value, f"a {type(value).__name__} the collector tracks")
    del objects
    for fd in os.listdir("/proc/self/fd"):
        if int(fd) > 2 and int(fd) not in allowed and os.path.exists(f"/proc/self/fd/{fd}"):
            found.add(f"descriptor {fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
    for fd in set(range(3, 1024)) - set(allowed):
        try:
            os.fstat(fd)
            found.add(f"an inherited descriptor {fd}")
        except OSError:
            pass
    for name in ("environ", "cmdline"):
        try:  # the call form's child is not dumpable: its environ is closed to it
            with open(f"/proc/self/{name}", "rb") as handle:
                atom(handle.read(), f"/proc/self/{name}")
        except PermissionError:
            pass
    return sorted(found)
"""


def probe_code() -> str:
    values = {
        "MARK_PATTERN": repr(re.escape(PREFIX)),
        "BASE_TEXT": repr(str(BASE)),
        "STEP_TEXT": repr(str(STEP)),
        "BUDGET_TEXT": repr(str(BUDGET)),
    }
    return re.sub("|".join(values), lambda m: values[m.group(0)], PROBE)


def assert_found_nothing(scored, result: RunResult) -> None:
    seen = [run.stdout.strip()[-3000:] or run.stderr[-3000:] for run in result.runs]
    assert scored.verdict.status is Status.PASSED and scored.verdict.reward == 1.0, (scored.verdict, seen)


def test_a_stdio_run_finds_no_index_count_other_input_or_budget(backend):
    code = probe_code() + "\nimport json, sys\nprint(json.dumps(scan(sys.stdin.read())))\n"
    problem = stdio_problem("probe-stdio", ["[]\n"] * TESTS)
    scored, result = score(backend, problem, code)
    assert_found_nothing(scored, result)


def test_a_call_run_finds_no_index_count_other_input_or_budget(backend):
    # The call form runs the completion in the harness's child, a process forked from the run's own, with
    # the harness's three pipes open.
    code = probe_code() + textwrap.dedent("""
        def probe(text):
            harness = sys._getframe(1).f_locals
            return scan(text, [harness[name] for name in ("result_fd", "request_fd", "audit_fd")])
    """)
    problem = call_problem("probe-call", ["[]"] * TESTS)
    scored, result = score(backend, problem, code)
    assert_found_nothing(scored, result)


# A wrong program that answers by position alone: every test has the same input, and what each must
# print is known (memorised, say); only the run's index tells them apart.
ANSWERS = ["alpha", "beta", "gamma", "delta", "epsilon"]
POSITION = '''
import gc, os, sys

ANSWERS = ANSWERS_LIST


def position():
    """This run's index, from whatever of the runner it can reach."""
    for top in sys._current_frames().values():
        f = top
        while f is not None:
            found = f.f_locals.get("index")
            if type(found) is int and ("pieces" in f.f_locals or "request" in f.f_locals):
                return found
            f = f.f_back
    for value in gc.get_objects():
        if type(value) is dict and type(value.get("run")) is int and "code" not in value:
            return value["run"]
    uid = os.getuid()
    if 100000 <= uid < 100000 + len(ANSWERS):  # a VM's run i was uid 100000 + i
        return uid - 100000
    return None


def answer():
    index = position()
    return "unknown" if index is None or index >= len(ANSWERS) else ANSWERS[index]
'''.replace("ANSWERS_LIST", repr(ANSWERS))


def test_a_program_that_answers_by_position_scores_zero(backend):
    stdio = stdio_problem("position-stdio", [f"{a}\n" for a in ANSWERS], ["same\n"] * TESTS)
    scored, result = score(backend, stdio, POSITION + "\nprint(answer())\n")
    assert [run.stdout for run in result.runs] == ["unknown\n"] * TESTS, result.runs
    assert scored.verdict.reward == 0.0, scored.verdict
    call = call_problem("position-call", [json.dumps(a) for a in ANSWERS], [json.dumps(["same"])] * TESTS)
    scored, result = score(backend, call, POSITION + "\ndef probe(text):\n    return answer()\n")
    assert scored.verdict.reward == 0.0, (scored.verdict, [run.stdout[-300:] for run in result.runs])
    # The same program, right by its own means, passes: the runs themselves work.
    right = "\ndef probe(text):\n    return ANSWERS[0]\n"
    scored, _ = score(
        backend, call_problem("first-call", [json.dumps(ANSWERS[0])], [json.dumps(["same"])]), POSITION + right
    )
    assert scored.verdict.reward == 1.0, scored.verdict


def test_the_runners_history_does_not_count_a_programs_runs(backend):
    # What the forked interpreter inherits of the serve loop's allocator (its free lists fill up run by
    # run, its collector counts allocations) would number the runs in a fresh sandbox: they read the same.
    look = "import gc, sys\nprint(sys.getallocatedblocks(), gc.get_count(), [s['collections'] for s in gc.get_stats()])"
    problem = stdio_problem("history", ["same\n"] * 12, ["x\n"] * 12)
    _, result = score(backend, problem, look)
    seen = [run.stdout.split(" ", 1) for run in result.runs]
    assert len({rest for _, rest in seen}) == 1, seen
    # The allocator's own noise moves the block count by a few (3 seen under CI's load), at random; a count
    # that numbered the runs would need 12 values. Half as many, at most, tell no run its position.
    blocks = [int(count) for count, _ in seen]
    assert max(blocks) - min(blocks) < len(blocks) // 2, blocks


# -- a VM's uids -----------------------------------------------------------------------------------


def test_a_vm_gives_each_run_a_uid_that_tells_nothing_of_its_position():
    draws = [runner.run_uids(5) for _ in range(400)]
    span = range(runner.FIRST_UID, runner.FIRST_UID + runner.UID_SPAN)
    assert all(len(set(uids)) == 5 and all(uid in span for uid in uids) for uids in draws)
    # No position has a range or an order of its own: the first run has the smallest uid a fifth of the time.
    assert 40 < sum(uids[0] == min(uids) for uids in draws) < 120
    assert len({uid for uids in draws for uid in uids}) > 1990


@run_if(root=True, system_python=True)
def test_a_chunk_run_as_a_vms_root_does_gives_no_run_its_position_as_its_uid(tmp_path):
    # As in a real VM (the fake's VM root cannot change uid): the chunk's runner is real root.
    programs = [Program("import os\nprint(os.getuid())", inputs=("",) * 6), Program("import os\nprint(os.getuid())")]
    script, key, header = chunk_script(programs, program_limits(SuperserveSandboxConfig(), processes=32))
    path = tmp_path / "codegrpo_batch.py"
    path.write_text(script)
    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-S", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", BUNDLE_KEY_ENV: key},
        cwd=tmp_path,
    )
    runs, alone = _chunk_results(
        CommandResult(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode), programs, header
    )
    uids = [int(run.stdout) for run in runs.runs] + [int(alone.stdout)]
    assert len(set(uids)) == len(uids) and min(uids) >= runner.FIRST_UID
    assert uids != list(range(runner.FIRST_UID, runner.FIRST_UID + len(uids))), uids
