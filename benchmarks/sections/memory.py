"""d. memory: the scorer's peak RSS while programs flood their output, vs its idle RSS."""

from __future__ import annotations

import argparse
import subprocess
import sys

from benchmarks.common import Row

TITLE = "d. memory under output floods"


def bench_memory(programs: int = 16) -> list[Row]:
    """Peak RSS of a fresh scorer process while programs flood stdout/stderr, vs its idle RSS."""
    script = f"""
import asyncio
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.sandbox.base import Program
from codegrpo.sandbox.local import LocalSandbox

def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1])

sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=4))
asyncio.run(sandbox.run_many([Program('print(1)')] * 8))
idle = status('VmRSS:')
open('/proc/self/clear_refs', 'w').write('5')  # reset the peak (VmHWM) to the current RSS
floods = ["import sys\\nwhile True: sys.stdout.write('x' * 65536)",
          "import sys\\nwhile True: sys.stderr.write('y' * 65536)",
          "print('z' * 100_000_000)", "import os\\nwhile True: os.write(1, b'w' * 65536)"]
asyncio.run(sandbox.run_many([Program(floods[i % 4], timeout_s=5) for i in range({programs})]))
print(idle, status('VmHWM:'))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600)
    idle, peak = (int(x) for x in done.stdout.split())
    return [
        ("scorer RSS idle (MiB)", idle / 1024, "a bare scorer process: no torch, the strictest case"),
        ("scorer peak RSS during floods (MiB)", peak / 1024, f"{programs} programs flooding >= 100 MB each"),
        ("peak - idle (MiB)", (peak - idle) / 1024, "what scoring the floods added"),
        ("ratio peak / idle", peak / idle, "target <= 2.0"),
    ]


# One emoji, then invalid bytes to just under the cap: "replace" decodes each byte to U+FFFD in a 4-byte
# string, so an output kept as text costs four times its bytes (issue 32's finding 1).
PER_PROGRAM_MIB = 32  # docs/security.md: what one program being judged may hold on the host for a moment
HOSTILE_OUTPUT = """import sys
for stream in (sys.stdout.buffer, sys.stderr.buffer):
    stream.write("\\U0001F600".encode() + b"\\xff" * ((1 << 20) - 8))
"""


def bench_scorer_memory(completions: int, tests: int, warm: bool, concurrency: int = 4) -> tuple[int, int]:
    """(idle, peak) RSS in KiB of a fresh scorer process that scores ``completions`` hostile completions
    of a stdio problem with ``tests`` tests: idle once the sandbox is open and has run a program."""
    script = f"""
import asyncio
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.sandbox.base import Program
from codegrpo.sandbox.local import LocalSandbox
from codegrpo.reward.scorer import Scorer

def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1])

problem = Problem("flood", "", "", "stdio", tests=tuple(IOTest(str(i), str(i)) for i in range({tests})))
sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency={concurrency}, warm={warm}))
asyncio.run(sandbox.run_many([Program('print(1)')] * {concurrency}))
scorer = Scorer([problem], sandbox, get_language("python"))
idle = status('VmRSS:')
open('/proc/self/clear_refs', 'w').write('5')  # reset the peak (VmHWM) to the current RSS
codes = [{HOSTILE_OUTPUT!r} + "# " + str(i) for i in range({completions})]  # distinct: none runs once for all
scored = asyncio.run(scorer.score(["flood"] * {completions}, codes))
assert all(s.verdict.reward == 0.0 for s in scored), [s.verdict for s in scored]
print(idle, status('VmHWM:'))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=1800)
    idle, peak = (int(x) for x in done.stdout.split())
    return idle, peak


def bench_hostile_memory() -> list[Row]:
    """Issue 32's memory bound: peak <= 2 x idle + a small constant per concurrent program."""
    rows = []
    for completions, tests, warm in ((1, 200, True), (32, 15, False)):
        idle, peak = bench_scorer_memory(completions, tests, warm)
        label = f"{completions} hostile x {tests} tests, {'warm' if warm else 'cold'}"
        print(f"[memory] {label}: idle {idle / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB", file=sys.stderr)
        bound = 2 * idle / 1024 + PER_PROGRAM_MIB * 4
        rows += [
            (f"{label}: scorer idle RSS (MiB)", idle / 1024, "sandbox open, nothing scored"),
            (f"{label}: scorer peak RSS (MiB)", peak / 1024, f"{completions * tests} runs of ~2 MiB output each"),
            (
                f"{label}: ratio peak / bound",
                peak / 1024 / bound,
                f"target <= 1.0; bound 2 x idle + {PER_PROGRAM_MIB} MiB x 4 programs = {bound:.0f} MiB",
            ),
        ]
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_memory() + bench_hostile_memory()
