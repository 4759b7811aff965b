"""Workers for the local sandbox: a bubblewrap sandbox whose pid 1 runs programs, a fresh process each.

Every local program runs on a worker. Its sandbox's pid 1 is a Python (``codegrpo/harness/runner.py``)
that forks a child from its pristine self for each program, in fresh pid, mount (/tmp, /proc), UTS, IPC
and network namespaces of the program's own, and kills everything left once the program is over
(docs/security.md has the guarantees). Starting bubblewrap, joining a cgroup and starting Python cost
about 70 ms, far more than most programs run: a warm worker pays that once for many programs, a fresh
one for a single program. A worker that still holds memory after a program, breaks its protocol or
dies is thrown away, and a program it could not run to the end is run again on a fresh worker by the
caller.

Workers are driven from threads with blocking sockets and pipes, so a pool serves any event loop: TRL scores
async rewards on its own loop thread, and the commands use asyncio.run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from codegrpo.harness.protocol import ProtocolError, close_all, exchange, receive
from codegrpo.harness.protocol import runs as protocol_runs
from codegrpo.sandbox.base import (
    SKIPPED_RUN,
    Outcome,
    Program,
    RunResult,
    classify,
    program_result,
    runner_sources,
)
from codegrpo.sandbox.cgroups import RunCgroup

log = logging.getLogger(__name__)

HARNESS_DIR = "/run/codegrpo"  # outside /tmp, which each program gets afresh
WORKER_PATH = f"{HARNESS_DIR}/runner.py"
# Held in the sandbox's own user namespace only, by pid 1, to give each program fresh namespaces, mount
# its /tmp and /proc, and bring its loopback up; each program's process drops them all before it runs.
WORKER_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETPCAP")
_START_TIMEOUT_S = 30.0
_STOP_S = 2.0
# Memory a worker may still hold after a program (above what it held when it started) and be reused.
PINNED_SLACK_BYTES = 32 << 20


def worker_files() -> dict[str, str]:
    """The runner and its modules, by their paths in the sandbox."""
    return {f"{HARNESS_DIR}/{name}.py": text for name, text in runner_sources().items()}


@dataclass(frozen=True)
class Launch:
    """How to start one worker's sandbox: its argv, the fds it inherits, and its cgroup (if any)."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    group: RunCgroup | None
    control: socket.socket  # the host's end of the worker's control socket
    status_fd: int  # the read end of bwrap's --json-status-fd pipe, now the worker's
    close: Callable[[], None]  # releases the launch's own fds once the worker has started


