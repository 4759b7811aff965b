"""Evaluate a model: pass@1 and pass@k (the unbiased estimator) on an eval problem set, in the sandbox,
and compare two evaluations with a paired bootstrap over problems.

    python -m codegrpo.evaluate                                   # the default model on HumanEval
    python -m codegrpo.evaluate checkpoint=outputs/runs/<run>/final_model evaluation.limit=20
    python -m codegrpo.evaluate evaluation.num_samples=10 'evaluation.k=[1,5,10]' evaluation.temperature=0.8
    python -m codegrpo.evaluate problems=trivial evaluation.split=eval evaluation.num_samples=8 \
        'compare=[base,outputs/runs/<run>/final_model]'               # two checkpoints, evaluated alike
    python -m codegrpo.evaluate 'compare=[<run>/eval_before.json,<run>/eval_after.json]'   # two eval files

Results go to eval.json (or eval_a.json, eval_b.json and comparison.json, comparison.png) in the run dir,
and to W&B with logger=wandb.
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
from codegrpo.cli import CONFIG_DIR, UsageError, run_friendly
from codegrpo.config import register_configs
from codegrpo.explain import explain
from codegrpo.problems import Problem, load_problem_set, load_problems, select_split
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


def usable_cpus() -> int:
    """CPUs this process may really use: its affinity mask, capped by a cgroup v2 CPU quota (containers
    often report the host's cores while allowing two)."""
    import os

    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            count = min(count, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def set_torch_threads() -> int:
    """One intra-op thread per usable CPU: more oversubscribes the cores and slows decoding several-fold."""
    import torch

    threads = usable_cpus()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def generate(model, tokenizer, messages: list[list[dict]], settings: DictConfig) -> list[list[str]]:
    """num_samples completions for each chat prompt: batched generate() with the KV cache, every prompt's
    samples in one batch, left padding. Seeded, so two models are evaluated on the same random stream."""
    import torch

    set_torch_threads()
    torch.manual_seed(settings.get("seed", 0))
    was_training = model.training
    model.eval()
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
                                    num_return_sequences=settings.num_samples, use_cache=True,
                                    pad_token_id=tokenizer.pad_token_id, **sampling)
        decoded = tokenizer.batch_decode(tokens[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        n = settings.num_samples
        outputs += [decoded[i * n : (i + 1) * n] for i in range(len(batch))]
        print(f"generated {min(start + len(batch), len(messages))}/{len(messages)} problems", file=sys.stderr)
    model.train(was_training)
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
    # Every sample with why it scored what it did: problem, status, reason, the code's first lines.
    results["samples"] = [explain(s) for s in scored]
    return results


def compare(before: dict[str, Any], after: dict[str, Any], resamples: int = 10000, seed: int = 0) -> dict[str, Any]:
    """The change in pass@1 from `before` to `after` (two evaluate_model results) with a 95% paired
    bootstrap interval: problems are resampled, each keeping its own before and after, so the interval
    reflects which problems improved rather than treating the two runs as independent."""
    ids = [pid for pid in before["per_problem"] if pid in after["per_problem"]]
    if not ids:
        raise ValueError("the two evaluations share no problem ids")
    n_before, n_after = before["num_samples"], after["num_samples"]
    b = np.array([before["per_problem"][pid] / n_before for pid in ids])
    a = np.array([after["per_problem"][pid] / n_after for pid in ids])
    diffs = a - b
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(ids), size=(resamples, len(ids)))].mean(axis=1)
    low, high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    return {
        "pass@1_before": float(b.mean()),
        "pass@1_after": float(a.mean()),
        "change": float(diffs.mean()),
        "ci95": [low, high],
        "excludes_zero": bool(low > 0 or high < 0),
        "num_problems": len(ids),
        "num_samples": [n_before, n_after],
        "improved": int((diffs > 0).sum()),
        "worse": int((diffs < 0).sum()),
        "per_problem": {pid: {"before": float(x), "after": float(y), "diff": float(y - x)}
                        for pid, x, y in zip(ids, b, a, strict=True)},
    }


def comparison_summary(comparison: dict[str, Any]) -> str:
    low, high = comparison["ci95"]
    return (f"pass@1 {comparison['pass@1_before']:.3f} -> {comparison['pass@1_after']:.3f}, change "
            f"{comparison['change']:+.3f} [95% CI {low:+.3f}, {high:+.3f}] over {comparison['num_problems']} "
            f"problems ({comparison['improved']} better, {comparison['worse']} worse)")


def write_comparison(comparison: dict[str, Any], run_dir: Path, run=None) -> None:
    """comparison.json and comparison.png in the run dir; the numbers to W&B when a run is given."""
    from codegrpo.plots import write_comparison_plot

    (run_dir / "comparison.json").write_text(json.dumps(comparison, indent=2))
    write_comparison_plot(comparison, run_dir / "comparison.png")
    if run is not None:
        low, high = comparison["ci95"]
        run.log({"eval_compare/pass@1_before": comparison["pass@1_before"],
                 "eval_compare/pass@1_after": comparison["pass@1_after"],
                 "eval_compare/change": comparison["change"],
                 "eval_compare/ci95_low": low, "eval_compare/ci95_high": high})
        run.summary["eval_compare/excludes_zero"] = comparison["excludes_zero"]


def eval_problems(cfg: DictConfig) -> list[Problem]:
    """evaluation.problems_path, or by default the training problem set's `evaluation.split` (its
    held-out eval split), then evaluation.limit."""
    settings = cfg.evaluation
    if settings.problems_path:
        problems = select_split(load_problems(settings.problems_path), settings.split, cfg.problems.eval_fraction)
    else:
        problems_cfg = OmegaConf.merge(cfg.problems, {"split": settings.split, "limit": None})
        problems = load_problem_set(problems_cfg)
        if settings.split != "all" and cfg.problems.split in ("all", settings.split):
            log.warning("the eval problems (split %s) overlap the training problems (problems.split=%s): "
                        "set problems.split=train for a held-out evaluation", settings.split, cfg.problems.split)
    return problems[: settings.limit]


def build_eval_scorer(cfg: DictConfig, sandbox) -> tuple[list[Problem], Scorer]:
    from codegrpo.programs import get_language

    problems = eval_problems(cfg)
    scorer = Scorer(problems, sandbox, get_language(cfg.problems.language), "binary", cfg.reward.extract,
                    cfg.sandbox.timeout_s)
    return problems, scorer


def _evaluate_checkpoint(cfg: DictConfig, checkpoint: str | None, scorer: Scorer, problems: list[Problem]):
    from codegrpo.models import load_model_and_tokenizer

    model_cfg = cfg.model
    if checkpoint and checkpoint != "base":
        model_cfg = OmegaConf.merge(model_cfg, {"name_or_path": checkpoint, "gguf_package": ""})
    model, tokenizer = load_model_and_tokenizer(model_cfg)
    return evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation)


