"""Red team round 4, finding 1: what one completion may hold on the host. Each run is judged as it
arrives and its output dropped, so a program's output is held one run at a time, whatever its number of
tests; the verdicts are the same as if every output had been kept. In every mode: local warm and cold,
with cgroups and with rlimits, and Superserve chunks through the fake. The peak RSS itself is measured by
``python -m benchmarks.bench --only memory`` (issue 32's bound, docs/security.md)."""

from __future__ import annotations

import asyncio

import pytest
from benchmarks.fakes import FakeSuperserve

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import KEPT_OUTPUT_CHARS, Scorer
from codegrpo.reward.verdict import Status
from tests.helpers.sandbox import Recording, make_sandbox

TESTS = 24
OUTPUT_BYTES = 4 << 10  # per stream and run: a chunk's whole document stays under what an exec returns
PROBLEM = Problem("echo", "", "", "stdio", tests=tuple(IOTest(f"{i}\n", f"{i}\n") for i in range(TESTS)))
# One emoji, then invalid bytes: decoded with "replace", 4 bytes a character on the host.
HOSTILE = f"""import sys
for stream in (sys.stdout.buffer, sys.stderr.buffer):
    stream.write("\\U0001F600".encode() + b"\\xff" * {OUTPUT_BYTES})
"""
# Right on every test, with a long stderr on each: the verdict must not depend on what is kept.
HONEST = f"""import sys
sys.stderr.write("x" * {OUTPUT_BYTES})
print(input())
"""


def score_both(backend):
    recording = Recording(backend)
    scorer = Scorer([PROBLEM], recording, get_language("python"), "partial", timeout_s=10.0)
    scored = asyncio.run(scorer.score(["echo", "echo"], [HOSTILE, HONEST]))
    return scored, recording.results


def assert_judged_and_dropped(scored, results):
    hostile, honest = scored
    assert (hostile.verdict.status, hostile.verdict.reward) == (Status.FAILED, 0.0), hostile.verdict
    assert hostile.verdict.detail.startswith("test 1 of 24: got")
    assert (honest.verdict.status, honest.verdict.reward) == (Status.PASSED, 1.0), honest.verdict
    for result in results:
        assert len(result.runs) == TESTS
        kept = sum(len(run.stdout) + len(run.stderr) for run in result.runs)
        assert kept <= KEPT_OUTPUT_CHARS, f"the host kept {kept} characters of one program's output"


@pytest.mark.parametrize("mode", ["warm-cgroups", "cold-cgroups", "warm-rlimits", "cold-rlimits"])
def test_a_program_with_many_tests_keeps_one_runs_output_at_a_time(mode):
    warm, limits = mode.split("-")
    sandbox = make_sandbox(use_cgroups=limits == "cgroups", warm=warm == "warm")
    try:
        assert_judged_and_dropped(*score_both(sandbox))
    finally:
        asyncio.run(sandbox.aclose())


def test_superserve_chunks_are_judged_run_by_run(make_backend):
    with FakeSuperserve() as fake:
        backend = make_backend(fake)
        try:
            assert_judged_and_dropped(*score_both(backend))
        finally:
            asyncio.run(backend.aclose())
