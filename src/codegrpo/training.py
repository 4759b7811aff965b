"""Training: the pieces codegrpo.build makes -> GRPOTrainer -> a saved model and its evaluation in the run dir.

``train(cfg)`` checks everything that can fail in a second (values, the model's whereabouts, the
problems, the sandbox) before it loads the model. ``settle_failed_run`` leaves no run dir behind a run
that failed before its first step, and a ``FAILED`` file in any other.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from codegrpo import build, console, evaluation, tracking
from codegrpo.config import ProblemsConfig, TrainConfig
from codegrpo.errors import UsageError
from codegrpo.problems import Problem, problem_set_hash
from codegrpo.prompts import build_messages
from codegrpo.runinfo import write_run_info
from codegrpo.sandbox.base import SandboxBackend, format_limits

log = logging.getLogger(__name__)
WANDB_ID_FILE = "wandb_run_id.txt"
# What a run writes before its first step (Hydra's files included): a dir holding only these is removed.
BEFORE_FIRST_STEP = {".hydra", "train.log", "config.yaml", "run_info.json", "git.diff", "wandb_run_id.txt",
                     "wandb", "completions"}


def build_dataset(problems: list[Problem], cfg: ProblemsConfig):
    """A datasets.Dataset with a chat `prompt` column and the test columns TRL passes to the reward."""
    from datasets import Dataset

    return Dataset.from_list(
        [
            {
                "prompt": build_messages(p, cfg.prompt_template, cfg.humaneval_template, cfg.system_prompt),
                "problem_id": p.id,
                "test": p.test,
                "expected": p.expected,
                "entry_point": p.entry_point,
            }
            for p in problems
        ]
    )


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def grpo_args(cfg: TrainConfig, run_dir: Path):
    from trl import GRPOConfig

    args: dict[str, Any] = dataclasses.asdict(cfg.trainer)
    report_to = args.get("report_to") or []
    report_to = [report_to] if isinstance(report_to, str) else list(report_to)
    report_to = [r for r in report_to if r != "none"]
    if cfg.logger.backend == "wandb" and "wandb" not in report_to:
        report_to.append("wandb")
    args["report_to"] = report_to or "none"
    args["push_to_hub"] = False  # TRL would push the whole run dir; codegrpo.hub pushes only the model
    return GRPOConfig(output_dir=str(run_dir), seed=cfg.seed, **console.current_arg_names(args))


def resume_checkpoint(cfg: TrainConfig, run_dir: Path) -> str | None:
    """resume=auto: the newest checkpoint-N in the run dir (None: start fresh); else the given path."""
    if not cfg.resume:
        return None
    if cfg.resume != "auto":
        if not Path(cfg.resume).is_dir():
            raise UsageError(f"resume={cfg.resume}: no such checkpoint directory (or use resume=auto)")
        return cfg.resume
    checkpoints = sorted(run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.rpartition("-")[2]))
    return str(checkpoints[-1]) if checkpoints else None


def sweep_identity(cfg: TrainConfig) -> tuple[str | None, str | None]:
    """W&B group and name for a multirun job: the sweep dir and the job's overrides."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return cfg.logger.group, cfg.logger.name
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return cfg.logger.group, cfg.logger.name
    group = cfg.logger.group or Path(hydra_cfg.sweep.dir).name
    name = cfg.logger.name or hydra_cfg.job.override_dirname or f"job{hydra_cfg.job.num}"
    return group, name


def start_tracking(cfg: TrainConfig, run_dir: Path):
    """Only rank 0 logs; a resumed run continues the same W&B run."""
    if not is_main_process():
        return None
    id_file = run_dir / WANDB_ID_FILE
    run_id = id_file.read_text().strip() if cfg.resume and id_file.is_file() else None
    group, name = sweep_identity(cfg)
    cfg = dataclasses.replace(cfg, logger=dataclasses.replace(cfg.logger, group=group, name=name))
    run = build.tracking(cfg, run_dir, "train", run_id)
    if run is not None:
        id_file.write_text(run.id)
    return run


