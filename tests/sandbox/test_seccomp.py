"""The seccomp filter's program. What it refuses inside a real sandbox is tested in test_local.py."""

from __future__ import annotations

import struct

import pytest

from codegrpo.sandbox.seccomp import build_filter

INSTRUCTION = struct.Struct("=HBBI")
RETURN, ALLOW, EPERM, ENOSYS = 0x06, 0x7FFF0000, 0x00050001, 0x00050026


def instructions(machine: str) -> list[tuple[int, int, int, int]]:
    program = build_filter(machine)
    assert len(program) % INSTRUCTION.size == 0
    return [INSTRUCTION.unpack_from(program, offset) for offset in range(0, len(program), INSTRUCTION.size)]


def evaluate(program: list[tuple[int, int, int, int]], arch: int, nr: int) -> int:
    """A tiny interpreter for the four opcodes the filter uses, to check what it returns for a syscall."""
    accumulator, pc = 0, 0
    while True:
        code, jump_true, jump_false, k = program[pc]
        if code == 0x20:
            accumulator = {0: nr, 4: arch}[k]
        elif code in (0x15, 0x35):
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += jump_true if taken else jump_false
        elif code == RETURN:
            return k
        pc += 1


@pytest.mark.parametrize(
    ("machine", "arch", "denied", "allowed"),
    [
        ("x86_64", 0xC000003E, [248, 249, 250, 29, 64, 68, 240], [0, 1, 57, 59, 231]),
        ("aarch64", 0xC00000B7, [217, 218, 219, 194, 190, 186, 180], [63, 64, 220, 221, 93]),
    ],
)
def test_the_filter_refuses_exactly_its_syscalls(machine, arch, denied, allowed):
    program = instructions(machine)
    assert [evaluate(program, arch, nr) for nr in denied] == [EPERM] * len(denied)
    assert [evaluate(program, arch, nr) for nr in allowed] == [ALLOW] * len(allowed)
    assert evaluate(program, 0x40000003, 0) == ENOSYS  # another ABI (i386) is refused whole
    if machine == "x86_64":
        assert evaluate(program, arch, 0x40000000 | 1) == ENOSYS  # x32


def test_an_unknown_machine_has_no_filter():
    with pytest.raises(KeyError):
        build_filter("riscv64")
