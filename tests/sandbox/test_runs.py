"""Per-test runs: a program with inputs runs once per input, each run a fresh process sharing nothing with
the others, its input on stdin; in every local mode (warm and cold, cgroups and rlimits) and in Superserve
chunks (the real SDK against the fake). Hostile programs are held per run by the same limits as today.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import subprocess
import textwrap
import time
import uuid

import pytest
from benchmarks.corpora.attacks import FORK_UNTIL_REFUSED
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve

from codegrpo.harness import runner
from codegrpo.sandbox.base import Outcome, Program, RunResult
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import (
    FAKE_KEY_ENV,
    FreshSuperserve,
    MiB,
    assert_nothing_left,
    daemon_source,
    make_sandbox,
    open_fds,
    processes_with,
)

pytestmark = run_if(bwrap=True)

MODES = ["warm", "cold", "warm-rlimits", "cold-rlimits", "superserve"]
SECRET = f"sekret-{uuid.uuid4().hex}"


@pytest.fixture(scope="module", params=MODES)
def mode(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def backend(mode):
    if mode == "superserve":
        os.environ[FAKE_KEY_ENV] = FAKE_API_KEY
        with FakeSuperserve() as fake:
            yield FreshSuperserve(fake)
        assert fake.alive_ids() == []
        return
    box = make_sandbox(warm=mode.startswith("warm"), use_cgroups=not mode.endswith("rlimits"))
    yield box
    asyncio.run(box.aclose())


def run(backend, source: str, inputs: list[str], timeout_s: float = 5.0, **fields) -> RunResult:
    program = Program(textwrap.dedent(source), timeout_s=timeout_s, inputs=tuple(inputs), **fields)
    (result,) = asyncio.run(backend.run_many([program]))
    assert result.outcome is Outcome.EXITED and len(result.runs) == len(inputs), result
    return result


def outputs(result: RunResult) -> list[tuple[Outcome, int | None, str]]:
    return [(r.outcome, r.exit_code, r.stdout) for r in result.runs]


def test_each_run_reads_its_own_input_every_way(backend):
    inputs = ("ab\ncaf\u00e9\n", "1 2\n3", "")
    ways = {
        "import sys\nprint(repr(sys.stdin.read()))": ["'ab\\ncafé\\n'\n", "'1 2\\n3'\n", "''\n"],
        "import sys\nprint(repr(sys.stdin.buffer.read()))": ["b'ab\\ncaf\\xc3\\xa9\\n'\n", "b'1 2\\n3'\n", "b''\n"],
        "print(repr(input()), repr(input()))": ["'ab' 'café'\n", "'1 2' '3'\n", ""],
    }
    results = asyncio.run(backend.run_many([Program(source, inputs=inputs) for source in ways]))
    for result, expected in zip(results, ways.values(), strict=True):
        assert [r.stdout for r in result.runs] == expected, result
    assert results[2].runs[2].exit_code == 1 and "EOFError" in results[2].runs[2].stderr
    # A command (not a forked Python) gets its input the same way; an empty input reads as end of file.
    (cat,) = asyncio.run(backend.run_many([Program("", command=("cat",), inputs=("one\n", "", "three"))]))
    assert [r.stdout for r in cat.runs] == ["one\n", "", "three"]


def test_runs_share_no_files_directory_or_memory(backend):
    counter = """
        import json, os
        counts = []
        for path in ("/tmp/a", "b", os.path.expanduser("~/c")):  # in /tmp, the working dir and home
            try:
                with open(path) as handle:
                    counts.append(int(handle.read()))
            except OSError:
                counts.append(0)
            with open(path, "w") as handle:
                handle.write(str(counts[-1] + 1))
        json.runs = getattr(json, "runs", 0) + 1  # state of the interpreter, as a warm one would keep it
        print(counts, json.runs, os.getpid(), sorted(os.listdir("/tmp")), os.getcwd())
    """
    result = run(backend, counter, ["", "", ""])
    assert [r.stdout for r in result.runs] == ["[0, 0, 0] 1 1 ['a', 'b', 'c', 'solution.py'] /tmp\n"] * 3, result.runs


def test_a_run_the_kernel_kills_at_its_cpu_limit_before_the_runner_wakes_ran_out_of_time():
    """On a busy machine the runner could wake for the wall deadline after the kernel had killed the run at its
    CPU limit (the wall timeout, rounded up): the run read as signaled, not timeout (a flake of the test below,
    cold-rlimits, under load). Here the runner's deadline is far off, as if it had not woken yet."""
    import resource

    pid = os.fork()
    if pid == 0:
        limit = runner.cpu_limit(0.5)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))
        while True:
            pass
    control, other = socket.socketpair()
    try:
        assert runner.wait(pid, time.monotonic() + 30, control, 0.5) == {"code": 128 + 9, "timeout": True}
    finally:
        control.close()
        other.close()


def test_a_run_that_times_out_leaves_the_others_counted(backend):
    result = run(backend, "x = input()\nwhile x == 'spin':\n    pass\nprint(x)", ["a", "spin", "b"], timeout_s=1.0)
    assert outputs(result) == [(Outcome.EXITED, 0, "a\n"), (Outcome.TIMEOUT, None, ""), (Outcome.EXITED, 0, "b\n")]
    assert 1.0 <= result.runs[1].duration_s < 3.0


