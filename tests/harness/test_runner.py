"""codegrpo.harness.runner: what every run gets from the runner, the sandbox's pid 1 (local) or a chunk's batch
process (Superserve): namespaces of its own, no capabilities, the seccomp filter, its limits, a fresh /tmp and
nothing of the runner; its end at its timeout or the host's kill; and what the batch process reports. The
programs run in the real local sandbox (and the Superserve fake, for batch); the pure pieces on the host."""

from __future__ import annotations

import os
import signal
import time

import pytest

from codegrpo.harness import runner
from codegrpo.sandbox.base import Outcome, Program
from tests.helpers.sandbox import assert_nothing_left, backend_in, daemon_source, open_fds, run, run_source


def lines(result) -> list[str]:
    assert result.exit_code == 0, result
    return result.stdout.splitlines()


def status_fields(sandbox, *names: str, command=None) -> dict[str, str]:
    """Fields of the run's /proc/self/status."""
    if command is None:
        result = run_source(sandbox, "print(open('/proc/self/status').read())")
    else:
        result = run_source(sandbox, "", command=command)
    fields = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    return {name: fields[name].strip() for name in names}


CAPABILITIES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


# -- what a run is ---------------------------------------------------------------------------------------


def test_a_run_is_pid_1_of_a_namespace_where_nothing_else_lives(local_sandbox):
    source = "import os\nprint(os.getpid(), sorted(p for p in os.listdir('/proc') if p.isdigit()))"
    assert lines(run_source(local_sandbox, source)) == ["1 ['1']"]


@pytest.mark.parametrize("command", [None, ("cat", "/proc/self/status")], ids=["warm", "exec"])
def test_a_run_holds_no_capability_and_runs_under_the_seccomp_filter(local_sandbox, command):
    fields = status_fields(local_sandbox, *CAPABILITIES, "NoNewPrivs", "Seccomp", command=command)
    assert fields == dict.fromkeys(CAPABILITIES, "0000000000000000") | {"NoNewPrivs": "1", "Seccomp": "2"}