def evaluate_phase(cfg: TrainConfig, model, tokenizer, sandbox: SandboxBackend, phase: str,
                   run) -> evaluation.Evaluation:
    problems = build.eval_problems(cfg)
    scorer = build.scorer(cfg, problems, sandbox, kind="binary")
    results = evaluation.evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)
    evaluation.save(results, Path(cfg.run_dir, f"eval_{phase}.json"))
    log.info("eval %s: %s", phase, results.metrics())
    if run is not None:
        run.log({f"eval_{phase}/{k}": v for k, v in results.metrics().items()})
    return results


def compare_phases(cfg: TrainConfig, before: evaluation.Evaluation, after: evaluation.Evaluation,
                   run) -> evaluation.Comparison:
    """The paired change in pass@1 from before to after training: comparison.json, .png, W&B, the log."""
    comparison = evaluation.compare(before, after, cfg.evaluation.bootstrap, cfg.seed)
    evaluation.write_comparison(comparison, Path(cfg.run_dir), run)
    log.info("eval change: %s", evaluation.comparison_summary(comparison))
    return comparison


class LearningSignal:
    """A TrainerCallback that measures, for each optimizer step, the relative size of the update
    ||delta theta|| / ||theta|| of the trainable weights, and warns when no group has had any reward
    spread for `patience` logged steps in a row (GRPO then has no advantage to learn from)."""

    def __init__(self, patience: int = 3) -> None:
        self.patience = patience
        self.before: list | None = None
        self.ratios: list[float] = []
        self.flat_steps = 0

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs) -> None:
        import torch

        with torch.no_grad():
            self.before = [p.detach().float().clone() for p in model.parameters() if p.requires_grad]

    def on_optimizer_step(self, args, state, control, model=None, **kwargs) -> None:
        import torch

        if self.before is None:
            return
        with torch.no_grad():
            params = [p for p in model.parameters() if p.requires_grad]
            delta = sum(float((p.detach().float() - b).pow(2).sum()) for p, b in zip(params, self.before,
                                                                                    strict=True))
            norm = sum(float(b.pow(2).sum()) for b in self.before)
        self.before = None
        self.ratios.append((delta / norm) ** 0.5 if norm > 0 else 0.0)

    def metrics(self) -> dict[str, float]:
        """The mean relative update since the last log (popped)."""
        if not self.ratios:
            return {}
        value = sum(self.ratios) / len(self.ratios)
        self.ratios = []
        return {"update/relative_norm": value}

    def check_spread(self, logs: dict[str, Any]) -> None:
        frac = logs.get("frac_reward_zero_std")
        if frac is None:
            return
        self.flat_steps = self.flat_steps + 1 if frac >= 1.0 else 0
        if self.flat_steps == self.patience or (self.flat_steps > self.patience and self.flat_steps % 10 == 0):
            log.warning(
                "no learning signal: for %d logged steps in a row every group's rewards were identical "
                "(frac_reward_zero_std=1), so every advantage is 0 and the weights only move by weight decay. "
                "Use easier problems (problems=trivial), reward=partial, more trainer.num_generations or a "
                "higher trainer.temperature.", self.flat_steps)


