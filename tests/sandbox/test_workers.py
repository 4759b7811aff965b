"""codegrpo.sandbox.workers: workers (a bubblewrap sandbox whose pid 1 runs programs) and their pool: a warm worker
serves program after program, and one that failed, was cancelled or is left holding memory is never used again;
a worker that never starts is a sandbox error, not the program's. The pools here start real workers with the
local sandbox's own launch; the launches that must fail are real processes that fail."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time

import pytest

from codegrpo.harness import sandbox_source
from codegrpo.sandbox.base import Outcome, Program
from codegrpo.sandbox.workers import (
    PINNED_SLACK_BYTES,
    WORKER_PATH,
    Launch,
    Ticket,
    Worker,
    WorkerError,
    WorkerPool,
    _read_line,
    init_pidfd,
    worker_files,
)
from tests.helpers.sandbox import MiB

LIMITS = (1 << 20, 1 << 20)


@pytest.fixture
def pool(local_sandbox):
    pool = WorkerPool(2, local_sandbox._launch, LIMITS)
    yield pool
    pool.close()


def program(source: str, timeout_s: float = 5.0, **fields) -> Program:
    return Program(source, timeout_s=timeout_s, **fields)


def launch_of(script: str) -> tuple[Launch, socket.socket]:
    """A Launch whose "sandbox" is ``sh -c script``, with $STATUS its status fd and $CONTROL its control socket,
    as bubblewrap and the runner get them; and the worker's end of the control socket (for a test to speak)."""
    host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status_r, status_w = os.pipe()
    argv = ["sh", "-c", f"STATUS={status_w} CONTROL={theirs.fileno()}; {script}"]

    def close() -> None:
        os.close(status_w)
        theirs.close()

    return Launch(argv, (status_w, theirs.fileno()), None, host, status_r, close), theirs


# -- what a worker's sandbox is given --------------------------------------------------------------------------


def test_a_worker_is_given_the_runner_and_its_modules_as_sandboxes_run_them():
    files = worker_files()
    assert WORKER_PATH in files
    assert files == {f"/run/codegrpo/{name}.py": sandbox_source(name) for name in ("runner", "inprocess", "protocol")}


# -- starting a worker ---------------------------------------------------------------------------------------------


def test_the_pidfd_is_only_for_the_launchers_own_child():
    child = subprocess.Popen(["sleep", "5"])
    try:
        pidfd = init_pidfd(json.dumps({"child-pid": child.pid}).encode(), os.getpid())
        assert pidfd is not None
        os.close(pidfd)
        assert init_pidfd(json.dumps({"child-pid": child.pid}).encode(), os.getpid() + 1) is None  # not its child
        assert init_pidfd(json.dumps({"child-pid": os.getppid()}).encode(), os.getpid()) is None
        for line in (b"", b"not json", b"[]", b'{"child-pid": "x"}', b'{"other": 1}', b'{"child-pid": 999999999}'):
            assert init_pidfd(line, os.getpid()) is None, line
    finally:
        child.kill()
        child.wait()


def test_the_status_line_is_read_to_its_end_and_no_further():
    read, write = os.pipe()
    try:
        os.write(write, b'{"child-pid": 5}\nmore')
        assert _read_line(read, time.monotonic() + 1) == b'{"child-pid": 5}\n'
        assert os.read(read, 10) == b"more"
        os.write(write, b"x" * 5000)  # a line with no end stops at 4096 bytes
        assert len(_read_line(read, time.monotonic() + 1)) == 4096
    finally:
        os.close(read)
        os.close(write)


def test_reading_the_status_line_gives_up_at_its_deadline_or_its_end():
    read, write = os.pipe()
    try:
        started = time.monotonic()
        with pytest.raises(WorkerError, match="did not report"):
            _read_line(read, started + 0.2)
        assert time.monotonic() - started < 2
        os.write(write, b"half")
        os.close(write)
        write = None
        with pytest.raises(WorkerError, match="exited before"):
            _read_line(read, time.monotonic() + 1)
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def test_a_launcher_that_exits_at_once_is_a_worker_error_with_its_status():
    launch, _ = launch_of("exit 3")
    with pytest.raises(WorkerError, match="exited before starting") as raised:
        Worker(launch, LIMITS)
    assert raised.value.exit_status == 3


