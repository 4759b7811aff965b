"""Runs a chunk of programs one after another in one Superserve sandbox. Runs INSIDE the sandbox.

Standard library only: the host (codegrpo.sandbox.superserve) reads this file as text, appends one
line, ``main("<bundle>")``, uploads the result as a single file and runs ``python3 -I -S <file>``
with the bundle's key in the environment variable ``KEY_ENV``. The bundle is base64 of the JSON
``{"header": str, "limit_bytes": int, "programs": [{"filename", "source", "command", "timeout_s"}]}``
XORed with SHAKE-256 of the key, so the uploaded file is useless to whoever reads it without the key.

Each program gets a fresh private directory (0700) holding its file; its command's ``/tmp/<filename>``
becomes that path, and it runs there with HOME and TMPDIR there, a clean environment, a new session,
stdin from /dev/null, stdout and stderr through pipes capped at ``limit_bytes`` each (past that it is
killed and flagged), and a wall-clock limit (past it, killed). Isolation from the runner and from the
programs before and after it:

- as root, each program runs as an unprivileged uid, so it can neither signal nor ptrace the runner
  nor read its /proc files; otherwise (the uid cannot change) it runs as the runner's uid and the
  runner is non-dumpable, which keeps it from ptracing the runner or opening /proc/<runner>/fd, mem
  and environ. Either way no_new_privs keeps setuid binaries from giving a program more rights;
- the bundle file is removed before any program runs, and the key leaves the environment (what is
  left of either is only in the runner's memory, which the programs cannot read);
- after each program, every process that did not exist before it started is killed (setsid daemons
  and fork loops included: the runner is a child subreaper and kills until none is left), and its
  directory, every new entry in the world-writable directories and every new System V IPC object
  are removed;
- the programs never hold the runner's stdout (pipes, close_fds). The runner writes once, at the end:
  the bundle's header line, then one line of JSON with one result per program, each
  ``{"exit_code", "stdout", "stderr", "duration_s", "truncated"}``.

Whenever a clean slate cannot be restored, the runner fails with no document, and the host runs the
chunk's programs again in a sandbox each.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import hashlib
import json
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

KEY_ENV = "CODEGRPO_BUNDLE_KEY"
PROGRAM_UID = PROGRAM_GID = 65534  # nobody
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
SYSV_IPC = ("shm", "msg", "sem")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 36, 38
IPC_RMID = 0
READ_CHUNK = 1 << 16
POLL_S = 0.05  # how often a running program is checked for leftovers that hold its pipes
KILL_ROUNDS = 2000

_libc = ctypes.CDLL(None, use_errno=True)


def main(bundle: str) -> None:
    _prctl(PR_SET_DUMPABLE, 0)  # same-uid programs cannot ptrace us or open /proc/<us>/fd, mem, environ
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphaned daemons are re-parented to us, so we reap them
    _destroy(sys.argv[0])
    spec = json.loads(_decrypt(bundle, os.environ.pop(KEY_ENV)))
    drop = _can_drop_privileges()
    path = _safe_path(os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), drop)
    dirs = {d: set(os.listdir(d)) for d in WRITABLE_DIRS if os.path.isdir(d) and not os.path.islink(d)}
    ipc = _ipc_ids()
    results = []
    for program in spec["programs"]:
        results.append(_run(program, spec["limit_bytes"], path, drop))
        _restore(dirs, ipc)
    sys.stdout.buffer.write(f"{spec['header']}\n{json.dumps(results)}\n".encode())
    sys.stdout.flush()


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl({option}, {value}): {os.strerror(error)}")


def _destroy(path: str) -> None:
    """Remove the uploaded file where the filesystem allows (the test fake mounts it read-only); without
    the key, which only this process holds now, its content is of no use to a program anyway."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def _decrypt(bundle: str, key: str) -> bytes:
    data = base64.b64decode(bundle)
    stream = hashlib.shake_256(key.encode()).digest(len(data))
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def _can_drop_privileges() -> bool:
    """Whether programs can run as PROGRAM_UID: only as root, and not where capabilities are dropped."""
    if os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(PROGRAM_GID)
            os.setuid(PROGRAM_UID)
        except OSError:
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _writable_by_programs(path: str, drop: bool) -> bool:
    st = os.stat(path)
    if st.st_mode & stat.S_IWOTH:
        return True
    return st.st_uid == PROGRAM_UID if drop else os.access(path, os.W_OK)


def _safe_path(path: str, drop: bool) -> str:
    """PATH without the directories a program could write to: no program plants a `python3` for the next."""
    keep = []
    for directory in path.split(os.pathsep):
        try:
            if os.path.isabs(directory) and not _writable_by_programs(directory, drop):
                keep.append(directory)
        except OSError:
            continue
    return os.pathsep.join(keep)


