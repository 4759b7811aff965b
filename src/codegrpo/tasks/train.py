"""Training in three steps, each testable alone: ``prepare`` (the checks, then every piece through
codegrpo.build) -> ``fit`` (the before evaluation, training) -> ``finalize`` (the final model on every rank,
since saving gathers sharded weights; then rank 0's records, evaluation, push and summary).

``train(cfg)`` runs the three; ``train_objective`` and ``settle_failed_run`` are the command's hooks.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from codegrpo import build
from codegrpo.config.choices import RolloutKind
from codegrpo.config.runs import TrainConfig, to_plain
from codegrpo.errors import UsageError
from codegrpo.evaluation.compare import compare, comparison_summary, write_comparison
from codegrpo.evaluation.results import Evaluation, load_evaluation, save
from codegrpo.reward import metric_names as keys
from codegrpo.sandbox.base import SandboxBackend, format_limits
from codegrpo.tasks.evaluate import evaluate_loaded
from codegrpo.tracking import console, secrets
from codegrpo.tracking import wandb_run as tracking
from codegrpo.tracking.runinfo import record_in_run_info, write_run_info
from codegrpo.tracking.secrets import mask_text
from codegrpo.training import checkpoints
from codegrpo.training.preemption import MARKER, Guard, Preempted, parse_signals, write_marker

if TYPE_CHECKING:  # imported by the steps that load them
    from torch import nn
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from wandb.sdk.wandb_run import Run

    from codegrpo.training.trl_adapter import CodeGRPOTrainer

log = logging.getLogger(__name__)
FAILED = "FAILED"
# What a run writes before its first step (Hydra's files included): a dir holding only these is removed.
BEFORE_FIRST_STEP = {
    ".hydra",
    "train.log",
    "config.yaml",
    "run_info.json",
    "git.diff",
    build.WANDB_ID_FILE,
    "wandb",
    "completions",
    checkpoints.STAGING,
}


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


@dataclasses.dataclass
class Prepared:
    """Everything ``prepare`` built; the sandbox and the W&B run are closed by the ExitStack it was given."""

    cfg: TrainConfig
    run_dir: Path
    training: build.TrainingSet
    sandbox: SandboxBackend
    tokenizer: PreTrainedTokenizerBase
    trainer: CodeGRPOTrainer
    wandb_run: Run | None  # None: logger=none, or not rank 0
    guard: Guard
    checkpoint: Path | None  # the checkpoint this run resumes from


@dataclasses.dataclass
class Fitted:
    metrics: dict[str, float]
    before: Evaluation | None


def optimized_value(metrics: dict[str, float], name: str | None) -> float | None:
    """The value of the metric a sweeper optimises (lightning-hydra-template's get_metric_value): None when
    ``name`` is None; UsageError, naming the metrics the run has, when it has no ``name``."""
    if name is None:
        return None
    if name not in metrics:
        raise UsageError(
            f"optimized_metric={name}: the run's result has no {name}, only {', '.join(sorted(metrics)) or 'nothing'}"
        )
    return metrics[name]


def evaluate_phase(
    cfg: TrainConfig,
    model: PreTrainedModel | nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    sandbox: SandboxBackend,
    phase: str,
    run: Run | None,
) -> Evaluation:
    results = evaluate_loaded(cfg, model, tokenizer, sandbox, build.eval_problems(cfg))
    save(results, Path(cfg.run_dir, f"eval_{phase}.json"))
    log.info("eval %s: %s", phase, results.summary())
    if run is not None:
        run.log({keys.evaluation(k, phase): v for k, v in results.metrics().items()})
    return results


def prepare(cfg: TrainConfig, stack: ExitStack, guard: Guard) -> Prepared:
    """The checks, then every piece of the run, each built by codegrpo.build. Raises before loading the model
    if the model is out of reach, or the problems, the resume, the sandbox or the credentials are wrong."""
    from codegrpo.models.loading import describe_model

    build.check_train(cfg, world_size())
    training = build.training_set(cfg, world_size(), is_main_process())
    # Every mistake above is the run's only line: the run dir is named once the run can start.
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    console.announce_run_dir(run_dir)
    checkpoint = build.resume(cfg, run_dir, training.sha256)
    # Every rank scores its own completions, so each gets its share of the sandbox's cap.
    sandbox = stack.enter_context(build.run_sandbox(cfg, world_size()))
    rewards = build.rewards(cfg, training, sandbox, checkpoint)
    stack.callback(rewards.close)
    if is_main_process():
        _write_records(cfg, run_dir, training.sha256, sandbox, checkpoint)
    args = build.training_args(cfg, run_dir, rewards.weights, len(training))
    model, tokenizer = build.model(cfg.model, bf16=bool(args.bf16), tools=cfg.rollout.kind is RolloutKind.tools)
    if is_main_process():
        record_in_run_info(run_dir, {"model": describe_model(cfg.model, model)})  # what loaded, not what was asked
    run = build.train_tracking(cfg, run_dir, checkpoint) if is_main_process() else None  # only rank 0 logs
    stack.callback(tracking.finish_run, run)  # flushed on every way out, a preemption included
    run_id = run.id if run is not None else None
    trainer = build.trainer(cfg, model, tokenizer, training, rewards, args, guard, run_id)
    return Prepared(cfg, run_dir, training, sandbox, tokenizer, trainer, run, guard, checkpoint)


def _write_records(
    cfg: TrainConfig, run_dir: Path, sha256: str, sandbox: SandboxBackend, checkpoint: Path | None
) -> None:
    """run_info.json and config.yaml (no secret in either), and the sandbox's limits in the log."""
    limits = sandbox.limits()
    log.info("sandbox limits on this machine:\n%s", format_limits(limits))
    extra = {
        "resumed_from": str(checkpoint) if checkpoint else None,
        "sandbox_limits": [dict(zip(("limit", "value", "enforced_by"), row, strict=True)) for row in limits],
    }
    write_run_info(run_dir, cfg.seed, sha256, extra)
    OmegaConf.save(OmegaConf.create(secrets.mask(to_plain(cfg))), run_dir / "config.yaml")
    for stale in (MARKER, FAILED):  # this run's outcome replaces the last one's
        (run_dir / stale).unlink(missing_ok=True)


def _write_history(prepared: Prepared) -> list[dict[str, Any]]:
    history = prepared.trainer.state.log_history
    if is_main_process():
        (prepared.run_dir / "log_history.json").write_text(json.dumps(history, indent=1))
    return history


def fit(prepared: Prepared) -> Fitted:
    """The before evaluation (rank 0; a resumed run reuses its eval_before.json), then training. On a
    signal: the checkpoint of the step it finished, log_history.json, PREEMPTED, then Preempted."""
    cfg, run_dir, trainer = prepared.cfg, prepared.run_dir, prepared.trainer
    before = None
    if cfg.evaluation.before and is_main_process():
        saved = run_dir / "eval_before.json"
        if prepared.checkpoint is not None and saved.is_file():
            before = load_evaluation(saved)
        else:
            before = evaluate_phase(
                cfg, trainer.model, prepared.tokenizer, prepared.sandbox, "before", prepared.wandb_run
            )
    started = time.monotonic()
    prepared.guard.graceful = True
    try:
        result = trainer.train(resume_from_checkpoint=str(prepared.checkpoint) if prepared.checkpoint else None)
    finally:
        prepared.guard.graceful = False
    log.info("training took %.0f s", time.monotonic() - started)
    if trainer.stopped_at is not None:  # this rank's signal, or another's (they agreed)
        received = prepared.guard.received
        name = received.name if received is not None else "a signal to another rank"
        step = trainer.state.global_step
        newest = checkpoints.newest(run_dir)
        _write_history(prepared)
        if is_main_process():
            marker = write_marker(run_dir, name, newest, step)
            log.warning("stopped by %s after step %d: %s saved; %s says how to resume", name, step, newest, marker)
        prepared.guard.chain()  # e.g. submitit's requeue, now that the checkpoint is on disk
        raise Preempted(name, newest)
    metrics = dict(result.metrics)
    # TRL's "reward" is the weighted sum of every reward function: what a sweep should maximize.
    rewards = [e[keys.REWARD] for e in trainer.state.log_history if keys.REWARD in e]
    if rewards:
        metrics[keys.FINAL_REWARD_MEAN] = rewards[-1]
    return Fitted(metrics, before)


def finalize(prepared: Prepared, fitted: Fitted) -> dict[str, float]:
    """Save the final model (every rank), then on rank 0: log_history.json, the W&B model, plots, the after
    evaluation and its comparison, the Hub push, the summary. Returns the final metrics (for sweepers)."""
    from codegrpo.models.hub import push_final_model
    from codegrpo.models.saving import save_final_model
    from codegrpo.tracking.plots import write_plots

    cfg, run_dir, trainer, metrics = prepared.cfg, prepared.run_dir, prepared.trainer, fitted.metrics
    final = trainer.model
    if cfg.save_model:  # adapters alone with LoRA, full models in model.save_dtype
        final = save_final_model(trainer, cfg, run_dir / "final_model", is_main_process())
    history = _write_history(prepared)
    if not is_main_process():
        return metrics
    run = prepared.wandb_run
    if cfg.save_model:
        tracking.log_model(run, cfg.logger, run_dir / "final_model", metrics)
    if cfg.plots:
        write_plots(history, run_dir)
    if cfg.evaluation.after:
        after = evaluate_phase(cfg, final, prepared.tokenizer, prepared.sandbox, "after", run)
        if fitted.before is not None:  # the paired change in pass@1: comparison.json, .png, W&B, the log
            comparison = compare(fitted.before, after, cfg.evaluation.bootstrap, cfg.seed)
            write_comparison(comparison, run_dir, run)
            log.info("eval change: %s", comparison_summary(comparison))
            metrics[keys.EVAL_CHANGE] = comparison.change
    if cfg.save_model and cfg.trainer.push_to_hub:
        push_final_model(cfg, run_dir, run_dir / "final_model")
    console.final_summary(run_dir, history, run)
    return metrics


def train(cfg: TrainConfig) -> dict[str, float]:
    """prepare -> fit -> finalize, with the preemption signals handled from the first check to the end."""
    guard = Guard(parse_signals(cfg.preemption.signals))
    with guard, ExitStack() as stack:
        stack.push(_leave_together)  # first in, so last out: after W&B and the sandbox close
        prepared = prepare(cfg, stack, guard)
        return finalize(prepared, fit(prepared))


def train_objective(cfg: TrainConfig) -> float | None:
    """``train(cfg)``, then the value of its ``optimized_metric`` for the sweeper: rank 0's (the other ranks,
    which evaluate nothing, return None)."""
    metrics = train(cfg)
    return optimized_value(metrics, cfg.optimized_metric) if is_main_process() else None


def _leave_together(kind: type | None, error: BaseException | None, traceback: Any) -> None:
    # torchrun closes every rank once one exits non-zero: preempted ranks (they agreed to stop) leave
    # together, so rank 0's marker and W&B flush are not cut short by a rank that finished first.
    if isinstance(error, Preempted) and world_size() > 1:
        import torch.distributed

        if torch.distributed.is_initialized():
            torch.distributed.barrier()


def settle_failed_run(run_dir: Path, error: BaseException) -> None:
    """Remove a run dir that never reached a step and holds only what the run wrote; else mark it FAILED
    (the last line of the traceback, and the checkpoint to resume from). A preempted run has its marker."""
    if isinstance(error, Preempted) or not run_dir.is_dir():
        return
    checkpoints.discard_staging(run_dir)
    entries = {p.name for p in run_dir.iterdir()}
    tables = list(run_dir.glob("completions/*.parquet"))
    if entries <= BEFORE_FIRST_STEP and not tables:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    message = mask_text(str(error)) or type(error).__name__  # an error may quote a config value
    lines = [f"{type(error).__name__}: {message}"]
    newest = checkpoints.newest(run_dir)
    if newest is not None:
        lines.append(f"checkpoint: {newest.name} (kept; resume with hydra.run.dir={run_dir} resume=auto)")
    (run_dir / FAILED).write_text("\n".join(lines) + "\n")
    log.error("run failed; %s says why", run_dir / FAILED)
