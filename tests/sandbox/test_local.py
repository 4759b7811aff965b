"""The local bubblewrap sandbox: outcomes, limits, isolation of the environment and the filesystem, cleanup.

Every test runs real programs in real sandboxes. The attack suite (test_attacks.py) goes through the
reward; these tests look at the RunResult itself. Shared helpers are in tests/helpers/sandbox.py.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import shutil
import signal
import string
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxFatalError, format_limits
from codegrpo.sandbox.cgroups import PREFIX, find_hierarchies
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import (
    PYTHON,
    MiB,
    assert_nothing_left,
    child_pids,
    children_of,
    daemon_source,
    make_sandbox,
    open_fds,
    processes_with,
    run_source,
)

pytestmark = run_if(bwrap=True)


# -- fixtures ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["warm", "cold"])
def kind(request) -> str:
    """Every sandbox test runs against warm workers (the default) and a fresh sandbox per program."""
    return request.param


@pytest.fixture(scope="module")
def sandbox(kind):
    box = make_sandbox(warm=kind == "warm")
    yield box
    asyncio.run(box.aclose())


@pytest.fixture(scope="module")
def fallback(kind):
    """The same sandbox without cgroups, as on a machine where none is writable."""
    box = make_sandbox(use_cgroups=False, warm=kind == "warm")
    yield box
    asyncio.run(box.aclose())


def needs_cgroups(box) -> None:
    if not box.enforcement["memory"].startswith("cgroup") or not box.enforcement["processes"].startswith("cgroup"):
        pytest.skip(f"no writable memory and pids cgroups here: {box.enforcement}")


# -- outcomes ------------------------------------------------------------------------------------------


def test_normal_program_output_and_exit_code(sandbox):
    result = run_source(sandbox, "import sys; print('hello'); print('oops', file=sys.stderr); sys.exit(3)")
    assert (result.outcome, result.exit_code) == (Outcome.EXITED, 3)
    assert (result.stdout, result.stderr) == ("hello\n", "oops\n")
    assert not result.is_infra_failure
    assert 0 < result.duration_s < 5


def test_program_errors_are_never_sandbox_errors(sandbox):
    # A program that imitates bwrap's messages or its launcher's exit codes is still only itself.
    for code in (1, 125, 126, 127):
        source = f"import sys; print('bwrap: Can\\'t mount proc', file=sys.stderr); sys.exit({code})"
        result = run_source(sandbox, source)
        assert (result.outcome, result.exit_code) == (Outcome.EXITED, code)
    result = run_source(sandbox, "import os; os.close(0); os.close(1); os.close(2); os._exit(0)")
    assert (result.outcome, result.exit_code) == (Outcome.EXITED, 0)


def test_setup_failures_are_sandbox_errors(sandbox):
    # bwrap cannot create /tmp/ (an empty file name)
    bad_file = asyncio.run(sandbox.run(Program("print(1)", timeout_s=5.0, filename="", command=PYTHON)))
    assert bad_file.outcome is Outcome.SANDBOX_ERROR and bad_file.is_infra_failure
    assert "could not be started" in bad_file.error and "Is a directory: '/tmp/'" in bad_file.error
    no_interpreter = run_source(sandbox, "print(1)", command=("no-such-interpreter", "/tmp/solution.py"))
    assert no_interpreter.outcome is Outcome.SANDBOX_ERROR
    assert "no-such-interpreter" in no_interpreter.error


def test_a_sandbox_that_cannot_work_fails_at_construction():
    with pytest.raises(SandboxFatalError, match=r"^sandbox\.bwrap=no-such-bwrap: no bubblewrap there .*apt-get"):
        make_sandbox(bwrap="no-such-bwrap")  # the path named: bubblewrap may well be installed elsewhere
    with pytest.raises(SandboxFatalError, match="cannot run programs"):
        make_sandbox(extra_ro_paths=[f"/no/such/path-{uuid.uuid4().hex}"])


def test_recursion_depth_is_a_cold_interpreters(sandbox):
    # A warm worker runs programs some frames deep; the limit they see and reach must be the same.
    source = """
        import sys
        def depth(n):
            return 0 if n == 0 else 1 + depth(n - 1)
        def deepest(start):
            reached = 0
            for n in range(start, start + 30):
                try:
                    depth(n)
                except RecursionError:
                    break
                reached = n
            return reached
        print(sys.getrecursionlimit(), deepest(980))
        sys.setrecursionlimit(3000)
        print(sys.getrecursionlimit(), deepest(2980))
    """
    assert run_source(sandbox, source).stdout == "1000 997\n3000 2997\n"


def test_killed_by_a_signal_is_signaled(sandbox):
    result = run_source(sandbox, "import ctypes; ctypes.string_at(0)")
    assert (result.outcome, result.exit_code) == (Outcome.SIGNALED, 128 + 11)


def test_pid_1_cannot_be_killed_from_inside(sandbox, kind):
    source = """
        import os, signal
        if os.fork() == 0:
            os.kill(1, signal.SIGKILL)
            os.kill(-1, signal.SIGKILL)
            os._exit(0)
        os.wait()
        os.kill(os.getpid(), signal.SIGKILL)
        print(os.getpid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    """
    # The program is pid 1 of its own pid namespace, warm or cold: nothing of bwrap's or of a warm
    # worker's is in it, and a signal to pid 1 from inside is dropped.
    retired = sandbox.stats().get("sandbox/warm_retired")
    assert run_source(sandbox, source).stdout == "1 [1]\n"
    assert sandbox.stats().get("sandbox/warm_retired") == retired  # no worker was lost


@pytest.mark.parametrize("mode", ["cgroup", "fallback"])
def test_timeout_is_a_sigkill_of_everything(mode, sandbox, fallback):
    source = """
        import os, signal, time
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGXCPU):
            signal.signal(sig, signal.SIG_IGN)
        os.fork()
        while True:
            time.sleep(0.01)
    """
    fds = open_fds()
    started = time.monotonic()
    result = run_source(sandbox if mode == "cgroup" else fallback, source, timeout_s=1.0)
    assert result.outcome is Outcome.TIMEOUT and result.exit_code is None
    assert 1.0 <= time.monotonic() - started < 3.0
    assert_nothing_left(fds)


@pytest.mark.parametrize("mode", ["cgroup", "fallback"])
def test_no_process_outlives_a_timeout(mode, sandbox, fallback):
    marker = f"codegrpo-sleeper-{uuid.uuid4().hex}"
    source = f"""
        import os, sys, time
        for _ in range(12):
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", "{marker}"])
        time.sleep(600)
    """
    result = run_source(sandbox if mode == "cgroup" else fallback, source, timeout_s=1.0)
    assert result.outcome is Outcome.TIMEOUT
    assert processes_with(marker) == []  # at once: the whole sandbox is gone before the result returns


def test_cpu_time_limit_is_a_second_past_the_wall_timeout(sandbox):
    limits = run_source(sandbox, "import resource; print(resource.getrlimit(resource.RLIMIT_CPU))", timeout_s=2.5)
    assert limits.stdout.strip() == f"({math.ceil(2.5) + 1}, {math.ceil(2.5) + 1})"
    # Past its CPU time a program gets SIGKILL from the kernel, whatever the wall clock says.
    spin = "import resource; resource.setrlimit(resource.RLIMIT_CPU, (1, 1))\nwhile True: pass"
    result = run_source(sandbox, spin, timeout_s=8.0)
    assert (result.outcome, result.exit_code) == (Outcome.SIGNALED, 128 + 9)
    assert result.duration_s < 7


# -- limits --------------------------------------------------------------------------------------------


def test_rlimits_inside_the_sandbox(sandbox, fallback, kind):
    source = """
        import resource
        for name in ("FSIZE", "NOFILE", "CORE", "AS", "NPROC"):
            print(name, resource.getrlimit(getattr(resource, "RLIMIT_" + name))[0])
    """
    cfg = LocalSandboxConfig()
    expected = {"FSIZE": cfg.file_size_limit_bytes, "NOFILE": cfg.open_files, "CORE": 0}
    for box in (sandbox, fallback):
        seen = dict(line.split() for line in run_source(box, source).stdout.splitlines())
        assert {k: int(v) for k, v in seen.items() if k in expected} == expected
    seen = dict(line.split() for line in run_source(fallback, source).stdout.splitlines())
    assert int(seen["AS"]) == cfg.memory_mb << 20  # the fallbacks
    assert int(seen["NPROC"]) == cfg.max_processes + 1  # the worker, the sandbox's pid 1, counts too


def test_file_size_limit(sandbox):
    source = """
        try:
            open("/tmp/big", "wb").write(b"x" * (3 << 20))
        except OSError as error:
            print(error.errno)
        print(open("/tmp/ok", "wb").write(b"x" * (2 << 20)))
    """
    assert run_source(sandbox, source).stdout.split() == ["27", str(2 << 20)]  # EFBIG, then 2 MiB is fine


def test_tmpfs_size_limit(sandbox):
    source = """
        written = 0
        try:
            for i in range(100):
                with open(f"/tmp/f{i}", "wb") as handle:
                    written += handle.write(b"x" * (1 << 20))
        except OSError as error:
            print(error.errno, written)
    """
    errno, written = run_source(sandbox, source).stdout.split()
    assert errno == "28"  # ENOSPC
    assert 60 * MiB <= int(written) <= LocalSandboxConfig().tmpfs_limit_bytes


def test_open_files_limit(sandbox):
    source = """
        files = []
        try:
            while True:
                files.append(open("/dev/null"))
        except OSError as error:
            print(error.errno, len(files))
    """
    errno, count = run_source(sandbox, source).stdout.split()
    assert errno == "24" and int(count) < LocalSandboxConfig().open_files  # EMFILE


@pytest.mark.parametrize("mode", ["cgroup", "fallback"])
def test_memory_limit(mode, sandbox, fallback):
    box = sandbox if mode == "cgroup" else fallback
    if mode == "cgroup":
        needs_cgroups(box)
    result = run_source(box, "chunks = []\nwhile True: chunks.append(bytearray(16 << 20))", timeout_s=10)
    assert result.outcome is Outcome.MEMORY_LIMIT
    assert result.duration_s < 8
    assert run_source(box, "x = bytearray(600 << 20); print(len(x) >> 20)").stdout == "600\n"


def test_process_and_thread_limits(sandbox):
    needs_cgroups(sandbox)
    forks = """
        import os, time
        count = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                count += 1
        except OSError:
            print(count)
    """
    threads = """
        import threading, time
        count = 0
        try:
            while True:
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                count += 1
        except RuntimeError:
            print(count)
    """
    # bwrap outside the sandbox and the program itself count too.
    limit = LocalSandboxConfig().max_processes
    assert int(run_source(sandbox, forks).stdout) == limit - 2
    assert int(run_source(sandbox, threads).stdout) == limit - 2


def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM, the peak resident set size


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) << 10


def test_output_is_capped_and_the_trainer_stays_flat(sandbox):
    cfg = LocalSandboxConfig()
    rss = int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) << 10
    _peak_rss_reset()
    result = run_source(sandbox, "import sys\nsys.stdout.write('x' * 100_000_000)\nsys.stdout.flush()")
    assert result.outcome is Outcome.OUTPUT_LIMIT and result.exit_code is None
    assert len(result.stdout) == cfg.stdout_limit_bytes
    assert _peak_rss() - rss < 40 * MiB
    result = run_source(sandbox, "import sys\nwhile True: sys.stderr.write('y' * 4096)")
    assert result.outcome is Outcome.OUTPUT_LIMIT
    assert len(result.stderr) == cfg.stderr_limit_bytes and set(result.stderr) == {"y"}
    exact = run_source(sandbox, f"import sys; sys.stdout.write('z' * {cfg.stdout_limit_bytes})")
    assert exact.outcome is Outcome.EXITED and len(exact.stdout) == cfg.stdout_limit_bytes


def test_stdin_is_empty(sandbox):
    source = """
        import os, sys
        print(repr(sys.stdin.read()), os.read(0, 10))
        try:
            open("/dev/tty")
        except OSError as error:
            print("tty", error.errno)
    """
    result = run_source(sandbox, source, timeout_s=3)
    assert result.stdout.splitlines() == ["'' b''", "tty 6"]  # ENXIO: no controlling terminal


# -- isolation -----------------------------------------------------------------------------------------


def test_environment_is_the_allowlist(sandbox, monkeypatch):
    secret = f"sekret-{uuid.uuid4().hex}"
    for name in ("WANDB_API_KEY", "SUPERSERVE_API_KEY", "HF_TOKEN", "PYTHONPATH"):
        monkeypatch.setenv(name, secret)
    source = """
        import os
        print(sorted(os.environ.items()))
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    print(pid, open(f"/proc/{pid}/environ", "rb").read())
                except OSError as error:
                    print(pid, error)
    """
    result = run_source(sandbox, source)
    assert secret not in result.stdout + result.stderr
    env = eval(result.stdout.splitlines()[0])
    names = {name for name, _ in env}
    assert names <= {"PATH", "HOME", "LANG", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PWD"}
    assert dict(env)["HOME"] == "/tmp" and dict(env)["OMP_NUM_THREADS"] == "1"


def test_filesystem_view(sandbox):
    repo = Path(__file__).resolve().parents[2]
    source = f"""
        import os, socket, sys
        print(sorted(os.listdir("/")), os.listdir("/tmp"), socket.gethostname(), os.getcwd())
        print(os.path.exists({str(repo)!r}), os.path.exists("/etc"), os.path.exists("/sys"), os.path.exists("/home"))
        try:
            import pytest
            print("third-party visible")
        except ImportError:
            print("stdlib only")
    """
    lines = run_source(sandbox, source).stdout.splitlines()
    assert lines[0].startswith("['bin', 'dev', 'lib") and "['solution.py'] sandbox /tmp" in lines[0]
    assert lines[1:] == ["False False False False", "stdlib only"]


def test_only_tmp_is_writable(sandbox):
    source = """
        import os, sys, uuid
        name = "planted-" + uuid.uuid4().hex
        writable = []
        for directory in ["/", "/usr", "/usr/lib", "/bin", "/dev", "/dev/shm", "/proc", "/root", sys.prefix,
                          os.path.dirname(os.__file__), "/tmp"] + sys.path:
            try:
                with open(os.path.join(directory, name), "w") as handle:
                    handle.write("x")
                writable.append(directory)
            except OSError:
                pass
        print(writable)
    """
    assert run_source(sandbox, source).stdout.strip() == "['/tmp']"


def test_next_run_sees_a_clean_tmp(sandbox):
    marker = uuid.uuid4().hex
    leave = f"""
        import os
        os.makedirs("/tmp/.cache/{marker}")
        open("/tmp/{marker}", "w").write("left behind")
        os.mkfifo("/tmp/fifo-{marker}")
    """
    assert run_source(sandbox, leave).exit_code == 0
    after = run_source(sandbox, "import os; print(sorted(os.listdir('/tmp')))")
    assert after.stdout.strip() == "['solution.py']"
    assert not list(Path("/tmp").glob(f"*{marker}*"))  # nor did anything reach the host's /tmp


@run_if(x86_64=True)  # the add_key number in this test is x86_64's
def test_state_a_namespace_keeps_without_a_process_is_refused(sandbox):
    # Keyrings, SysV IPC and POSIX message queues outlive every process of a sandbox: a warm worker's
    # next program could read them, so the seccomp filter refuses them in every sandbox.
    source = """
        import ctypes, ctypes.util, errno
        libc = ctypes.CDLL(None, use_errno=True)
        librt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
        libc.syscall.restype = ctypes.c_long
        attempts = {
            "add_key": lambda: libc.syscall(248, b"user", b"planted", b"answer", 6, -4),  # KEY_SPEC_USER_KEYRING
            "shmget": lambda: libc.shmget(1234, 4096, 0o1666),
            "semget": lambda: libc.semget(1234, 1, 0o1666),
            "msgget": lambda: libc.msgget(1234, 0o1666),
            "mq_open": lambda: librt.mq_open(b"/planted", 0o102, 0o600, None),
        }
        for name, attempt in attempts.items():
            ctypes.set_errno(0)
            print(name, attempt(), errno.errorcode.get(ctypes.get_errno()))
    """
    lines = run_source(sandbox, source).stdout.splitlines()
    assert lines == [f"{name} -1 EPERM" for name in ("add_key", "shmget", "semget", "msgget", "mq_open")]


@pytest.fixture(scope="module")
def one_worker():
    """A warm sandbox with a single worker, so that one program's successor runs in the same one."""
    box = make_sandbox(max_concurrency=1)
    yield box
    asyncio.run(box.aclose())


