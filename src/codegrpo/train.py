"""Training: config -> problems -> reward -> model -> GRPOTrainer -> saved model in the run dir."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from codegrpo import tracking
from codegrpo.cli import UsageError
from codegrpo.problems import Problem, load_problem_set, problem_set_hash
from codegrpo.programs import get_language
from codegrpo.prompts import build_messages
from codegrpo.reward import Scorer, make_code_reward
from codegrpo.runinfo import write_run_info
from codegrpo.sandbox import Program, SandboxBackend, SandboxFatalError, build_sandbox

log = logging.getLogger(__name__)
WANDB_ID_FILE = "wandb_run_id.txt"


def build_dataset(problems: list[Problem], cfg: DictConfig):
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


def check_sandbox(sandbox: SandboxBackend, language_name: str) -> None:
    """Run one trivial program so a broken sandbox fails now, not after the model has loaded."""
    language = get_language(language_name)
    source = "print(6 * 7)" if language.name == "python" else "console.log(6 * 7)"
    [result] = asyncio.run(sandbox.run_many([Program(source, language.filename, language.command, 30.0)]))
    if result.exit_code != 0 or result.stdout.strip() != "42":
        raise SandboxFatalError(
            f"the {language.name} sandbox cannot run a trivial program: {result.outcome.value}, "
            f"exit {result.exit_code}, {(result.error or result.stderr).strip()[-800:]}"
        )


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def build_scorer(cfg: DictConfig) -> tuple[list[Problem], Scorer]:
    """Problems and a Scorer over the configured sandbox, both checked before any model loads.

    Under a distributed launch every rank scores its own completions, so each gets its share of the cap.
    """
    problems = load_problem_set(cfg.problems)
    language = get_language(cfg.problems.language)
    sandbox_cfg = cfg.sandbox.copy()
    with open_dict(sandbox_cfg):
        sandbox_cfg.max_concurrency = max(1, cfg.sandbox.max_concurrency // world_size())
    sandbox = build_sandbox(sandbox_cfg)
    check_sandbox(sandbox, language.name)
    scorer = Scorer(problems, sandbox, language, cfg.reward.kind, cfg.reward.extract, cfg.sandbox.timeout_s)
    return problems, scorer


def grpo_args(cfg: DictConfig, run_dir: Path):
    from trl import GRPOConfig

    args: dict[str, Any] = OmegaConf.to_container(cfg.trainer, resolve=True)
    report_to = args.get("report_to") or []
    report_to = [report_to] if isinstance(report_to, str) else list(report_to)
    report_to = [r for r in report_to if r != "none"]
    if cfg.logger.backend == "wandb" and "wandb" not in report_to:
        report_to.append("wandb")
    args["report_to"] = report_to or "none"
    return GRPOConfig(output_dir=str(run_dir), seed=cfg.seed, **args)


def resume_checkpoint(cfg: DictConfig, run_dir: Path) -> str | None:
    """resume=auto: the newest checkpoint-N in the run dir (None: start fresh); else the given path."""
    if not cfg.resume:
        return None
    if cfg.resume != "auto":
        if not Path(cfg.resume).is_dir():
            raise UsageError(f"resume={cfg.resume}: no such checkpoint directory (or use resume=auto)")
        return cfg.resume
    checkpoints = sorted(run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.rpartition("-")[2]))
    return str(checkpoints[-1]) if checkpoints else None


def sweep_identity(cfg: DictConfig) -> tuple[str | None, str | None]:
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


def start_tracking(cfg: DictConfig, run_dir: Path):
    """Only rank 0 logs; a resumed run continues the same W&B run."""
    if not is_main_process():
        return None
    id_file = run_dir / WANDB_ID_FILE
    run_id = id_file.read_text().strip() if cfg.resume and id_file.is_file() else None
    logger_cfg = cfg.logger.copy()
    with open_dict(logger_cfg):
        logger_cfg.group, logger_cfg.name = sweep_identity(cfg)
    run = tracking.start_run(logger_cfg, run_dir, OmegaConf.to_container(cfg, resolve=True), run_id)
    if run is not None:
        id_file.write_text(run.id)
    return run


def evaluate_phase(cfg: DictConfig, model, tokenizer, sandbox: SandboxBackend, phase: str, run) -> None:
    from codegrpo.evaluate import build_eval_scorer, evaluate_model

    problems, scorer = build_eval_scorer(cfg, sandbox)
    results = evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)
    Path(cfg.run_dir, f"eval_{phase}.json").write_text(json.dumps(results, indent=2))
    log.info("eval %s: %s", phase, {k: v for k, v in results.items() if k.startswith("pass@")})
    if run is not None:
        run.log({f"eval_{phase}/{k}": v for k, v in results.items() if k.startswith("pass@")})


def train(cfg: DictConfig) -> dict[str, float]:
    """Train with GRPO and return the final metrics (for sweepers). Raises before loading the model
    if the problems, the sandbox or the credentials are wrong."""
    from trl import GRPOTrainer

    from codegrpo.models import load_model_and_tokenizer
    from codegrpo.plots import write_plots

    if world_size() > 1 and not os.environ.get("CODEGRPO_RUN_DIR"):
        raise UsageError(
            "a distributed launch needs one run dir for every rank: set CODEGRPO_RUN_DIR, e.g. "
            "CODEGRPO_RUN_DIR=outputs/runs/$(date +%F_%H-%M-%S) accelerate launch ... train.py"
        )
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    problems, scorer = build_scorer(cfg)
    checkpoint = resume_checkpoint(cfg, run_dir)
    if is_main_process():
        write_run_info(run_dir, cfg.seed, problem_set_hash(problems), {"resumed_from": checkpoint})
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    args = grpo_args(cfg, run_dir)
    model, tokenizer = load_model_and_tokenizer(cfg.model, bf16=bool(args.bf16))
    run = start_tracking(cfg, run_dir)
    try:
        if cfg.evaluation.before and is_main_process():
            evaluate_phase(cfg, model, tokenizer, scorer.sandbox, "before", run)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=make_code_reward(scorer),
            args=args,
            train_dataset=build_dataset(problems, cfg.problems),
            processing_class=tokenizer,
        )
        result = trainer.train(resume_from_checkpoint=checkpoint)
        if cfg.save_model:
            trainer.save_model(str(run_dir / "final_model"))
        history = trainer.state.log_history
        metrics = dict(result.metrics)
        rewards = [e["rewards/code_reward/mean"] for e in history if "rewards/code_reward/mean" in e]
        if rewards:
            metrics["final_reward_mean"] = rewards[-1]
        if is_main_process():
            (run_dir / "log_history.json").write_text(json.dumps(history, indent=1))
            if cfg.plots:
                write_plots(history, run_dir)
            if cfg.evaluation.after:
                evaluate_phase(cfg, trainer.model, tokenizer, scorer.sandbox, "after", run)
        log.info("Run dir: %s", run_dir)
        return metrics
    finally:
        tracking.finish_run(run)
        asyncio.run(scorer.sandbox.aclose())