def init_pidfd(status_line: bytes, launcher_pid: int) -> int | None:
    """A pidfd for the sandbox's pid 1, from bwrap's first status line, if it is still bwrap's child.

    A pidfd names this very process even if the pid is reused later.
    """
    try:
        pid = int(json.loads(status_line)["child-pid"])
        pidfd = os.pidfd_open(pid)
    except (ValueError, TypeError, KeyError, OSError):
        return None
    try:
        with open(f"/proc/{pid}/stat") as handle:
            parent = int(handle.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        parent = -1
    if parent == launcher_pid:
        return pidfd
    os.close(pidfd)
    return None


def memfd(name: str, data: bytes) -> int:
    """A close-on-exec memfd holding ``data``, positioned at its start (bwrap reads its fds from there)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_line(fd: int, deadline: float) -> bytes:
    line = b""
    while not line.endswith(b"\n") and len(line) < 4096:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise WorkerError("bubblewrap did not report the sandbox's pid 1")
        chunk = os.read(fd, 1)
        if not chunk:
            raise WorkerError("bubblewrap exited before starting the sandbox")
        line += chunk
    return line


class WorkerError(RuntimeError):
    """The worker broke its protocol or died; it is discarded. ``exit_status``: its launcher's, if it
    never started."""

    def __init__(self, message: str, exit_status: int | None = None) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class Worker:
    """One sandbox whose pid 1 runs programs one at a time (the protocol is in harness/runner.py)."""

    def __init__(self, launch: Launch, output_limits: tuple[int, int]) -> None:
        self.group = launch.group
        self._control = launch.control
        self._output_limits = output_limits
        self._status_fd = launch.status_fd
        self._init_pidfd: int | None = None
        self._close_lock = threading.Lock()
        self.alive = True
        self._pinned_at_start: int | None = None
        try:
            self._process = subprocess.Popen(
                launch.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,  # bwrap's and the worker's own errors, read once it is gone
                pass_fds=launch.pass_fds,
                env={},
                cwd="/",
                start_new_session=True,
            )
        except BaseException:
            self._destroy_group()
            os.close(self._status_fd)
            self._control.close()
            raise
        finally:
            launch.close()
        try:
            deadline = time.monotonic() + _START_TIMEOUT_S
            self._init_pidfd = init_pidfd(_read_line(self._status_fd, deadline), self._process.pid)
            ready, _ = receive(self._control, 0, deadline)
            if not ready or not ready.get("ready"):
                raise WorkerError(f"the worker did not start: {ready}")
        except (OSError, WorkerError, ProtocolError, ValueError) as error:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(_STOP_S)
            message = f"{error}{self._stderr_tail()}"
            self.close()
            raise WorkerError(message, self._process.returncode) from error
        except BaseException:
            self.close()
            raise
        if self.group is not None:
            self._pinned_at_start = self.group.pinned_bytes()

    def run(self, program: Program) -> RunResult:
        """Run one program, each of its runs to its end; never raises for anything the program does. A
        SANDBOX_ERROR means the program's result is unknown (the worker failed, or could not start it).
        One function, past 60 lines: its fds, its runs and the worker's OOM count are closed or read on every
        way out."""
        started = time.monotonic()
        ooms = self.group.oom_kills() if self.group is not None else 0
        request, stdin = program.request()
        runs: list[RunResult | None] = [None] * protocol_runs(request)  # by test index: they run shuffled
        try:
            fds = [memfd("codegrpo-program", program.source.encode("utf-8", "surrogatepass"))]
            if stdin is not None:
                fds.append(memfd("codegrpo-stdin", stdin))

            def failed(index: int) -> bool:
                kept = runs[index]
                return kept is not None and program.fails_at(index, kept)

            # With program.failed, a failing run ends the program's runs there: exchange runs only the runs
            # below it that are left, and kills the one already sent above it (the runner answers it, so the
            # worker is clean for the next program); that one and the runs never started are SKIPPED.
            answers = exchange(
                self._control, request, fds, self._output_limits, failed=None if program.failed is None else failed
            )
            try:
                for index, answer, (stdout, stderr), over in answers:
                    # Read as each answer comes: the next run starts at once, and a memory bomb takes far
                    # longer than this to reach the limit.
                    now = self.group.oom_kills() if self.group is not None else 0
                    if answer is None:  # a run killed unneeded: no result, and its OOM kill is no other's
                        ooms = now
                        continue
                    run = classify(
                        answer["code"],
                        stdout.decode("utf-8", "replace"),
                        stderr.decode("utf-8", "replace"),
                        float(answer["duration_s"]),
                        over_limit=over,
                        timed_out=answer["timeout"],
                        oom=now > ooms,
                        budget_cut=answer.get("budget", False),
                    )
                    del stdout, stderr
                    runs[index] = program.kept(index, run)
                    ooms = now
            finally:
                close_all(fds)
        except (OSError, ProtocolError, ValueError, KeyError, TypeError) as error:
            message = f"worker failed: {error!r}{self._stderr_tail()}"
            self.close()
            return RunResult(Outcome.SANDBOX_ERROR, error=message)
        except BaseException:
            # The caller's own code (digest, failed) raised, or the thread was interrupted, with a run perhaps
            # in flight: the runner is in the middle of a request, so no later program may use this worker.
            self.close()
            raise
        if self._pinned_beyond_slack():
            # What this program left charged to the worker (xattrs, files or sockets kept alive by fds in
            # flight) would count against every later program's limit: the worker goes. The worker was
            # clean before this program, so the result is the program's own and stands.
            self.close()
        kept = [SKIPPED_RUN if run is None else run for run in runs]
        return program_result(program, kept, time.monotonic() - started)

    def _pinned_beyond_slack(self) -> bool:
        """Whether the worker's cgroup holds more than at its start, by over the slack (False if unknown)."""
        if self.group is None or self._pinned_at_start is None:
            return False
        pinned = self.group.pinned_bytes()
        return pinned is not None and pinned - self._pinned_at_start > PINNED_SLACK_BYTES

    def _stderr_tail(self) -> str:
        if self._process.stderr is None or self._process.poll() is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            return ": " + self._process.stderr.read(1 << 16).decode("utf-8", "replace").strip()[-500:]
        return ""

    def kill(self) -> None:
        """SIGKILL the sandbox from any thread: the kernel kills its whole pid namespace with its pid 1,
        and then bwrap exits, so a run blocked on this worker ends at once with an error."""
        with self._close_lock, contextlib.suppress(OSError):
            if self._init_pidfd is not None:
                signal.pidfd_send_signal(self._init_pidfd, signal.SIGKILL)
            elif self._process.returncode is None:
                os.killpg(self._process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop the worker and wait until every process of its sandbox is gone. Safe to call twice."""
        with self._close_lock:
            if not self.alive:
                return
            self.alive = False
        self._control.close()  # the worker's cue to exit
        try:
            self._process.wait(_STOP_S)
        except subprocess.TimeoutExpired:
            self.kill()  # the lock is free again: only the flag was set under it
            try:
                self._process.wait(_STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)  # bwrap itself: --die-with-parent does the rest
                self._process.wait()
        if self._process.stderr is not None:
            self._process.stderr.close()
        with self._close_lock:
            for fd in (self._status_fd, self._init_pidfd):
                if fd is not None:
                    os.close(fd)
            self._init_pidfd = None
        self._destroy_group()

    def _destroy_group(self) -> None:
        if self.group is not None and not self.group.destroy():
            log.warning("a worker's cgroup could not be removed")


class Ticket:
    """One run's claim on a worker, which another thread may cancel at any time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker: Worker | None = None
        self._cancelled = False

    def hold(self, worker: Worker) -> bool:
        """Record the worker about to run the program; False when the run was cancelled already."""
        with self._lock:
            self._worker = worker
            return not self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._worker is not None:
                self._worker.kill()


class WorkerPool:
    """Up to ``size`` warm workers, started on demand, each program taking an idle one; and fresh workers,
    one program each."""

    def __init__(self, size: int, launch: Callable[[], Launch], output_limits: tuple[int, int]) -> None:
        self._launch = launch
        self._output_limits = output_limits
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="codegrpo-warm")
        self.started = 0
        self.retired = 0
        self.runs = 0

    def run(self, program: Program, fresh: bool = False, ticket: Ticket | None = None) -> RunResult:
        """Blocking: run ``program`` on an idle worker or a new one; with ``fresh``, on a new worker that
        runs nothing else. ``ticket`` lets another thread cancel the run: the program does not start, or
        its worker is killed."""
        ticket = ticket or Ticket()
        try:
            worker = self._take(fresh)
        except (OSError, WorkerError, ValueError) as error:
            return RunResult(
                Outcome.SANDBOX_ERROR, getattr(error, "exit_status", None), error=f"cannot start a sandbox: {error}"
            )
        try:
            if not ticket.hold(worker):
                return RunResult(Outcome.SANDBOX_ERROR, error="cancelled before it started")
            if not fresh:
                self.runs += 1
            return worker.run(program)
        finally:
            self._give_back(worker, keep=not fresh)

    def _take(self, fresh: bool) -> Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the warm pool is closed")
            if self._idle and not fresh:
                return self._idle.pop()
            if not fresh:
                self.started += 1
        return Worker(self._launch(), self._output_limits)

    def _give_back(self, worker: Worker, keep: bool) -> None:
        with self._lock:
            if keep and worker.alive and not self._closed:
                self._idle.append(worker)
                return
            if keep:
                self.retired += 1
            else:
                worker.kill()  # its one program is over: nothing in it is worth an orderly exit
        worker.close()

    def close(self) -> None:
        """Stop every idle worker; busy ones stop when their program ends. Safe to call twice."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()
        self.executor.shutdown(wait=False)
