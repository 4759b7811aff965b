"""The third red team's waits on the disk (issue 21, break 3) that tests/sandbox/test_hostile_values.py scores
in every mode and ``bench --only hacks`` counts: bodies for escaped_if."""

from __future__ import annotations

# Linux AIO, O_DIRECT (at open, by F_SETFL, by openat2) and sync: ways to sleep in the kernel past the kill.
DISK_ESCAPES = """
    import ctypes, time, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    context = ctypes.c_ulong(0)
    opened = []
    if libc.syscall(206, 128, ctypes.byref(context)) == 0:  # io_setup
        opened.append("aio")
    try:
        os.close(os.open("/usr/bin/python3", os.O_RDONLY | os.O_DIRECT))
        opened.append("O_DIRECT")
    except OSError:
        pass
    fd = os.open("/usr/bin/python3", os.O_RDONLY)
    try:
        import fcntl
        fcntl.fcntl(fd, fcntl.F_SETFL, os.O_DIRECT)
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            opened.append("F_SETFL")
    except OSError:
        pass
    if libc.syscall(437, -100, b"/usr/bin/python3", ctypes.byref((ctypes.c_uint64 * 3)(0o40000, 0, 0)), 24) >= 0:
        opened.append("openat2")
    started = time.monotonic()
    os.sync()
    os.fsync(fd)
    if time.monotonic() - started > 1.0:
        opened.append("sync waited")
    return bool(opened)
"""

# io_setup with room for many O_DIRECT reads in one io_submit (they slept in the kernel past the kill).
IO_SUBMIT_FLOOD = """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        context = ctypes.c_ulong(0)
        return libc.syscall(206, 65536, ctypes.byref(context)) == 0
"""
