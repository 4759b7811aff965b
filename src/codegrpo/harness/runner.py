# Runs INSIDE a sandbox: the one runner of every program, local or in a Superserve VM. It runs one
# program's run at a time, each in a process forked from this pristine one, in namespaces of its own: a
# Python program in that process (no interpreter to start), any other program by exec.
#
#   python3 -I runner.py serve CONTROL_FD CONFIG_JSON   the local sandbox's pid 1, for the host
#   <this file> + "unpack(bundle, key_env)"             a Superserve chunk: decrypt, write, exec batch
#   python3 -I runner.py batch DIR                      ... run every program of DIR, print one document
#
# serve: the control fd is a unix SOCK_SEQPACKET socket to the host, speaking harness/protocol.py: one run
# at a time (the run's program, a memfd of its source and one of its own input, never its index, the
# count, another run's input or the budget: the host keeps those), an open message with the read ends of
# the run's stdout and stderr pipes (only the host reads them) and an answer once the run and everything
# it started are gone. A warm sandbox keeps this process for many programs, a cold one for one.
#
# batch: this process is the host of a serve loop in a process forked before any program was read (so no
# program, forked from it, finds another program, input or output in its memory); it reads each run's
# output (capped) and writes the chunk's header line, then one JSON list with, per program, {"runs": [...]}
# and per run {"exit_code", "timed_out", "budget_cut", "over_limit", "stdout", "stderr", "duration_s"}. Any program
# that cannot be started fails the whole chunk (the host runs its programs again, a sandbox each). Where
# programs cannot get namespaces of their own, it exits NO_NAMESPACES_EXIT before running any.
#
# Each run gets fresh pid (it is pid 1 there, with its own /proc), mount (a fresh size-limited /tmp and
# /dev/pts; in a VM also the other world-writable places), UTS, IPC and network namespaces, made with
# this process's capabilities (in a local sandbox, those bubblewrap left it in the sandbox's own user
# namespace). The run's process then drops every capability (a VM's root also becomes a uid of its own,
# drawn at random) and adds the host's seccomp filter for programs before it runs a line of the program
# (unless config "vm_root": the Superserve fake's VM root keeps its capabilities). Whatever one run sets
# lives in namespaces that die with it: the next run cannot see it. And a run keeps none of this process's
# frames: it unwinds them to the bottom of the stack (`Start`) before it sets itself up, so what remains is
# the runner's code, its config and the run's own message; a full collection then empties the free lists
# and counts this process filled run after run, so they number nothing.
#
# This process never runs program code, never holds a program's source, input or output (each run's
# process reads its own source, the host keeps the rest), is non-dumpable and ignores every signal; a
# program cannot even name it, since it lives outside the program's pid namespace. Standard library only.
import contextlib
import ctypes
import fcntl
import gc
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

# harness/inprocess.py and harness/protocol.py: loaded by serve and batch from beside this file, never by unpack
inprocess = protocol = None
TMP = "/tmp"
VM_WRITABLE = ("/var/tmp", "/dev/shm", "/run/lock")  # world-writable in a VM: a fresh tmpfs each program
# A VM's root runs each run of a chunk as a uid of its own, drawn at random from FIRST_UID + [0, UID_SPAN):
# per-user counts are its own, and the uid tells nothing of its position.
FIRST_UID, UID_SPAN = 100000, 1 << 24
COPY_CHUNK = 1 << 20
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
NAMESPACES = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY, SYS_MOUNT_SETATTR = -100, 0x8000, 0x1, 442  # x86_64 and aarch64
PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 22, 24, 36, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 47, 4, 2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CAPABILITY_VERSION_3 = 0x20080522
libc = ctypes.CDLL(None, use_errno=True)
SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD)]


def check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


class Start(BaseException):
    """Raised in a run's process, fresh from its maker's fork: it unwinds the serve loop's frames (nothing
    catches it on the way) to `main`, which sets the run up and runs it from the bottom of the stack."""