def test_a_warm_program_leaves_nothing_for_the_next(one_worker):
    marker = uuid.uuid4().hex
    plant = f"""
        import builtins, json, os, sys, threading, time
        os.makedirs("/tmp/locked/deeper")
        open("/tmp/locked/deeper/{marker}", "w").write("answer")
        os.chmod("/tmp/locked/deeper", 0)
        os.chmod("/tmp/locked", 0)
        os.symlink("/proc/self/environ", "/tmp/link-{marker}")
        os.environ["PLANTED"] = "{marker}"
        json.dumps = lambda *args, **kwargs: "{marker}"
        builtins.print = lambda *args, **kwargs: None
        sys.modules["planted_{marker}"] = sys
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
    """
    retired = one_worker.stats()["sandbox/warm_retired"]
    assert run_source(one_worker, plant).exit_code == 0
    probe = f"""
        import builtins, json, os, sys
        print(sorted(os.listdir("/tmp")), os.environ.get("PLANTED"), json.dumps([1]))
        print("planted_{marker}" in sys.modules, builtins.print.__module__)
    """
    lines = run_source(one_worker, probe).stdout.splitlines()
    assert lines == ["['solution.py'] None [1]", "False builtins"]
    procs = run_source(one_worker, "import os; print(sorted(p for p in os.listdir('/proc') if p.isdigit()))")
    assert eval(procs.stdout) == ["1"]  # this program alone, pid 1 of its namespace: the daemon is gone
    assert one_worker.stats()["sandbox/warm_retired"] == retired  # all of it was cleaned, so it was reused