def test_the_budget_bounds_all_runs_together(backend):
    started = time.monotonic()
    result = run(
        backend,
        "import time\ntime.sleep(float(input()))\nprint('done')",
        ["0.1", "5", "0.1", "0.1"],
        timeout_s=10.0,
        budget_s=1.5,
    )
    assert 1.4 <= time.monotonic() - started < 6.0  # the budget's end, not its start, cut the long run
    # The runs go in a random order: the long one is cut at the budget's end, the short ones before it ran
    # and the ones after it never started.
    assert outputs(result)[1] == (Outcome.TIMEOUT, None, "") and result.runs[1].duration_s < 3.0
    for number in (0, 2, 3):
        ran = outputs(result)[number] == (Outcome.EXITED, 0, "done\n")
        assert ran or (outputs(result)[number] == (Outcome.TIMEOUT, None, "") and result.runs[number].duration_s == 0.0)


def test_inputs_of_megabytes(backend):
    big = [f"{i}\n" + "x" * (3 * MiB) + "\n" for i in range(3)]
    digest = "import hashlib, sys\ndata = sys.stdin.buffer.read()\nprint(len(data), hashlib.sha256(data).hexdigest())"
    result = run(backend, digest, big, timeout_s=10.0)
    assert [r.stdout for r in result.runs] == [f"{len(b)} {hashlib.sha256(b.encode()).hexdigest()}\n" for b in big]


def attack_then_look(attack: str) -> str:
    """A program whose run with input "attack" attacks, and whose other runs look for what it left."""
    body = textwrap.indent(textwrap.dedent(attack).strip("\n"), "    ")
    look = "print('ok', [p for p in os.listdir('/proc') if p.isdigit()])"
    return f"import os\nif input() == 'attack':\n{body}\nelse:\n    {look}\n"


def test_floods_forks_and_daemons_are_held_per_run(backend):
    marker = f"codegrpo-runs-{uuid.uuid4().hex}"
    attacks = [
        "import sys\nwhile True:\n    sys.stdout.write(sys.stdin.read() or 'y' * 65536)",  # its input echoed, forever
        "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        FORK_UNTIL_REFUSED + "print(COUNT)",
        daemon_source(marker),
    ]
    fds = open_fds() if not isinstance(backend, FreshSuperserve) else None
    inputs = ("x" * 1000 + "\n", "attack", "ok")
    programs = [Program(attack_then_look(attack), timeout_s=2.0, inputs=inputs) for attack in attacks]
    flood, bomb, count, daemon = asyncio.run(backend.run_many(programs))
    for result in (flood, bomb, count, daemon):
        assert result.runs[0].stdout == result.runs[2].stdout == "ok ['1']\n", result  # nothing left of the attack
    assert flood.runs[1].outcome is Outcome.OUTPUT_LIMIT and bomb.runs[1].outcome is Outcome.TIMEOUT
    limit = 32 if isinstance(backend, FreshSuperserve) else backend.cfg.max_processes
    assert 0 < int(count.runs[1].stdout) < limit
    assert daemon.runs[1].stdout == "parent done\n" and processes_with(marker) == []
    if fds is not None:
        assert_nothing_left(fds, marker)


def test_hostile_runs_get_nothing_from_the_host_or_each_other(backend, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    listener = socket.create_server(("127.0.0.1", 0))
    canary = subprocess.Popen(["sleep", "120"])  # a host process the first run's kill(-1) must not reach
    try:
        attack = f"""
            import os, signal, socket
            what = input()
            found = []
            if what == "signal pid 1 and everything":
                for pid in (1, -1, 0):
                    for sig in (signal.SIGSTOP, signal.SIGKILL):
                        try:
                            os.kill(pid, sig)
                        except OSError:
                            pass
            elif what == "secrets":
                for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
                    try:
                        found.append(b"sekret-" in open(f"/proc/{{pid}}/environ", "rb").read())
                    except OSError:
                        pass
                print("secret" if any(found) or "sekret-" in str(os.environ) else "none")
            elif what == "network":
                try:
                    socket.create_connection(("127.0.0.1", {listener.getsockname()[1]}), timeout=1)
                    print("connected")
                except OSError:
                    print("refused")
            else:
                print("next")
        """
        result = run(backend, attack, ["signal pid 1 and everything", "next", "secrets", "network", "next"])
        alive = canary.poll() is None
    finally:
        listener.close()
        canary.kill()
        canary.wait()
    runs = result.runs
    assert not any(r.is_infra_failure for r in runs) and alive
    assert [r.stdout for r in runs[1:]] == ["next\n", "none\n", "refused\n", "next\n"]
    assert all(SECRET not in r.stdout + r.stderr for r in runs)


def test_programs_with_and_without_inputs_in_one_batch(backend):
    programs = [
        Program("print(input()[::-1])", inputs=("abc", "xyz")),
        Program("print(6 * 7)"),
        Program("print(input())", inputs=()),
        Program("import sys\nsys.exit(int(input()))", inputs=("3",)),
    ]
    execs = backend.fake.requests["exec"] if isinstance(backend, FreshSuperserve) else 0
    results = asyncio.run(backend.run_many(programs * 3))
    for i in range(0, 12, 4):
        reverse, plain, none, exits = results[i : i + 4]
        assert [r.stdout for r in reverse.runs] == ["cba\n", "zyx\n"]
        assert (plain.outcome, plain.stdout, plain.runs) == (Outcome.EXITED, "42\n", ())
        assert none.outcome is Outcome.EXITED and none.runs == ()
        assert [r.exit_code for r in exits.runs] == [3]
    if isinstance(backend, FreshSuperserve):
        assert backend.fake.requests["exec"] - execs == 2  # two chunks (the cap), every run inside them
