"""The score task: a JSONL file of completions scored in the sandbox (codegrpo-score's work)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codegrpo import build
from codegrpo.config.runs import ScoreConfig
from codegrpo.data.files import read_jsonl
from codegrpo.data.problems import Problem
from codegrpo.errors import ProblemError
from codegrpo.reward.explain import explain
from codegrpo.reward.scorer import score_all, summary
from codegrpo.reward.verdict import Scored


def read_completions(path: str, known_ids: set[str]) -> list[tuple[str, str]]:
    """Parse and check every line first, so a bad line fails before anything runs."""
    file = Path(path)
    if not file.is_file():
        raise ProblemError(f"completions file {file} does not exist")
    pairs = []
    for where, record in read_jsonl(file):
        if not isinstance(record, dict) or not isinstance(record.get("completion"), str):
            raise ProblemError(f"{where}: expected an object with a string 'completion'")
        problem_id = record.get("problem_id")
        if problem_id not in known_ids:
            raise ProblemError(f"{where}: unknown problem_id {problem_id!r}")
        pairs.append((problem_id, record["completion"]))
    return pairs


def score(cfg: ScoreConfig) -> None:
    if not cfg.completions:
        raise ProblemError("set completions=PATH (a JSONL file of {problem_id, completion} lines)")
    problems = build.problems(cfg.problems)
    pairs = read_completions(cfg.completions, {p.id for p in problems})

    scored = score_pairs(cfg, problems, pairs)
    for item in scored:
        line = (
            explain(item)
            if cfg.reasons
            else {
                "problem_id": item.problem_id,
                "reward": item.verdict.reward,
                "status": item.verdict.status.value,
                "flags": list(item.flags),
            }
        )
        print(json.dumps(line))
    print(summary(scored), file=sys.stderr)


def score_pairs(cfg: ScoreConfig, problems: list[Problem], pairs: Sequence[tuple[str, str]]) -> list[Scored]:
    """Score (problem_id, completion) pairs in a sandbox opened for them, in batches with progress (the
    score and validate commands)."""

    async def score_in_sandbox() -> list[Scored]:
        async with build.sandbox(cfg.sandbox, cfg.problems.language) as sandbox:
            return await score_all(build.scorer(cfg, problems, sandbox), pairs, cfg.batch_size)

    return asyncio.run(score_in_sandbox())
