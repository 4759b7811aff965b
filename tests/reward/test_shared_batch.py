"""One step's batch, shared by the reward functions that read it (codegrpo.reward.shared_batch), on the
public in-memory backend: what ran is what the backend recorded."""

from __future__ import annotations

import asyncio

import pytest

from codegrpo import MemoryBackend, Outcome, RunResult
from codegrpo.errors import UsageError
from codegrpo.reward.code_reward import make_code_reward
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
    code_reward, hack_penalty = make_code_reward(batch), make_hack_penalty(batch)
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
    reward = make_code_reward(SharedBatch(Scorer([DOUBLE], sandbox, get_language("python"))))
    for _ in range(2):
        assert asyncio.run(reward(completions=[RIGHT], problem_id=[DOUBLE.id])) == [1.0]
    assert len(sandbox.programs) == 2


def test_a_batch_has_a_reader():
    with pytest.raises(ValueError, match="at least one reader"):
        SharedBatch(Scorer([DOUBLE], MemoryBackend(_doubling), get_language("python")), 0)


def test_the_templates_reward_refuses_rows_without_a_problem_id_before_anything_runs():
    """A template's reward given a tests column and no problem_id (red team, issue 41) once scored the rows
    on their own; the template's dataset always names its problem, so it is now one clear error."""
    sandbox = MemoryBackend(_doubling)
    reward = make_code_reward(SharedBatch(Scorer([DOUBLE], sandbox, get_language("python")), 2))
    tests = [{"input": "4\n", "output": "8\n"}]
    with pytest.raises(UsageError, match="reads the dataset's problem_id column; it has none"):
        asyncio.run(reward(completions=[RIGHT], tests=[tests]))
    assert not sandbox.programs
