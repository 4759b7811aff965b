"""The episodes' metrics (feedback/*), from what each episode's stats hold: small enough to gather from every
process."""

from __future__ import annotations

import itertools
import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codegrpo.reward.metric_names import (
    FEEDBACK_CUT,
    FEEDBACK_TOKENS,
    FEEDBACK_TURNS,
    FEEDBACK_WITH_PUBLIC,
    FIX_RATE,
    public_pass,
)
from codegrpo.rollout.episode import Episode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeStats:
    """What the metrics read of an episode (small enough to gather from every process)."""

    turns: int
    public: tuple[bool, ...]  # each turn's: every public test passed; () without public tests
    feedback_tokens: int
    cut: bool

    @classmethod
    def of(cls, episode: Episode) -> EpisodeStats:
        passed = tuple(r.passed for r in episode.public if r is not None)
        return cls(len(episode.codes), passed, episode.feedback_tokens, episode.cut)


def episode_metrics(stats: Sequence[EpisodeStats], max_turns: int) -> dict[str, float]:
    """feedback/*: turns used, feedback tokens, episodes cut by max_completion_length (or the context), the
    share with public tests, and over those: the public pass rate by each turn (an episode that stopped keeps
    its last result) and the fix rate (of the turns that failed their public tests and were followed by
    another, the share whose next turn passed). The hidden pass rate is code_reward's ``pass_rate``, which
    scores the final code."""
    if not stats:
        return {}
    metrics = {
        FEEDBACK_TURNS: statistics.fmean(s.turns for s in stats),
        FEEDBACK_TOKENS: statistics.fmean(s.feedback_tokens for s in stats),
        FEEDBACK_CUT: statistics.fmean(float(s.cut) for s in stats),
    }
    tested = [s.public for s in stats if s.public]
    metrics[FEEDBACK_WITH_PUBLIC] = len(tested) / len(stats)
    if tested:
        for turn in range(max_turns):
            metrics[public_pass(turn + 1)] = statistics.fmean(
                float(passed[min(turn, len(passed) - 1)]) for passed in tested
            )
        fixes = [after for passed in tested for before, after in itertools.pairwise(passed) if not before]
        if fixes:
            metrics[FIX_RATE] = statistics.fmean(float(fixed) for fixed in fixes)
    return metrics


def cut_first_turn(stats: Sequence[EpisodeStats], max_turns: int) -> float | None:
    """The share of episodes cut by the budget before their second turn (None: no episode was cut, or one turn
    is all an episode may have): they trained as single turns."""
    if max_turns < 2 or not any(s.cut for s in stats):
        return None
    return sum(s.cut and s.turns == 1 for s in stats) / len(stats)


def warn_if_mostly_cut(stats: Sequence[EpisodeStats], max_turns: int, budget: Any) -> None:
    """One warning line for a step where most episodes were cut before their second turn."""
    share = cut_first_turn(stats, max_turns)
    if share is not None and share > 0.5:
        cut = round(share * len(stats))
        log.warning(
            "rollout=feedback: %d of %d episodes were cut before their second turn: trainer."
            "max_completion_length=%s (an episode's budget: every turn and the feedback between them) holds "
            "one turn and no feedback; raise it, or cap a turn lower with trainer.generation_kwargs."
            "max_new_tokens",
            cut,
            len(stats),
            budget,
        )
