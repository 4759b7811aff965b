"""Training: config -> problems -> reward -> model -> GRPOTrainer -> saved model in the run dir."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from codegrpo import tracking
from codegrpo.problems import Problem, load_problems, problem_set_hash
from codegrpo.programs import get_language
from codegrpo.prompts import build_messages
from codegrpo.reward import Scorer, make_code_reward
from codegrpo.runinfo import write_run_info
from codegrpo.sandbox import Program, SandboxBackend, SandboxFatalError, build_sandbox

log = logging.getLogger(__name__)


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


def build_scorer(cfg: DictConfig) -> tuple[list[Problem], Scorer]:
    """Problems and a Scorer over the configured sandbox, both checked before any model loads."""
    problems = load_problems(cfg.problems.path, cfg.problems.limit)
    language = get_language(cfg.problems.language)
    sandbox = build_sandbox(cfg.sandbox)
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


def train(cfg: DictConfig) -> dict[str, float]:
    """Train with GRPO and return the final metrics (for sweepers). Raises before loading the model
    if the problems, the sandbox or the credentials are wrong."""
    from trl import GRPOTrainer

    from codegrpo.models import load_model_and_tokenizer

    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    problems, scorer = build_scorer(cfg)
    write_run_info(run_dir, cfg.seed, problem_set_hash(problems))
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    args = grpo_args(cfg, run_dir)
    model, tokenizer = load_model_and_tokenizer(cfg.model, bf16=bool(args.bf16))
    run = tracking.start_run(cfg.logger, run_dir, OmegaConf.to_container(cfg, resolve=True))
    try:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=make_code_reward(scorer),
            args=args,
            train_dataset=build_dataset(problems, cfg.problems),
            processing_class=tokenizer,
        )
        result = trainer.train()
        if cfg.save_model:
            trainer.save_model(str(run_dir / "final_model"))
        history = trainer.state.log_history
        (run_dir / "log_history.json").write_text(json.dumps(history, indent=1))
        metrics = dict(result.metrics)
        rewards = [e["rewards/code_reward/mean"] for e in history if "rewards/code_reward/mean" in e]
        if rewards:
            metrics["final_reward_mean"] = rewards[-1]
        log.info("Run dir: %s", run_dir)
        return metrics
    finally:
        tracking.finish_run(run)
        asyncio.run(scorer.sandbox.aclose())