MEMORY_PROBE = """
import ctypes, os, re, sys
lowered = "{upper}".lower()  # the marker only ever exists in this process as these two objects
needle = lowered.encode()
control = "".join(reversed("{reversed}")) if {control} else ""  # a copy the probe must find
buffer = bytearray(1 << 20)
data = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
own = [(id(o), id(o) + sys.getsizeof(o)) for o in (lowered, needle)] + [(data, data + len(buffer))]
hits = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
    for line in maps.read().splitlines():
        start, end = (int(x, 16) for x in line.split()[0].split("-"))
        if line.split()[1][0] != "r":
            continue
        for base in range(start, end, len(buffer) - 64):
            try:
                mem.seek(base)
                size = mem.readinto(memoryview(buffer)[: min(len(buffer), end - base)])
            except OSError:
                break
            at = buffer.find(needle, 0, size)
            while at >= 0:
                address = base + at
                if not any(low <= address < high for low, high in own) and at + len(needle) <= size:
                    hits += 1
                at = buffer.find(needle, at + 1, size)
print(hits)
"""


def test_a_later_program_finds_nothing_of_an_earlier_one_in_its_memory(one_worker):
    # The worker never holds a program's source, output or file names: its children are copies of it.
    marker = "".join(random.choice(string.ascii_lowercase) for _ in range(40))

    def probe(control: bool) -> int:
        source = MEMORY_PROBE.format(upper=marker.upper(), reversed=marker[::-1], control=control)
        return int(run_source(one_worker, source).stdout)

    assert probe(control=True) >= 1  # the probe does find a copy that is there
    plant = f"""
        import os, sys
        SECRET = "{marker}"
        print(SECRET * 100)
        print(SECRET, file=sys.stderr)
        open("/tmp/" + SECRET, "w").write(SECRET)
    """
    for _ in range(2):
        assert run_source(one_worker, plant).stdout.startswith(marker)
    assert probe(control=False) == 0