def make_trainer_class():
    """GRPOTrainer that adds the learning-signal metrics to every logged step (so W&B and log_history
    get them with TRL's own metrics, including frac_reward_zero_std: the fraction of zero-spread groups)."""
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    class Callback(LearningSignal, TrainerCallback):
        pass

    class CodeGRPOTrainer(GRPOTrainer):
        def __init__(self, *args: Any, completions_every: int = 1, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.learning_signal = Callback()
            self.add_callback(self.learning_signal)
            console.install(self)  # one line per step, the completions panel once
            self.completions_every = max(1, completions_every)

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            logs.update(self.learning_signal.metrics())  # empty when no step ran since the last log
            # TRL writes a completions table at every log when log_completions: only every N steps here.
            self.log_completions = self.args.log_completions and self.state.global_step % self.completions_every == 0
            super().log(logs, start_time)
            self.learning_signal.check_spread(logs)

    return CodeGRPOTrainer


def train(cfg: TrainConfig) -> dict[str, float]:
    """Train with GRPO and return the final metrics (for sweepers). Raises before loading the model
    if the model is out of reach or the problems, the sandbox or the credentials are wrong."""
    from codegrpo.hub import check_push, push_final_model
    from codegrpo.models import build_peft_config, check_hub_model, check_save_dtype, save_final_model
    from codegrpo.plots import write_plots
    from codegrpo.rewards import build_reward_funcs

    check_hub_model(cfg.model)  # one connection attempt, before anything heavy
    if world_size() > 1 and not os.environ.get("CODEGRPO_RUN_DIR"):
        raise UsageError(
            "a distributed launch needs one run dir for every rank: set CODEGRPO_RUN_DIR, e.g. "
            "CODEGRPO_RUN_DIR=outputs/runs/$(date +%F_%H-%M-%S) accelerate launch ... train.py"
        )
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    console.announce_run_dir(run_dir)
    check_save_dtype(cfg.model)
    check_push(cfg)
    peft_config = build_peft_config(cfg.peft)
    problems = build.problems(cfg.problems)
    # Every rank scores its own completions, so each gets its share of the sandbox's cap.
    with build.sandbox(cfg.sandbox, cfg.problems.language, world_size()) as sandbox:
        scorer = build.scorer(cfg, problems, sandbox)
        reward_funcs, reward_weights = build_reward_funcs(cfg, scorer)
        checkpoint = resume_checkpoint(cfg, run_dir)
        limits = sandbox.limits()
        if is_main_process():
            log.info("sandbox limits on this machine:\n%s", format_limits(limits))
            extra = {"resumed_from": checkpoint, "sandbox_limits": [
                dict(zip(("limit", "value", "enforced_by"), row, strict=True)) for row in limits]}
            write_run_info(run_dir, cfg.seed, problem_set_hash(problems), extra)
            OmegaConf.save(OmegaConf.structured(cfg), run_dir / "config.yaml", resolve=True)
        args = grpo_args(cfg, run_dir)
        if reward_weights is not None:
            args.reward_weights = reward_weights
        model, tokenizer = build.model(cfg.model, bf16=bool(args.bf16))
        run = start_tracking(cfg, run_dir)
        try:
            before = None
            if cfg.evaluation.before and is_main_process():
                before = evaluate_phase(cfg, model, tokenizer, sandbox, "before", run)
            trainer = make_trainer_class()(
                model=model,
                reward_funcs=reward_funcs,
                args=args,
                train_dataset=build_dataset(problems, cfg.problems),
                processing_class=tokenizer,
                peft_config=peft_config,
                completions_every=cfg.completions_every,
            )
            started = time.monotonic()
            result = trainer.train(resume_from_checkpoint=checkpoint)
            log.info("training took %.0f s", time.monotonic() - started)
            final = trainer.model
            if cfg.save_model:  # adapters alone with LoRA, full models in model.save_dtype
                final = save_final_model(trainer, cfg, run_dir / "final_model", is_main_process())
            history = trainer.state.log_history
            metrics = dict(result.metrics)
            # TRL's "reward" is the weighted sum of every reward function: what a sweep should maximize.
            rewards = [e["reward"] for e in history if "reward" in e]
            if rewards:
                metrics["final_reward_mean"] = rewards[-1]
            if is_main_process():
                (run_dir / "log_history.json").write_text(json.dumps(history, indent=1))
                if cfg.save_model:
                    tracking.log_model(run, cfg.logger, run_dir / "final_model", metrics)
                if cfg.plots:
                    write_plots(history, run_dir)
                if cfg.evaluation.after:
                    after = evaluate_phase(cfg, final, tokenizer, sandbox, "after", run)
                    if before is not None:
                        metrics["eval_change"] = compare_phases(cfg, before, after, run).change
                if cfg.save_model and cfg.trainer.push_to_hub:
                    push_final_model(cfg, run_dir, run_dir / "final_model")
                console.final_summary(run_dir, history, run)
            return metrics
        finally:
            tracking.finish_run(run)


def settle_failed_run(run_dir: Path, error: BaseException) -> None:
    """Remove a run dir that never reached a step and holds only what the run wrote; else mark it FAILED."""
    if not run_dir.is_dir():
        return
    entries = {p.name for p in run_dir.iterdir()}
    tables = list(run_dir.glob("completions/*.parquet"))
    if entries <= BEFORE_FIRST_STEP and not tables:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    message = str(error) or type(error).__name__
    (run_dir / "FAILED").write_text(f"{type(error).__name__}: {message}\n")
    log.error("run failed; %s says why", run_dir / "FAILED")
