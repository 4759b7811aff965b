"""A seccomp filter for the local sandbox: no keyrings, no SysV IPC, no POSIX message queues.

These are the only state a sandbox's namespaces keep after every process of it is gone, so refusing
them is what lets a warm sandbox run one program after another without a channel between them. No
program that scores code needs them. bubblewrap installs the filter (``--seccomp FD``), after setting
no_new_privs; syscalls of any other ABI than the native one (x32, i386 through int 0x80) are refused too.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, and the BPF opcodes used here.
_INSTRUCTION = struct.Struct("=HBBI")
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_GREATER_EQUAL = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # in struct seccomp_data
_X32_BIT = 0x40000000

# machine: (AUDIT_ARCH_*, {syscall: number}) for add_key, request_key, keyctl, shmget, semget, msgget, mq_open.
_ARCHES = {
    "x86_64": (0xC000003E, (248, 249, 250, 29, 64, 68, 240)),
    "aarch64": (0xC00000B7, (217, 218, 219, 194, 190, 186, 180)),
}


def supported() -> bool:
    """Whether this machine's architecture has a filter (x86_64 and aarch64 do)."""
    return platform.machine() in _ARCHES


def build_filter(machine: str | None = None) -> bytes:
    """The compiled BPF program bubblewrap's --seccomp expects. Raises KeyError for an unknown machine."""
    arch, denied = _ARCHES[machine or platform.machine()]
    refuse = _ERRNO | errno.EPERM
    program = [(_LOAD_WORD, 0, 0, _ARCH_OFFSET), (_JUMP_EQUAL, 1, 0, arch), (_RETURN, 0, 0, _ERRNO | errno.ENOSYS)]
    program.append((_LOAD_WORD, 0, 0, _NR_OFFSET))
    if arch == _ARCHES["x86_64"][0]:
        program += [(_JUMP_GREATER_EQUAL, 0, 1, _X32_BIT), (_RETURN, 0, 0, _ERRNO | errno.ENOSYS)]
    for position, number in enumerate(denied):
        # Equal: jump to the refusal after the remaining tests and the allow.
        program.append((_JUMP_EQUAL, len(denied) - position, 0, number))
    program += [(_RETURN, 0, 0, _ALLOW), (_RETURN, 0, 0, refuse)]
    return b"".join(_INSTRUCTION.pack(*instruction) for instruction in program)


def filter_fd() -> int:
    """A memfd holding the filter, positioned at its start, for bwrap's --seccomp."""
    fd = os.memfd_create("codegrpo-seccomp", os.MFD_CLOEXEC)
    os.write(fd, build_filter())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
