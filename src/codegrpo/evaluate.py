"""Evaluate a model: pass@1 and pass@k (the unbiased estimator) on an eval problem set, in the sandbox.

    python -m codegrpo.evaluate                                   # the default model on HumanEval
    python -m codegrpo.evaluate checkpoint=outputs/runs/<run>/final_model evaluation.limit=20
    python -m codegrpo.evaluate evaluation.num_samples=10 'evaluation.k=[1,5,10]' evaluation.temperature=0.8

Results go to eval.json in the run dir (and to W&B with logger=wandb).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf

from codegrpo import tracking
from codegrpo.cli import CONFIG_DIR, run_friendly
from codegrpo.config import register_configs
from codegrpo.problems import Problem, load_problems, select_split
from codegrpo.prompts import build_messages
from codegrpo.reward import Scorer

log = logging.getLogger(__name__)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al., 2021): 1 - C(n-c, k) / C(n, k), computed stably."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def generate(model, tokenizer, messages: list[list[dict]], settings: DictConfig) -> list[list[str]]:
    """num_samples completions for each chat prompt, batched."""
    import torch

    tokenizer.padding_side = "left"
    sampling = {"do_sample": True, "temperature": settings.temperature} if settings.temperature > 0 else {
        "do_sample": False}
    outputs: list[list[str]] = []
    for start in range(0, len(messages), settings.batch_size):
        batch = messages[start : start + settings.batch_size]
        texts = [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in batch]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.inference_mode():
            tokens = model.generate(**inputs, max_new_tokens=settings.max_new_tokens,
                                    num_return_sequences=settings.num_samples,
                                    pad_token_id=tokenizer.pad_token_id, **sampling)
        decoded = tokenizer.batch_decode(tokens[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        n = settings.num_samples
        outputs += [decoded[i * n : (i + 1) * n] for i in range(len(batch))]
        print(f"generated {min(start + len(batch), len(messages))}/{len(messages)} problems", file=sys.stderr)
    return outputs


def evaluate_model(model, tokenizer, scorer: Scorer, problems: list[Problem], problems_cfg: DictConfig,
                   settings: DictConfig) -> dict[str, Any]:
    """Generate, score in the sandbox, and return pass@k for each k plus status counts."""
    messages = [build_messages(p, problems_cfg.prompt_template, problems_cfg.humaneval_template,
                               problems_cfg.system_prompt) for p in problems]
    samples = generate(model, tokenizer, messages, settings)
    ids = [p.id for p, group in zip(problems, samples, strict=True) for _ in group]
    flat = [text for group in samples for text in group]
    scored = asyncio.run(scorer.score(ids, flat))
    n = settings.num_samples
    correct = [sum(s.verdict.reward == 1.0 for s in scored[i * n : (i + 1) * n]) for i in range(len(problems))]
    results: dict[str, Any] = {
        f"pass@{k}": float(np.mean([pass_at_k(n, c, k) for c in correct])) for k in settings.k
    }
    results["num_problems"] = len(problems)
    results["num_samples"] = n
    results["status_counts"] = dict(Counter(s.verdict.status.value for s in scored))
    results["per_problem"] = {p.id: c for p, c in zip(problems, correct, strict=True)}
    return results


def build_eval_scorer(cfg: DictConfig, sandbox) -> tuple[list[Problem], Scorer]:
    from codegrpo.programs import get_language

    problems = select_split(load_problems(cfg.evaluation.problems_path), cfg.evaluation.split,
                            cfg.problems.eval_fraction)[: cfg.evaluation.limit]
    scorer = Scorer(problems, sandbox, get_language(cfg.problems.language), "binary", cfg.reward.extract,
                    cfg.sandbox.timeout_s)
    return problems, scorer


def evaluate(cfg: DictConfig) -> dict[str, Any]:
    from codegrpo.models import load_model_and_tokenizer
    from codegrpo.sandbox import build_sandbox
    from codegrpo.train import check_sandbox

    sandbox = build_sandbox(cfg.sandbox)
    check_sandbox(sandbox, cfg.problems.language)
    problems, scorer = build_eval_scorer(cfg, sandbox)
    model_cfg = cfg.model
    if cfg.checkpoint:
        model_cfg = OmegaConf.merge(model_cfg, {"name_or_path": cfg.checkpoint, "gguf_package": ""})
    model, tokenizer = load_model_and_tokenizer(model_cfg)
    results = evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "eval.json").write_text(json.dumps(results, indent=2))
    run = tracking.start_run(cfg.logger, run_dir, OmegaConf.to_container(cfg, resolve=True))
    if run is not None:
        run.log({f"eval/{k}": v for k, v in results.items() if k.startswith("pass@")})
    tracking.finish_run(run)
    summary = ", ".join(f"{k} {v:.3f}" for k, v in results.items() if k.startswith("pass@"))
    print(f"{summary} on {len(problems)} problems; results in {run_dir / 'eval.json'}")
    return results


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run_friendly(lambda: evaluate(cfg))


if __name__ == "__main__":
    register_configs()
    main()
