# Runs INSIDE a local sandbox as its pid 1: the one runner of every local program. It runs one program
# at a time, each in a process forked from this pristine one: a Python program in that process (no
# interpreter to start), any other program by exec. A warm sandbox keeps it for many programs, a cold
# one for one.
#
# argv: control_fd config_json. The control fd is a unix SOCK_SEQPACKET socket to the host. A request is
# {"filename", "timeout", "prelude", "argv"} (argv null: run the file in this Python) with three fds:
# a memfd holding the program's source and the write ends of its stdout and stderr pipes, whose read
# ends only the host holds. The answer is {"code", "timeout"} once the program and everything it
# started are gone, or {"error"} when the program could not be started (the host then reruns it in a
# fresh sandbox). {"kill": true} from the host (output over its limit) ends the program at once.
#
# Each program gets namespaces of its own, made here with the capabilities bubblewrap left this process
# in the sandbox's user namespace (never the host's): a fresh pid namespace (the program is its pid 1,
# as in a cold sandbox, with its own /proc), mount namespace with a fresh size-limited /tmp and /dev/pts, and UTS,
# IPC and network namespaces. The program's process then drops every capability and adds the host's
# seccomp filter for programs before it runs a line of the program (unless config "vm_root": the
# Superserve fake's VM root keeps its capabilities in the sandbox's user namespace). Whatever one program sets (files,
# xattrs and times of /tmp, the hostname, sockets and their TIME_WAIT entries, pids) lives in
# namespaces that die with it: the next program cannot see them.
#
# This process never runs program code, never reads what a program wrote, is non-dumpable (no ptrace,
# no /proc/1/fd) and ignores every signal; a program cannot even name it, since it lives outside the
# program's pid namespace.
import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inprocess  # the shared module beside this file

sys.path.pop(0)  # a program's sys.path is a cold interpreter's
inprocess.preload()  # what programs import: a forked child finds it imported

TMP = "/tmp"
MESSAGE_LIMIT = 1 << 20
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 22, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 47, 4, 2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CAPABILITY_VERSION_3 = 0x20080522
libc = ctypes.CDLL(None, use_errno=True)
SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD)]


def check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


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


def run_program(control, request, fds, config, dispositions):
    path = f"{TMP}/{request['filename']}"
    prelude = inprocess.prelude_code(path, request["prelude"], len(request["prelude"]))
    report_r, report_w = os.pipe()
    pid_r, pid_w = os.pipe()
    started = time.monotonic()
    # A short-lived process makes the program's namespaces and forks the program into them (the first
    # process of a new pid namespace is its pid 1), tells us its pid and exits: the program is then
    # our child, as an orphan of this pid namespace.
    maker = os.fork()
    if maker == 0:
        try:
            os.close(report_r)
            os.close(pid_r)
            enter_namespaces(config)
            pid = os.fork()
            if pid == 0:
                child(path, request, prelude, fds, config, dispositions, report_w)
            os.write(pid_w, str(pid).encode())
            os._exit(0)
        except BaseException as error:
            with contextlib.suppress(BaseException):
                os.write(report_w, f"E{type(error).__name__}: {error}"[:1000].encode())
        finally:
            os._exit(70)
    for fd in (report_w, pid_w, *fds):
        os.close(fd)
    try:
        os.waitpid(maker, 0)
        pid = int(read_report(pid_r) or 0)
        answer = wait(control, pid, started + request["timeout"]) if pid else None
        report = read_report(report_r)
    finally:
        os.close(report_r)
        os.close(pid_r)
    if answer is None or report != b"S":  # the program never started: not its exit status
        return {"error": report[1:].decode("utf-8", "replace") or "the program's process died during setup"}
    return answer


def read_report(fd):
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


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
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # the program, and what it left behind, as in a cold sandbox
    status = os.waitpid(pid, 0)[1]
    kill_everything()
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
    return {"code": code, "timeout": timed_out}


def kill_everything():
    # As pid 1, kill(-1) reaches every other process of this pid namespace and of those below it. Again
    # until no child is left, so a process forked while the first kill went round goes too.
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def loopback_up():
    # A cold sandbox's network namespace has its loopback up (bubblewrap does it); so does this one.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def drop_capabilities():
    """No capability left, and none to be had again: bounding and ambient sets emptied too."""
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for capability in range(last + 1):
        check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "drop a bounding capability")
    header = struct.pack("Ii", CAPABILITY_VERSION_3, 0)
    check(libc.capset(header, bytes(24)), "capset")
    with open("/proc/self/status") as handle:
        effective = next(line for line in handle if line.startswith("CapEff:")).split()[1]
    if int(effective, 16):
        raise OSError("capabilities are still effective")