@pytest.mark.parametrize("ready", ["", '{"ready": false}', '{"other": true}'])
def test_a_worker_that_never_says_it_is_ready_is_a_worker_error(ready):
    script = "echo '{\"child-pid\": 1}' > /dev/fd/$STATUS; sleep 0.2"
    launch, theirs = launch_of(script)
    if ready:
        theirs.send(ready.encode())
    with pytest.raises(WorkerError, match="did not start"):
        Worker(launch, LIMITS)


def test_a_pool_whose_sandbox_cannot_start_gives_a_sandbox_error():
    pool = WorkerPool(1, lambda: launch_of("exit 5")[0], LIMITS)
    try:
        result = pool.run(program("print(1)"))
        assert result.outcome is Outcome.SANDBOX_ERROR and result.exit_code == 5
        assert "cannot start a sandbox" in result.error

        def refused() -> Launch:
            raise OSError("no more cgroups")

        broken = WorkerPool(1, refused, LIMITS)
        assert "no more cgroups" in broken.run(program("print(1)")).error
    finally:
        pool.close()


# -- running programs -------------------------------------------------------------------------------------------------


def test_a_warm_worker_runs_program_after_program(pool):
    results = [pool.run(program(f"print({index})")) for index in range(3)]
    assert [result.stdout for result in results] == ["0\n", "1\n", "2\n"]
    assert (pool.started, pool.retired, pool.runs, len(pool._idle)) == (1, 0, 3, 1)


def test_a_fresh_worker_runs_one_program_and_is_gone(pool):
    assert pool.run(program("print('fresh')"), fresh=True).stdout == "fresh\n"
    assert (pool.started, pool.runs, len(pool._idle)) == (0, 0, 0)


def test_a_fresh_run_never_takes_an_idle_warm_worker(pool):
    assert pool.run(program("print('warm')")).stdout == "warm\n"
    (warm,) = pool._idle
    assert pool.run(program("print('fresh')"), fresh=True).stdout == "fresh\n"
    assert pool._idle == [warm] and warm.alive and pool.started == 1


def test_output_past_the_pools_limit_is_an_output_limit(local_sandbox):
    pool = WorkerPool(1, local_sandbox._launch, (5, 5))
    try:
        assert pool.run(program("print('1234', end='')")).outcome is Outcome.EXITED
        over = pool.run(program("print('123456')"))
        assert over.outcome is Outcome.OUTPUT_LIMIT and over.stdout == "12345"
        assert pool.run(program("import sys\nsys.stderr.write('x' * 6)")).outcome is Outcome.OUTPUT_LIMIT
        assert pool.started == 1 and pool.retired == 0  # the worker, killed run or not, serves the next
    finally:
        pool.close()


def test_a_program_that_leaves_memory_pinned_retires_its_worker(pool, local_sandbox):
    if "memory" not in local_sandbox.enforcement or not local_sandbox.enforcement["memory"].startswith("cgroup"):
        pytest.skip("no memory cgroup here")
    # Memory kept alive by fds in flight on a socket that holds itself: charged to the worker, past the slack.
    pieces = PINNED_SLACK_BYTES // (2 * MiB) + 8
    source = f"""
import os, socket
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
pieces = []
for _ in range({pieces}):
    piece = os.memfd_create("pinned")
    os.write(piece, b"x" * (2 << 20))
    pieces.append(piece)
socket.send_fds(a, [b"x"], pieces)
socket.send_fds(a, [b"y"], [a.fileno(), b.fileno()])
print("left")
"""
    assert pool.run(program("print(1)")).stdout == "1\n"
    for _ in range(3):  # the kernel's collector of fd cycles, run by another test's sockets, may free them first
        result = pool.run(program(source))
        assert result.outcome is Outcome.EXITED and result.stdout == "left\n"  # the program's result stands
        if pool.retired:
            break
    assert (pool.started, pool.retired, len(pool._idle)) == (1, 1, 0)
    assert pool.run(program("print(2)")).stdout == "2\n" and pool.started == 2