def run_once(message, fds, config, dispositions, control):
    """One run, to its end: its answer, or {"error"} if it could not be started."""
    path = f"{TMP}/{message['filename']}"
    inprocess.prelude_code(path, message["prelude"], len(message["prelude"]))  # compiled once, for every fork
    report_r, report_w = os.pipe()
    pid_r, pid_w = os.pipe()
    (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
    started = time.monotonic()
    deadline = started + message["timeout"]
    # A short-lived process makes the run's namespaces and forks the run into them (the first process of
    # a new pid namespace is its pid 1), tells us its pid and exits: the run is then our child, as an
    # orphan of this pid namespace.
    maker = os.fork()
    if maker == 0:
        make_run(config, (report_r, pid_r, out_r, err_r), pid_w, report_w)
        raise Start([message, fds, (out_w, err_w), report_w, config, dispositions])  # the run's process only
    for fd in (report_w, pid_w, out_w, err_w):
        os.close(fd)
    try:
        protocol.send(control, {"open": True}, [out_r, err_r])
    finally:
        os.close(out_r)
        os.close(err_r)
    try:
        os.waitpid(maker, 0)
        pid = int(read_report(pid_r) or 0)
        answer = wait(pid, deadline, control, message["timeout"]) if pid else None
        report = read_report(report_r)
    finally:
        os.close(report_r)
        os.close(pid_r)
    if answer is None or report != b"S":  # the run never started: not its exit status
        return {"error": report[1:].decode("utf-8", "replace") or "the program's process died during setup"}
    return answer | {"duration_s": time.monotonic() - started}


def make_run(config, theirs, pid_w, report_w):
    """The maker: fresh namespaces, the run forked into them; returns in the run's process only."""
    try:
        for fd in theirs:
            os.close(fd)
        enter_namespaces(config)
        pid = os.fork()
    except BaseException as error:
        report_error(report_w, error)
        os._exit(protocol.SETUP_FAILED_EXIT)
    if pid == 0:
        return
    os.write(pid_w, str(pid).encode())
    os._exit(0)


def report_error(report_w, error):
    with contextlib.suppress(BaseException):
        os.write(report_w, f"E{type(error).__name__}: {error}"[:1000].encode())


def read_report(fd):
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


# The kernel holds a run to its CPU limit by a count of scheduler ticks, which on a busy machine runs ahead of
# the precise time rusage reports (a run killed at 5 s showed 4.91 s here, with CI running beside it).
TICKS_SHARE = 0.9


def cpu_limit(timeout):
    """The run's RLIMIT_CPU, in whole seconds: a backstop for the wall timer, a second past the wall timeout
    (rounded up). At the timeout itself it raced the wall timer: where this process woke late, a loop in the
    Python harness's child was killed first, and the harness's "no result" read as error, not timeout."""
    return int(timeout + 0.999) + 1


def wait(pid, deadline, control, timeout):
    """Until the run ends, runs out of time, or the host says kill it; then kill what it left.

    Where this process wakes late (a busy machine), the run may have ended after its deadline, unseen. A run
    the kernel killed at its CPU limit ran out of time; so did one found ended late that used its timeout in
    CPU (one process cannot do that sooner): without this, a CPU-bound answer a second late could pass."""
    pidfd = os.pidfd_open(pid)
    timed_out = host_gone = late = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready = select.select([pidfd, control], [], [], remaining)[0]
            if pidfd in ready:
                late = time.monotonic() >= deadline
                break
            if control in ready:
                message, fds = protocol.receive(control, 2)
                protocol.close_all(fds)
                host_gone = message is None
                if host_gone or message.get("kill"):
                    break  # a kill: the host saw too much output, or the budget is spent
    finally:
        os.close(pidfd)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # the pid namespace's pid 1: the kernel kills everything in it
    _, status, usage = os.wait4(pid, 0)
    if os.getpid() == 1:
        kill_everything()
    if host_gone:
        sys.exit(0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGKILL, signal.SIGXCPU)
    cpu = usage.ru_utime + usage.ru_stime  # the run's and its children's
    at_limit = killed and cpu >= TICKS_SHARE * cpu_limit(timeout)
    timed_out = timed_out or at_limit or (late and cpu >= timeout - 0.01)
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


def drop_capabilities(uid):
    """No capability left, and none to be had again: bounding and ambient sets emptied too. A VM's root
    becomes ``uid`` as well, where that uid exists (not in the fake's user namespace, which maps root only)."""
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for capability in range(last + 1):
        check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "drop a bounding capability")
    if uid is not None and os.geteuid() == 0 and maps(uid):
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    header = struct.pack("Ii", CAPABILITY_VERSION_3, 0)
    check(libc.capset(header, bytes(24)), "capset")
    with open("/proc/self/status") as handle:
        effective = next(line for line in handle if line.startswith("CapEff:")).split()[1]
    if int(effective, 16):
        raise OSError("capabilities are still effective")


