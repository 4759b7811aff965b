"""The commands: thin Hydra entry points over the composition root (codegrpo.build).

Each module here is one console script (``codegrpo-<name>``; ``python train.py`` is ``codegrpo-train``):
it composes its config, hands ``run`` its task, and prints. No command imports another. Hydra names a
job, and so its log file, after the command's module: train.log, evaluate.log.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from omegaconf import DictConfig, OmegaConf

from codegrpo.config.schema import EvaluateConfig, ScoreConfig, TrainConfig, register_configs
from codegrpo.errors import CodegrpoError, UsageError
from codegrpo.resources import config_dir

# The repo's conf/ in a checkout, the copy inside the package when installed from a wheel.
CONFIG_DIR = str(config_dir())
# The typed schemas must be in Hydra's ConfigStore before it composes. The trainer's imports trl (and
# torch): only commands.train registers it, so score, validate and limits start in a second.
register_configs(trainer=False)

if TYPE_CHECKING:
    from codegrpo.data.problems import Problem
    from codegrpo.reward.verdict import Scored

T = TypeVar("T")
C = TypeVar("C", TrainConfig, EvaluateConfig, ScoreConfig)  # the command's config, as its dataclass
HINTS = {"problems.path": "problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl"}


def check_mandatory(cfg: DictConfig) -> None:
    """Every ``???`` value is set, or one line naming each missing key."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        hints = "; ".join(HINTS.get(key, f"set {key}=...") for key in missing)
        raise UsageError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set ({hints})")


def run(task: Callable[[C], T], cfg: DictConfig, on_failure: Callable[[BaseException], None] | None = None) -> T:
    """Run ``task`` on the config as its typed dataclasses (codegrpo.config.schema), calling ``on_failure`` with
    any error first. The one place user errors are reported: a CodegrpoError ends the command with one
    line on stderr and exit status 2."""
    try:
        try:
            check_mandatory(cfg)
            return task(OmegaConf.to_object(cfg))
        except BaseException as error:
            if on_failure is not None:
                on_failure(error)
            raise
    except CodegrpoError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def score_pairs(cfg: ScoreConfig, problems: list[Problem], pairs: Sequence[tuple[str, str]]) -> list[Scored]:
    """Score (problem_id, completion) pairs in a sandbox opened for them, in batches with progress (the
    score and validate commands)."""
    from codegrpo import build
    from codegrpo.reward.scorer import score_all

    async def score_in_sandbox() -> list[Scored]:
        async with build.sandbox(cfg.sandbox, cfg.problems.language) as sandbox:
            return await score_all(build.scorer(cfg, problems, sandbox), pairs, cfg.batch_size)

    return asyncio.run(score_in_sandbox())
