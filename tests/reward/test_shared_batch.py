"""One step's batch, shared by the reward functions that read it (codegrpo.reward.shared_batch), on the
public in-memory backend: what ran is what the backend recorded."""

from __future__ import annotations

import asyncio

import pytest

from codegrpo import MemoryBackend, Outcome, RunResult
from codegrpo.reward.code_reward import CodeReward
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.shared_batch import SharedBatch, make_hack_penalty
from tests.helpers.feedback import DOUBLE, fenced

RIGHT = fenced("print(int(input()) * 2)")
PEEKS = fenced("import subprocess\nsubprocess.run(['cat', '/tmp/solution.py'])")  # the monitor flags it


def _doubling(program, stdin):
    """What the real sandbox prints for the two codes: twice the input, or nothing."""
    out = f"{2 * int(stdin)}\n" if "* 2" in program.source else ""
    return RunResult(Outcome.EXITED, 0, stdout=out, duration_s=0.01)


def test_two_readers_score_the_batch_once_and_each_observer_sees_it_once():
    sandbox = MemoryBackend(_doubling)
    seen: list[list[float | None]] = []
    batch = SharedBatch(
        Scorer([DOUBLE], sandbox, get_language("python")), 2, [lambda s: seen.append([x.verdict.reward for x in s])]
    )
    code_reward, hack_penalty = CodeReward.of_batch(batch), make_hack_penalty(batch)
    completions, ids = [RIGHT, PEEKS], [DOUBLE.id] * 2

    async def step():
        return await asyncio.gather(
            code_reward(completions=completions, problem_id=ids), hack_penalty(completions=completions, problem_id=ids)
        )

    assert asyncio.run(step()) == [[1.0, 0.0], [0.0, -1.0]]
    assert len(sandbox.programs) == 2 and seen == [[1.0, 0.0]]  # two programs, run once for both functions
    asyncio.run(step())  # the next step's batch, the same completions: scored again, once
    assert len(sandbox.programs) == 4 and len(seen) == 2


def test_a_reward_of_a_scorer_alone_reads_each_batch_alone():
    sandbox = MemoryBackend(_doubling)
    reward = CodeReward.of_scorer(Scorer([DOUBLE], sandbox, get_language("python")))
    for _ in range(2):
        assert asyncio.run(reward(completions=[RIGHT], problem_id=[DOUBLE.id])) == [1.0]
    assert len(sandbox.programs) == 2


def test_a_batch_has_a_reader():
    with pytest.raises(ValueError, match="at least one reader"):
        SharedBatch(Scorer([DOUBLE], MemoryBackend(_doubling), get_language("python")), 0)


def test_rows_of_their_own_are_judged_alone_not_through_the_batch():
    """A template's reward given a tests column and no problem_id (red team, issue 41): its rows are judged by
    the copy of the scorer that knows them, not looked up in the batch's Scorer (an unknown problem_id)."""
    sandbox = MemoryBackend(_doubling)
    reward = CodeReward.of_batch(SharedBatch(Scorer([DOUBLE], sandbox, get_language("python")), 2))
    tests = [{"input": "4\n", "output": "8\n"}]
    assert asyncio.run(reward(completions=[RIGHT], tests=[tests])) == [1.0] and len(sandbox.programs) == 1
