"""Evaluating a model: sample completions for a problem set, score them in the sandbox, and report pass@1
and pass@k (results.py). The evaluate command and training's before/after evaluations both run this; the
paired comparison of two evaluations is compare.py."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import Counter

import numpy as np

from codegrpo.config.schema import EvaluationConfig, ProblemsConfig
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import messages_for
from codegrpo.evaluation.results import Evaluation, pass_at_k
from codegrpo.reward.explain import explain
from codegrpo.reward.scorer import Scorer

log = logging.getLogger(__name__)


def set_torch_threads() -> int:
    """One intra-op thread per usable CPU: more oversubscribes the cores and slows decoding several-fold."""
    import torch

    from codegrpo.config.cgroupfs import usable_cores  # affinity and cgroup quota: containers report the host's

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
                   settings: EvaluationConfig) -> Evaluation:
    """Generate, score in the sandbox, and return pass@k for each k, status counts and every sample."""
    started = time.monotonic()
    messages = [messages_for(p, problems_cfg) for p in problems]
    samples = generate(model, tokenizer, messages, settings)
    ids = [p.id for p, group in zip(problems, samples, strict=True) for _ in group]
    flat = [text for group in samples for text in group]
    scored = asyncio.run(scorer.score(ids, flat))
    n = settings.num_samples
    correct = [sum(s.verdict.reward == 1.0 for s in scored[i * n : (i + 1) * n]) for i in range(len(problems))]
    return Evaluation(
        pass_at={k: float(np.mean([pass_at_k(n, c, k) for c in correct])) for k in settings.k},
        num_problems=len(problems),
        num_samples=n,
        status_counts=dict(Counter(s.verdict.status.value for s in scored)),
        per_problem={p.id: c for p, c in zip(problems, correct, strict=True)},
        # Every sample with why it scored what it did: problem, status, reason, the code's first lines.
        samples=[explain(s) for s in scored],
        wall_s=time.monotonic() - started,
    )


