"""The red team's attacks (A-G of the sandbox review) that tests/sandbox/test_redteam.py scores through the
real reward and ``bench --only hacks`` counts: bodies for escaped_if, poisons of later programs, channels
between programs, and the HumanEval checks' hacks."""

from __future__ import annotations

import textwrap

# A: a knob of the host a sandbox could write (those of its own namespaces are open to it).
WRITABLE_HOST_KNOBS = """
        import os, re
        ipc_pid_uts = "auto_msgmni|msg|sem|shm|pid_max|ns_last_pid|hostname|domainname"
        own = re.compile(rf"/proc/sys/(kernel/({ipc_pid_uts})|fs/mqueue/|net/|user/)")
        opened = []
        for root, _, files in os.walk("/proc/sys"):
            for name in files:
                path = os.path.join(root, name)
                try:
                    fd = os.open(path, os.O_WRONLY)
                except OSError:
                    continue
                try:
                    if name == "ns_last_pid":  # open to all (0666); the write itself is checked
                        os.write(fd, open(path).read().encode())
                    if not own.match(path):
                        opened.append(path)
                except OSError:
                    pass
                finally:
                    os.close(fd)
        for path in ("/proc/sysrq-trigger", "/sys/kernel/uevent_helper"):
            try:
                os.close(os.open(path, os.O_WRONLY))
                opened.append(path)
            except OSError:
                pass
        return bool(opened)
"""

# C: waits a program can stretch.
STDERR_IN_FLIGHT = textwrap.dedent("""
    import os, socket
    # Its own stderr, and the sockets themselves, in flight on a unix socket: a cycle the kernel frees
    # only when its garbage collector next runs.
    a, b = socket.socketpair()
    socket.send_fds(a, [b"x"], [a.fileno(), b.fileno(), 1, 2])
    socket.send_fds(b, [b"x"], [a.fileno(), b.fileno(), 1, 2])
    a.close()
    b.close()
""")

# D, E: poisoning later programs.
PIN = """
    import os, socket
    def pin(fds):
        # Kept alive by a cycle of fds in flight after every process is gone.
        a, b = socket.socketpair()
        socket.send_fds(a, [b"x"], [a.fileno(), b.fileno(), *fds])
        a.close()
        b.close()
"""

XATTRS_POISON = (
    PIN
    + """
    tmp = os.open("/tmp", os.O_RDONLY)
    value = os.urandom(60000)
    try:
        for n in range(20000):  # up to 1.2 GB: until the memory limit refuses more
            os.setxattr("/tmp", f"user.{n}", value)
    except OSError:
        pass
    pin([tmp])
    def is_prime(n):
        return None
    """
)
FULL_TMP_POISON = (
    PIN
    + """
    held = []
    for n in range(50):  # 2 MiB each (the file size limit), 64 open files at most: /tmp is full
        try:
            fd = os.open(f"/tmp/fill{n}", os.O_CREAT | os.O_WRONLY)
            os.write(fd, b"x" * (2 << 20))
            os.unlink(f"/tmp/fill{n}")
            held.append(fd)
        except OSError:
            break
    pin(held)
    def is_prime(n):
        return None
    """
)

# F: channels between programs of one worker: (what a program writes, what a later one reads).
MARKER_TIME = 1_234_567_890
CHANNELS = {
    "xattr_on_tmp": (
        "os.setxattr('/tmp', 'user.answer', b'$marker')",
        "return os.getxattr('/tmp', 'user.answer') == b'$marker'",
    ),
    "hostname": (
        "open('/proc/sys/kernel/hostname', 'w').write('$marker'[:60])",
        "return socket.gethostname() == '$marker'[:60]",
    ),
    "tmp_times": (
        f"os.utime('/tmp', ({MARKER_TIME}, {MARKER_TIME}))",
        f"return int(os.stat('/tmp').st_atime) == {MARKER_TIME} or int(os.stat('/tmp').st_mtime) == {MARKER_TIME}",
    ),
    "tcp_time_wait": (
        "s = socket.create_server(('127.0.0.1', 47321)); c = socket.create_connection(('127.0.0.1', 47321)); "
        "d, _ = s.accept(); c.close(); d.close(); s.close()",
        "return ':B8D9' in open('/proc/net/tcp').read().upper()",
    ),
    "pid_counter": (
        "[os.waitpid(p, 0) for p in [os.fork() or os._exit(0) for _ in range(60)]]",
        "return os.getpid() > 50 or any(int(p) > 50 for p in os.listdir('/proc') if p.isdigit())",
    ),
    "inode_counter": (
        "[open(f'/tmp/f{n}', 'w').close() for n in range(3000)]",
        "return os.stat('/tmp/solution.py').st_ino > 2000",
    ),
}
# F, found later: a warm worker's programs shared /dev/pts/ptmx's times (a body for escaped_if).
PTY_TIMES = "import os\nreturn int(os.stat('/dev/pts/ptmx').st_mtime) == 1234567890"

# G: HumanEval checks the completion could switch off, or forge.
SWITCH_OFF_CHECKS = """
import builtins, sys
_exec = builtins.exec
def _no_checks(source, *args, **kwargs):
    # Every block of asserts the harness runs becomes one that passes.
    if isinstance(source, str) and source.startswith("def _block"):
        source = "def _block():\\n    pass\\n"
    return _exec(source, *args, **kwargs)
builtins.exec = _no_checks
sys.modules["builtins"].exec = _no_checks
"""

FORGE_THE_CHECKS = """
import marshal, os, struct, sys
# The harness's child: find the pipe to the parent and the number of checks in the frames above.
frame, fd = sys._getframe(), None
while frame is not None and fd is None:
    fd = frame.f_locals.get("result_fd")
    frame = frame.f_back
records = [["assert", True]] * 20
for message in (("ok", records), ("ready", None)):
    data = marshal.dumps(message)
    os.write(fd, struct.pack(">I", len(data)) + data)
"""