def _run(program: dict, limit: int, path: str, drop: bool) -> dict:
    workdir = tempfile.mkdtemp(prefix="run-", dir="/tmp")
    target = os.path.join(workdir, program["filename"])
    with open(target, "w", encoding="utf-8") as file:
        file.write(program["source"])
    if drop:
        os.chown(target, PROGRAM_UID, PROGRAM_GID)
        os.chown(workdir, PROGRAM_UID, PROGRAM_GID)
    argv = [target if arg == f"/tmp/{program['filename']}" else arg for arg in program["command"]]
    executable = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=path)
    if executable is None:
        return _result(127, b"", f"runner: {argv[0]}: command not found\n".encode(), 0.0, False)
    if _writable_by_programs(executable, drop):
        raise RuntimeError(f"{executable} is writable by the programs; running them together is not safe")
    env = {
        "PATH": path,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    identity = {"user": PROGRAM_UID, "group": PROGRAM_GID, "extra_groups": []} if drop else {}
    before = {(pid, start) for pid, start, _ in _processes()}
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            executable=executable,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,
            preexec_fn=_no_new_privs,
            **identity,
        )
    except OSError as error:  # as under `timeout`, a program that cannot start exits 126 or 127
        code = 127 if isinstance(error, FileNotFoundError) else 126
        return _result(code, b"", f"runner: cannot run {argv[0]}: {error}\n".encode(), 0.0, False)
    try:
        return _supervise(process, program["timeout_s"], limit, before, started)
    finally:
        _kill_new(before)
        process.wait()
        _reap()


def _no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _supervise(process: subprocess.Popen, timeout_s: float, limit: int, before: set, started: float) -> dict:
    assert process.stdout is not None and process.stderr is not None
    output = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    deadline = started + timeout_s
    killed = truncated = False
    ended: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in output:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if not killed and now >= deadline:
                killed = True
                _kill_new(before)
            if ended is None and process.poll() is not None:
                ended = now
                _kill_new(before)  # whatever it left behind may still hold its pipes
            wait = POLL_S if killed or ended is not None else min(POLL_S, deadline - now)
            for key, _ in selector.select(timeout=wait):
                data = os.read(key.fd, READ_CHUNK)
                if not data:
                    selector.unregister(key.fd)
                    continue
                kept = output[key.fd]
                room = max(0, limit - len(kept))
                kept += data[:room]
                if len(data) > room and not truncated:
                    truncated = killed = True
                    _kill_new(before)
    code = process.wait()
    duration = (ended or time.monotonic()) - started
    stdout, stderr = (bytes(output[stream.fileno()]) for stream in (process.stdout, process.stderr))
    return _result(128 - code if code < 0 else code, stdout, stderr, duration, truncated)


def _result(code: int, stdout: bytes, stderr: bytes, duration_s: float, truncated: bool) -> dict:
    return {
        "exit_code": code,
        "stdout": stdout.decode("utf-8", "replace"),
        "stderr": stderr.decode("utf-8", "replace"),
        "duration_s": duration_s,
        "truncated": truncated,
    }


def _processes() -> list[tuple[int, bytes, bytes]]:
    """(pid, start time, state) of every process; the start time tells a reused pid apart."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as file:
                    fields = file.read().rpartition(b")")[2].split()
            except OSError:
                continue  # it is gone
            found.append((int(name), fields[19], fields[0]))
    return found


def _kill_new(before: set) -> None:
    """SIGKILL every live process not in ``before`` but us, until none is left."""
    me = os.getpid()
    for _ in range(KILL_ROUNDS):
        alive = [(pid, start) for pid, start, state in _processes() if state not in (b"Z", b"X")]
        new = [pid for pid, start in alive if (pid, start) not in before and pid != me]
        if not new:
            return
        for pid in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)
    raise RuntimeError("processes outlived SIGKILL")


def _reap() -> None:
    """Collect the zombies re-parented to us (we are a subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _restore(dirs: dict[str, set[str]], ipc: dict[str, set[int]]) -> None:
    """Remove what the last program left in the shared writable places; fail if it cannot be removed."""
    for directory, names in dirs.items():
        for name in set(os.listdir(directory)) - names:
            _remove(os.path.join(directory, name))
    for kind, ids in _ipc_ids().items():
        for ipc_id in ids - ipc[kind]:
            _ipc_remove(kind, ipc_id)


def _remove(path: str) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        os.chmod(path, 0o700)  # a program may have locked its own directories against listing
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _ipc_ids() -> dict[str, set[int]]:
    ids = {}
    for kind in SYSV_IPC:
        try:
            with open(f"/proc/sysvipc/{kind}") as file:
                rows = file.read().splitlines()[1:]
        except OSError:
            rows = []
        ids[kind] = {int(row.split()[1]) for row in rows if row.strip()}
    return ids


def _ipc_remove(kind: str, ipc_id: int) -> None:
    done = _libc.semctl(ipc_id, 0, IPC_RMID) if kind == "sem" else getattr(_libc, f"{kind}ctl")(ipc_id, IPC_RMID, None)
    if done != 0 and ctypes.get_errno() not in (22, 43):  # EINVAL, EIDRM: already gone
        raise OSError(ctypes.get_errno(), f"cannot remove System V {kind} {ipc_id}")
