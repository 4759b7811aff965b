"""Runs a chunk of programs one after another in one Superserve sandbox. Runs INSIDE the sandbox.

Standard library only: the host (codegrpo.sandbox.superserve) reads this file as text, appends one
line, ``main("<bundle>", "<key variable>")``, uploads the result as a single file and runs ``python3 -I -S <file>``
with the bundle's key in that environment variable. The bundle is base64 of the JSON
``{"header": str, "limit_bytes": int, "modules": {"batch_runner": str, "inprocess": str},
"programs": [{"filename", "source", "command", "warm", "timeout_s", "prelude_chars"}]}`` XORed with
SHAKE-256 of the key, so the uploaded file is useless to whoever reads it without the key.

Each program gets a fresh private directory (0700) holding its file; its command's ``/tmp/<filename>``
becomes that path, and it runs there with HOME and TMPDIR there, a clean environment, a new session,
stdin from /dev/null, stdout and stderr through pipes capped at ``limit_bytes`` each (past that it is
killed and flagged), and a wall-clock limit (past it, killed).

A ``python3 -I /tmp/<filename>`` program is not given an interpreter of its own: the zygote, a
``python3 -I`` started once per chunk with the modules programs use already imported, forks it and
runs its file in the fork as ``python3 -I`` would (codegrpo's inprocess.py, which the bundle carries
with this file's own text). The zygote is started with exec and a clean environment and is never
sent a source, the key or the bundle: each fork reads its own file, so a program's memory holds
nothing of any other program (the runner's own memory does; it never forks a program). Other
commands run as a subprocess. Either way, isolation from the runner and from the programs before
and after it:

- as root, each program runs as an unprivileged uid, so it can neither signal nor ptrace the runner
  or the zygote nor read their /proc files; otherwise (the uid cannot change) it runs as their uid
  and both are non-dumpable, which keeps it from ptracing them or opening /proc/<pid>/fd, mem and
  environ. Either way no_new_privs keeps setuid binaries from giving a program more rights;
- the bundle file is removed before any program runs, and the key leaves the environment (what is
  left of either is only in the runner's memory, which the programs cannot read);
- after each program, every process that did not exist before it started is killed (setsid daemons
  and fork loops included: the runner is a child subreaper and kills until none is left), and its
  directory, every new entry in the world-writable directories and every new System V IPC object
  are removed. A fork shares nothing with the next one: whatever a program changes in its
  interpreter (builtins, modules) dies with its process;
- each program runs in network, UTS and IPC namespaces of its own (loopback up), made for it and gone
  with it, so nothing it leaves in the kernel (TIME_WAIT sockets, the hostname) reaches the next one.
  Where this runner cannot make them (no CAP_SYS_ADMIN), a chunk of more than one program is refused
  (exit status ``NO_NAMESPACES_EXIT``) and the host runs every program in a sandbox of its own;
- the programs never hold the runner's stdout nor the zygote's socket (pipes, close_fds). The runner
  writes once, at the end: the bundle's header line, then one line of JSON with one result per
  program, each ``{"exit_code", "stdout", "stderr", "duration_s", "truncated"}``.

Whenever a clean slate cannot be restored, or the zygote fails (a same-uid program may kill it), the
runner fails with no document, and the host runs the chunk's programs again in a sandbox each.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import hashlib
import io
import json
import os
import secrets
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import types

PROGRAM_UID = PROGRAM_GID = 65534  # nobody
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
SYSV_IPC = ("shm", "msg", "sem")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x04000000, 0x08000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
NO_NAMESPACES_EXIT = 3  # the host then runs every program in a sandbox of its own
IPC_RMID = 0
READ_CHUNK = 1 << 16
POLL_S = 0.05  # how often a running program is checked for leftovers that hold its pipes
KILL_ROUNDS = 2000
WAIT_S = 10.0  # how long a program killed with everything it started may take to be reported gone
ZYGOTE_START_S = 30.0
MESSAGE_LIMIT = 1 << 20  # one request to the zygote
PRELUDE_LIMIT = 1 << 16  # a longer prelude is not shared (it would not fit in one message)
SETUP_REPORT_LIMIT = 2000
FD_LIMIT = 1 << 20
# The zygote's __main__: imports this file and inprocess.py from a private directory that the runner
# deletes once the zygote is ready, leaving sys.path as a cold `python3 -I` has it.
ZYGOTE_BOOT = """\
import sys
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
import batch_runner, inprocess
sys.dont_write_bytecode = False
sys.path.remove(sys.argv[1])
sys.path_importer_cache.pop(sys.argv[1], None)
batch_runner.serve_forks(inprocess, int(sys.argv[2]))
"""

_libc = ctypes.CDLL(None, use_errno=True)


def main(bundle: str, key_env: str) -> None:
    _prctl(PR_SET_DUMPABLE, 0)  # same-uid programs cannot ptrace us or open /proc/<us>/fd, mem, environ
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphaned daemons are re-parented to us, so we reap them
    _destroy(sys.argv[0])
    spec = json.loads(_decrypt(bundle, os.environ.pop(key_env)))
    if len(spec["programs"]) > 1 and not _in_child(_isolate):
        print("codegrpo-runner: cannot give each program namespaces of its own here", file=sys.stderr)
        sys.exit(NO_NAMESPACES_EXIT)
    drop = _can_drop_privileges()
    path = _safe_path(os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), drop)
    # One directory name for every program: the zygote compiles their shared prelude once for it.
    workdir = f"/tmp/run-{secrets.token_hex(8)}"
    zygote = None
    if any(program["warm"] for program in spec["programs"]):
        zygote = _Zygote(_executable("python3", path, drop), spec["modules"], _environment(path, "/"))
    dirs = {d: set(os.listdir(d)) for d in WRITABLE_DIRS if os.path.isdir(d) and not os.path.islink(d)}
    ipc = _ipc_ids()
    before = _snapshot()
    results = []
    for program in spec["programs"]:
        result, before = _run(program, spec["limit_bytes"], path, drop, workdir, zygote, before)
        results.append(result)
        _restore(dirs, ipc)
    if zygote is not None:
        zygote.close()
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
    return os.geteuid() == 0 and _in_child(_drop_privileges)


def _drop_privileges() -> None:
    os.setgroups([])
    os.setgid(PROGRAM_GID)
    os.setuid(PROGRAM_UID)


def _in_child(attempt: types.FunctionType) -> bool:
    """Whether ``attempt()`` works, tried in a fork so this process is left as it was."""
    pid = os.fork()
    if pid == 0:
        try:
            attempt()
        except BaseException:
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _isolate() -> None:
    """Fresh network (loopback up), UTS and IPC namespaces for this process and what it starts next."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


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


