"""Local sandbox: programs run in bubblewrap containers on this machine.

Python programs run in warm workers by default (``sandbox.warm``; codegrpo.sandbox.warm): long-lived
sandboxes built exactly like the one below, whose pid 1 forks a fresh process per program. Everything
else, and every program with ``sandbox.warm=false``, gets a fresh sandbox. One cold run is, from the
outside in::

    sh                 moves itself into the run's cgroups (only with cgroups), then execs
      bwrap            new user/pid/net/ipc/uts/cgroup/mount namespaces, cleared environment
        sh             pid 1 of the sandbox: writes the start marker on stdout, then execs
          prlimit      rlimits for the program only, then execs
            program    still pid 1

The memory and process limits come from a per-run cgroup where this process can create one, and from
rlimits otherwise (docs/security.md). The program is the sandbox's pid 1 (--as-pid-1): no bwrap process
it could ptrace or read /proc/1/fd of shares the sandbox with it, it cannot be killed from inside, and
when it dies the kernel kills every process left in its pid namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import platform
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from codegrpo.config import LocalSandboxConfig
from codegrpo.sandbox import seccomp
from codegrpo.sandbox.base import Outcome, OutputCap, Program, RunResult, SandboxBackend, SandboxFatalError, classify
from codegrpo.sandbox.cgroups import CgroupLimits, RunCgroup
from codegrpo.sandbox.warm import (
    WORKER_CAPABILITIES,
    WORKER_PATH,
    Launch,
    Ticket,
    WarmPool,
    init_pidfd,
    worker_files,
)

log = logging.getLogger(__name__)

BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is required for sandbox=local and was not found. "
    "Install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`, "
    "or choose sandbox=superserve. Model-written code is never run unsandboxed."
)
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# The first line on stdout, written by the sandbox's own sh right before it execs the program: a run
# without it never started, so whatever went wrong is the sandbox's fault. The program cannot write
# before it, and reading stdout is not something it can do, so it can neither fake nor swallow it.
START_MARKER = b"codegrpo-started\n"
_READ_CHUNK = 1 << 16
_STATUS_LIMIT = 1 << 16
_KILL_GRACE_S = 2.0  # how long a killed sandbox may take to go before its launcher is killed as well
_PREFLIGHT_TIMEOUT_S = 30.0
_JOIN_EXIT = 125  # the launcher's exit status when it cannot move itself into the run's cgroup
_JOIN_FAILED = "cannot move the sandbox into its cgroup"
_PREFLIGHT = Program("print('ok')", "python", _PREFLIGHT_TIMEOUT_S, "preflight.py")


def _interpreter_prefix(python: str) -> Path:
    """The directory tree that holds the interpreter and its standard library."""
    if python:
        return Path(python).resolve().parent.parent
    return Path(sys.base_prefix).resolve()


def _reachable_by_others(path: Path) -> bool:
    """Whether a user outside the path's owners and groups can list ``path`` (mode bits)."""
    try:
        if not path.stat().st_mode & stat.S_IROTH:
            return False
        return all(directory.stat().st_mode & stat.S_IXOTH for directory in (path, *path.parents))
    except OSError:
        return False