def evaluate(cfg: DictConfig) -> dict[str, Any]:
    from codegrpo.sandbox import build_sandbox
    from codegrpo.train import check_sandbox

    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.compare:
        return evaluate_compare(cfg, run_dir)
    sandbox = build_sandbox(cfg.sandbox)
    check_sandbox(sandbox, cfg.problems.language)
    problems, scorer = build_eval_scorer(cfg, sandbox)
    results = _evaluate_checkpoint(cfg, cfg.checkpoint, scorer, problems)
    (run_dir / "eval.json").write_text(json.dumps(results, indent=2))
    run = tracking.start_run(cfg.logger, run_dir, OmegaConf.to_container(cfg, resolve=True), job_type="eval")
    if run is not None:
        run.log({f"eval/{k}": v for k, v in results.items() if k.startswith("pass@")})
    tracking.finish_run(run)
    summary = ", ".join(f"{k} {v:.3f}" for k, v in results.items() if k.startswith("pass@"))
    print(f"{summary} on {len(problems)} problems; results in {run_dir / 'eval.json'}")
    return results


def evaluate_compare(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """compare=[a,b]: each an eval JSON file (used as is) or a checkpoint dir / `base` (evaluated here,
    on the same problems and seed); then the paired comparison of b against a."""
    if len(cfg.compare) != 2:
        raise UsageError(f"compare takes two eval files or checkpoints, got {len(cfg.compare)}")
    evaluations = []
    scorer = problems = None
    for label, item in zip("ab", cfg.compare, strict=True):
        if str(item).endswith(".json"):
            if not Path(item).is_file():
                raise UsageError(f"compare: no such eval file {item}")
            results = json.loads(Path(item).read_text())
        else:
            if scorer is None:
                from codegrpo.sandbox import build_sandbox
                from codegrpo.train import check_sandbox

                sandbox = build_sandbox(cfg.sandbox)
                check_sandbox(sandbox, cfg.problems.language)
                problems, scorer = build_eval_scorer(cfg, sandbox)
            results = _evaluate_checkpoint(cfg, item, scorer, problems)
        (run_dir / f"eval_{label}.json").write_text(json.dumps(results, indent=2))
        evaluations.append(results)
    comparison = compare(*evaluations, cfg.evaluation.bootstrap, cfg.seed)
    comparison["compared"] = list(cfg.compare)
    run = tracking.start_run(cfg.logger, run_dir, OmegaConf.to_container(cfg, resolve=True), job_type="eval")
    write_comparison(comparison, run_dir, run)
    tracking.finish_run(run)
    print(f"{comparison_summary(comparison)}; results in {run_dir / 'comparison.json'}")
    return comparison


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run_friendly(lambda: evaluate(cfg))


if __name__ == "__main__":
    register_configs()
    main()