@pytest.mark.parametrize(
    "leave",
    [
        "pass",
        "os.remove(__file__)",
        "os.remove(__file__); os.mkdir(__file__); open(__file__ + '/x', 'w').close()",
        "os.link(__file__, '/tmp/again')",
        "os.chmod('/tmp', 0o700)",
        "os.chmod(__file__, 0o644); open(__file__, 'a').write('# appended')",
        "open('/tmp/.hidden', 'w').close()",
    ],
)
def test_tmp_is_emptied_whatever_a_program_leaves(one_worker, leave):
    # The worker checks an emptied /tmp by its size, not by names: every kind of leftover must be caught.
    assert run_source(one_worker, f"import os\n{leave}\n").exit_code == 0
    probe = "import os; print(sorted(os.listdir('/tmp')), oct(os.stat('/tmp').st_mode & 0o7777))"
    assert run_source(one_worker, probe).stdout == "['solution.py'] 0o1777\n"


def test_a_tree_too_deep_to_walk_goes_with_its_tmp(one_worker):
    # A tree deeper than PATH_MAX cannot be walked by path; it needs no walking: each program's /tmp is
    # a tmpfs of its own, gone with the program's mount namespace.
    deep = """
        import os
        os.chdir("/tmp")
        for _ in range(300):
            os.mkdir("d" * 20)
            os.chdir("d" * 20)
        open("answer", "w").write("left behind")
        print("planted")
    """
    stats = one_worker.stats()
    result = run_source(one_worker, deep)
    assert (result.outcome, result.stdout) == (Outcome.EXITED, "planted\n")
    assert run_source(one_worker, "import os; print(os.listdir('/tmp'))").stdout == "['solution.py']\n"
    assert one_worker.stats()["sandbox/warm_retired"] == stats["sandbox/warm_retired"]  # nothing to clean