def _require(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SandboxFatalError(hint)
    return str(Path(path).resolve())


class LocalSandbox(SandboxBackend):
    """bubblewrap: new namespaces, no network, a read-only runtime, a private size-limited /tmp.

    ``cfg.use_cgroups=False`` skips cgroups and uses the rlimit fallbacks, as on a machine without a
    writable cgroup.
    """

    def __init__(self, cfg: LocalSandboxConfig) -> None:
        self.cfg = cfg
        if cfg.max_concurrency < 1:
            raise SandboxFatalError(f"sandbox.max_concurrency must be at least 1, not {cfg.max_concurrency}")
        self._bwrap = _require(cfg.bwrap, BWRAP_INSTALL_HINT)
        util_hint = "{} is required for sandbox=local; install {}."
        self._prlimit = _require("prlimit", util_hint.format("prlimit", "util-linux"))
        self._sh = _require("sh", util_hint.format("sh", "a POSIX shell"))
        # As root, every sandbox runs as an unprivileged host user: never as host root, whose uid 0
        # would own /proc/sys inside (and RLIMIT_NPROC would not bind).
        self._user: list[str] = []
        self.uid = os.geteuid()
        if self.uid == 0:
            if cfg.uid == 0:
                raise SandboxFatalError("sandbox.uid=0 would run model-written code as host root; choose another uid")
            self.uid = cfg.uid
            setpriv = _require("setpriv", util_hint.format("setpriv", "util-linux"))
            self._user = [setpriv, f"--reuid={cfg.uid}", f"--regid={cfg.gid}", "--clear-groups", "--"]
        self._prefix = self._reachable_prefix()
        self._mount_args = self._build_mount_args()
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._counts: Counter[str] = Counter()
        self._cgroups: CgroupLimits | None = None
        self._warm: WarmPool | None = None
        if cfg.use_cgroups:
            self._cgroups = CgroupLimits(cfg.memory_mb << 20, cfg.max_processes)
        self._finalizer = weakref.finalize(self, _close, self._cgroups)
        self.enforcement = self._enforcement()
        self._preflight()
        if cfg.warm and not cfg.vm_root:
            self._start_warm()

    # -- setup ---------------------------------------------------------------------------------------

    def _reachable_prefix(self) -> Path:
        """The interpreter's tree, which the sandbox's user must be able to reach (bwrap binds it as
        that user). A trainer's Python under /root is not: the system's python3 stands in, with a warning."""
        prefix = _interpreter_prefix(self.cfg.python)
        if not self._user:
            return prefix
        for path in self.cfg.extra_ro_paths:
            if os.path.exists(path) and not _reachable_by_others(Path(path).resolve()):
                raise SandboxFatalError(f"sandbox.extra_ro_paths: {path} is not readable by the sandbox's uid "
                                        f"{self.cfg.uid}; make it world-readable or drop it")  # fmt: skip
        if _reachable_by_others(prefix):
            return prefix
        system = Path("/usr/bin/python3")
        if not self.cfg.python and system.exists() and _reachable_by_others(_interpreter_prefix(str(system))):
            log.warning("the sandbox runs as uid %d, which cannot reach this Python's %s: programs run with %s "
                        "(set sandbox.python to choose another)", self.cfg.uid, prefix, system)  # fmt: skip
            return _interpreter_prefix(str(system))
        raise SandboxFatalError(
            f"the sandbox runs as uid {self.cfg.uid} (sandbox.uid), which cannot reach the interpreter under "
            f"{prefix}: set sandbox.python to a python3 every user can run, or make its directories world-readable"
        )

    def _enforcement(self) -> dict[str, str]:
        """How each limit is enforced on this machine (logged once; docs/security.md explains the fallbacks)."""
        controllers = self._cgroups.controllers if self._cgroups else {}
        memory = f"cgroup v{controllers['memory']}" if "memory" in controllers else "RLIMIT_AS"
        # Counted per (user namespace, uid): each sandbox on its own. It binds every uid but host root's.
        nproc = f"RLIMIT_NPROC as uid {self.uid}"
        processes = f"cgroup v{controllers['pids']}" if "pids" in controllers else nproc
        enforcement = {"memory": memory, "processes": processes}
        unavailable = self._cgroups.unavailable if self._cgroups else {"memory": "disabled", "pids": "disabled"}
        for controller, why in unavailable.items():
            log.warning("sandbox %s limit falls back to an rlimit: %s", controller, why)
        return enforcement

    def _site_dirs(self) -> list[str]:
        """The sandbox interpreter's site-packages directories, to hide third-party packages."""
        python = shutil.which("python3", path=self._sandbox_path())
        if python is None:
            raise SandboxFatalError(f"no python3 in {self._sandbox_path()}; set sandbox.python")
        probe = "import json, site; print(json.dumps(site.getsitepackages()))"
        try:
            done = subprocess.run(
                [python, "-I", "-c", probe], capture_output=True, text=True, env={}, timeout=_PREFLIGHT_TIMEOUT_S
            )
            return [path for path in json.loads(done.stdout) if os.path.isdir(path)]
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            raise SandboxFatalError(f"cannot run {python}: {error}") from error

    def _build_mount_args(self) -> list[str]:
        args = ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/lib", "/lib64", "/sbin"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        prefix = str(self._prefix)
        if not prefix.startswith("/usr/"):
            args += ["--ro-bind", prefix, prefix]
        for path in self.cfg.extra_ro_paths:
            real = str(Path(path).resolve())
            args += ["--ro-bind", real, real]
        # Third-party packages of the host interpreter stay hidden: the standard library only. The mask
        # is read-only so a program cannot plant a sitecustomize.py there for its own re-exec either.
        for site in self._site_dirs():
            args += ["--tmpfs", site, "--remount-ro", site]
        return args

    def _sandbox_path(self) -> str:
        return f"{self._prefix}/bin:{SANDBOX_PATH}"

    def _preflight(self) -> None:
        """Run one trivial program now, so a sandbox that cannot work fails at startup, not per reward."""
        program = _PREFLIGHT
        problem = self._preflight_error(program)
        if problem and problem.startswith(_JOIN_FAILED) and self._preflight_error(program, False) is None:
            # Creating cgroups worked but moving a process into them did not: do without.
            log.warning("sandbox cgroups do not work here (%s); using rlimits instead", problem)
            self._cgroups.close()
            self._cgroups = None
            self.enforcement = self._enforcement()
            problem = None
        if problem:
            raise SandboxFatalError(f"the local sandbox cannot run programs on this machine: {problem}")

    def _start_warm(self) -> None:
        if not seccomp.supported():
            log.warning("no seccomp filter for %s: warm workers are off, every program gets a fresh sandbox",
                        platform.machine())  # fmt: skip
            return
        cfg = self.cfg
        output_limits = (cfg.stdout_limit_bytes, cfg.stderr_limit_bytes)
        self._warm = WarmPool(cfg.max_concurrency, self._warm_launch, output_limits)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close, self._cgroups, self._warm)
        program = _PREFLIGHT
        result = self._warm.run(program)
        if result.outcome is not Outcome.EXITED or result.exit_code != 0 or result.stdout != "ok\n":
            log.warning("warm workers do not work here (%s); every program gets a fresh sandbox", result)
            self._warm.close()
            self._warm = None

    def _warm_launch(self) -> Launch:
        """A warm worker's sandbox: the same as a cold run's, with the worker as pid 1 and the program's
        limits set by the worker on each program's process instead of by prlimit."""
        cfg = self.cfg
        fds = _LaunchFds(worker_files(), program_filter=False)  # each program's process adds the program filter
        host, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            group = self._cgroups.new_run(extra_processes=1) if self._cgroups is not None else None
        except OSError:
            for end in (host, worker):
                end.close()
            fds.close()
            raise
        limits = {"RLIMIT_FSIZE": cfg.file_size_limit_bytes, "RLIMIT_NOFILE": cfg.open_files, "RLIMIT_CORE": 0}
        limits |= {f"RLIMIT_{name.upper()}": value for name, value in self._fallback_limits(extra_processes=1).items()}
        config = {"limits": limits, "tmpfs_bytes": cfg.tmpfs_limit_bytes, "seccomp": seccomp.build_filter().hex()}
        command = ["python3", "-I", WORKER_PATH, str(worker.fileno()), json.dumps(config)]
        argv = self._sandbox_command(fds, group, command, WORKER_CAPABILITIES)

        def close() -> None:
            fds.close()
            worker.close()

        return Launch(argv, (*fds.pass_fds, worker.fileno()), group, host, fds.take_status(), close)

    def _preflight_error(self, program: Program, use_cgroups: bool = True) -> str | None:
        group = self._cgroups.new_run() if self._cgroups is not None and use_cgroups else None
        fds = _LaunchFds({f"/tmp/{program.filename}": program.source})
        try:
            done = subprocess.run(
                self._command(program, fds, group),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                pass_fds=fds.pass_fds,
                env={},
                cwd="/",
                timeout=program.timeout_s,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as error:
            return str(error)
        finally:
            fds.close()
            if group is not None:
                group.destroy()
        if done.stdout == START_MARKER + b"ok\n" and done.returncode == 0:
            return None
        joined = done.stdout.startswith(START_MARKER) or done.returncode != _JOIN_EXIT
        return f"{'exit status' if joined else _JOIN_FAILED} {done.returncode}: {_decode(done.stderr).strip()[-500:]}"

    def _command(self, program: Program, fds: _LaunchFds, group: RunCgroup | None) -> list[str]:
        cfg = self.cfg
        cpu_s = max(1, int(program.timeout_s + 0.999))
        limits = [
            self._prlimit,
            # SIGKILL at the limit (pid 1 would ignore SIGXCPU): reported as SIGNALED, exit status 137.
            f"--cpu={cpu_s}",
            f"--fsize={cfg.file_size_limit_bytes}",
            f"--nofile={cfg.open_files}",
            "--core=0",
        ]
        limits += [f"--{name}={value}" for name, value in self._fallback_limits().items()]
        # A missing interpreter is the sandbox's fault, so it is checked before the marker.
        start = (
            'command -v "$1" >/dev/null || { echo "sandbox: no $1 on PATH" >&2; exit 127; }; '
            f"printf '%s\\n' {START_MARKER.decode().strip()} || exit 126; "
            'shift; exec "$@"'
        )
        inner = [self._sh, "-c", start, "sh", program.argv[0], *limits, "--", *program.argv]
        return self._sandbox_command(fds, group, inner, WORKER_CAPABILITIES if cfg.vm_root else ())

    def _fallback_limits(self, extra_processes: int = 0) -> dict[str, int]:
        """prlimit's names and values for the limits no cgroup enforces here."""
        controllers = self._cgroups.controllers if self._cgroups is not None else {}
        limits = {}
        if "memory" not in controllers:
            limits["as"] = self.cfg.memory_mb << 20
        if "pids" not in controllers:
            # Counted per user namespace (Linux 5.14+), so it limits this sandbox alone; root is exempt.
            limits["nproc"] = self.cfg.max_processes + extra_processes
        return limits

    def _sandbox_command(
        self, fds: _LaunchFds, group: RunCgroup | None, inner: list[str], capabilities: Sequence[str] = ()
    ) -> list[str]:
        """sh (joins the cgroups) -> setpriv (as root: the sandbox's uid) -> bwrap -> ``inner``, with
        ``fds.files`` read-only at their paths. ``capabilities`` are kept in the sandbox's own user
        namespace (a warm worker needs them to give each program namespaces of its own)."""
        cfg = self.cfg
        join: list[str] = []
        if group is not None:
            # Before bwrap starts, so everything of the sandbox is born inside the cgroups. Moving takes a
            # few ms on cgroup v1 (an RCU grace period): the launcher waits for it, not the event loop.
            script = "".join(f"echo $$ > {shlex.quote(path)} || exit {_JOIN_EXIT}\n" for path in group.procs_files)
            join = [self._sh, "-c", script + 'exec "$@"', "sh"]
        syscall_filter = ["--seccomp", str(fds.seccomp)] if fds.seccomp >= 0 else []
        sandbox = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            # A warm worker's pid 1 stays in the user namespace that owns the sandbox's other namespaces,
            # to make each program's; there, the seccomp filter refuses new user namespaces.
            *([] if capabilities else ["--disable-userns"]),
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop", "ALL",
            *(arg for capability in capabilities for arg in ("--cap-add", capability)),
            *(["--uid", "0", "--gid", "0"] if cfg.vm_root else []),
            "--hostname", "sandbox",
            "--clearenv",
            "--setenv", "PATH", self._sandbox_path(),
            "--setenv", "HOME", "/tmp",
            "--setenv", "LANG", "C.UTF-8",
            "--setenv", "OMP_NUM_THREADS", "1",
            "--setenv", "OPENBLAS_NUM_THREADS", "1",
            *self._mount_args,
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(cfg.tmpfs_limit_bytes),
            "--tmpfs", "/tmp",
            *(arg for path, fd in fds.files.items() for arg in ("--ro-bind-data", str(fd), path)),
            # /tmp is the only writable place: the root and /dev are tmpfs without a size limit.
            "--remount-ro", "/dev",
            "--remount-ro", "/",
            *syscall_filter,
            "--json-status-fd", str(fds.status_write),
            "--chdir", "/tmp",
            "--",
            *inner,
        ]  # fmt: skip
        return join + self._user + sandbox

    # -- running ------------------------------------------------------------------------------------

    def _semaphore_for_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.cfg.max_concurrency), loop
        return self._semaphore

    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        semaphore = self._semaphore_for_loop()

        async def run_one(program: Program) -> RunResult:
            async with semaphore:
                return await self.run(program)

        return list(await asyncio.gather(*(run_one(p) for p in programs)))

    async def run(self, program: Program) -> RunResult:
        """Run one program; never raises for anything the program does.

        When it returns (or is cancelled), no process of the program is left and its /tmp is gone.
        """
        self._counts["runs"] += 1
        if self._warm is not None and program.runs_warm:
            result = await self._run_warm(self._warm, program)
            if not result.is_infra_failure:
                self._counts[result.outcome.value] += 1
                return result
            # The worker failed or was left unclean: the program's result is unknown, so it runs again in
            # a sandbox of its own, and nothing an earlier program did can decide its reward.
            log.info("rerunning a program in a fresh sandbox: %s", result.error)
            self._counts["warm_reruns"] += 1
        started = time.monotonic()
        group: RunCgroup | None = None
        try:
            if self._cgroups is not None:
                group = self._cgroups.new_run()
            result = await self._run(program, group, started)
        except OSError as error:
            result = RunResult(Outcome.SANDBOX_ERROR, error=f"could not start the sandbox: {error}")
        finally:
            if group is not None and not group.destroy():
                self._counts["cgroup_leaks"] += 1
        self._counts[result.outcome.value] += 1
        return result

    @staticmethod
    async def _run_warm(pool: WarmPool, program: Program) -> RunResult:
        ticket = Ticket()
        done = asyncio.wrap_future(pool.executor.submit(pool.run, program, ticket))
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            # Kill the worker, then wait until its sandbox is gone: as when a cold run is cancelled.
            ticket.cancel()
            with contextlib.suppress(Exception):
                await done
            raise

    async def _run(self, program: Program, group: RunCgroup | None, started: float) -> RunResult:
        cfg = self.cfg
        fds = _LaunchFds({f"/tmp/{program.filename}": program.source}, program_filter=not cfg.vm_root)
        overflow = asyncio.Event()
        captures: list[_Capture] = []
        ends: list[int] = []
        try:
            for limit, marker in ((cfg.stdout_limit_bytes, START_MARKER), (cfg.stderr_limit_bytes, b"")):
                read_end, write_end = os.pipe()
                ends.append(write_end)
                captures.append(_Capture(read_end, limit, overflow, marker))
            # Plain fds, not asyncio's pipes: its wait() would also wait for them to close, which a
            # program can put off by keeping a write end alive as an fd in flight.
            process = await asyncio.create_subprocess_exec(
                *self._command(program, fds, group),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=ends[0],
                stderr=ends[1],
                pass_fds=fds.pass_fds,
                env={},  # nothing of the trainer's environment, not even in bwrap's own memory
                cwd="/",
                start_new_session=True,
            )
            status = _StatusPipe(fds.take_status(), process.pid)
        except BaseException:
            for capture in captures:
                capture.close()
            raise
        finally:
            for fd in ends:
                os.close(fd)
            fds.close()
        try:
            return await self._supervise(process, program, started, status, group, captures, overflow)
        finally:
            status.close()
            for capture in captures:
                capture.close()

    async def _supervise(
        self,
        process: asyncio.subprocess.Process,
        program: Program,
        started: float,
        status: _StatusPipe,
        group: RunCgroup | None,
        captures: list[_Capture],
        overflow: asyncio.Event,
    ) -> RunResult:
        waiter = asyncio.ensure_future(process.wait())
        overflow_wait = asyncio.ensure_future(overflow.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, overflow_wait}, timeout=program.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            overflow_wait.cancel()
            if not waiter.done():
                await self._kill(process, waiter, status, group)
        if not waiter.done():
            return RunResult(Outcome.SANDBOX_ERROR, error="the sandbox could not be killed")
        # Every process of the sandbox is gone: what is in the pipes now is all there will be.
        stdout, stderr = captures
        for capture in captures:
            capture.drain()
        duration = time.monotonic() - started
        if not stdout.started:
            return RunResult(
                Outcome.SANDBOX_ERROR, process.returncode, stdout.cap.text, stderr.cap.text, duration,
                error=f"the sandbox did not start (exit status {process.returncode}): {stderr.cap.text.strip()[-500:]}",
            )  # fmt: skip
        oom = waiter in done and group is not None and group.oom_kills() > 0
        return classify(process.returncode, stdout.cap.text, stderr.cap.text, duration,
                        over_limit=overflow.is_set(), timed_out=waiter not in done, oom=oom)

    async def _kill(
        self, process: asyncio.subprocess.Process, waiter: asyncio.Future, status: _StatusPipe, group: RunCgroup | None
    ) -> None:
        """SIGKILL the whole sandbox and wait (a bounded time) until every process of it is gone.

        Killing the sandbox's pid 1 makes the kernel kill and reap its whole pid namespace before pid 1
        is reported dead, and only then does bwrap exit: so bwrap's exit means everything is gone.
        """
        status.poll()
        if not status.kill_init():
            _kill_group(process.pid)  # bwrap has not reported its child yet
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), _KILL_GRACE_S)
        if not waiter.done():
            _kill_group(process.pid)
            if group is not None:
                group.destroy()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(waiter), _KILL_GRACE_S)

    def limits(self) -> list[tuple[str, str, str]]:
        """Each limit of this sandbox, its value, and what enforces it on this machine."""
        cfg = self.cfg
        user = "setpriv (the trainer is root)" if self._user else "the trainer's own uid (not root)"
        warm = "warm workers" if self._warm is not None else "a fresh sandbox per program"
        syscalls = "seccomp, a profile like Docker's" if seccomp.supported() else "nothing (no filter for this CPU)"
        return [
            ("user", f"uid {self.uid}, gid {cfg.gid if self._user else os.getegid()}", user),
            ("memory", f"{cfg.memory_mb} MiB", self.enforcement["memory"]),
            ("processes", str(cfg.max_processes), self.enforcement["processes"]),
            ("wall time", f"{cfg.timeout_s:g} s (or the problem's)", "the host kills the whole sandbox"),
            ("CPU time", "the wall time", "RLIMIT_CPU"),
            ("file size", f"{cfg.file_size_limit_bytes >> 20} MiB", "RLIMIT_FSIZE"),
            ("open files", str(cfg.open_files), "RLIMIT_NOFILE"),
            ("/tmp", f"{cfg.tmpfs_limit_bytes >> 20} MiB", "tmpfs size, a fresh one per program"),
            ("output", f"{cfg.stdout_limit_bytes >> 20} MiB stdout, {cfg.stderr_limit_bytes >> 20} MiB stderr",
             "the host stops reading and kills"),
            ("network", "none", "a network namespace of its own (loopback only)"),
            ("syscalls", "no io_uring, bpf, mount, new namespaces, ...", syscalls),
            ("at once", f"{cfg.max_concurrency} programs", f"the sandbox's semaphore; {warm}"),
        ]  # fmt: skip

    def stats(self) -> dict[str, float]:
        """sandbox/runs, sandbox/<outcome> for each outcome seen, sandbox/cgroup_leaks if any, and how
        many warm workers were started and retired."""
        stats = {f"sandbox/{name}": float(count) for name, count in self._counts.items()}
        if self._warm is not None:
            stats["sandbox/warm_started"] = float(self._warm.started)
            stats["sandbox/warm_retired"] = float(self._warm.retired)
            stats["sandbox/warm_runs"] = float(self._warm.runs)
        return stats

    async def aclose(self) -> None:
        self._finalizer()


