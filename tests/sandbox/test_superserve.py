"""The Superserve backend, driven through the real superserve SDK against the in-process fake API.

The fake (benchmarks.fakes.superserve_api) really runs each program in the local bubblewrap sandbox,
so these tests need bwrap; they assert results, retries, fatal errors, the concurrency cap and
that no sandbox is ever left alive.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve, Fault
from benchmarks.fakes.superserve_api import VM_FILES
from benchmarks.sections.superserve import run_as_the_guide
from omegaconf import OmegaConf
from superserve import (
    AsyncSandbox,
    AuthenticationError,
    CommandResult,
    RateLimitError,
    SandboxError,
    SandboxTimeoutError,
    ServerError,
)

from codegrpo import build
from codegrpo.config.sandbox import LocalSandboxConfig, SuperserveSandboxConfig
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxFatalError, program_limits
from codegrpo.sandbox.superserve import KEY_ENV as BUNDLE_KEY_ENV
from codegrpo.sandbox.superserve import SuperserveSandbox, _chunk_results, _RunnerFailed, chunk_script
from tests.helpers.run_if import run_if

pytestmark = run_if(bwrap=True)

KEY_ENV = "CODEGRPO_TEST_SUPERSERVE_KEY"
PYTHON = ("python3", "-I", "/tmp/solution.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def py(source: str, timeout_s: float = 10.0) -> Program:
    return Program(textwrap.dedent(source), timeout_s=timeout_s)


PRINT_42 = py("print(6 * 7)")


def score(backend: SuperserveSandbox, programs: list[Program]) -> list[RunResult]:
    async def run() -> list[RunResult]:
        try:
            return await backend.run_many(programs)
        finally:
            await backend.aclose()

    return asyncio.run(run())


def assert_no_leaks(backend: SuperserveSandbox, fake: FakeSuperserve) -> None:
    stats = backend.stats()
    assert fake.alive_ids() == []
    assert fake.created == fake.killed
    # The backend knows of every sandbox the server made, orphans included, and killed each one.
    assert stats["sandbox/created"] == stats["sandbox/killed"] == fake.created
    assert stats["sandbox/alive"] == 0


def assert_42(result: RunResult) -> None:
    assert (result.outcome, result.exit_code, result.stdout) == (Outcome.EXITED, 0, "42\n"), result


# ------------------------------------------------------------------------------------ results


def test_runs_each_program_in_a_fresh_sandbox_like_the_guide(make_backend) -> None:
    programs = [
        PRINT_42,
        py("import sys\nprint('partial')\nsys.exit(3)"),
        py("raise ValueError('boom')"),
        py("while True:\n    pass", timeout_s=1),
        py("print('x' * (3 << 20))"),
    ]
    with FakeSuperserve() as fake:
        backend = make_backend(fake, programs_per_sandbox=1)
        ok, exits_3, raises, loops, floods = score(backend, programs)

    assert_42(ok)
    assert (exits_3.outcome, exits_3.exit_code, exits_3.stdout) == (Outcome.EXITED, 3, "partial\n")
    assert raises.outcome is Outcome.EXITED and raises.exit_code == 1
    assert raises.stderr.rstrip().endswith("ValueError: boom")
    assert loops.outcome is Outcome.TIMEOUT and loops.duration_s >= 1.0
    assert floods.outcome is Outcome.OUTPUT_LIMIT and len(floods.stdout.encode()) <= 1 << 20
    assert_no_leaks(backend, fake)
    assert fake.created == len(programs)

    for sandbox in fake.sandboxes.values():
        request = sandbox.request
        assert request["network"] == {"allow_out": None, "deny_out": ["0.0.0.0/0"]}
        assert request["auto_delete_seconds"] == 0
        assert request["timeout_seconds"] == 300
        assert request["name"] == "codegrpo-reward"
        assert "from_template" not in request
        assert list(sandbox.files) == ["/tmp/solution.py"]
        assert len(sandbox.commands) == 1 and sandbox.commands[0].startswith("timeout -s KILL ")
    commands = sorted(s.commands[0] for s in fake.sandboxes.values())
    assert commands[0] == "timeout -s KILL 1 python3 -I /tmp/solution.py"


@run_if(node=True)
def test_runs_javascript(make_backend) -> None:
    program = Program("console.log(6 * 7)", "node", filename="solution.js")
    with FakeSuperserve() as fake:
        backend = make_backend(fake)
        [result] = score(backend, [program])
    assert_42(result)
    [sandbox] = fake.sandboxes.values()
    assert sandbox.commands == ["timeout -s KILL 10 node /tmp/solution.js"]


def test_network_lists_and_template_are_configurable(make_backend) -> None:
    with FakeSuperserve(templates={"python-numpy"}) as fake:
        backend = make_backend(
            fake, allow_out=["10.0.0.0/8"], deny_out=["0.0.0.0/0", "::/0"], from_template="python-numpy", name="grpo"
        )
        [result] = score(backend, [PRINT_42])
        assert_42(result)
        [sandbox] = fake.sandboxes.values()
        assert sandbox.request["network"] == {"allow_out": ["10.0.0.0/8"], "deny_out": ["0.0.0.0/0", "::/0"]}
        assert (sandbox.request["from_template"], sandbox.request["name"]) == ("python-numpy", "grpo")

        # A template that does not exist is not worth retrying.
        missing = make_backend(fake, from_template="no-such-template")
        with pytest.raises(SandboxFatalError, match="template 'no-such-template'"):
            score(missing, [PRINT_42])
        assert fake.requests["create"] == 2


# ------------------------------------------------------------------- several programs per sandbox


def comparable(result: RunResult) -> tuple:
    # The runner gives each program its own directory, so tracebacks name a different path.
    return (result.outcome, result.exit_code, result.stdout, re.sub(r"/tmp/run-[^/]+/", "/tmp/", result.stderr))


def run_in_one_chunk(
    make_backend, programs: list[Program], local_cfg: LocalSandboxConfig | None = None, **overrides
) -> tuple[list[RunResult], SuperserveSandbox]:
    """Run ``programs`` in this order in a single sandbox (a cap of 1 puts the whole batch in one chunk)."""
    with FakeSuperserve(local_cfg=local_cfg) as fake:
        backend = make_backend(fake, max_concurrency=1, **overrides)
        results = score(backend, programs)
        assert fake.requests["exec"] == 1 + backend.stats()["sandbox/chunks_rerun"] * len(programs)
        assert_no_leaks(backend, fake)
    return results, backend


def test_chunks_give_the_same_results_as_a_sandbox_each(make_backend) -> None:
    # A cap of 3 makes three chunks, strided: [0, 3, 6], [1, 4, 7], [2, 5, 8].
    programs = [
        PRINT_42,
        py("raise ValueError('boom')"),
        py("import sys\nsys.stdout.buffer.write(b'caf\\xc3\\xa9 \\xff')\nprint('err', file=sys.stderr)"),
        py("import sys\nprint('partial')\nsys.exit(3)"),
        py("pass"),
        py("import ctypes\nctypes.string_at(0)"),  # a real fault: pid 1 of the fake's sandbox ignores kill()
        py("while True:\n    pass", timeout_s=1),
        py("raise MemoryError"),
        py("print('x' * (3 << 20))"),  # too much output for the runner's document: this chunk runs again apart
    ]
    with FakeSuperserve() as fake:
        backend = make_backend(fake, max_concurrency=3)
        chunked = score(backend, programs)
        assert_no_leaks(backend, fake)
        stats = backend.stats()
        assert (stats["sandbox/chunks"], stats["sandbox/chunks_rerun"]) == (3, 1)
        assert fake.requests["create"] == 3 + 3
    with FakeSuperserve() as fake:
        single = make_backend(fake, max_concurrency=3, programs_per_sandbox=1)
        apart = score(single, programs)
        assert fake.requests["create"] == len(programs)
        assert_no_leaks(single, fake)

    assert [comparable(r) for r in chunked] == [comparable(r) for r in apart]
    outcomes = [r.outcome for r in chunked]
    assert outcomes[6:] == [Outcome.TIMEOUT, Outcome.MEMORY_LIMIT, Outcome.OUTPUT_LIMIT]
    assert outcomes[5] is Outcome.SIGNALED and chunked[5].exit_code == 128 + 11
    assert chunked[2].stdout == "café \ufffd"
    assert 1.0 <= chunked[6].duration_s < 3.0


@pytest.mark.parametrize(
    ("n", "cap", "per_sandbox", "sandboxes"),
    [(20, 4, 16, 4), (20, 4, 3, 7), (64, 8, 16, 8), (4, 4, 16, 4), (3, 8, 16, 3), (9, 2, 1, 9)],
)
def test_a_batch_is_split_into_as_few_sandboxes_as_use_the_cap(
    make_backend, n: int, cap: int, per_sandbox: int, sandboxes: int
) -> None:
    programs = [py(f"print({i})") for i in range(n)]
    with FakeSuperserve() as fake:
        backend = make_backend(fake, max_concurrency=cap, programs_per_sandbox=per_sandbox)
        results = score(backend, programs)
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(n)]
        assert fake.requests["create"] == fake.requests["write"] == fake.requests["exec"] == sandboxes
        assert fake.max_alive <= cap
        assert_no_leaks(backend, fake)


def test_chunks_keep_the_sandbox_timeout(make_backend) -> None:
    # 9 s each: with sandbox_timeout_s=120, a chunk's programs may take 120 - 60 - 5 = 55 s, so 5 each.
    programs = [py(f"print({i})", timeout_s=9) for i in range(16)]
    with FakeSuperserve() as fake:
        backend = make_backend(fake, max_concurrency=1, sandbox_timeout_s=120)
        results = score(backend, programs)
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(16)]
        assert fake.requests["exec"] == 4
        assert_no_leaks(backend, fake)


def test_files_and_ipc_a_program_leaves_are_gone_for_the_next(make_backend) -> None:
    plant = py("""
        import ctypes, os
        written = []
        for d in ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", os.getcwd(), os.environ["HOME"], os.environ["TMPDIR"]]:
            try:
                with open(os.path.join(d, "planted-file"), "w") as f:
                    f.write("x")
                os.makedirs(os.path.join(d, "planted-dir", "deeper"))
                written.append(d)
            except OSError:
                pass
        os.makedirs("/tmp/planted-locked/inner")
        open("/tmp/planted-locked/inner/f", "w").close()
        os.chmod("/tmp/planted-locked/inner", 0)
        os.chmod("/tmp/planted-locked", 0o500)
        os.symlink("/tmp", "/tmp/planted-link")
        libc = ctypes.CDLL(None)
        shm = libc.shmget(0x1234, 4096, 0o1666)  # IPC_CREAT | 0666
        print(len(written), shm >= 0)
    """)
    look = py("""
        import os
        seen = [os.path.join(r, n) for top in ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"] if os.path.isdir(top)
                for r, ds, fs in os.walk(top) for n in ds + fs if "planted" in n]
        with open("/proc/sysvipc/shm") as f:
            print(seen, len(f.read().splitlines()) - 1, sorted(os.listdir(os.getcwd())))
    """)
    (planted, found), _ = run_in_one_chunk(make_backend, [plant, look])
    # /tmp and its own directory (cwd, HOME and TMPDIR); the rest is read-only in the fake. The local
    # sandbox's seccomp filter, where it has one, refuses System V IPC (see the next test).
    assert planted.stdout in ("2 True\n", "2 False\n"), planted
    assert found.stdout == "[] 0 ['solution.py']\n", found


def test_what_a_program_leaves_in_the_kernel_is_gone_for_the_next(make_backend) -> None:
    # A TIME_WAIT socket in /proc/net/tcp and a hostname: each program has network, UTS and IPC
    # namespaces of its own, so a sibling in the same chunk cannot pick up what the one before left.
    writer = py("""
        import socket
        server = socket.create_server(("127.0.0.1", 47321))
        client = socket.create_connection(("127.0.0.1", 47321))
        peer, _ = server.accept()
        client.close()
        peer.close()
        server.close()
        try:
            socket.sethostname("answer-42")
        except OSError:
            pass
        print(":B8D9" in open("/proc/net/tcp").read().upper())
    """)
    reader = py("""
        import socket
        print(":B8D9" in open("/proc/net/tcp").read().upper(), socket.gethostname() == "answer-42")
    """)
    (wrote, read), backend = run_in_one_chunk(make_backend, [writer, reader])
    assert backend.stats()["sandbox/chunks_rerun"] == 0
    assert wrote.stdout == "True\n", wrote  # the channel exists within a program
    assert read.stdout == "False False\n", read


def test_without_namespaces_every_program_gets_a_sandbox_of_its_own(make_backend, caplog) -> None:
    # A sandbox whose commands cannot make namespaces (no CAP_SYS_ADMIN): chunks would be channels.
    with FakeSuperserve(local_cfg=LocalSandboxConfig(warm=False)) as fake:
        backend = make_backend(fake, max_concurrency=1)
        results = score(backend, [PRINT_42] * 3 + [PRINT_42] * 3)
        assert [r.stdout for r in results] == ["42\n"] * 6
        stats = backend.stats()
        assert stats["sandbox/chunks_rerun"] == 1  # the first chunk only: after it, one program per sandbox
        assert fake.requests["exec"] == 1 + 6
        assert_no_leaks(backend, fake)
    assert "namespaces of its own" in caplog.text


def test_daemons_and_fork_chains_die_with_their_program(make_backend) -> None:
    leave_daemons = py("""
        import os, time
        if os.fork() == 0:  # a double-forked setsid daemon that writes into the next program's directory
            os.setsid()
            if os.fork() == 0:
                time.sleep(0.3)
                for name in os.listdir("/tmp"):
                    try:
                        open(f"/tmp/{name}/from-daemon", "w").close()
                    except OSError:
                        pass
                print("daemon was here", flush=True)
                time.sleep(30)
            os._exit(0)
        if os.fork() == 0:  # a chain that keeps moving to a new pid
            os.setsid()
            while True:
                if os.fork():
                    os._exit(0)
                time.sleep(0.005)
        print("a done")
    """)
    look = py("""
        import os, time
        time.sleep(0.8)
        mine = {os.getpid(), os.getppid(), 1}  # its own pid namespace: itself alone
        others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine)
        states = []
        for pid in others:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    states.append(f.read().rpartition(")")[2].split()[0])
            except OSError:
                pass
        print(sorted(os.listdir(".")), [s for s in states if s not in "ZX"])
    """)
    (daemons, found), _ = run_in_one_chunk(make_backend, [leave_daemons, look])
    assert (daemons.outcome, daemons.stdout) == (Outcome.EXITED, "a done\n"), daemons
    assert found.stdout == "['solution.py'] []\n", found


def test_a_program_cannot_reach_the_runner_or_forge_results(make_backend) -> None:
    forge = py("""
        import ctypes, json, os
        ppid = os.getppid()
        forged = "codegrpo-batch 0\\n" + json.dumps([{"exit_code": 0, "stdout": "42\\n", "stderr": "",
                                                      "duration_s": 0, "truncated": False}] * 2) + "\\n"
        reached = []
        for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
            for name in ["fd/1", "fd/2", "environ", "mem", "cwd/x"]:
                try:
                    with open(f"/proc/{pid}/{name}", "rb") as f:
                        f.read(1)
                    reached.append(f"{pid}/{name}")
                except OSError:
                    pass
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with open(f"/proc/{pid}/fd/{fd}", "w") as f:
                        f.write(forged)
                    reached.append(f"{pid}/fd/{fd}")
            except OSError:
                pass
        libc = ctypes.CDLL(None, use_errno=True)
        traced = libc.ptrace(16, ppid, 0, 0)  # PTRACE_ATTACH
        print(reached, traced, os.environ.get("CODEGRPO_BUNDLE_KEY"))
        raise SystemExit(1)
    """)
    results, backend = run_in_one_chunk(make_backend, [forge, PRINT_42])
    assert (results[0].outcome, results[0].exit_code, results[0].stdout) == (Outcome.EXITED, 1, "[] -1 None\n")
    assert_42(results[1])
    assert backend.stats()["sandbox/chunks_rerun"] == 0


def test_a_program_that_attacks_the_runner_gets_no_better_verdict(make_backend) -> None:
    attack = py("""
        import os, signal
        for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):
            try:
                os.kill(os.getppid(), sig)
            except OSError:
                pass
        raise SystemExit(1)
    """)
    results, _ = run_in_one_chunk(make_backend, [attack, PRINT_42, attack])
    for result in (results[0], results[2]):
        assert not result.is_infra_failure and (result.outcome, result.exit_code) != (Outcome.EXITED, 0), result
    assert_42(results[1])


# VMs too small for the runner (their processes counted by the cgroup of the fake's VM): with 3, the
# serve loop cannot fork a run's maker and dies; with 4, a maker cannot fork its run.
SMALL_VMS = {"the runner dies": 3, "a run cannot be set up": 4}


@pytest.mark.parametrize("vm", SMALL_VMS)
def test_a_chunk_whose_runner_fails_runs_again_a_sandbox_each(make_backend, vm: str) -> None:
    # However a runner fails, each program is then judged alone; a program's own status 70 (what a run's
    # failed setup exits with) stays its own.
    programs = [PRINT_42, py("import sys; sys.exit(4)"), py("import sys; sys.exit(70)")]
    small = LocalSandboxConfig(warm=False, vm_root=True, max_processes=SMALL_VMS[vm], **VM_FILES)
    results, backend = run_in_one_chunk(make_backend, programs, local_cfg=small)
    assert [(r.outcome, r.exit_code, r.stdout) for r in results] == [
        (Outcome.EXITED, 0, "42\n"),
        (Outcome.EXITED, 4, ""),
        (Outcome.EXITED, 70, ""),
    ]
    assert backend.stats()["sandbox/chunks_rerun"] == 1


def _document(runs: list[dict], header: str = "codegrpo-batch h") -> str:
    return f"{header}\n{json.dumps([{'runs': runs}])}\n"


GOOD_RUN = {
    "exit_code": 0,
    "timed_out": False,
    "budget_cut": False,
    "over_limit": False,
    "stdout": "NDIK",
    "stderr": "",
    "duration_s": 0.1,
}
BROKEN_DOCUMENTS = {  # what a broken runner could print
    "another header": _document([GOOD_RUN], "codegrpo-batch x"),
    "extra output": _document([GOOD_RUN]) + "more\n",
    "no runs": _document([]),
    "two runs of one": _document([GOOD_RUN, GOOD_RUN]),
    "a missing field": _document([{k: v for k, v in GOOD_RUN.items() if k != "stderr"}]),
    "a boolean exit code": _document([GOOD_RUN | {"exit_code": True}]),
    "no exit code, no timeout": _document([GOOD_RUN | {"exit_code": None}]),
    "output not base64": _document([GOOD_RUN | {"stdout": "not base64!"}]),
}


@pytest.mark.parametrize("broken", BROKEN_DOCUMENTS)
def test_a_malformed_chunk_document_fails_the_chunk(broken: str) -> None:
    result = CommandResult(stdout=BROKEN_DOCUMENTS[broken], stderr="", exit_code=0)
    with pytest.raises(_RunnerFailed):
        _chunk_results(result, [PRINT_42], "codegrpo-batch h")
    assert_42(
        _chunk_results(
            CommandResult(stdout=_document([GOOD_RUN]), stderr="", exit_code=0), [PRINT_42], "codegrpo-batch h"
        )[0]
    )


def test_no_program_can_read_another_programs_source(make_backend) -> None:
    snoop = py("""
        import os
        needle = ("sibling" + "-secret-").encode()
        found = []
        for top in ["/tmp", "/var/tmp", "/dev/shm", os.getcwd()]:
            for root, _, files in os.walk(top):
                for name in files:
                    try:
                        with open(os.path.join(root, name), "rb") as f:
                            if needle in f.read():
                                found.append(name)
                    except OSError:
                        pass
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:  # only its own: the runner is out of sight
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found += ["cmdline"] if needle in f.read() else []
        print(found, sorted(os.environ))
    """)
    secret = py(f"# sibling-secret-{uuid.uuid4().hex}\nprint(6 * 7)")
    (snooped, answer), _ = run_in_one_chunk(make_backend, [snoop, secret])
    assert snooped.stdout == "[] ['HOME', 'LANG', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', 'TMPDIR']\n"
    assert_42(answer)


# ------------------------------------------------------------------- Python programs forked warm

# The runner forks `python3 -I /tmp/<file>` programs from its warm self and execs anything else as a
# subprocess; `env python3 ...` runs the same interpreter the subprocess way.
SUBPROCESS_PYTHON = ("env", "python3", "-I", "/tmp/solution.py")
FORK_BEHAVIOURS = {
    "system exit message": "raise SystemExit('bye')",
    "exit code": "import sys\nprint('partial')\nsys.exit(300)",
    "os._exit drops buffered output": "import os\nprint('lost', end='')\nos._exit(5)",
    "chained traceback": (
        "def f():\n    raise KeyError('k')\ntry:\n    f()\nexcept KeyError as e:\n    raise ValueError('v') from e\n"
    ),
    "syntax error": "def f(:\n    pass\n",
    "eof on stdin": "input()",
    "atexit hooks": (
        "import atexit\natexit.register(print, 'last')\natexit.register(lambda: print('first'))\nprint('main')"
    ),
    "atexit exits": "import atexit, sys\ndef h():\n    print('in hook')\n    sys.exit(7)\natexit.register(h)\n",
    "threads are joined": (
        "import threading, time\ndef late():\n    time.sleep(0.2)\n    print('late')\n"
        "threading.Thread(target=late).start()\nprint('main done')"
    ),
    "unflushed output": "import sys\nsys.stdout.write('out')\nsys.stderr.write('err')",
    "empty exit message": "import sys\nsys.exit('')",
    "interpreter state": (
        "import os, sys\nprint(__name__, __file__ == sys.argv[0], sys.flags, sys.path, sys.stdout.encoding,\n"
        "      sys.stdout.line_buffering, sys.stdin.read(), sorted(os.environ), os.getpgid(0) == os.getpid())\n"
        "print([m for m in ('runner', 'inprocess') if m in sys.modules])"
    ),
}


def test_forked_python_programs_behave_as_a_fresh_interpreter(make_backend) -> None:
    sources = list(FORK_BEHAVIOURS.values())
    is_warm = "import sys\nprint('heapq' in sys.modules)"  # preloaded only in the runner
    forked = [py(s, timeout_s=5) for s in [*sources, is_warm]]  # 5 s: all of them fit in one sandbox
    spawned = [Program(p.source, command=SUBPROCESS_PYTHON, timeout_s=5) for p in forked]
    results, backend = run_in_one_chunk(make_backend, forked + spawned, programs_per_sandbox=len(forked) * 2)
    assert backend.stats()["sandbox/chunks_rerun"] == 0
    n = len(forked)
    assert (results[n - 1].stdout, results[-1].stdout) == ("True\n", "False\n")  # both paths were taken

    def same(result: RunResult) -> tuple:
        return *comparable(result)[:3], re.sub(r" at 0x[0-9a-f]+", "", result.stderr)

    for name, fork, spawn in zip(FORK_BEHAVIOURS, results[:n], results[n:], strict=False):
        assert same(fork) == same(spawn), name
    by_name = dict(zip(FORK_BEHAVIOURS, results, strict=False))
    assert (by_name["system exit message"].exit_code, by_name["system exit message"].stderr) == (1, "bye\n")
    assert by_name["exit code"].exit_code == 300 & 0xFF
    assert by_name["chained traceback"].stderr.count("Traceback") == 2
    assert by_name["atexit hooks"].stdout == "main\nfirst\nlast\n"
    assert by_name["atexit exits"].stdout == "in hook\n" and "SystemExit: 7" in by_name["atexit exits"].stderr
    assert by_name["threads are joined"].stdout == "main done\nlate\n"
    assert by_name["interpreter state"].stdout.endswith("True\n[]\n")


@run_if(root=True, system_python=True)
def test_a_chunk_runs_as_a_vms_root_does_from_a_process_that_is_not_pid_1(tmp_path: Path) -> None:
    # As in a real VM, unlike the fake: the runner is real root and not pid 1 (here: this machine's root,
    # each program still in namespaces of its own, as nobody, under the program seccomp filter).
    secret = f"sibling-secret-{uuid.uuid4().hex}"
    programs = [
        py(f"import os, sys\nprint('{secret[:8]}' + '{secret[8:]}', os.getuid(), file=sys.stderr)\nprint(6 * 7)"),
        py("""
            import os, re
            sibling = re.compile(rb"sibling" + rb"-secret-[0-9a-f]{32}")
            with open("/proc/self/mem", "rb", buffering=0) as mem, open("/proc/self/maps") as maps:
                found = False
                for line in maps:
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    if line.split()[1][0] == "r" and end - start < 1 << 30:
                        try:
                            mem.seek(start)
                            found = found or sibling.search(mem.read(end - start)) is not None
                        except (OSError, OverflowError, ValueError):
                            pass
            try:
                open("/var/tmp-planted", "w")
                wrote = True
            except OSError:
                wrote = False
            print(os.getuid(), os.getpid(), sorted(os.listdir("/tmp")), wrote, found)
        """),
        Program("", command=("cat", "/proc/self/status")),
    ]
    script, key, header = chunk_script(programs, program_limits(SuperserveSandboxConfig(), processes=32))
    path = tmp_path / "codegrpo_batch.py"
    path.write_text(script)
    before = set(Path("/tmp").glob("codegrpo-*"))
    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-S", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", BUNDLE_KEY_ENV: key},
        cwd=tmp_path,
    )
    first, probe, status = _chunk_results(
        CommandResult(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode), programs, header
    )
    assert_42(first)
    # Each program its own uid (what the kernel counts per user is its own), pid 1 of its namespace,
    # alone in /tmp, unable to write the VM's files, and no sibling's output in its memory.
    uids = int(first.stderr.split()[-1]), int(probe.stdout.split()[0])
    assert len(set(uids)) == 2 and min(uids) >= 100000, uids
    assert probe.stdout.split(" ", 1)[1] == "1 ['solution.py'] False False\n", probe
    fields = dict(line.split(":\t", 1) for line in status.stdout.splitlines() if ":\t" in line)
    assert int(fields["SigIgn"], 16) & 0x7FFFFFFF == 0 and int(fields["CapEff"], 16) == 0  # signals 1-31
    assert set(Path("/tmp").glob("codegrpo-*")) <= before and not path.exists()  # the chunk's files are gone


def test_a_program_cannot_find_a_siblings_source(make_backend) -> None:
    # Everywhere a forked program can look: every object the gc tracks, every frame's globals and
    # locals, its whole address space, every /proc/<pid>/{cmdline,environ} it may read, and files.
    snoop = py(f"""
        # own-marker-{uuid.uuid4().hex}
        import gc, os, re, sys
        sibling = re.compile(rb"sibling" + rb"-secret-[0-9a-f]{{32}}")
        own = re.compile(rb"own" + rb"-marker-[0-9a-f]{{32}}")
        places = {{}}

        def look(place, data):
            if isinstance(data, str):
                data = data.encode("utf-8", "surrogatepass")
            if isinstance(data, (bytes, bytearray)):
                for name, pattern in (("sibling", sibling), ("own", own)):
                    if pattern.search(data):
                        places.setdefault(name, set()).add(place)

        def values(obj):
            if isinstance(obj, dict):
                return [*obj.keys(), *obj.values()]
            if isinstance(obj, (list, tuple, set, frozenset)):
                return list(obj)
            if type(obj).__name__ == "code":
                return list(obj.co_consts) + list(obj.co_names)
            return []

        for obj in gc.get_objects():
            for value in values(obj):
                look("gc", value)
        for frame in sys._current_frames().values():
            while frame is not None:
                for value in [*frame.f_globals.values(), *frame.f_locals.values()]:
                    look("frames", value)
                    for inner in values(value):
                        look("frames", inner)
                frame = frame.f_back
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if line.split()[1][0] == "r" and end - start < 1 << 30:
                    try:
                        mem.seek(start)
                        look("memory", mem.read(end - start))
                    except (OSError, OverflowError, ValueError):
                        pass
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
            for name in ("cmdline", "environ"):
                try:
                    with open(f"/proc/{{pid}}/{{name}}", "rb") as f:
                        look("proc", f.read())
                except OSError:
                    pass
        for top in ["/tmp", "/var/tmp", "/dev/shm", os.getcwd()]:
            for root, _, files in os.walk(top):
                for name in files:
                    try:
                        with open(os.path.join(root, name), "rb") as f:
                            look("files", f.read())
                    except OSError:
                        pass
        print(sorted(places.get("sibling", ())), sorted(places.get("own", ())))
    """)
    # Each sibling's secret is in its source and in its output.
    before, after = (
        py(
            f"# sibling-secret-{uuid.uuid4().hex}\nimport sys\n"
            f"print('sibling' '-secret-{uuid.uuid4().hex}', file=sys.stderr)\nprint(6 * 7)"
        )
        for _ in range(2)
    )
    (first, snooped, last), backend = run_in_one_chunk(make_backend, [before, snoop, after])
    # The scan works (it finds the program's own source in its memory, frames and file), and finds no sibling.
    assert snooped.stdout == "[] ['files', 'frames', 'memory']\n", snooped
    assert_42(first)
    assert_42(last)
    assert backend.stats()["sandbox/chunks_rerun"] == 0


def test_what_a_program_patches_in_its_interpreter_is_gone_for_the_next(make_backend) -> None:
    patch = py("""
        import atexit, builtins, json, math, os, sys
        builtins.len = lambda obj: 42
        builtins.__import__ = lambda *args, **kwargs: sys
        json.dumps = lambda *args, **kwargs: "forged"
        math.sqrt = lambda x: -1.0
        sys.modules["heapq"] = sys
        sys.path.insert(0, os.getcwd())
        sys.setrecursionlimit(50)
        os.environ["INJECTED"] = "1"
        atexit.register(print, "hook of the first program")
        print("patched")
    """)
    check = py("""
        import heapq, json, math, os, sys
        print(len([1, 2]), json.dumps([1]), math.sqrt(4.0), heapq.__name__, sys.getrecursionlimit(),
              os.getcwd() in sys.path, "INJECTED" in os.environ)
    """)
    (patched, checked), backend = run_in_one_chunk(make_backend, [patch, check])
    assert patched.stdout == "patched\nhook of the first program\n", patched
    assert checked.stdout == "2 [1] 2.0 heapq 1000 False False\n", checked
    assert backend.stats()["sandbox/chunks_rerun"] == 0


def test_a_program_that_stops_pid_1_or_closes_its_output_is_still_judged_alone(make_backend) -> None:
    # The runner is out of the program's sight; pid 1 is the program itself, which ignores its own SIGSTOP.
    stops = py("import os, signal\nos.kill(1, signal.SIGSTOP)\nprint('stopped it')")
    closes = py("import os, time\nos.close(1)\nos.close(2)\ntime.sleep(30)", timeout_s=1)
    started = time.monotonic()
    (stopped, closed, ok), backend = run_in_one_chunk(make_backend, [stops, closes, PRINT_42])
    assert (stopped.outcome, stopped.stdout) == (Outcome.EXITED, "stopped it\n"), stopped
    assert closed.outcome is Outcome.TIMEOUT and 1.0 <= closed.duration_s < 3.0, closed
    assert_42(ok)
    assert backend.stats()["sandbox/chunks_rerun"] == 0
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(("route", "fault"), [("exec", Fault.TIMEOUT), ("create", Fault.SERVER_ERROR)])
def test_a_chunk_that_keeps_failing_is_an_infra_failure_for_each_program(make_backend, route: str, fault) -> None:
    with FakeSuperserve(fault_rates={route: {fault: 1.0}}) as fake:
        backend = make_backend(fake, max_concurrency=2, max_retries=2)
        results = score(backend, [PRINT_42] * 6)
        assert [r.outcome for r in results] == [Outcome.SANDBOX_ERROR] * 6
        stats = backend.stats()
        assert (stats["sandbox/infra_failures"], stats["sandbox/retries"]) == (6, 4)
        assert fake.requests["create"] == 6  # 2 chunks, 3 attempts each
        assert_no_leaks(backend, fake)

    # A transient fault costs the chunk one more attempt, no more.
    with FakeSuperserve() as fake:
        fake.inject(route, fault)
        backend = make_backend(fake, max_concurrency=2)
        for result in score(backend, [PRINT_42] * 6):
            assert_42(result)
        assert fake.requests["create"] == 3
        assert_no_leaks(backend, fake)


# ---------------------------------------------------------------------------- transient faults

RETRIED_BY_US = [
    ("create", Fault.RATE_LIMITED),
    ("create", Fault.TOO_MANY_SANDBOXES),
    ("create", Fault.SERVER_ERROR),
    ("create", Fault.UNAVAILABLE),
    ("create", Fault.TIMEOUT),
    ("create", Fault.RESET),
    ("create", Fault.LOST_RESPONSE),
    ("write", Fault.SERVER_ERROR),
    ("write", Fault.RESET),
    ("exec", Fault.SERVER_ERROR),
    ("exec", Fault.TIMEOUT),
    ("exec", Fault.RESET),
    ("exec", Fault.LOST_RESPONSE),
]


@pytest.mark.parametrize(("route", "fault"), RETRIED_BY_US, ids=[f"{r}-{f.value}" for r, f in RETRIED_BY_US])
def test_transient_fault_is_retried_in_a_fresh_sandbox(make_backend, route: str, fault: Fault) -> None:
    with FakeSuperserve() as fake:
        fake.inject(route, fault, times=2)
        backend = make_backend(fake)
        [result] = score(backend, [PRINT_42])
    assert_42(result)
    assert backend.stats()["sandbox/retries"] == 2
    assert fake.faults[(route, fault.value)] == 2
    assert fake.requests["create"] == 3
    assert_no_leaks(backend, fake)
    if (route, fault) == ("create", Fault.LOST_RESPONSE):
        # Both sandboxes whose create answer was lost were found by their tag and killed.
        assert backend.stats()["sandbox/reaped"] == 2 and fake.created == 3


ABSORBED_BY_SDK = [
    # Data plane 401 or 503: the SDK re-activates the sandbox and resends once.
    ("write", Fault.UNAVAILABLE, "activate", 1),
    ("exec", Fault.UNAVAILABLE, "activate", 1),
    ("exec", Fault.UNAUTHORIZED, "activate", 1),
    # DELETE is idempotent: the SDK retries 429 and 502-504 itself.
    ("kill", Fault.UNAVAILABLE, "kill", 2),
    ("kill", Fault.RATE_LIMITED, "kill", 2),
]


@pytest.mark.parametrize(
    ("route", "fault", "extra_route", "extra_requests"),
    ABSORBED_BY_SDK,
    ids=[f"{r}-{f.value}" for r, f, _, _ in ABSORBED_BY_SDK],
)
def test_faults_the_sdk_absorbs_cost_no_retry_of_ours(
    make_backend, route: str, fault: Fault, extra_route: str, extra_requests: int
) -> None:
    with FakeSuperserve(retry_after_s=0) as fake:
        fake.inject(route, fault)
        backend = make_backend(fake)
        [result] = score(backend, [PRINT_42])
    assert_42(result)
    assert backend.stats()["sandbox/retries"] == 0
    assert fake.requests[extra_route] == extra_requests
    assert_no_leaks(backend, fake)


def test_kill_is_retried_until_the_sandbox_is_gone(make_backend) -> None:
    with FakeSuperserve() as fake:
        fake.inject("kill", Fault.SERVER_ERROR, times=2)
        backend = make_backend(fake)
        [result] = score(backend, [PRINT_42])
        assert_42(result)
        assert fake.requests["kill"] == 3
        assert_no_leaks(backend, fake)

        # A kill that keeps failing does not cost the program its result; aclose() kills it later.
        fake.fault_rates["kill"] = {Fault.SERVER_ERROR: 1.0}
        backend = make_backend(fake)
        [result] = asyncio.run(backend.run_many([PRINT_42]))
        assert_42(result)
        assert fake.alive == 1 and backend.stats()["sandbox/alive"] == 1
        fake.fault_rates.clear()
        asyncio.run(backend.aclose())
        assert fake.alive == 0 and backend.stats()["sandbox/alive"] == 0


def test_persistent_transient_fault_becomes_an_infra_failure(make_backend) -> None:
    with FakeSuperserve(fault_rates={"create": {Fault.SERVER_ERROR: 1.0}}) as fake:
        backend = make_backend(fake, max_retries=3)
        results = score(backend, [PRINT_42] * 3)
    assert all(r.outcome is Outcome.SANDBOX_ERROR and r.is_infra_failure for r in results)
    assert "ServerError" in results[0].error and "4 attempts" in results[0].error
    stats = backend.stats()
    assert (stats["sandbox/infra_failures"], stats["sandbox/retries"]) == (3, 9)
    assert fake.requests["create"] == 12
    assert_no_leaks(backend, fake)

    # Faults after the sandbox exists: every attempt's sandbox is killed.
    with FakeSuperserve(fault_rates={"exec": {Fault.RESET: 1.0}}) as fake:
        backend = make_backend(fake, max_retries=2)
        results = score(backend, [PRINT_42] * 2)
    assert [r.outcome for r in results] == [Outcome.SANDBOX_ERROR] * 2
    assert "Connection reset" in results[0].error
    assert fake.created == 6
    assert_no_leaks(backend, fake)


# -------------------------------------------------------------------------------- fatal faults


def test_revoked_key_mid_batch_raises_once_and_kills_the_batch(make_backend) -> None:
    # Program 0 ends at once and frees the slot for program 4, whose create is refused while
    # programs 1-3 still run and 5-7 wait for a slot.
    sleeper = py("import time; time.sleep(60)")
    programs = [PRINT_42, sleeper, sleeper, sleeper, PRINT_42, PRINT_42, PRINT_42, PRINT_42]
    with FakeSuperserve() as fake:
        fake.inject("create", Fault.UNAUTHORIZED, times=99, after=4)
        backend = make_backend(fake, max_concurrency=4, programs_per_sandbox=1)

        async def run() -> tuple[BaseException, int, float]:
            started = time.monotonic()
            with pytest.raises(SandboxFatalError) as raised:
                await backend.run_many(programs)
            elapsed, alive_after, creates = time.monotonic() - started, fake.alive, fake.requests["create"]
            with pytest.raises(SandboxFatalError):  # later calls fail at once, creating nothing
                await backend.run_many([PRINT_42])
            assert fake.requests["create"] == creates == 5
            assert alive_after == 0
            await backend.aclose()
            return raised.value, elapsed

        error, elapsed = asyncio.run(run())

    assert type(error) is SandboxFatalError  # one error, not an ExceptionGroup
    assert f"rejected the API key in {KEY_ENV} (HTTP 401" in str(error)
    assert isinstance(error.__cause__, AuthenticationError)
    assert elapsed < 10  # the sleepers were cancelled, not waited for
    assert_no_leaks(backend, fake)


def test_wrong_key_fails_with_one_clear_error(make_backend) -> None:
    with FakeSuperserve(api_key="ss_live_the-real-one") as fake:
        backend = make_backend(fake, max_concurrency=4)
        with pytest.raises(SandboxFatalError, match="Superserve rejected the API key") as raised:
            score(backend, [PRINT_42] * 6)
    assert len(traceback.format_exception(raised.value)) < 60  # not a wall of tracebacks
    assert fake.created == 0


def test_missing_api_key_fails_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = SuperserveSandboxConfig(api_key_env=KEY_ENV)
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(SandboxFatalError, match=f"API key in the environment variable {KEY_ENV}"):
        build.sandbox(cfg)
    monkeypatch.setenv(KEY_ENV, "   ")
    with pytest.raises(SandboxFatalError, match=re.escape("docs.superserve.ai/api-key")):
        build.sandbox(cfg)


def test_api_key_never_appears_in_logs_errors_stats_or_config(make_backend, caplog, monkeypatch) -> None:
    secret = f"ss_live_{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    with FakeSuperserve(api_key=secret, fault_rates={"create": {Fault.RATE_LIMITED: 0.3}}) as fake:
        fake.inject("kill", Fault.SERVER_ERROR, times=5)
        fake.inject("exec", Fault.LOST_RESPONSE)
        monkeypatch.setenv(KEY_ENV, secret)
        backend = make_backend(fake, max_retries=1)
        results = score(backend, [PRINT_42, py("import os; print(os.environ)")] * 2)
        fake.inject("create", Fault.UNAUTHORIZED, times=99)
        with pytest.raises(SandboxFatalError) as raised:
            score(make_backend(fake), [PRINT_42])
        sandbox_side = repr([(s.request, s.files, s.commands) for s in fake.sandboxes.values()])

    seen = [
        caplog.text,
        repr(backend),
        str(backend.stats()),
        "".join(traceback.format_exception(raised.value)),
        repr(results),
        sandbox_side,  # the key never enters a sandbox
        OmegaConf.to_yaml(OmegaConf.structured(backend.cfg)),
    ]
    assert "superserve" in caplog.text  # the logs were captured
    assert not [text for text in seen if secret in text]


# ------------------------------------------------------------------ concurrency and cancellation


def test_cap_holds_across_threads_and_event_loops(make_backend) -> None:
    cap = 3
    # The fake refuses a create past the cap, so exceeding it would show as a rejection too.
    with FakeSuperserve(latency={"create": 0.05, "exec": 0.05}, max_sandboxes=cap) as fake:
        backend = make_backend(fake, max_concurrency=cap)
        batch = [PRINT_42] * 4

        # TRL runs async reward functions on an event loop in a daemon thread...
        trl_loop = asyncio.new_event_loop()
        threading.Thread(target=trl_loop.run_forever, daemon=True).start()
        futures = [asyncio.run_coroutine_threadsafe(backend.run_many(batch), trl_loop) for _ in range(2)]
        # ...while other callers use asyncio.run in their own threads.
        with ThreadPoolExecutor(2) as pool:
            threads = [pool.submit(asyncio.run, backend.run_many(batch)) for _ in range(2)]
            results = [r for f in futures + threads for r in f.result(timeout=60)]
        trl_loop.call_soon_threadsafe(trl_loop.stop)
        asyncio.run(backend.aclose())

    assert len(results) == 16
    for result in results:
        assert_42(result)
    assert fake.max_alive == cap and backend.stats()["sandbox/max_alive"] == cap
    assert fake.rejected_by_limit == 0
    assert_no_leaks(backend, fake)


def test_cancelled_call_kills_its_sandboxes(make_backend) -> None:
    async def cancel_when(backend: SuperserveSandbox, ready, programs: list[Program]) -> None:
        task = asyncio.create_task(backend.run_many(programs))
        deadline = time.monotonic() + 20
        while not ready():
            assert time.monotonic() < deadline and not task.done(), "the programs never got that far"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fake.alive == 0  # before aclose(): the cancelled call cleaned up after itself
        await backend.aclose()

    # Cancelled while the programs run.
    with FakeSuperserve(latency={"exec": 30}) as fake:
        backend = make_backend(fake, max_concurrency=4, programs_per_sandbox=1)
        asyncio.run(cancel_when(backend, lambda: fake.executed >= 4, [PRINT_42] * 6))
        assert_no_leaks(backend, fake)
        assert fake.created == 4

    # Cancelled while the creates are in flight: the server made the sandboxes, we never got their ids.
    with FakeSuperserve(latency={"create": 30}) as fake:
        backend = make_backend(fake, max_concurrency=4, programs_per_sandbox=1)
        asyncio.run(cancel_when(backend, lambda: fake.created >= 4, [PRINT_42] * 6))
        assert backend.stats()["sandbox/reaped"] == 4
        assert_no_leaks(backend, fake)

    # Chunks: cancelled while their runners run.
    with FakeSuperserve(latency={"exec": 30}) as fake:
        backend = make_backend(fake, max_concurrency=2)
        asyncio.run(cancel_when(backend, lambda: fake.executed >= 2, [PRINT_42] * 6))
        assert_no_leaks(backend, fake)
        assert fake.created == 2 and backend.stats()["sandbox/chunks"] == 2


CTRL_C_SCRIPT = """
import asyncio, atexit, os, signal, sys, threading, time
from codegrpo.config.sandbox import SuperserveSandboxConfig
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve
from codegrpo.sandbox.base import Program
from codegrpo.sandbox.superserve import SuperserveSandbox