def test_a_warm_program_cannot_reach_the_worker(one_worker):
    # The worker is outside the program's pid namespace, and none of its fds is the program's.
    source = """
        import os
        print(sorted(p for p in os.listdir("/proc") if p.isdigit()), os.readlink("/proc/1/exe"))
        print(sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
        for fd in range(3, 64):
            try:
                os.fstat(fd)
                print("open", fd)
            except OSError:
                pass
    """
    lines = run_source(one_worker, source).stdout.splitlines()
    assert lines[0].startswith("['1'] ") and "python3" in lines[0]
    assert lines[1] == "[0, 1, 2, 3]" and lines[2:] == []  # 3: the listing's own fd
    assert run_source(one_worker, "print('next')").stdout == "next\n"


def test_a_program_whose_worker_dies_runs_again_in_a_fresh_sandbox(one_worker):
    async def kill_the_worker_midway() -> RunResult:
        program = Program("import time; time.sleep(1.5); print('done')", timeout_s=10.0)
        run = asyncio.ensure_future(one_worker.run(program))
        await asyncio.sleep(0.5)
        [init] = [pid for bwrap in child_pids() for pid in children_of(bwrap) if children_of(pid)]  # the busy one
        os.kill(init, signal.SIGKILL)  # from the host: nothing inside the sandbox can do this
        return await run

    stats = one_worker.stats()
    started = time.monotonic()
    result = asyncio.run(kill_the_worker_midway())
    assert (result.outcome, result.stdout) == (Outcome.EXITED, "done\n")  # its own result, from a cold run
    assert time.monotonic() - started < 5
    after = one_worker.stats()
    assert after["sandbox/warm_retired"] == stats["sandbox/warm_retired"] + 1
    assert after["sandbox/warm_reruns"] == stats.get("sandbox/warm_reruns", 0) + 1
    assert run_source(one_worker, "print('next')").stdout == "next\n"