def maps(uid):
    with open("/proc/self/uid_map") as handle:
        ranges = [[int(field) for field in line.split()] for line in handle]
    return any(inner <= uid < inner + count for inner, _, count in ranges)


def mount_tmpfs(target, size):
    options = f"size={size},mode=1777".encode()
    check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"mount {target}")


def enter_namespaces(config):
    """Fresh namespaces (the pid one for the next child), a fresh /tmp, and the loopback up."""
    check(libc.unshare(NAMESPACES), "unshare")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    if config["vm"]:
        # Every mount of the VM is read-only to the program (its other flags kept), and each world-writable
        # place is its own; /tmp also hides the runner's directory.
        attr = struct.pack("QQQQ", MOUNT_ATTR_RDONLY, 0, 0, 0)
        long = ctypes.c_long
        done = libc.syscall(long(SYS_MOUNT_SETATTR), long(AT_FDCWD), b"/", long(AT_RECURSIVE), attr, long(len(attr)))
        check(0 if done == 0 else -1, "make every mount read-only")
        for place in VM_WRITABLE:
            if os.path.isdir(place) and not os.path.islink(place):
                with contextlib.suppress(OSError):
                    mount_tmpfs(place, config["tmpfs_bytes"])
        if os.path.isdir("/dev/mqueue"):  # the queues of the new IPC namespace
            libc.mount(b"mqueue", b"/dev/mqueue", b"mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    mount_tmpfs(TMP, config["tmpfs_bytes"])
    # A pty instance of its own: the sandbox's is writable by all, its times a channel between programs.
    devpts = b"newinstance,ptmxmode=0666,mode=620"
    if os.path.isdir("/dev/pts"):
        check(libc.mount(b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC, devpts), "mount /dev/pts")
    loopback_up()


def install_filter(program):
    """The host's seccomp filter for programs (mount, unshare, setns, ptrace and more refused), on top of
    the sandbox's own."""
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    buffer = ctypes.create_string_buffer(program)
    fprog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buffer))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0), "install the seccomp filter")


def begin(run):
    """The run's process, pid 1 of its namespaces, at the bottom of the stack: set up as a fresh
    interpreter would be, then the program. Never returns."""
    message, fds, outputs, report_w, config, dispositions = run
    run.clear()
    gc.collect()  # the serve loop's history (its free lists, its allocation counts) is not the program's to read
    path = f"{TMP}/{message['filename']}"
    try:
        executable = setup(message, fds, outputs, config, dispositions)
        source = read_source(path)
    except BaseException as error:
        report_error(report_w, error)
        os._exit(protocol.SETUP_FAILED_EXIT)
    os.write(report_w, b"S")
    os.closerange(3, 1 << 16)  # the control socket, the report pipe, the memfds and everything else
    argv, shared = message["argv"], len(message["prelude"])
    del message, fds, outputs, config, dispositions
    if executable is not None:
        for number in SIGNALS:  # a command starts with every signal at its default, not Python's
            with contextlib.suppress(OSError, ValueError):
                signal.signal(number, signal.SIG_DFL)
        try:
            os.execve(executable, argv, dict(os.environ))
        except OSError as error:  # as a shell reports it: 126 cannot run, 127 not found
            print(f"sandbox: cannot run {executable}: {error}", file=sys.stderr)
            os._exit(127 if isinstance(error, FileNotFoundError) else 126)
    # The serve loop compiled the same prelude (the program's first lines) before the fork: found, not compiled.
    os._exit(inprocess.run_as_main(path, source, inprocess.prelude_code(path, source, shared), shared))


def find_executable(name):
    # shutil.which, without importing shutil into every program's interpreter.
    candidates = [name] if "/" in name else [os.path.join(d, name) for d in os.environ.get("PATH", "").split(":")]
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def read_source(path):
    with open(path, encoding="utf-8", errors="surrogatepass") as handle:
        return handle.read()


def copy(source, target):
    """All of ``source`` into ``target``, by position: the runs of one program share the source's memfd."""
    offset = 0
    while data := os.pread(source, COPY_CHUNK, offset):
        offset += len(data)
        view = memoryview(data)
        while view:
            view = view[os.write(target, view) :]


