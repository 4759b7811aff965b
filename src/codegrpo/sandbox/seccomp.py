"""Seccomp filters for the local sandbox, in the spirit of Docker's default profile.

Refused for every process of a sandbox (``base``): keyrings, SysV IPC and POSIX message queues (state a namespace
keeps without a process), io_uring, Linux AIO (io_setup, io_submit, ...), bpf, perf_event_open, userfaultfd, kexec,
new user namespaces (clone/unshare with CLONE_NEWUSER; clone3 says ENOSYS so libc falls back to clone, whose flags a
filter can read), and every syscall of a foreign ABI (x32, i386 through int 0x80). A program (``program``) is
refused as well the mount family, unshare, setns, any clone that makes a namespace, ptrace, preadv2/pwritev2 with
RWF_NOWAIT (EOPNOTSUPP: it would tell what is in the page cache, a channel between programs and sandboxes), and what
waits on the host's disk beyond a kill: O_DIRECT in open, openat and fcntl(F_SETFL) (EINVAL, as on a filesystem
without it), openat2 (ENOSYS: libc falls back to openat, whose flags a filter reads) and readahead (EPERM); sync,
syncfs, fsync, fdatasync, sync_file_range and fadvise64 succeed at once without doing anything (a program writes
only to its tmpfs, where they do nothing anyway). None of which a Python or Node program that scores code needs. A
cold sandbox runs under the program filter; a warm worker under the base one (it makes each program's namespaces),
and each program's process adds the program filter before it runs a line of the program.
"""

from __future__ import annotations

import errno
import platform
import struct

# struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, and the BPF opcodes used here.
_INSTRUCTION = struct.Struct("=HBBI")
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_GREATER_EQUAL = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # in struct seccomp_data
_ARG_OFFSET = (16, 24, 32, 40, 48, 56)  # each argument's low word (little-endian)
RWF_NOWAIT = 0x8
_X32_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NAMESPACES = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

# The syscall numbers by machine: AUDIT_ARCH_*, name: number, then O_DIRECT (it differs between them).
_ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "shmget": 29,
            "semget": 64,
            "msgget": 68,
            "mq_open": 240,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "clone": 56,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "ptrace": 101,
            "open_by_handle_at": 304,
            "preadv2": 327,
            "pwritev2": 328,
            "io_setup": 206,
            "io_destroy": 207,
            "io_getevents": 208,
            "io_submit": 209,
            "io_cancel": 210,
            "io_pgetevents": 333,
            "open": 2,
            "openat": 257,
            "fcntl": 72,
            "sync": 162,
            "syncfs": 306,
            "fsync": 74,
            "fdatasync": 75,
            "sync_file_range": 277,
            "readahead": 187,
            "fadvise64": 221,
        },
        0x4000,
    ),
    "aarch64": (
        0xC00000B7,
        {
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "shmget": 194,
            "semget": 190,
            "msgget": 186,
            "mq_open": 180,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "clone": 220,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "ptrace": 117,
            "open_by_handle_at": 265,
            "preadv2": 286,
            "pwritev2": 287,
            "io_setup": 0,
            "io_destroy": 1,
            "io_submit": 2,
            "io_cancel": 3,
            "io_getevents": 4,
            "io_pgetevents": 292,
            "openat": 56,
            "fcntl": 25,
            "sync": 81,
            "syncfs": 267,
            "fsync": 82,
            "fdatasync": 83,
            "sync_file_range": 84,
            "readahead": 213,
            "fadvise64": 223,
        },
        0x10000,
    ),
}
# Numbered alike on both machines (the syscall table they share from 403 on).
_COMMON = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "openat2": 437,
    "mount_setattr": 442,
}
# Linux AIO: an io_submit of O_DIRECT reads sleeps uninterruptibly until the disk has queued them, past
# the kill at the timeout, and takes from the host's fs.aio-nr budget.
AIO = ("io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents")
# Waits on the host's disk that no kill interrupts: sync and syncfs flush every dirty page of the machine,
# fsync and friends a file's (a read-only mount does not stop them); readahead blocks until its pages are read.
DISK_WAITS = ("sync", "syncfs", "fsync", "fdatasync", "sync_file_range", "fadvise64")
F_SETFL = 4
BASE_DENIED = (
    "add_key",
    "request_key",
    "keyctl",
    "shmget",
    "semget",
    "msgget",
    "mq_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    *AIO,
)
PROGRAM_DENIED = (
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "ptrace",
    "open_by_handle_at",
    "readahead",
)