# Python's own Ctrl-C, as at a terminal: a shell's background job inherits SIGINT ignored, and Python keeps that.
signal.signal(signal.SIGINT, signal.default_int_handler)
fake = FakeSuperserve(latency={"exec": 60}).start()  # still serving while the exit hooks run
atexit.register(lambda: print(f"created={fake.created} killed={fake.killed} alive={fake.alive}", flush=True))
os.environ["KEY"] = FAKE_API_KEY
backend = SuperserveSandbox(SuperserveSandboxConfig(api_key_env="KEY", base_url=fake.base_url, max_concurrency=3))

# Like TRL: async rewards run on a loop in a daemon thread, stopped by an exit hook, while the
# main thread blocks on the result.
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()
stop_loop = lambda: loop.call_soon_threadsafe(loop.stop)
if sys.argv[1] == "loop-stops-last":
    atexit.register(stop_loop)
future = asyncio.run_coroutine_threadsafe(backend.run_many([Program("print(1)")] * 5), loop)
if sys.argv[1] == "loop-stops-first":
    while not backend.stats()["sandbox/created"]:
        time.sleep(0.01)
    atexit.register(stop_loop)

def press_ctrl_c():
    while fake.executed < 3:  # the programs ran; their answers are on the way
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=press_ctrl_c, daemon=True).start()
future.result()
"""


@pytest.mark.slow
@pytest.mark.parametrize("order", ["loop-stops-last", "loop-stops-first"])
def test_ctrl_c_during_training_kills_every_sandbox(tmp_path: Path, order: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(CTRL_C_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(script), order], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert "KeyboardInterrupt" in done.stderr, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    counts = dict(field.split("=") for field in last.split())
    assert int(counts["created"]) >= 3 and counts["killed"] == counts["created"], done.stdout + done.stderr[-4000:]
    assert counts["alive"] == "0"


# ----------------------------------------------------------------------------------- the fake


def test_fake_serves_the_sync_sdk_as_the_guide_uses_it() -> None:
    def run_in_sandbox(source: str) -> str:
        return run_as_the_guide(source, fake.base_url)

    latency = {"create": 0.2, "write": 0.05, "exec": 0.05, "kill": 0.05}
    with FakeSuperserve(latency=latency) as fake:
        started = time.monotonic()
        assert run_in_sandbox("print(1)") == "1\n"
        assert time.monotonic() - started >= sum(latency.values())
        with ThreadPoolExecutor(max_workers=4) as pool:
            outputs = list(pool.map(run_in_sandbox, [f"print({i})" for i in range(6)]))
    assert outputs == [f"{i}\n" for i in range(6)]
    assert dict(fake.requests) == {"create": 7, "write": 7, "exec": 7, "kill": 7}
    assert (fake.created, fake.killed, fake.alive) == (7, 7, 0)
    assert 1 < fake.max_alive <= 4


FAULT_TO_SDK_ERROR = [
    (Fault.RATE_LIMITED, RateLimitError, "rate_limited"),
    (Fault.TOO_MANY_SANDBOXES, RateLimitError, "too_many_sandboxes"),
    (Fault.SERVER_ERROR, ServerError, "internal_error"),
    (Fault.UNAVAILABLE, ServerError, "service_unavailable"),
    (Fault.UNAUTHORIZED, AuthenticationError, "unauthorized"),
    (Fault.TIMEOUT, SandboxTimeoutError, None),
    (Fault.RESET, SandboxError, None),
]


def test_fake_faults_reach_the_sdk_as_its_own_exceptions() -> None:
    async def create() -> AsyncSandbox:
        return await AsyncSandbox.create(name="t", api_key=FAKE_API_KEY, base_url=fake.base_url)

    with FakeSuperserve(max_sandboxes=1) as fake:
        for fault, error_type, code in FAULT_TO_SDK_ERROR:
            fake.inject("create", fault)
            with pytest.raises(error_type) as raised:
                asyncio.run(create())
            assert raised.value.code == code, fault
        with pytest.raises(SandboxError) as raised:
            fake.inject("create", Fault.RESET)
            asyncio.run(create())
        assert isinstance(raised.value.__cause__, httpx.ReadError)

        asyncio.run(create())  # the team limit is one live sandbox
        with pytest.raises(RateLimitError) as raised:
            asyncio.run(create())
        assert (raised.value.code, fake.rejected_by_limit) == ("too_many_sandboxes", 1)

        with pytest.raises(httpx.ConnectError, match="refuses"):  # never the real service
            httpx.get("https://console.superserve.ai/")