def test_a_command_starts_with_default_signals_and_no_capabilities(sandbox):
    status = dict(
        line.split(":\t", 1)
        for line in run_source(sandbox, "", command=("cat", "/proc/self/status")).stdout.splitlines()
        if ":\t" in line
    )
    # Signals 1-31 (32 and 33 are glibc's own, which make, for one, leaves ignored for every child).
    assert int(status["SigIgn"], 16) & 0x7FFFFFFF == 0 and int(status["CapEff"], 16) == 0
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"


def test_a_command_runs_by_exec_on_the_same_workers(one_worker):
    # In the warm interpreter (json preloaded), or as a fresh interpreter exec'd in the program's namespaces.
    probe = "import os, sys; print(os.getpid(), 'json' in sys.modules)"
    before = one_worker.stats()
    assert run_source(one_worker, probe).stdout == "1 True\n"
    for command in (("python3", "/tmp/solution.py"), ("python3", "-I", "-c", probe)):
        assert run_source(one_worker, probe, command=command).stdout == "1 False\n"
    after = one_worker.stats()
    assert after["sandbox/warm_runs"] == before["sandbox/warm_runs"] + 3
    assert after["sandbox/warm_started"] == before["sandbox/warm_started"]  # the same worker ran all three


# -- cleanup -------------------------------------------------------------------------------------------