def test_a_program_over_its_memory_is_a_memory_limit_and_the_next_is_not(local_sandbox):
    if not local_sandbox.enforcement["memory"].startswith("cgroup"):
        pytest.skip("no memory cgroup here")
    pool = WorkerPool(1, local_sandbox._launch, LIMITS)
    try:
        size = (local_sandbox.cfg.memory_mb + 64) << 20
        bomb = pool.run(program(f"b = bytearray({size})\nfor i in range(0, len(b), 4096):\n    b[i] = 1"))
        assert bomb.outcome is Outcome.MEMORY_LIMIT, bomb
        assert pool.run(program("print('next')")).outcome is Outcome.EXITED
    finally:
        pool.close()


def test_runs_above_a_failing_one_are_skipped_and_the_worker_serves_on(pool):
    source = "import sys\nprint(sys.stdin.read())"
    inputs = tuple(str(index) for index in range(12))
    result = pool.run(program(source, inputs=inputs, failed=lambda index, kept: True))  # every run fails
    assert result.runs[0].outcome is Outcome.EXITED and result.runs[0].stdout == "0\n"  # the lowest always runs
    for index, run in enumerate(result.runs):
        assert run.outcome is Outcome.SKIPPED or run.stdout == f"{index}\n", result.runs
    # All 12 run only if they were drawn in descending order (1 in 12!).
    assert any(run.outcome is Outcome.SKIPPED for run in result.runs)
    assert pool.run(program("print('next')")).stdout == "next\n" and pool.started == 1


def test_every_run_of_a_program_is_kept_by_its_index(pool):
    result = pool.run(program("import sys\nprint(sys.stdin.read() * 2)", inputs=("a", "b", "c", "d")))
    assert [run.stdout for run in result.runs] == ["aa\n", "bb\n", "cc\n", "dd\n"]


# -- cancelling and closing ------------------------------------------------------------------------------------------


def test_a_cancelled_ticket_keeps_the_program_from_starting(pool):
    ticket = Ticket()
    ticket.cancel()
    result = pool.run(program("print(1)"), ticket=ticket)
    assert result.outcome is Outcome.SANDBOX_ERROR and "cancelled before it started" in result.error


def test_cancelling_a_running_program_kills_its_worker_at_once(pool):
    ticket = Ticket()
    threading.Timer(0.3, ticket.cancel).start()
    started = time.monotonic()
    result = pool.run(program("import time\ntime.sleep(30)", timeout_s=10.0), ticket=ticket)
    assert result.outcome is Outcome.SANDBOX_ERROR and time.monotonic() - started < 3
    assert (pool.started, pool.retired, len(pool._idle)) == (1, 1, 0)  # never used again
    assert pool.run(program("print('next')")).stdout == "next\n" and pool.started == 2


def test_a_closed_pool_runs_nothing(pool):
    assert pool.run(program("print(1)")).stdout == "1\n"
    pool.close()
    pool.close()  # twice is safe
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(program("print(1)"))


def test_closing_a_worker_leaves_no_process_of_it(local_sandbox):
    worker = Worker(local_sandbox._launch(), LIMITS)
    pid = worker._process.pid
    assert worker.run(program("print(1)")).stdout == "1\n"
    worker.close()
    worker.close()
    assert not worker.alive and worker._process.returncode is not None
    assert not os.path.exists(f"/proc/{pid}")
    assert worker.run(program("print(1)")).outcome is Outcome.SANDBOX_ERROR  # a closed worker runs nothing