class _StatusPipe:
    """bwrap's --json-status-fd stream, read as it arrives, for the host pid of the sandbox's pid 1.

    Only the outer bwrap holds the pipe's write end: bwrap closes it in the sandbox.
    """

    def __init__(self, fd: int, launcher_pid: int) -> None:
        self._fd = fd
        self._launcher_pid = launcher_pid
        self._buffer = b""
        self._size = 0
        self._lines = 0
        self._init_pidfd: int | None = None
        os.set_blocking(fd, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self.poll)
        self._reading = True

    def poll(self) -> None:
        """Read whatever is in the pipe now."""
        for chunk in _available(self._fd):
            if not chunk:
                self._stop_reading()
                return
            self._size += len(chunk)
            if self._size > _STATUS_LIMIT:
                continue  # far more than bwrap writes: drain and ignore
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                self._line(line)

    def _line(self, line: bytes) -> None:
        self._lines += 1
        if self._lines == 1:
            self._init_pidfd = init_pidfd(line, self._launcher_pid)

    def kill_init(self) -> bool:
        """SIGKILL pid 1 of the sandbox. False when bwrap has not reported it (or it is gone)."""
        if self._init_pidfd is None:
            return False
        try:
            signal.pidfd_send_signal(self._init_pidfd, signal.SIGKILL)
        except ProcessLookupError:
            return False
        return True

    def _stop_reading(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False

    def close(self) -> None:
        self._stop_reading()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._init_pidfd is not None:
            os.close(self._init_pidfd)
            self._init_pidfd = None


class _LaunchFds:
    """What bwrap gets besides its arguments: memfds with the files to bind (path: text) and the seccomp
    filter (where this machine has one; the program filter unless ``program_filter`` is false), and its
    status pipe."""

    def __init__(self, files: dict[str, str], program_filter: bool = True) -> None:
        self._open: list[int] = []
        self.seccomp = -1
        self.files: dict[str, int] = {}
        try:
            for path, text in files.items():
                fd = self.files[path] = self._keep(os.memfd_create("codegrpo-file", os.MFD_CLOEXEC))
                os.write(fd, text.encode("utf-8", "surrogatepass"))
                os.lseek(fd, 0, os.SEEK_SET)
            if seccomp.supported():
                self.seccomp = self._keep(seccomp.filter_fd(program_filter))
            self.status_read, self.status_write = map(self._keep, os.pipe())
        except BaseException:
            self.close()
            raise

    def _keep(self, fd: int) -> int:
        self._open.append(fd)
        return fd

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (*self.files.values(), self.seccomp, self.status_write) if fd >= 0)

    def take_status(self) -> int:
        """The status pipe's read end, now the caller's to close."""
        self._open.remove(self.status_read)
        return self.status_read

    def close(self) -> None:
        for fd in self._open:
            os.close(fd)
        self._open.clear()


