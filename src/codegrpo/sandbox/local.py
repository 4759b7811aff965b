"""Local sandbox: programs run in bubblewrap containers on this machine, each on a worker
(codegrpo.sandbox.workers), which a warm sandbox (``sandbox.warm``, the default) keeps for program after
program and a cold one starts for one program. From the outside in::

    sh                 moves itself into the run's cgroups (only with cgroups), then execs
      setpriv          as root: the unprivileged sandbox uid
        bwrap          new user/pid/net/ipc/uts/cgroup/mount namespaces, cleared environment, seccomp
          worker       pid 1 of the sandbox, with capabilities in the sandbox's user namespace only
            program    pid 1 of namespaces of its own, no capabilities, the program seccomp filter

The memory and process limits come from a per-run cgroup where this process can create one, and from
rlimits otherwise (docs/security.md).
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
import socket
import stat
import subprocess
import sys
import weakref
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType

from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.harness.protocol import close_all
from codegrpo.sandbox import seccomp
from codegrpo.sandbox.base import (
    Outcome,
    Program,
    RunResult,
    Runtime,
    SandboxBackend,
    SandboxFatalError,
    program_limits,
    trivial_failure,
    trivial_program,
)
from codegrpo.sandbox.cgroups import CgroupLimits, RunCgroup
from codegrpo.sandbox.workers import WORKER_CAPABILITIES, WORKER_PATH, Launch, Ticket, WorkerPool, memfd, worker_files

log = logging.getLogger(__name__)

BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is required for sandbox=local and was not found. "
    "Install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`, "
    "or choose sandbox=superserve. Model-written code is never run unsandboxed."
)
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# Read-only: no code of the trainer's process can change what every sandbox gets (red team 7).
SANDBOX_ENV = MappingProxyType({"HOME": "/tmp", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
_PREFLIGHT_TIMEOUT_S = 30.0
_JOIN_EXIT = 125  # the launcher's exit status when it cannot move itself into the run's cgroup
_PREFLIGHT = trivial_program(Runtime.python, _PREFLIGHT_TIMEOUT_S)  # through the harness, as a completion runs


def _warn_once(key: str, message: str, *args: object) -> None:
    """A warning about this machine's setup: on the console the first time, then only in the job's log file
    (train.log, evaluate.log), not on every command. Remembered under $CODEGRPO_CACHE
    (~/.cache/codegrpo)/notices/."""
    marker = Path(os.environ.get("CODEGRPO_CACHE") or Path.home() / ".cache" / "codegrpo", "notices", key[:200])
    if not marker.exists():
        log.warning(message, *args)
    else:
        record = log.makeRecord(log.name, logging.INFO, __file__, 0, message, args, None)
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.FileHandler):
                handler.handle(record)
    with contextlib.suppress(OSError):
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()


def _interpreter_prefix(python: str) -> Path:
    """The directory tree that holds the interpreter and its standard library."""
    if python:
        return Path(python).resolve().parent.parent
    return Path(sys.base_prefix).resolve()


def reachable_by_others(path: Path) -> bool:
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
        named = f"sandbox.bwrap={cfg.bwrap}: no bubblewrap there (the default, bwrap, is looked up on PATH); "
        self._bwrap = _require(cfg.bwrap, BWRAP_INSTALL_HINT if cfg.bwrap == "bwrap" else named + BWRAP_INSTALL_HINT)
        if not seccomp.supported():
            raise SandboxFatalError(
                f"the local sandbox has no seccomp filter for {platform.machine()} (it has one "
                "for x86_64 and aarch64); choose sandbox=superserve"
            )
        util_hint = "{} is required for sandbox=local; install {}."
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
        if cfg.use_cgroups:
            self._cgroups = CgroupLimits(cfg.memory_mb << 20, cfg.max_processes)
        self._pool = WorkerPool(cfg.max_concurrency, self._launch, (cfg.stdout_limit_bytes, cfg.stderr_limit_bytes))
        self._finalizer = weakref.finalize(self, _close, self._cgroups, self._pool)
        self.enforcement = self._enforcement()
        self._preflight()

    # -- setup ---------------------------------------------------------------------------------------

    def _reachable_prefix(self) -> Path:
        """The interpreter's tree, which the sandbox's user must be able to reach (bwrap binds it as
        that user). A trainer's Python under /root is not: the system's python3 stands in, with a warning."""
        prefix = _interpreter_prefix(self.cfg.python)
        if not self._user:
            return prefix
        for path in self.cfg.extra_ro_paths:
            if os.path.exists(path) and not reachable_by_others(Path(path).resolve()):
                raise SandboxFatalError(
                    f"sandbox.extra_ro_paths: {path} is not readable by the sandbox's uid "
                    f"{self.cfg.uid}; make it world-readable or drop it"
                )
        if reachable_by_others(prefix):
            return prefix
        system = Path("/usr/bin/python3")
        if not self.cfg.python and system.exists() and reachable_by_others(_interpreter_prefix(str(system))):
            _warn_once(
                f"sandbox-python-{self.cfg.uid}-{prefix}".replace("/", "_"),
                "the sandbox runs as uid %d, which cannot reach this Python's %s: programs run with %s (set "
                "sandbox.python to choose another; said once on this machine, the job's log keeps it)",
                self.cfg.uid,
                prefix,
                system,
            )
            return _interpreter_prefix(str(system))
        raise SandboxFatalError(
            f"the sandbox runs as uid {self.cfg.uid} (sandbox.uid), which cannot reach the interpreter under "
            f"{prefix}: set sandbox.python to a python3 every user can run, or make its directories world-readable"
        )

    def _enforcement(self) -> dict[str, str]:
        """How each limit is enforced on this machine (logged once; docs/security.md explains the fallbacks)."""
        controllers = self._cgroups.controllers if self._cgroups else {}
        memory = f"cgroup v{controllers['memory']}" if "memory" in controllers else "RLIMIT_AS"
        processes = f"cgroup v{controllers['pids']}" if "pids" in controllers else f"RLIMIT_NPROC as uid {self.uid}"
        unavailable = self._cgroups.unavailable if self._cgroups else {"memory": "disabled", "pids": "disabled"}
        for controller, why in unavailable.items():
            log.warning("sandbox %s limit falls back to an rlimit: %s", controller, why)
        return {"memory": memory, "processes": processes}

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
        result = self._pool.run(_PREFLIGHT, fresh=True)
        if result.exit_code == _JOIN_EXIT and self._cgroups is not None:
            # Creating cgroups worked but moving a process into them did not: do without.
            log.warning("sandbox cgroups do not work here (%s); using rlimits instead", result.error)
            self._cgroups.close()
            self._cgroups = None
            self.enforcement = self._enforcement()
            result = self._pool.run(_PREFLIGHT, fresh=True)
        why = trivial_failure(_PREFLIGHT, result)
        if why is not None:
            raise SandboxFatalError(f"the local sandbox cannot run programs on this machine: {why}")

    async def check(self) -> None:
        # The constructor's preflight has already run a Python program here: check only other runtimes.
        if any(runtime != _PREFLIGHT.runtime for runtime in self.runtimes):
            await super().check()

    def _launch(self) -> Launch:
        """One worker's sandbox; the worker sets each program's limits on its process."""
        cfg = self.cfg
        fds = _LaunchFds(worker_files())
        host, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            group = self._cgroups.new_run(extra_processes=1) if self._cgroups is not None else None
        except OSError:
            for end in (host, worker):
                end.close()
            fds.close()
            raise
        # rlimits where no cgroup enforces the limit. RLIMIT_NPROC counts per (user namespace, uid) (Linux 5.14+):
        # this sandbox alone. Host root is exempt.
        controllers = self._cgroups.controllers if self._cgroups is not None else {}
        processes = None if "pids" in controllers else cfg.max_processes + 1  # and the worker, as in its cgroup
        config = program_limits(cfg, processes, None if "memory" in controllers else cfg.memory_mb << 20)
        config |= {"seccomp": seccomp.build_filter().hex(), "vm_root": cfg.vm_root}
        command = ["python3", "-I", WORKER_PATH, "serve", str(worker.fileno()), json.dumps(config)]
        argv = self._sandbox_command(fds, group, command)

        def close() -> None:
            fds.close()
            worker.close()

        return Launch(argv, (*fds.pass_fds, worker.fileno()), group, host, fds.take_status(), close)

    def _sandbox_command(self, fds: _LaunchFds, group: RunCgroup | None, inner: list[str]) -> list[str]:
        """sh (joins the cgroups) -> setpriv (as root: the sandbox's uid) -> bwrap -> ``inner``, with
        ``fds.files`` read-only at their paths. The worker keeps WORKER_CAPABILITIES in the sandbox's own
        user namespace (to give each program namespaces of its own); there, the seccomp filter refuses
        new user namespaces."""
        cfg = self.cfg
        join: list[str] = []
        if group is not None:
            # Before bwrap starts, so everything of the sandbox is born inside the cgroups. Moving takes a
            # few ms on cgroup v1 (an RCU grace period): the launcher waits for it, not the event loop.
            script = "".join(f"echo $$ > {shlex.quote(path)} || exit {_JOIN_EXIT}\n" for path in group.procs_files)
            join = [self._sh, "-c", script + 'exec "$@"', "sh"]
        environment = {"PATH": self._sandbox_path(), **SANDBOX_ENV}
        sandbox = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            *(arg for capability in WORKER_CAPABILITIES for arg in ("--cap-add", capability)),
            *(["--uid", "0", "--gid", "0"] if cfg.vm_root else []),
            "--hostname",
            "sandbox",
            "--clearenv",
            *(arg for name, value in environment.items() for arg in ("--setenv", name, value)),
            *self._mount_args,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(cfg.tmpfs_limit_bytes),
            "--tmpfs",
            "/tmp",
            *(arg for path, fd in fds.files.items() for arg in ("--ro-bind-data", str(fd), path)),
            # /tmp is the only writable place: the root and /dev are tmpfs without a size limit.
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--seccomp",
            str(fds.seccomp),
            "--json-status-fd",
            str(fds.status_write),
            "--chdir",
            "/tmp",
            "--",
            *inner,
        ]
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
        """Run one program; never raises for anything the program does. When it returns (or is cancelled),
        no process of the program is left and its /tmp is gone."""
        self._counts["runs"] += 1
        # The fake's VM root keeps capabilities: never a worker another program has used.
        fresh = not self.cfg.warm or self.cfg.vm_root
        result = await self._on_worker(program, fresh)
        if result.is_infra_failure and not fresh:
            # The worker failed or was left unclean: the program's result is unknown, so it runs again in
            # a sandbox of its own, and nothing an earlier program did can decide its reward.
            log.info("rerunning a program in a fresh sandbox: %s", result.error)
            self._counts["warm_reruns"] += 1
            result = await self._on_worker(program, fresh=True)
        self._counts[result.outcome.value] += 1
        skipped = sum(run.outcome is Outcome.SKIPPED for run in result.runs)
        if skipped:
            self._counts["skipped_runs"] += skipped  # runs a failing one made unneeded (Program.failed)
        return result

    async def _on_worker(self, program: Program, fresh: bool) -> RunResult:
        """Run ``program`` on a worker from a thread: an idle one, or a ``fresh`` one for it alone."""
        ticket = Ticket()
        done = asyncio.wrap_future(self._pool.executor.submit(self._pool.run, program, fresh, ticket))
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            # Kill the worker, then wait until its sandbox is gone.
            ticket.cancel()
            with contextlib.suppress(Exception):
                await done
            raise

    def limits(self) -> list[tuple[str, str, str]]:
        """Each limit of this sandbox, its value, and what enforces it on this machine."""
        cfg = self.cfg
        user = "setpriv (the trainer is root)" if self._user else "the trainer's own uid (not root)"
        warm = "warm workers" if self.cfg.warm and not self.cfg.vm_root else "a fresh sandbox per program"
        return [
            ("user", f"uid {self.uid}, gid {cfg.gid if self._user else os.getegid()}", user),
            ("memory", f"{cfg.memory_mb} MiB", self.enforcement["memory"]),
            ("processes", str(cfg.max_processes), self.enforcement["processes"]),
            ("wall time", f"{cfg.timeout_s:g} s (or the problem's)", "the host kills the whole sandbox"),
            ("CPU time", "the wall time and a second", "RLIMIT_CPU"),
            ("file size", f"{cfg.file_size_limit_bytes >> 20} MiB", "RLIMIT_FSIZE"),
            ("open files", str(cfg.open_files), "RLIMIT_NOFILE"),
            ("/tmp", f"{cfg.tmpfs_limit_bytes >> 20} MiB", "tmpfs size, a fresh one per program"),
            (
                "output",
                f"{cfg.stdout_limit_bytes >> 20} MiB stdout, {cfg.stderr_limit_bytes >> 20} MiB stderr",
                "the host stops reading and kills",
            ),
            ("network", "none", "a network namespace of its own (loopback only)"),
            ("syscalls", "no io_uring, bpf, mount, new namespaces, ...", "seccomp, a profile like Docker's"),
            ("at once", f"{cfg.max_concurrency} programs", f"the sandbox's semaphore; {warm}"),
        ]

    def stats(self) -> dict[str, float]:
        """sandbox/runs, /warm_reruns, /skipped_runs and /<outcome> as seen, and the warm pool's counts."""
        stats = {f"sandbox/{name}": float(count) for name, count in self._counts.items()}
        stats["sandbox/warm_started"] = float(self._pool.started)
        stats["sandbox/warm_retired"] = float(self._pool.retired)
        stats["sandbox/warm_runs"] = float(self._pool.runs)
        return stats

    async def aclose(self) -> None:
        self._finalizer()


class _LaunchFds:
    """What bwrap gets besides its arguments: memfds with the files to bind (path: text), the worker's
    seccomp filter (each program adds the program filter), and its status pipe."""

    def __init__(self, files: dict[str, str]) -> None:
        self._open: list[int] = []
        self.files: dict[str, int] = {}
        try:
            for path, text in files.items():
                self.files[path] = self._keep(memfd("codegrpo-file", text.encode("utf-8", "surrogatepass")))
            self.seccomp = self._keep(memfd("codegrpo-seccomp", seccomp.build_filter(program=False)))
            self.status_read, self.status_write = map(self._keep, os.pipe())
        except BaseException:
            self.close()
            raise

    def _keep(self, fd: int) -> int:
        self._open.append(fd)
        return fd

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (*self.files.values(), self.seccomp, self.status_write)

    def take_status(self) -> int:
        """The status pipe's read end, now the caller's to close."""
        self._open.remove(self.status_read)
        return self.status_read

    def close(self) -> None:
        close_all(self._open)
        self._open.clear()


def _close(cgroups: CgroupLimits | None, pool: WorkerPool) -> None:
    pool.close()
    if cgroups is not None:
        cgroups.close()