def test_daemons_are_gone_when_the_result_returns(sandbox, fallback):
    for box in (sandbox, fallback):
        fds = open_fds()
        marker = f"codegrpo-daemon-{uuid.uuid4().hex}"
        result = run_source(box, daemon_source(marker))
        assert result.stdout == "parent done\n"
        assert_nothing_left(fds, marker)


def test_a_cancelled_run_leaves_nothing(sandbox):
    marker = f"codegrpo-cancelled-{uuid.uuid4().hex}"
    fds = open_fds()

    async def cancel_midway() -> None:
        source = daemon_source(marker).replace('print("parent done")', "import time; time.sleep(60)")
        task = asyncio.ensure_future(sandbox.run(Program(textwrap.dedent(source), timeout_s=30.0)))
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert processes_with(marker), "the daemon never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    assert_nothing_left(fds, marker)


def test_run_many_keeps_order_and_the_concurrency_cap(sandbox):
    programs = [Program(f"import time; time.sleep(0.4); print({i})", timeout_s=5.0) for i in range(6)]
    started = time.monotonic()
    results = asyncio.run(sandbox.run_many(programs))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(6)]
    assert time.monotonic() - started >= 3 * 0.4  # two at a time


def test_stats_count_outcomes():
    box = make_sandbox()
    run_source(box, "print(1)")
    run_source(box, "while True: pass", timeout_s=0.5)
    stats = box.stats()
    assert stats["sandbox/runs"] == 2 and stats["sandbox/exited"] == 1 and stats["sandbox/timeout"] == 1
    asyncio.run(box.aclose())


def _parents() -> set[Path]:
    return {p for h in find_hierarchies().values() for p in h.own.glob(f"{PREFIX}{os.getpid()}-*")}


def test_enforcement_and_aclose_removes_the_cgroups():
    before = _parents()
    box = make_sandbox()
    mine = _parents() - before
    if box.enforcement["memory"].startswith("cgroup"):
        assert mine  # a parent cgroup per hierarchy, inside this process's own cgroup
    assert run_source(box, "print(1)").stdout == "1\n"
    asyncio.run(box.aclose())
    asyncio.run(box.aclose())  # twice is fine
    assert not any(p.exists() for p in mine)
    fallback = make_sandbox(use_cgroups=False, warm=False)
    assert fallback.enforcement == {"memory": "RLIMIT_AS", "processes": f"RLIMIT_NPROC as uid {fallback.uid}"}


