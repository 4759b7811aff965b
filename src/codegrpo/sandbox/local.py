"""Local sandbox: each program runs in a fresh bubblewrap container on this machine."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from codegrpo.config import LocalSandboxConfig
from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend, SandboxFatalError

BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is required for sandbox=local and was not found. "
    "Install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`, "
    "or choose sandbox=superserve. Model-written code is never run unsandboxed."
)
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
_READ_CHUNK = 1 << 16


def _interpreter_prefix(python: str) -> Path:
    """The directory tree that holds the interpreter and its standard library."""
    if python:
        return Path(python).resolve().parent.parent
    return Path(sys.base_prefix).resolve()


class LocalSandbox(SandboxBackend):
    """bubblewrap: new namespaces, no network, a read-only runtime, a private size-limited /tmp."""

    def __init__(self, cfg: LocalSandboxConfig) -> None:
        self.cfg = cfg
        bwrap = shutil.which(cfg.bwrap)
        if bwrap is None:
            raise SandboxFatalError(BWRAP_INSTALL_HINT)
        self._prlimit = shutil.which("prlimit")
        if self._prlimit is None:
            raise SandboxFatalError("prlimit (util-linux) is required for sandbox=local; install util-linux.")
        self._bwrap = bwrap
        self._prefix = _interpreter_prefix(cfg.python)
        self._mount_args = self._build_mount_args()
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runs = 0

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
        # Hide third-party packages of the host interpreter: the standard library only.
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = self._prefix / "lib" / version / "site-packages"
        if site.is_dir():
            args += ["--tmpfs", str(site)]
        for path in self.cfg.extra_ro_paths:
            real = str(Path(path).resolve())
            args += ["--ro-bind", real, real]
        return args

    def _sandbox_path(self) -> str:
        return f"{self._prefix}/bin:{SANDBOX_PATH}"

    def _command(self, program: Program, source_fd: int, status_fd: int) -> list[str]:
        cfg = self.cfg
        cpu_s = max(1, int(program.timeout_s + 0.999))
        limits = [
            self._prlimit,
            f"--as={cfg.memory_mb << 20}",
            f"--cpu={cpu_s}",
            f"--fsize={cfg.file_size_limit_bytes}",
            f"--nofile={cfg.open_files}",
            "--core=0",
            "--",
        ]
        sandbox = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop", "ALL",
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
            "--ro-bind-data", str(source_fd), f"/tmp/{program.filename}",
            "--json-status-fd", str(status_fd),
            "--chdir", "/tmp",
            "--",
            *program.command,
        ]
        return limits + sandbox

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
        """Run one program; never raises for anything the program does."""
        self._runs += 1
        started = time.monotonic()
        source_fd = os.memfd_create("codegrpo-program", os.MFD_CLOEXEC)
        status_read, status_write = os.pipe()
        try:
            os.write(source_fd, program.source.encode("utf-8", "surrogatepass"))
            os.lseek(source_fd, 0, os.SEEK_SET)
            process = await asyncio.create_subprocess_exec(
                *self._command(program, source_fd, status_write),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(source_fd, status_write),
                start_new_session=True,  # one process group to kill, whatever the program does
            )
        except OSError as error:
            os.close(status_read)
            return RunResult(Outcome.SANDBOX_ERROR, error=f"could not start bwrap: {error}")
        finally:
            os.close(source_fd)
            os.close(status_write)
        with os.fdopen(status_read, "rb") as status:
            result = await self._supervise(process, program, started)
            # bwrap reports the child's pid once the sandbox is set up; no report means setup failed.
            started_ok = b"child-pid" in status.read()
        if not started_ok and result.outcome is not Outcome.TIMEOUT:
            return RunResult(Outcome.SANDBOX_ERROR, error=f"bwrap failed: {result.stderr.strip()[-500:]}")
        return result

    async def _supervise(self, process: asyncio.subprocess.Process, program: Program, started: float) -> RunResult:
        cfg = self.cfg
        overflow = asyncio.Event()
        readers = [
            asyncio.ensure_future(_read_capped(process.stdout, cfg.stdout_limit_bytes, overflow)),
            asyncio.ensure_future(_read_capped(process.stderr, cfg.stderr_limit_bytes, overflow)),
        ]
        waiter = asyncio.ensure_future(process.wait())
        overflow_wait = asyncio.ensure_future(overflow.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, overflow_wait}, timeout=program.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            if process.returncode is None:
                _kill_group(process.pid)
            overflow_wait.cancel()
        await waiter
        stdout, stderr = await asyncio.gather(*readers)
        duration = time.monotonic() - started
        text_out, text_err = _decode(stdout), _decode(stderr)
        if overflow.is_set():
            outcome, code = Outcome.OUTPUT_LIMIT, None
        elif waiter not in done:
            outcome, code = Outcome.TIMEOUT, None
        else:
            outcome, code = _classify_exit(process.returncode, text_err)
        return RunResult(outcome, code, text_out, text_err, duration)

    def stats(self) -> dict[str, float]:
        return {"sandbox/runs": float(self._runs)}


async def _read_capped(stream: asyncio.StreamReader | None, limit: int, overflow: asyncio.Event) -> bytes:
    """Read up to ``limit`` bytes; past it, flag the overflow and drain so the writer never blocks."""
    chunks: list[bytes] = []
    size = 0
    assert stream is not None
    while chunk := await stream.read(_READ_CHUNK):
        if size < limit:
            chunks.append(chunk[: limit - size])
        size += len(chunk)
        if size > limit:
            overflow.set()
    return b"".join(chunks)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _classify_exit(returncode: int | None, stderr: str) -> tuple[Outcome, int | None]:
    # bwrap reports a child killed by signal N as exit status 128 + N.
    if returncode is None:
        return Outcome.SANDBOX_ERROR, None
    if returncode < 0 or returncode > 128:
        return Outcome.SIGNALED, returncode
    if returncode != 0 and stderr.rstrip().endswith("MemoryError"):
        return Outcome.MEMORY_LIMIT, returncode
    return Outcome.EXITED, returncode
