"""Evaluation: pass@1 and pass@k (the unbiased estimator) of a model on a problem set, scored in the
sandbox, and the paired bootstrap comparison of two evaluations. The evaluate command and training's
before/after evaluations both run this.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from codegrpo.config import EvaluationConfig, ProblemsConfig
from codegrpo.explain import explain
from codegrpo.problems import Problem
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


def set_torch_threads() -> int:
    """One intra-op thread per usable CPU: more oversubscribes the cores and slows decoding several-fold."""
    import torch

    from codegrpo.sandbox.cgroups import usable_cores  # affinity and cgroup quota: containers report the host's

    threads = usable_cores()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def generate(model, tokenizer, messages: list[list[dict]], settings: EvaluationConfig) -> list[list[str]]:
    """num_samples completions for each chat prompt: batched generate() with the KV cache, every prompt's
    samples in one batch, left padding. Seeded, so two models are evaluated on the same random stream."""
    import torch

    set_torch_threads()
    torch.manual_seed(settings.seed)
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


def evaluate_model(model, tokenizer, scorer: Scorer, problems: list[Problem], problems_cfg: ProblemsConfig,
                   settings: EvaluationConfig) -> dict[str, Any]:
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