class _Capture:
    """One output pipe, read as data arrives, up to ``limit`` bytes after ``marker``; past the limit it
    sets ``overflow`` and drains the rest unread, so the writer never blocks. ``started`` tells whether
    the stream began with the marker; without it nothing is kept."""

    def __init__(self, fd: int, limit: int, overflow: asyncio.Event, marker: bytes = b"") -> None:
        self._fd = fd
        self._overflow = overflow
        self._marker = marker
        self._head = bytearray()
        self.cap = OutputCap(limit)
        os.set_blocking(fd, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self.drain)

    @property
    def started(self) -> bool:
        return bytes(self._head) == self._marker

    def drain(self) -> None:
        """Read whatever is in the pipe now."""
        for chunk in _available(self._fd):
            if not chunk:
                self.close()
                return
            if len(self._head) < len(self._marker):
                missing = len(self._marker) - len(self._head)
                self._head += chunk[:missing]
                chunk = chunk[missing:]
            if not self.started:
                continue  # no marker, no program: nothing here is worth keeping
            if self.cap.feed(chunk):
                self._overflow.set()

    def close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1


def _available(fd: int) -> Iterator[bytes]:
    """What the non-blocking pipe ``fd`` holds now, chunk by chunk, then b"" if it has ended (none if
    ``fd`` is closed)."""
    while fd >= 0:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        yield chunk
        if not chunk:
            return


def _close(cgroups: CgroupLimits | None, warm: WarmPool | None = None) -> None:
    if warm is not None:
        warm.close()
    if cgroups is not None:
        cgroups.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")