def test_a_run_cannot_make_namespaces_or_mounts_of_its_own(local_sandbox):
    source = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x00020000), os.strerror(ctypes.get_errno()))
        print(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), os.strerror(ctypes.get_errno()))
    """
    assert lines(run_source(local_sandbox, source)) == ["-1 Operation not permitted"] * 2


def test_a_run_is_refused_what_only_the_program_filter_refuses(local_sandbox):
    source = """
        import ctypes, errno, os
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.ptrace(0, 0, None, None), errno.errorcode[ctypes.get_errno()])  # PTRACE_TRACEME
        fd = os.open(__file__, os.O_RDONLY)
        try:
            os.preadv(fd, [bytearray(4)], 0, os.RWF_NOWAIT)  # would tell what is in the page cache
        except OSError as error:
            print(error.errno == errno.EOPNOTSUPP)
    """
    assert lines(run_source(local_sandbox, source)) == ["-1 EPERM", "True"]


def test_a_command_starts_with_every_signal_at_its_default(local_sandbox):
    """Every signal a program may set (signal.valid_signals): glibc keeps 32 and 33 for its threads, and an
    ignored one the host process inherited stays ignored (the test suite's process ignored 32 once)."""
    fields = status_fields(local_sandbox, "SigIgn", "SigBlk", command=("cat", "/proc/self/status"))
    settable = sum(1 << (number - 1) for number in signal.valid_signals())
    assert (int(fields["SigIgn"], 16) & settable, fields["SigBlk"]) == (0, "0000000000000000"), fields


def test_a_python_run_starts_with_a_fresh_interpreters_signal_handlers(local_sandbox):
    source = """
        import signal
        print(signal.getsignal(signal.SIGINT).__name__)
        print(signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    """
    assert lines(run_source(local_sandbox, source)) == ["default_int_handler", "True True"]


def test_a_run_finds_its_source_read_only_in_a_fresh_tmp_its_cwd(local_sandbox):
    source = """
        import os
        print(oct(os.stat(__file__).st_mode & 0o777), os.getcwd(), sorted(os.listdir("/tmp")))
        open("/tmp/left-behind", "w").write("x")
    """
    assert lines(run_source(local_sandbox, source)) == ["0o444 /tmp ['solution.py']"]
    assert lines(run_source(local_sandbox, source)) == ["0o444 /tmp ['solution.py']"]  # the last run's file is gone


def test_a_runs_tmp_is_no_larger_than_its_limit(local_sandbox):
    source = "import os\nv = os.statvfs('/tmp')\nprint(v.f_blocks * v.f_frsize)"
    assert lines(run_source(local_sandbox, source)) == [str(local_sandbox.cfg.tmpfs_limit_bytes)]


def test_a_run_gets_its_rlimits_and_a_cpu_limit_past_its_timeout(local_sandbox):
    source = """
        import resource
        for name in ("RLIMIT_CORE", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CPU"):
            print(*resource.getrlimit(getattr(resource, name)))
    """
    cfg = local_sandbox.cfg
    expected = ["0 0", f"{cfg.open_files} {cfg.open_files}"]
    expected += [f"{cfg.file_size_limit_bytes} {cfg.file_size_limit_bytes}", "4 4"]
    assert lines(run_source(local_sandbox, source, timeout_s=2.5)) == expected


def test_the_cpu_limit_is_a_second_past_the_timeout_rounded_up():
    assert [runner.cpu_limit(timeout) for timeout in (0.5, 1, 1.2, 2.0, 2.5, 10)] == [2, 2, 3, 3, 4, 11]


def test_a_run_is_the_first_the_kernel_kills_at_the_memory_limit(local_sandbox):
    assert lines(run_source(local_sandbox, "print(open('/proc/self/oom_score_adj').read().strip())")) == ["1000"]


def test_a_run_sees_only_the_sandboxs_environment(local_sandbox):
    source = "import os\nprint(sorted(os.environ))"
    expected = str(sorted(["HOME", "LANG", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PATH", "PWD"]))
    assert lines(run_source(local_sandbox, source)) == [expected]


def test_a_run_has_its_loopback_up_and_no_other_network(local_sandbox):
    source = """
        import socket
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=1).close()
        print([name for _, name in socket.if_nameindex()])
    """
    assert lines(run_source(local_sandbox, source)) == ["['lo']"]


def test_a_python_run_cannot_import_the_runners_modules(local_sandbox):
    source = """
        import sys
        print([name for name in ("runner", "inprocess", "protocol") if name in sys.modules])
        for name in ("inprocess", "protocol"):
            try:
                __import__(name)
            except ImportError:
                print("none")
    """
    assert lines(run_source(local_sandbox, source)) == ["[]", "none", "none"]


# -- a run's end -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["while True:\n    pass", "import time\ntime.sleep(30)"], ids=["cpu", "sleep"])
def test_a_run_past_its_timeout_is_killed_and_timed_out(local_sandbox, source):
    started = time.monotonic()
    result = run_source(local_sandbox, source, timeout_s=1.0)
    assert result.outcome is Outcome.TIMEOUT and time.monotonic() - started < 4
    assert 1.0 <= result.duration_s < 1.9  # at its timeout, not at the CPU limit's backstop (2 s)


def test_everything_a_run_started_dies_with_it(local_sandbox):
    fds = open_fds()
    marker = f"codegrpo-runner-daemon-{os.getpid()}"
    assert lines(run_source(local_sandbox, daemon_source(marker))) == ["parent done"]
    assert_nothing_left(fds, marker)


@pytest.mark.parametrize("command", [None, ("python3", "-I", "/tmp/solution.py")], ids=["warm", "exec"])
def test_a_run_killed_by_a_signal_reports_128_plus_it(local_sandbox, command):
    result = run_source(local_sandbox, "import ctypes\nctypes.string_at(0)", command=command)  # SIGSEGV
    assert (result.outcome, result.exit_code) == (Outcome.SIGNALED, 128 + 11), result


def test_a_command_not_on_path_is_the_sandboxs_error_not_the_programs(local_sandbox):
    for command in (("no-such-program",), ("/tmp/solution.py",)):  # not found; not executable
        result = run_source(local_sandbox, "print(1)", command=command)
        assert result.outcome is Outcome.SANDBOX_ERROR and "on PATH" in result.error, result


def test_output_past_its_limit_ends_the_run_and_the_worker_runs_the_next(local_sandbox):
    limit = local_sandbox.cfg.stdout_limit_bytes
    result = run_source(local_sandbox, f"import sys\nsys.stdout.write('x' * {limit + 1})\nimport time\ntime.sleep(30)")
    assert result.outcome is Outcome.OUTPUT_LIMIT
    assert lines(run_source(local_sandbox, "print('next')")) == ["next"]


def test_the_budget_ends_a_programs_runs_at_its_end(local_sandbox):
    program = Program("while True:\n    pass", timeout_s=2.0, inputs=("a", "b", "c"), budget_s=0.5)
    started = time.monotonic()
    (result,) = run(local_sandbox.run_many([program]))
    assert time.monotonic() - started < 3  # 6 s of timeouts without the budget (room for a busy machine)
    assert [run.outcome for run in result.runs] == [Outcome.TIMEOUT] * 3 and all(r.budget_cut for r in result.runs)


def test_each_run_of_a_program_reads_its_own_input_in_its_own_tmp(local_sandbox):
    source = 'import os, sys\nprint(sys.stdin.read(), sorted(os.listdir("/tmp")))\nopen("/tmp/seen", "w").write("x")'
    program = Program(source, timeout_s=2.0, inputs=("first", "second", ""))
    (result,) = run(local_sandbox.run_many([program]))
    assert [run.stdout for run in result.runs] == [f"{text} ['solution.py']\n" for text in ("first", "second", "")]


# -- the batch process (Superserve) ------------------------------------------------------------------------------


def test_a_chunks_runs_come_back_each_with_its_own_output_by_index():
    source = "import os, sys\nprint(sys.stdin.read()[::-1], os.getpid(), sorted(os.listdir('/tmp')))"
    inputs = ("ab", "é\n", "z" * 10)
    with backend_in("superserve") as box:
        (result,) = run(box.run_many([Program(source, timeout_s=2.0, inputs=inputs)]))
    expected = [f"{text[::-1]} 1 ['solution.py']\n" for text in inputs]
    assert [(run.outcome, run.stdout) for run in result.runs] == [(Outcome.EXITED, text) for text in expected]


def test_run_uids_are_distinct_and_drawn_from_the_span():
    uids = runner.run_uids(50)
    assert len(set(uids)) == 50
    assert all(runner.FIRST_UID <= uid < runner.FIRST_UID + runner.UID_SPAN for uid in uids)


def batch_run(stdout: str, over: bool = False) -> dict:
    return {"exit_code": 0, "timed_out": False, "budget_cut": False, "over_limit": over, "stdout": stdout}


def test_fit_drops_the_largest_outputs_first_until_the_document_fits():
    import json

    runs = [batch_run("a" * 10) | {"stderr": ""}, batch_run("b" * 1000) | {"stderr": ""}]
    runs.append(batch_run("c" * 500) | {"stderr": "d" * 100})
    size = len(json.dumps([{"runs": runs}]))
    runner.fit(runs, size - 900)
    assert [(run["stdout"][:1], run["over_limit"]) for run in runs] == [("a", False), ("", True), ("c", False)]
    assert len(json.dumps([{"runs": runs}])) <= size - 900
    runner.fit(runs, 0)
    assert all(run["stdout"] == run["stderr"] == "" and run["over_limit"] for run in runs)


def test_fit_leaves_a_document_that_fits_as_it_is():
    import json

    runs = [batch_run("a" * 10) | {"stderr": "e"}]
    runner.fit(runs, len(json.dumps([{"runs": runs}])))
    assert runs == [batch_run("a" * 10) | {"stderr": "e"}]


def test_copy_copies_all_of_a_source_past_one_chunk_by_position():
    source, target = os.memfd_create("source"), os.memfd_create("target")
    try:
        data = os.urandom(runner.COPY_CHUNK * 2 + 7)
        os.write(source, data)  # its offset is now at the end: copy reads by position
        runner.copy(source, target)
        assert os.pread(target, len(data) + 1, 0) == data
    finally:
        os.close(source)
        os.close(target)