MACHINES = tuple(_ARCHES)


def supported() -> bool:
    """Whether this machine's architecture has a filter (x86_64 and aarch64 do)."""
    return platform.machine() in _ARCHES


def build_filter(machine: str | None = None, program: bool = True) -> bytes:
    """The compiled BPF program bubblewrap's --seccomp expects: the program filter, or with
    ``program=False`` the base one. Raises KeyError for an unknown machine."""
    arch, own, o_direct = _ARCHES[machine or platform.machine()]
    numbers = own | _COMMON
    refuse = _ERRNO | errno.EPERM
    code = [(_LOAD_WORD, 0, 0, _ARCH_OFFSET), (_JUMP_EQUAL, 1, 0, arch), (_RETURN, 0, 0, _ERRNO | errno.ENOSYS)]
    code.append((_LOAD_WORD, 0, 0, _NR_OFFSET))
    if arch == _ARCHES["x86_64"][0]:
        code += [(_JUMP_GREATER_EQUAL, 0, 1, _X32_BIT), (_RETURN, 0, 0, _ERRNO | errno.ENOSYS)]
    denied = [(numbers[name], refuse) for name in BASE_DENIED + (PROGRAM_DENIED if program else ())]
    denied.append((numbers["clone3"], _ERRNO | errno.ENOSYS))
    if program:
        denied.append((numbers["openat2"], _ERRNO | errno.ENOSYS))
        denied += [(numbers[name], _ERRNO | 0) for name in DISK_WAITS]  # "succeeded", at once
    for number, action in denied:
        code += [(_JUMP_EQUAL, 0, 1, number), (_RETURN, 0, 0, action)]
    # (syscall, argument, flags refused in it, the refusal)
    flag_checks = [(numbers["clone"], 0, CLONE_NAMESPACES if program else CLONE_NEWUSER, refuse)]
    if program:
        flag_checks += [(numbers[name], 5, RWF_NOWAIT, _ERRNO | errno.EOPNOTSUPP) for name in ("preadv2", "pwritev2")]
        flag_checks += [
            (numbers[name], argument, o_direct, _ERRNO | errno.EINVAL)
            for name, argument in (("open", 1), ("openat", 2))
            if name in numbers
        ]
    else:
        flag_checks.append((numbers["unshare"], 0, CLONE_NEWUSER, refuse))
    for number, argument, mask, action in flag_checks:
        # Not this syscall: skip the 5 instructions; else allowed only when no flag of ``mask`` is set.
        code += [
            (_JUMP_EQUAL, 0, 5, number),
            (_LOAD_WORD, 0, 0, _ARG_OFFSET[argument]),
            (_AND, 0, 0, mask),
            (_JUMP_EQUAL, 1, 0, 0),
            (_RETURN, 0, 0, action),
            (_RETURN, 0, 0, _ALLOW),
        ]
    if program:
        # fcntl(fd, F_SETFL, ... | O_DIRECT) would turn O_DIRECT on after the open.
        code += [
            (_JUMP_EQUAL, 0, 7, numbers["fcntl"]),
            (_LOAD_WORD, 0, 0, _ARG_OFFSET[1]),
            (_JUMP_EQUAL, 0, 4, F_SETFL),
            (_LOAD_WORD, 0, 0, _ARG_OFFSET[2]),
            (_AND, 0, 0, o_direct),
            (_JUMP_EQUAL, 1, 0, 0),
            (_RETURN, 0, 0, _ERRNO | errno.EINVAL),
            (_RETURN, 0, 0, _ALLOW),
        ]
    code.append((_RETURN, 0, 0, _ALLOW))
    return b"".join(_INSTRUCTION.pack(*instruction) for instruction in code)
