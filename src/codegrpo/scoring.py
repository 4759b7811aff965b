"""Shared by the score and validate commands: score (problem_id, completion) pairs in batches, with progress."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Sequence

from omegaconf import DictConfig

from codegrpo.problems import load_problem_set
from codegrpo.programs import get_language
from codegrpo.reward import Scored, Scorer
from codegrpo.sandbox import build_sandbox


def build_command_scorer(cfg: DictConfig) -> Scorer:
    problems = load_problem_set(cfg.problems)
    return Scorer(problems, build_sandbox(cfg.sandbox), get_language(cfg.problems.language),
                  cfg.reward.kind, cfg.reward.extract, cfg.sandbox.timeout_s)


def score_all(scorer: Scorer, pairs: Sequence[tuple[str, str]], batch_size: int) -> list[Scored]:
    """Score every pair in order, printing progress to stderr after each batch."""

    async def run() -> list[Scored]:
        scored: list[Scored] = []
        try:
            for start in range(0, len(pairs), batch_size):
                batch = pairs[start : start + batch_size]
                scored += await scorer.score([p for p, _ in batch], [c for _, c in batch])
                print(f"scored {len(scored)}/{len(pairs)}", file=sys.stderr, flush=True)
        finally:
            await scorer.sandbox.aclose()
        return scored

    return asyncio.run(run())


def summary(scored: Sequence[Scored]) -> str:
    counts = Counter(s.verdict.status.value for s in scored)
    rewards = [s.verdict.reward for s in scored if s.verdict.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    parts = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
    return f"{len(scored)} completions: mean reward {mean:.3f}; {parts}"
