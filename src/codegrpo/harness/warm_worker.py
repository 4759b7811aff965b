# Runs INSIDE a local sandbox as its pid 1: a warm Python that runs one program at a time, each in a
# process forked from this pristine one, so no program pays for starting an interpreter or a sandbox.
#
# argv: control_fd limits_json. The control fd is a unix SOCK_SEQPACKET socket to the host. A request is
# {"filename", "timeout", "prelude"} with three fds: a memfd holding the program's source and the write
# ends of its stdout and stderr pipes, whose read ends only the host holds. The answers are
# {"code", "timeout"} once the program is over, then {"clean"} once its leftovers are gone. {"kill": true}
# from the host (output over its limit) ends the program at once.
#
# This process never runs program code and is non-dumpable, so a program can neither ptrace it nor open
# /proc/1/fd; as pid 1 it ignores every signal sent from inside. It never holds a program's source,
# output or files either: the program's own process reads its source, its output goes straight to the
# host, and a /tmp with more in it than the program's own file is emptied by a short-lived janitor. A
# later program, forked from this process, finds nothing of an earlier one even in its own memory.
#
# Between programs every process left is killed and reaped, /tmp is emptied, and the host's seccomp
# filter already refuses keyrings, SysV IPC and POSIX message queues, the only other state a namespace
# keeps without a process. When that cannot be verified, {"clean": false} and the host throws this
# sandbox away.
import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inprocess  # the shared module beside this file

sys.path.pop(0)  # a program's sys.path is a cold interpreter's
inprocess.preload()  # what programs import: a forked child finds it imported

TMP = "/tmp"
MESSAGE_LIMIT = 1 << 20
EMPTY_SIZE = None  # /tmp's size when empty, where that tells an empty /tmp (see only_file_left)


def receive(control):
    """The next request and its fds; (None, []) when the host is gone."""
    data, fds, _, _ = socket.recv_fds(control, MESSAGE_LIMIT, 3)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


def send(control, document):
    control.send(json.dumps(document).encode())


def run_program(control, request, fds, limits, base_env):
    path = f"{TMP}/{request['filename']}"
    prelude = inprocess.prelude_code(path, request["prelude"], len(request["prelude"]))
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            child(path, request, prelude, fds, limits, base_env)
        finally:
            os._exit(70)
    for fd in fds:
        os.close(fd)
    return wait(control, pid, started + request["timeout"])


def wait(control, pid, deadline):
    """Until the program ends, runs out of time, or the host says kill; then kill what it left."""
    pidfd = os.pidfd_open(pid)
    timed_out = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready = select.select([pidfd, control], [], [], remaining)[0]
            if pidfd in ready:
                break
            if control in ready:
                message, fds = receive(control)
                for fd in fds:
                    os.close(fd)
                if message is None:
                    kill_everything()
                    sys.exit(0)  # the host is gone
                break  # a kill: the host saw too much output
    finally:
        os.close(pidfd)
    kill_everything()  # what the program left behind goes now, as in a cold sandbox
    status = os.waitpid(pid, 0)[1]
    reap_all()
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
    return {"code": code, "timeout": timed_out}


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


def cleaned(filename=None):
    """Empty /tmp; True when nothing is left. Without reading a name this process did not choose."""
    if filename is not None and EMPTY_SIZE is not None and only_file_left(filename):
        return sysv_empty()
    # A janitor process does it, whose memory (file names included) dies with it.
    pid = os.fork()
    if pid == 0:
        os._exit(0 if wipe_tmp() and sysv_empty() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def only_file_left(filename):
    """Remove the program's file; True when /tmp is then empty and as it was. tmpfs counts a directory's
    entries in its size, which is how this knows without listing names."""
    path = f"{TMP}/{filename}"
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        os.unlink(path)
        os.chmod(TMP, 0o1777)
        return os.lstat(TMP).st_size == EMPTY_SIZE
    except OSError:
        return False


def empty_size():
    """/tmp's size when empty, if its size counts its entries (tmpfs), else None."""
    probe = f"{TMP}/.codegrpo-probe"
    empty = os.lstat(TMP).st_size
    with open(probe, "w"):
        pass
    counted = os.lstat(TMP).st_size > empty
    os.unlink(probe)
    return empty if counted and os.lstat(TMP).st_size == empty else None


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


def child(path, request, prelude, fds, limits, base_env):
    source_fd, out_w, err_w = fds
    os.setsid()
    with os.fdopen(source_fd, "rb") as handle:
        source = handle.read().decode("utf-8", "surrogatepass")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(source)
    os.chmod(path, 0o444)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.closerange(3, 1 << 16)  # the control socket and everything else of this process
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # at the memory limit the kernel kills the program, never pid 1
    cpu = max(1, int(request["timeout"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.chdir(TMP)
    os.environ.clear()
    os.environ.update(base_env)
    shared = request["prelude"]
    if prelude is None or not source.startswith(shared):
        os._exit(inprocess.run_as_main(path, source))
    os._exit(inprocess.run_as_main(path, source, prelude, len(shared)))


def main():
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    control = socket.socket(fileno=int(sys.argv[1]))
    limits = json.loads(sys.argv[2])
    base_env = dict(os.environ)
    ready = cleaned()
    global EMPTY_SIZE
    EMPTY_SIZE = empty_size() if ready else None
    send(control, {"ready": True, "clean": ready})
    while True:
        request, fds = receive(control)
        if request is None:
            return
        if "kill" in request or len(fds) != 3:
            for fd in fds:  # a kill that came after its program ended
                os.close(fd)
            continue
        send(control, run_program(control, request, fds, limits, base_env))
        clean = cleaned(request["filename"])
        send(control, {"clean": clean})
        if not clean:
            return


main()