def enter_namespaces(config):
    """Fresh namespaces (the pid one for the next child), a fresh /tmp, and the loopback up."""
    check(libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    options = f"size={config['tmpfs_bytes']},mode=1777".encode()
    check(libc.mount(b"tmpfs", TMP.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount /tmp")
    # A pty instance of its own: the sandbox's is writable by all, its times a channel between programs.
    devpts = b"newinstance,ptmxmode=0666,mode=620"
    check(libc.mount(b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC, devpts), "mount /dev/pts")
    loopback_up()


def install_filter(program):
    """The host's seccomp filter for programs (mount, unshare, setns, ptrace and more refused), on top of
    the sandbox's own."""
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    buffer = ctypes.create_string_buffer(program)
    fprog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buffer))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0), "install the seccomp filter")


def child(path, request, prelude, fds, config, dispositions, report_w):
    """The program's process: pid 1 of its namespace. Never returns."""
    try:
        executable = setup(path, request, fds, config, dispositions)
        source = read_source(path)
    except BaseException as error:
        with contextlib.suppress(BaseException):
            os.write(report_w, f"E{type(error).__name__}: {error}"[:1000].encode())
        os._exit(70)
    os.write(report_w, b"S")
    os.closerange(3, 1 << 16)  # the control socket, the report pipe and everything else of this process
    if executable is not None:
        try:
            os.execve(executable, request["argv"], dict(os.environ))
        except OSError as error:  # as a shell reports it: 126 cannot run, 127 not found
            print(f"sandbox: cannot run {executable}: {error}", file=sys.stderr)
            os._exit(127 if isinstance(error, FileNotFoundError) else 126)
    shared = request["prelude"]
    if prelude is None or not source.startswith(shared):
        os._exit(inprocess.run_as_main(path, source))
    os._exit(inprocess.run_as_main(path, source, prelude, len(shared)))


def find_executable(name):
    # shutil.which, without importing shutil into every program's interpreter.
    candidates = [name] if "/" in name else [os.path.join(d, name) for d in os.environ.get("PATH", "").split(":")]
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def read_source(path):
    with open(path, encoding="utf-8", errors="surrogatepass") as handle:
        return handle.read()


def setup(path, request, fds, config, dispositions):
    source_fd, out_w, err_w = fds
    os.setsid()
    check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")
    with os.fdopen(source_fd, "rb") as source, open(path, "wb") as handle:
        handle.write(source.read())
    os.chmod(path, 0o444)
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")  # as a cold program: its /proc is its own
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # at the memory limit the kernel kills the program, never pid 1
    if not config["vm_root"]:
        drop_capabilities()
        install_filter(bytes.fromhex(config["seccomp"]))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    cpu = max(1, int(request["timeout"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    for name, value in config["limits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.chdir(TMP)
    os.environ.clear()
    os.environ.update(config["env"])
    for number, handler in dispositions.items():
        signal.signal(number, handler)
    if request["argv"] is not None:
        executable = find_executable(request["argv"][0])
        if executable is None:  # the sandbox's fault, not the program's: before "S"
            raise FileNotFoundError(f"sandbox: no {request['argv'][0]} on PATH")
        return executable
    return None


def main():
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    # What a cold interpreter starts with (SIGINT raises KeyboardInterrupt, SIGPIPE ignored, ...), for
    # each program; this process ignores them all, or a program's SIGINT would be a KeyboardInterrupt here.
    dispositions = {}
    for number in SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            dispositions[number] = signal.signal(number, signal.SIG_IGN) or signal.SIG_DFL
    control = socket.socket(fileno=int(sys.argv[1]))
    config = json.loads(sys.argv[2])
    config["env"] = dict(os.environ)
    send(control, {"ready": True})
    while True:
        request, fds = receive(control)
        if request is None:
            return
        if "kill" in request or len(fds) != 3:
            for fd in fds:  # a kill that came after its program ended
                os.close(fd)
            continue
        send(control, run_program(control, request, fds, config, dispositions))


main()
