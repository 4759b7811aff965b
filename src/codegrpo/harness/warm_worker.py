# Runs INSIDE a local sandbox as its pid 1: a warm Python that runs one program at a time, each in a
# process forked from this pristine one, so no program pays for starting an interpreter or a sandbox.
#
# argv: stdout_limit stderr_limit limits_json. Frames on fds 0 (requests) and 1 (results) are a 4-byte
# big-endian length and a JSON document. This process never runs program code and is non-dumpable, so a
# program can neither ptrace it nor open /proc/1/fd; as pid 1 it ignores every signal sent from inside.
#
# Between programs nothing of one can reach the next: every process left is killed and reaped, /tmp is
# emptied, and the host's seccomp filter already refuses keyrings, SysV IPC and POSIX message queues,
# the only other state a namespace keeps without a process. After each result comes a second frame,
# {"clean": bool}; when the cleanup cannot be verified it says false and the host throws this sandbox away.
#
# The imports marked F401 are for the programs: a forked child finds them imported.
import collections  # noqa: F401
import contextlib
import ctypes
import functools  # noqa: F401
import heapq  # noqa: F401
import itertools  # noqa: F401
import json
import marshal  # noqa: F401
import math  # noqa: F401
import os
import re  # noqa: F401
import resource
import select
import signal
import stat
import struct
import sys
import time
import typing  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inprocess  # the shared module beside this file

sys.path.pop(0)  # a program's sys.path is a cold interpreter's

HEADER = struct.Struct(">I")
REQUEST_LIMIT = 64 << 20
TMP = "/tmp"
CHUNK = 1 << 16
DRAIN_S = 5.0


def read_frame(fd):
    header = read_exactly(fd, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > REQUEST_LIMIT:
        raise ValueError("request too large")
    return json.loads(read_exactly(fd, size) or b"")


def read_exactly(fd, size):
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def write_frame(fd, document):
    data = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")
    data = HEADER.pack(len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def run_program(request, stdout_limit, stderr_limit, limits, base_env):
    path = f"{TMP}/{request['filename']}"
    prelude = inprocess.prelude_code(path, request["source"], request["prelude_chars"])
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(request["source"])
    os.chmod(path, 0o444)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            child(path, request, prelude, out_w, err_w, limits, base_env)
        finally:
            os._exit(70)
    os.close(out_w)
    os.close(err_w)
    done = watch(pid, out_r, err_r, stdout_limit, stderr_limit, started + request["timeout"])
    done["duration"] = time.monotonic() - started
    return done


def watch(pid, out_r, err_r, stdout_limit, stderr_limit, deadline):
    """Collect the program's capped output until it and everything it started are gone."""
    pidfd = os.pidfd_open(pid)
    limits = {out_r: stdout_limit, err_r: stderr_limit}
    kept = {out_r: b"", err_r: b""}
    status, timed_out, overflow, killed_at = None, False, False, None
    try:
        while limits or status is None:
            now = time.monotonic()
            if killed_at is None and (status is not None or now >= deadline or overflow):
                timed_out = status is None and not overflow
                kill_everything()  # the program is over: what it left behind goes now, as in a cold sandbox
                killed_at = now
            if killed_at is not None and status is None:
                status = os.waitpid(pid, 0)[1]
                continue
            if killed_at is not None and now - killed_at > DRAIN_S:
                break  # a pipe stayed open with no process left to write it: report, then start afresh
            wait = DRAIN_S if killed_at is not None else max(0.0, deadline - now)
            ready = select.select([*limits, *([pidfd] if status is None else [])], [], [], wait)[0]
            if pidfd in ready:
                status = os.waitpid(pid, 0)[1]
            for fd in ready:
                if fd in limits:
                    overflow |= read_capped(fd, limits, kept)
    finally:
        os.close(pidfd)
        for fd in limits:
            os.close(fd)
    result = {"timeout": timed_out, "overflow": overflow, "stdout": decode(kept[out_r]), "stderr": decode(kept[err_r])}
    result["code"] = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
    result["drained"] = not limits
    return result


def read_capped(fd, limits, kept):
    """Read what is there; True when the stream went past its limit."""
    chunk = os.read(fd, CHUNK)
    if not chunk:
        del limits[fd]
        os.close(fd)
        return False
    over = len(kept[fd]) + len(chunk) > limits[fd]
    kept[fd] = (kept[fd] + chunk)[: limits[fd]]
    return over


def decode(data):
    return data.decode("utf-8", "replace")


def kill_everything():
    # As pid 1, kill(-1) reaches every other process of this pid namespace: the program's too.
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def reap_all():
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def wipe_tmp():
    """Empty /tmp; True when it is empty afterwards. Anything odd (a tree too deep to walk) is False."""
    try:
        unlock(TMP)
        for root, dirs, files in os.walk(TMP, topdown=False, onerror=fail):
            for name in files:
                os.unlink(os.path.join(root, name))
            for name in dirs:
                path = os.path.join(root, name)
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
        return not os.listdir(TMP)
    except (OSError, RecursionError):
        return False


def unlock(top):
    # A program may leave directories it cannot enter or list; their owner can always chmod them back.
    os.chmod(top, 0o1777)
    for root, dirs, _ in os.walk(top, onerror=fail):
        for name in dirs:
            path = os.path.join(root, name)
            if stat.S_ISDIR(os.lstat(path).st_mode):
                os.chmod(path, 0o700)  # before os.walk goes into it


def fail(error):
    raise error


def sysv_empty():
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as handle:
                if len(handle.read().splitlines()) > 1:
                    return False
        except OSError:
            continue  # not there: nothing to leave behind
    return True


def child(path, request, prelude, out_w, err_w, limits, base_env):
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.closerange(3, 1 << 16)  # the request/result pipes and everything else of this process
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # at the memory limit the kernel kills the program, never pid 1
    cpu = max(1, int(request["timeout"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.chdir(TMP)
    os.environ.clear()
    os.environ.update(base_env)
    os._exit(inprocess.run_as_main(path, request["source"], prelude, request["prelude_chars"]))


def main():
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    stdout_limit, stderr_limit = int(sys.argv[1]), int(sys.argv[2])
    limits = json.loads(sys.argv[3])
    requests, results = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    base_env = dict(os.environ)
    write_frame(results, {"ready": True, "clean": wipe_tmp() and sysv_empty()})
    while True:
        request = read_frame(requests)
        if request is None:
            return
        result = run_program(request, stdout_limit, stderr_limit, limits, base_env)
        kill_everything()
        reap_all()
        drained = result.pop("drained")
        write_frame(results, result)  # the program's result does not wait for the cleanup
        clean = drained and wipe_tmp() and sysv_empty()
        write_frame(results, {"clean": clean})
        if not clean:
            return


main()
