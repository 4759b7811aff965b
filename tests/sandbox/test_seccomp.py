"""The seccomp filters' programs. What they refuse inside a real sandbox is tested in test_redteam.py."""

from __future__ import annotations

import struct

import pytest

from codegrpo.sandbox.seccomp import CLONE_NEWUSER, RWF_NOWAIT, build_filter

INSTRUCTION = struct.Struct("=HBBI")
RETURN, ALLOW, EPERM, ENOSYS, EOPNOTSUPP = 0x06, 0x7FFF0000, 0x00050001, 0x00050026, 0x0005005F
CLONE_NEWNET, SIGCHLD = 0x40000000, 17


def instructions(machine: str, program: bool = True) -> list[tuple[int, int, int, int]]:
    code = build_filter(machine, program=program)
    assert len(code) % INSTRUCTION.size == 0
    return [INSTRUCTION.unpack_from(code, offset) for offset in range(0, len(code), INSTRUCTION.size)]


def evaluate(program: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """A tiny interpreter for the opcodes the filter uses, to check what it returns for a syscall."""
    data = {0: nr, 4: arch} | {16 + 8 * i: value & 0xFFFFFFFF for i, value in enumerate(args)}
    accumulator, pc = 0, 0
    while True:
        code, jump_true, jump_false, k = program[pc]
        if code == 0x20:  # load a word of seccomp_data
            accumulator = data.get(k, 0)
        elif code == 0x54:  # and
            accumulator &= k
        elif code in (0x15, 0x35):
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += jump_true if taken else jump_false
        elif code == RETURN:
            return k
        pc += 1


# machine, AUDIT_ARCH, refused for every process, refused for programs only, allowed, clone, unshare, preadv2
MACHINES = [
    (
        "x86_64",
        0xC000003E,
        [248, 249, 250, 29, 64, 68, 240, 425, 321, 298, 323, 246],
        [165, 166, 155, 308, 272, 101, 304, 428],
        [0, 1, 57, 59, 231, 202],
        56,
        272,
        327,
    ),
    (
        "aarch64",
        0xC00000B7,
        [217, 218, 219, 194, 190, 186, 180, 425, 280, 241, 282, 104],
        [40, 39, 41, 268, 97, 117, 265, 428],
        [63, 64, 221, 93, 98],
        220,
        97,
        286,
    ),
]


@pytest.mark.parametrize(
    ("machine", "arch", "denied", "program_only", "allowed", "clone", "unshare", "preadv2"), MACHINES
)
def test_the_filters_refuse_exactly_their_syscalls(
    machine, arch, denied, program_only, allowed, clone, unshare, preadv2
):
    program, base = instructions(machine), instructions(machine, program=False)
    for code in (program, base):
        assert [evaluate(code, arch, nr) for nr in denied] == [EPERM] * len(denied)
        assert [evaluate(code, arch, nr) for nr in allowed] == [ALLOW] * len(allowed)
        assert evaluate(code, arch, 435) == ENOSYS  # clone3: libc falls back to clone, whose flags are read
        assert evaluate(code, 0x40000003, 0) == ENOSYS  # another ABI (i386) is refused whole
        assert evaluate(code, arch, clone, SIGCHLD) == ALLOW  # fork and threads
        assert evaluate(code, arch, clone, CLONE_NEWUSER | SIGCHLD) == EPERM
    assert [evaluate(program, arch, nr) for nr in program_only] == [EPERM] * len(program_only)
    # The base filter is the warm worker's: it makes namespaces for its programs, never a user namespace.
    assert evaluate(base, arch, unshare, CLONE_NEWNET) == ALLOW
    assert evaluate(base, arch, unshare, CLONE_NEWUSER) == EPERM
    assert evaluate(program, arch, clone, CLONE_NEWNET | SIGCHLD) == EPERM
    assert evaluate(program, arch, preadv2, 3, 0, 1, 0, 0, RWF_NOWAIT) == EOPNOTSUPP
    assert evaluate(program, arch, preadv2, 3, 0, 1, 0, 0, 0) == ALLOW
    if machine == "x86_64":
        assert evaluate(program, arch, 0x40000000 | 1) == ENOSYS  # x32


def test_an_unknown_machine_has_no_filter():
    with pytest.raises(KeyError):
        build_filter("riscv64")


# machine, AUDIT_ARCH, Linux AIO (io_setup .. io_pgetevents), open (None: not on this machine), openat,
# fcntl, O_DIRECT, openat2, readahead, the disk waits that succeed at once (sync .. fadvise64)
DISK = [
    ("x86_64", 0xC000003E, [206, 207, 208, 209, 210, 333], 2, 257, 72, 0x4000, 437, 187, [162, 306, 74, 75, 277, 221]),
    ("aarch64", 0xC00000B7, [0, 1, 2, 3, 4, 292], None, 56, 25, 0x10000, 437, 213, [81, 267, 82, 83, 84, 223]),
]
EINVAL, F_SETFL, F_GETFL, O_RDONLY, O_CREAT = 0x00050016, 4, 3, 0, 0x40


@pytest.mark.parametrize(
    ("machine", "arch", "aio", "open_", "openat", "fcntl", "o_direct", "openat2", "readahead", "disk_waits"), DISK
)
def test_nothing_waits_on_the_disk_past_a_kill(
    machine, arch, aio, open_, openat, fcntl, o_direct, openat2, readahead, disk_waits
):
    program, base = instructions(machine), instructions(machine, program=False)
    for code in (program, base):
        assert [evaluate(code, arch, nr) for nr in aio] == [EPERM] * len(aio)
    assert evaluate(program, arch, openat, -100, 0, O_RDONLY | o_direct) == EINVAL
    assert evaluate(program, arch, openat, -100, 0, O_RDONLY | O_CREAT) == ALLOW
    if open_ is not None:
        assert evaluate(program, arch, open_, 0, o_direct) == EINVAL
        assert evaluate(program, arch, open_, 0, O_CREAT) == ALLOW
    assert evaluate(program, arch, fcntl, 3, F_SETFL, o_direct) == EINVAL
    assert evaluate(program, arch, fcntl, 3, F_SETFL, 0x800) == ALLOW  # O_NONBLOCK
    assert evaluate(program, arch, fcntl, 3, F_GETFL, o_direct) == ALLOW  # the same bits as another command
    assert evaluate(program, arch, openat2) == ENOSYS
    assert evaluate(program, arch, readahead) == EPERM
    assert [evaluate(program, arch, nr) for nr in disk_waits] == [0x00050000] * len(disk_waits)  # returns 0
    # The warm worker opens and syncs nothing of a program's: its filter leaves these alone.
    assert evaluate(base, arch, openat, -100, 0, o_direct) == ALLOW
