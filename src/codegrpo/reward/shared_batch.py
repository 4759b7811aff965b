"""One TRL step's batch, scored once for every reward function that reads it, and the opt-in hack penalty,
its second reader.

TRL calls each reward function on the same completions (the async ones concurrently): ``code_reward`` and
``hack_penalty`` both need the batch's verdicts, and the sampler's pass rates (codegrpo.training.sampling) see
them too. A SharedBatch holds those collaborators explicitly: how many readers each batch has, and the
observers that get its verdicts once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from codegrpo.reward.extraction import completion_text
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Scored

Observer = Callable[[Sequence[Scored]], None]


class SharedBatch:
    """``scorer.score`` for ``readers`` reward functions of one step: the first reader's call scores the
    batch, and each ``observer`` gets its verdicts once; the other readers of the same batch await that
    scoring, and once all ``readers`` have read, the next call is a new batch."""

    def __init__(self, scorer: Scorer, readers: int = 1, observers: Sequence[Observer] = ()) -> None:
        if readers < 1:
            raise ValueError(f"a SharedBatch has at least one reader, not {readers}")
        self.scorer, self.readers, self.observers = scorer, readers, tuple(observers)
        self._current: tuple[Any, asyncio.Future[list[Scored]], int] | None = None

    async def _score(self, problem_ids: Sequence[str], completions: Sequence[Any]) -> list[Scored]:
        scored = await self.scorer.score(problem_ids, completions)
        for observe in self.observers:
            observe(scored)
        return scored

    async def score(self, problem_ids: Sequence[str], completions: Sequence[Any]) -> list[Scored]:
        key = (tuple(problem_ids), tuple(map(completion_text, completions)))
        if self._current is None or self._current[0] != key:
            self._current = (key, asyncio.ensure_future(self._score(problem_ids, completions)), 0)
        cached, task, read = self._current
        read += 1
        self._current = None if read >= self.readers else (cached, task, read)
        return await asyncio.shield(task)


def make_hack_penalty(batch: SharedBatch) -> Callable[..., Any]:
    """The opt-in penalty ``reward.functions=[code_reward,hack_penalty]``: -1.0 for a completion the
    monitor flagged, 0.0 for a clean one (scaled by its ``reward.weights`` entry), None where the sandbox
    failed. It reads ``batch``, which code_reward reads too: the batch runs once."""

    async def hack_penalty(completions: list[Any], problem_id: list[str], **_: Any) -> list[float | None]:
        scored = await batch.score(problem_id, completions)
        return [None if s.verdict.reward is None else -1.0 if s.flags else 0.0 for s in scored]

    return hack_penalty