def _executable(name: str, path: str, drop: bool) -> str | None:
    executable = name if "/" in name else shutil.which(name, path=path)
    if executable is not None and _writable_by_programs(executable, drop):
        raise RuntimeError(f"{executable} is writable by the programs; running them together is not safe")
    return executable


def _environment(path: str, home: str) -> dict[str, str]:
    return {
        "PATH": path,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def _run(
    program: dict, limit: int, path: str, drop: bool, workdir: str, zygote: _Zygote | None, before: set
) -> tuple[dict, set]:
    """The program's result, and the processes alive once it is gone (the next program's ``before``)."""
    os.mkdir(workdir, 0o700)  # fails if anything is left of the last program's
    target = os.path.join(workdir, program["filename"])
    with open(target, "w", encoding="utf-8") as file:
        file.write(program["source"])
    if drop:
        os.chown(target, PROGRAM_UID, PROGRAM_GID)
        os.chown(workdir, PROGRAM_UID, PROGRAM_GID)
    argv = [target if arg == f"/tmp/{program['filename']}" else arg for arg in program["command"]]
    env = _environment(path, workdir)
    process: subprocess.Popen | _Forked
    started = time.monotonic()
    if zygote is not None and program["warm"]:
        prelude = program["source"][: program["prelude_chars"]]
        process = zygote.fork(argv, "" if len(prelude) > PRELUDE_LIMIT else prelude, env, drop)
    else:
        executable = _executable(argv[0], path, drop)
        if executable is None:
            return _result(127, b"", f"runner: {argv[0]}: command not found\n".encode(), 0.0, False), before
        identity = {"user": PROGRAM_UID, "group": PROGRAM_GID, "extra_groups": []} if drop else {}
        try:
            _isolate()  # the runner's own, which the program inherits: nothing of the runner's depends on them
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
            return _result(code, b"", f"runner: cannot run {argv[0]}: {error}\n".encode(), 0.0, False), before
    try:
        result = _supervise(process, program["timeout_s"], limit, before, started)
    finally:
        after = _kill_new(before, process)
        _reap()
    return result, after


def _no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _supervise(process: subprocess.Popen | _Forked, timeout_s: float, limit: int, before: set, started: float) -> dict:
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
                _kill_new(before, process)
            if ended is None and process.poll() is not None:
                ended = now
                _kill_new(before, process)  # whatever it left behind may still hold its pipes
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
                    _kill_new(before, process)
    try:  # it may have closed its pipes and gone on running
        code = process.wait(WAIT_S if killed else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        if killed:
            raise
        _kill_new(before, process)
        code = process.wait(WAIT_S)
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


def _snapshot() -> set[tuple[int, bytes]]:
    return {(pid, start) for pid, start, state in _processes() if state not in (b"Z", b"X")}


def _kill_new(before: set, process: subprocess.Popen | _Forked) -> set[tuple[int, bytes]]:
    """SIGKILL every live process not in ``before`` but us, until none is left; returns those alive then."""
    me = os.getpid()
    if isinstance(process, _Forked):
        process.zygote.resume()  # a program may have stopped it, holding its pipes' other ends
    for _ in range(KILL_ROUNDS):
        alive = _snapshot()
        new = [pid for pid, start in alive - before if pid != me]
        if not new:
            return alive
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


# ----------------------------------------------------------------------------------- the zygote


class _Zygote:
    """The runner's end of the zygote: starts it, asks it to fork programs, reads their exit status."""

    def __init__(self, executable: str | None, modules: dict[str, str], env: dict[str, str]) -> None:
        if executable is None:
            raise RuntimeError("no python3 for the zygote")
        directory = tempfile.mkdtemp(prefix="zygote-", dir="/tmp")
        try:
            for name, source in modules.items():
                with open(os.path.join(directory, f"{name}.py"), "w", encoding="utf-8") as file:
                    file.write(source)
            self._socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with theirs:
                self._process = subprocess.Popen(
                    ["python3", "-I", "-c", ZYGOTE_BOOT, directory, str(theirs.fileno())],
                    executable=executable,
                    cwd="/",
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                )
            if self._receive(ZYGOTE_START_S) != {"ready": True}:
                raise RuntimeError("the zygote did not start in time")
        finally:
            shutil.rmtree(directory)

    def fork(self, argv: list[str], prelude: str, env: dict[str, str], drop: bool) -> _Forked:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {"argv": argv, "prelude": prelude, "env": env, "drop": drop}
        try:
            self.resume()
            socket.send_fds(self._socket, [json.dumps(request).encode()], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        return _Forked(self, open(out_r, "rb", buffering=0), open(err_r, "rb", buffering=0))

    def exit_code(self, timeout: float) -> int | None:
        """The exit code (Popen's: -N for signal N) of the program forked last, once reported."""
        message = self._receive(timeout)
        if message is None:
            return None
        if message["setup_error"] is not None:
            raise RuntimeError(message["setup_error"])
        return os.waitstatus_to_exitcode(message["status"])

    def resume(self) -> None:
        """SIGCONT: a same-uid program may have stopped the zygote."""
        if self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGCONT)

    def close(self) -> None:
        self._socket.close()  # the zygote exits at end of file
        try:
            self._process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()

    def _receive(self, timeout: float) -> dict | None:
        if not select.select([self._socket], [], [], timeout)[0]:
            return None
        message = self._socket.recv(MESSAGE_LIMIT)
        if not message:
            raise RuntimeError("the zygote is gone")
        return json.loads(message)


class _Forked:
    """A program the zygote forked, with the part of Popen's interface that _supervise uses."""

    def __init__(self, zygote: _Zygote, stdout: io.FileIO, stderr: io.FileIO) -> None:
        self.zygote = zygote
        self.stdout, self.stderr = stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_code(0)
        return self.returncode

    def wait(self, timeout: float) -> int:
        if self.returncode is None:
            self.zygote.resume()
            self.returncode = self.zygote.exit_code(timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("forked program", timeout)
        return self.returncode


def serve_forks(inprocess: types.ModuleType, fd: int) -> None:
    """The zygote's loop: fork a program per request, report its wait status; exit at end of file.

    Requests are ``{"argv", "prelude", "env", "drop"}`` with the program's stdout and stderr pipes.
    """
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # it never outlives the runner
    _prctl(PR_SET_DUMPABLE, 0)  # same-uid programs cannot ptrace it to change what it forks next
    inprocess.preload()
    channel = socket.socket(fileno=fd)
    channel.send(b'{"ready": true}')
    while True:
        message, fds, _, _ = socket.recv_fds(channel, MESSAGE_LIMIT, 2)
        if not message:
            os._exit(0)
        request = json.loads(message)
        path = request["argv"][-1]
        prelude = inprocess.prelude_code(path, request["prelude"], len(request["prelude"]))
        # The fork says on its own pipe whether its set-up worked, and closes it before the program
        # runs: a set-up that fails is the runner's failure, not an exit status of the program.
        setup_r, setup_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _forked(inprocess, request, prelude, *fds, setup_w)
            finally:
                os._exit(70)
        for received in (*fds, setup_w):
            os.close(received)
        status = os.waitpid(pid, 0)[1]
        with open(setup_r, "rb") as setup:
            report = setup.read(SETUP_REPORT_LIMIT)
        error = None if report == b"+" else report.decode("utf-8", "replace") or f"no set-up report, status {status}"
        channel.send(json.dumps({"status": status, "setup_error": error}).encode())


def _forked(
    inprocess: types.ModuleType,
    request: dict,
    prelude: types.CodeType | None,
    stdout: int,
    stderr: int,
    setup: int,
) -> None:
    """In the fork: the subprocess path's set-up, then the program's file as ``python3 -I`` runs it."""
    argv, path = request["argv"], request["argv"][-1]
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.closerange(3, setup)  # the zygote's socket and everything else
        os.closerange(setup + 1, FD_LIMIT)
        os.chdir(os.path.dirname(path))
        _isolate()
        if request["drop"]:
            _drop_privileges()
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _prctl(PR_SET_DUMPABLE, 1)  # as after an exec: the zygote's protection is not the program's
        os.environ.clear()
        os.environ.update(request["env"])
        for name in ("batch_runner", "inprocess"):  # a cold interpreter has neither
            sys.modules.pop(name, None)
        sys.orig_argv[:] = argv
        with open(path, "rb") as file:  # read here, so the zygote never holds a program's source
            source = file.read().decode("utf-8")
    except BaseException as error:  # whatever it is, the host logs it
        os.write(setup, f"set-up of a forked program failed: {error!r}".encode()[:SETUP_REPORT_LIMIT])
        os._exit(70)
    os.write(setup, b"+")
    os.close(setup)
    shared = request["prelude"]
    if prelude is None or not source.startswith(shared):
        os._exit(inprocess.run_as_main(path, source))
    os._exit(inprocess.run_as_main(path, source, prelude, len(shared)))