def setup(message, fds, outputs, config, dispositions):
    """The run's process, set up as a fresh interpreter would be; returns what to exec, if anything."""
    path = f"{TMP}/{message['filename']}"
    os.setsid()
    check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        copy(fds[0], target)
    finally:
        os.close(target)
    # Its own input, read-only from its start (the host's sealed memfd), or /dev/null.
    stdin = os.open(os.devnull if len(fds) < 2 else f"/proc/self/fd/{fds[1]}", os.O_RDONLY)
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")  # as a fresh program: its /proc is its own
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # at the memory limit the kernel kills the program, never pid 1
    for name in ("inprocess", "protocol"):  # a cold interpreter has no such modules
        sys.modules.pop(name, None)
    if not config["vm_root"]:
        drop_capabilities(message.get("uid"))
        if not config["seccomp"]:
            raise OSError(f"no seccomp filter for {os.uname().machine}")
        install_filter(bytes.fromhex(config["seccomp"]))
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")  # again: a new uid reset it
    os.dup2(stdin, 0)
    os.dup2(outputs[0], 1)
    os.dup2(outputs[1], 2)
    cpu = cpu_limit(message["timeout"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    for name, value in config["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.chdir(TMP)
    os.environ.clear()
    os.environ.update(config["env"])
    for number, handler in dispositions.items():
        signal.signal(number, handler)
    if message["argv"] is None:
        return None
    executable = find_executable(message["argv"][0])
    if executable is None:  # the sandbox's fault, not the program's: before "S"
        raise FileNotFoundError(f"sandbox: no {message['argv'][0]} on PATH")
    return executable


def load_modules():
    global inprocess, protocol
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import inprocess
    import protocol

    sys.path.pop(0)  # a program's sys.path is a cold interpreter's
    inprocess.preload()  # what programs import: a forked child finds it imported


def become_runner():
    """Non-dumpable, every signal ignored; returns the dispositions a fresh interpreter starts with (SIGINT
    raises KeyboardInterrupt, SIGPIPE ignored, ...), for each program: were they ours, a program's SIGINT
    would be a KeyboardInterrupt here."""
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    load_modules()
    dispositions = {}
    for number in SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            dispositions[number] = signal.signal(number, signal.SIG_IGN) or signal.SIG_DFL
    return dispositions


def serve(control_fd, config_json):
    dispositions = become_runner()
    config = json.loads(config_json) | {"vm": False, "env": dict(os.environ)}
    serve_loop(socket.socket(fileno=int(control_fd)), config, dispositions)


def serve_loop(control, config, dispositions):
    # Each run is orphaned when its maker exits: it is ours to wait for, whether we are pid 1 or not.
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    protocol.send(control, {"ready": True})
    while True:
        message, fds = protocol.receive(control, 2)
        if message is None:
            return
        if "kill" in message or len(fds) not in (1, 2):  # a kill that came after its run was answered
            protocol.close_all(fds)
            continue
        # No try/finally here: in the run's process, Start passes through on its way to `main`.
        answer = run_once(message, fds, config, dispositions, control)
        protocol.close_all(fds)
        protocol.send(control, answer)


def unpack(bundle, key_env):
    """A Superserve chunk (this file with this call appended): decrypt it with the key in ``key_env``,
    write each program's source and stdin to a private directory under /tmp (which every program's own
    /tmp hides), then exec the batch runner on it: a fresh process that never held the bundle."""
    import base64
    import hashlib

    with contextlib.suppress(OSError):
        os.unlink(sys.argv[0])
    key = os.environ.pop(key_env).encode()
    data = base64.b64decode(bundle)
    stream = hashlib.shake_256(key).digest(len(data))
    spec = json.loads((int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big"))
    work = f"{TMP}/codegrpo-{os.urandom(8).hex()}"
    os.mkdir(work, 0o700)
    for name, text in spec.pop("modules").items():
        with open(f"{work}/{name}.py", "w", encoding="utf-8") as handle:
            handle.write(text)
    for index, program in enumerate(spec["programs"]):
        with open(f"{work}/{index}.src", "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(program.pop("source"))
        inputs = program.pop("stdin")
        if inputs is not None:
            with open(f"{work}/{index}.in", "wb") as handle:
                handle.writelines(text.encode("utf-8", "surrogatepass") for text in inputs)
    with open(f"{work}/header", "w") as handle:  # read only after the serve loop is forked
        handle.write(spec.pop("header"))
    with open(f"{work}/programs.json", "w") as handle:  # likewise
        json.dump(spec.pop("programs"), handle)
    with open(f"{work}/config.json", "w") as handle:  # all the serve loop is forked with
        json.dump(spec, handle)
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": TMP,
        "TMPDIR": TMP,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    os.execve(sys.executable, [sys.executable, "-I", f"{work}/runner.py", "batch", work], env)


def namespaces_work():
    """Whether this process can give programs namespaces of their own (tried in a fork)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.unshare(NAMESPACES) == 0 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def batch(work):
    dispositions = become_runner()
    with open(f"{work}/config.json") as handle:
        spec = json.load(handle)
    if not namespaces_work():
        print("codegrpo runner: cannot give each program namespaces of its own here", file=sys.stderr)
        sys.exit(protocol.NO_NAMESPACES_EXIT)
    limits = spec["limits"]
    config = limits | {
        "vm": True,
        "vm_root": False,
        "seccomp": spec["seccomp"].get(os.uname().machine),
        "env": dict(os.environ),
    }
    control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:  # the serve loop every run is forked from: it never sees a program, input or output
        control.close()
        serve_loop(theirs, config, dispositions)
        os._exit(0)
    theirs.close()
    if protocol.receive(control, 0)[0] != {"ready": True}:
        sys.exit("codegrpo runner: the serve loop did not start")
    with open(f"{work}/header") as handle:
        header = handle.read()
    with open(f"{work}/programs.json") as handle:
        programs = json.load(handle)
    import binascii  # here, in the process that never forks a program: no program has it imported

    uids = iter(run_uids(sum(protocol.runs(request) for request in programs)))
    results = []
    for index, request in enumerate(programs):
        request["uids"] = [next(uids) for _ in range(protocol.runs(request))]
        names = [f"{index}.src"] + ([] if request["inputs"] is None else [f"{index}.in"])
        fds = [os.open(f"{work}/{name}", os.O_RDONLY) for name in names]
        try:
            # base64: a third more than the bytes, where JSON escapes of arbitrary bytes could make it six times
            runs = [None] * protocol.runs(request)
            for run, answer, outputs, over in protocol.exchange(control, request, fds, limits["output_bytes"]):
                runs[run] = {
                    "exit_code": answer["code"],
                    "timed_out": answer["timeout"],
                    "budget_cut": answer.get("budget", False),
                    "over_limit": over,
                    "stdout": binascii.b2a_base64(outputs[0], newline=False).decode(),
                    "stderr": binascii.b2a_base64(outputs[1], newline=False).decode(),
                    "duration_s": answer["duration_s"],
                }
        except protocol.ProtocolError as error:
            sys.exit(f"codegrpo runner: {error}")
        finally:
            protocol.close_all(fds)
        results.append({"runs": runs})
    control.close()  # the serve loop's end of file: it exits
    import shutil  # here, not at the top: no program's interpreter has it imported

    shutil.rmtree(work, ignore_errors=True)
    if len(results) == 1:
        fit(results[0]["runs"], spec["document_bytes"] - len(header) - 2)
    sys.stdout.buffer.write(f"{header}\n{json.dumps(results)}\n".encode())
    sys.stdout.flush()


def run_uids(count):
    """``count`` distinct uids for the runs of a chunk, at random: none tells a run its position."""
    import random  # here, in the process that never forks a program

    return random.SystemRandom().sample(range(FIRST_UID, FIRST_UID + UID_SPAN), count)


def fit(runs, limit):
    """A program alone in its chunk: what its runs printed, the largest first, dropped (each such run an
    output_limit) until the document fits what an exec returns. Several programs are run again apart."""
    size = len(json.dumps([{"runs": runs}]))
    for run in sorted(runs, key=lambda run: len(run["stdout"]) + len(run["stderr"]), reverse=True):
        if size <= limit:
            return
        size -= len(run["stdout"]) + len(run["stderr"]) + (0 if run["over_limit"] else 1)
        run.update(stdout="", stderr="", over_limit=True)


def main():
    """serve or batch; in a run's process, once Start has unwound every frame above this one, the run."""
    run = []
    try:
        if sys.argv[1:2] == ["serve"]:
            serve(*sys.argv[2:4])
        elif sys.argv[1:2] == ["batch"]:
            batch(sys.argv[2])
    except Start as start:
        run = start.args[0]
    if run:  # outside the except clause: the exception, its traceback and their frames are gone
        begin(run)


if __name__ == "__main__":
    main()
