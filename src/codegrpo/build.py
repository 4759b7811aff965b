"""The composition root: every piece of a run is built here, from the typed config, and nowhere else.

    problems(cfg.problems)            the problem set, loaded and validated
    eval_problems(cfg)                the problems an evaluation scores (held out by default)
    sandbox(cfg.sandbox, language)    the backend that ``sandbox._target_`` names; open it with
                                      ``with`` / ``async with``, which checks it works and closes it
    scorer(cfg, problems, sandbox)    completions -> programs -> sandbox -> verdicts
    model(cfg.model)                  the model and tokenizer (a checkpoint in place of the model group)
    tracking(cfg, run_dir, job_type)  the W&B run, or None

The commands (codegrpo.commands) call these in order; training and evaluation receive what they build.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hydra.utils import get_class

from codegrpo import tracking as tracking_runs
from codegrpo.config import (
    EvaluateConfig,
    ModelConfig,
    ProblemsConfig,
    RewardKind,
    SandboxConfig,
    ScoreConfig,
    Split,
    TrainConfig,
    to_plain,
)
from codegrpo.errors import UsageError
from codegrpo.problems import Problem, load_problem_set, load_problems, select_split
from codegrpo.programs import get_language
from codegrpo.reward import Scorer
from codegrpo.sandbox.base import SandboxBackend

if TYPE_CHECKING:  # imported where used: the scoring commands load neither
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from wandb.sdk.wandb_run import Run

log = logging.getLogger(__name__)


def problems(cfg: ProblemsConfig) -> list[Problem]:
    return load_problem_set(cfg)


def eval_problems(cfg: TrainConfig | EvaluateConfig) -> list[Problem]:
    """``evaluation.problems_path``, or by default the training problem set's ``evaluation.split`` (its
    held-out eval split), then ``evaluation.limit``."""
    settings = cfg.evaluation
    if settings.problems_path:
        found = select_split(load_problems(settings.problems_path), settings.split, cfg.problems.eval_fraction)
    else:
        found = load_problem_set(dataclasses.replace(cfg.problems, split=settings.split, limit=None))
        if settings.split is not Split.all and cfg.problems.split in (Split.all, settings.split):
            log.warning("the eval problems (split %s) overlap the training problems (problems.split=%s): "
                        "set problems.split=train for a held-out evaluation", settings.split, cfg.problems.split)
    return found[: settings.limit]


def share_concurrency(value: int, ranks: int) -> int:
    """One training process's share of ``sandbox.max_concurrency`` when ``ranks`` train on this machine
    (a bad value stays as it is, for the backend to refuse)."""
    return max(1, value // ranks) if ranks > 1 and value >= 1 else value


def sandbox(cfg: SandboxConfig, language: str = "python", ranks: int = 1) -> SandboxBackend:
    """The backend class ``cfg._target_`` names (codegrpo's or a user's SandboxBackend), called with the
    sandbox config, with this rank's share of the concurrency cap. Raises SandboxFatalError if it
    cannot work here; opening it runs a trivial program of ``language``."""
    try:
        backend_class = get_class(cfg._target_)
    except (ImportError, ValueError) as error:
        raise UsageError(f"sandbox._target_={cfg._target_!r} names no class: {error}") from None
    if not (isinstance(backend_class, type) and issubclass(backend_class, SandboxBackend)):
        raise UsageError(f"sandbox._target_={cfg._target_!r} is not a codegrpo.sandbox.base.SandboxBackend")
    backend = backend_class(dataclasses.replace(cfg, max_concurrency=share_concurrency(cfg.max_concurrency, ranks)))
    backend.runtimes = (get_language(language).runtime,)
    return backend


def scorer(cfg: TrainConfig | EvaluateConfig | ScoreConfig, problem_set: list[Problem], backend: SandboxBackend,
           kind: RewardKind | None = None) -> Scorer:
    """A Scorer of ``problem_set`` through ``backend``, as ``cfg.reward`` says (``kind`` overrides it:
    evaluation is always binary)."""
    return Scorer(problem_set, backend, get_language(cfg.problems.language), kind or cfg.reward.kind,
                  cfg.reward.extract, cfg.sandbox.timeout_s, cfg.reward.checker, cfg.reward.float_tolerance,
                  cfg.reward.time_budget_s)


def model(cfg: ModelConfig, checkpoint: str | None = None,
          bf16: bool = False) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """(model, tokenizer) of the model group, or of ``checkpoint`` (a saved dir; "base" is the group's)."""
    from codegrpo.models import load_model_and_tokenizer

    if checkpoint and checkpoint != "base":
        cfg = dataclasses.replace(cfg, name_or_path=checkpoint, gguf_package="")
    return load_model_and_tokenizer(cfg, bf16=bf16)


def tracking(cfg: TrainConfig | EvaluateConfig, run_dir: Path, job_type: str, run_id: str | None = None) -> Run | None:
    """The W&B run of this command (``logger=wandb``), or None."""
    return tracking_runs.start_run(cfg.logger, run_dir, to_plain(cfg), run_id, job_type=job_type)