def test_fallback_runs_normal_programs(fallback):
    assert run_source(fallback, "import json; print(json.dumps([1, 2]))").stdout == "[1, 2]\n"


def test_the_limits_table_says_what_enforces_each(sandbox, fallback):
    for box in (sandbox, fallback):
        rows = {name: (value, how) for name, value, how in box.limits()}
        assert rows["memory"] == ("1024 MiB", box.enforcement["memory"])
        assert rows["processes"] == ("32", box.enforcement["processes"])
        assert rows["user"][0].startswith(f"uid {box.uid},") and box.uid != 0
    assert fallback.enforcement == {"memory": "RLIMIT_AS", "processes": f"RLIMIT_NPROC as uid {fallback.uid}"}
    assert "\n" in format_limits(fallback.limits()) and format_limits([]).startswith("(")


@run_if(root=True)  # only a root trainer chooses the sandbox's uid
def test_never_host_root():
    with pytest.raises(SandboxFatalError, match="host root"):
        make_sandbox(uid=0)


def test_opening_a_sandbox_runs_its_trivial_program_once():
    box = make_sandbox()  # the constructor ran the preflight, a Python program on a fresh worker
    with box:
        assert box.stats().get("sandbox/runs", 0) == 0
    if shutil.which("node"):
        box = make_sandbox()
        box.runtimes = ("node",)
        with box:
            assert box.stats()["sandbox/runs"] == 1  # another runtime is still checked on opening


@pytest.mark.parametrize("limits", ["cgroups", "rlimits"])
def test_the_least_limits_the_config_admits_still_run_a_program(limits):
    """sandbox.memory_mb, max_processes and open_files are refused below these (issue 40: memory_mb=4 was
    `the worker did not start: None:`); at them, a worker starts and a program runs."""
    from codegrpo.config.sandbox import MIN_MEMORY_MB, MIN_OPEN_FILES, MIN_PROCESSES

    box = make_sandbox(
        use_cgroups=limits == "cgroups",
        max_concurrency=1,
        memory_mb=MIN_MEMORY_MB,
        max_processes=MIN_PROCESSES,
        open_files=MIN_OPEN_FILES,
    )
    try:
        result = asyncio.run(
            box.run(Program("import json, re\nprint(json.dumps(re.findall('a', 'banana')))", "python", 10, "s.py"))
        )
    finally:
        asyncio.run(box.aclose())
    assert result.outcome is Outcome.EXITED and result.stdout == '["a", "a", "a"]\n', result


@run_if(root=True)  # only a root trainer runs the sandbox as another uid
def test_the_unreachable_python_warning_is_said_once_on_a_machine(tmp_path, monkeypatch, caplog):
    # A trainer's Python under /root: the sandbox's uid falls back to /usr/bin/python3. Said on every command,
    # the warning was noise; now once on the console, and in each job's log file.
    private = tmp_path / "root-python"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(sys, "base_prefix", str(private))
    monkeypatch.setenv("CODEGRPO_CACHE", str(tmp_path / "cache"))
    job_log = logging.FileHandler(tmp_path / "train.log")  # as Hydra's job log, beside its console handler
    logging.getLogger().addHandler(job_log)
    shown = []
    try:
        for _ in range(2):
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="codegrpo.sandbox.local"), make_sandbox():
                pass
            shown.append([r.levelno for r in caplog.records if "cannot reach this Python" in r.getMessage()])
    finally:
        logging.getLogger().removeHandler(job_log)
        job_log.close()
    assert shown == [[logging.WARNING], []]  # the console's handlers see it once
    assert (tmp_path / "train.log").read_text().count("cannot reach this Python") == 2  # the log, each time
