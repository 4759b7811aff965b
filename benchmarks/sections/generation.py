"""e. generation: tokens/s of evaluation's batched generation (codegrpo.evaluation.evaluator.generate) vs model.generate
called directly on the same batch, the offline model; `--only generation` prints TRL's training generation after it
(training_generation.py)."""

from __future__ import annotations

import argparse
import sys

from benchmarks.common import Row, offline_model, timed
from codegrpo.data.files import load_problems

TITLE = "e. batched generation (tokens/s)"


def bench_generation(prompts: int = 8, samples: int = 8, new_tokens: int = 64, rounds: int = 2) -> list[Row]:
    """Decoding throughput of the evaluation path vs a bare model.generate on the same tokenized batch,
    alternated so machine load hits both alike; best of the rounds."""
    import torch

    from codegrpo.config.evaluation import EvaluationConfig
    from codegrpo.config.problem_set import ProblemsConfig
    from codegrpo.data.prompts import build_messages
    from codegrpo.evaluation.evaluator import generate, set_torch_threads
    from codegrpo.models.loading import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(offline_model())
    problems_cfg = ProblemsConfig(name="trivial", path="problems/trivial.jsonl")
    messages = [
        build_messages(p, problems_cfg.prompt_template, problems_cfg.humaneval_template)
        for p in load_problems(problems_cfg.path)[:prompts]
    ]
    # The typed config, so a field evaluation gains (top_p did) has its default here too.
    settings = EvaluationConfig(
        num_samples=samples, temperature=0.7, max_new_tokens=new_tokens, batch_size=prompts, seed=0
    )
    threads = set_torch_threads()

    def ours() -> int:
        outputs = generate(model, tokenizer, messages, settings)
        return sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for group in outputs for text in group)

    def direct() -> int:
        tokenizer.padding_side = "left"
        texts = [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(0)
        with torch.inference_mode():
            tokens = model.generate(
                **inputs,
                max_new_tokens=new_tokens,
                num_return_sequences=samples,
                do_sample=True,
                temperature=0.7,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = tokens[:, inputs["input_ids"].shape[1] :]
        return int((new != tokenizer.pad_token_id).sum())

    best = {"ours": 0.0, "direct": 0.0}
    for round_ in range(rounds):
        for name, function in (("ours", ours), ("direct", direct)):
            seconds, count = timed(function)
            best[name] = max(best[name], count / seconds)
            print(f"[generation] round {round_ + 1}: {name} {count} tokens in {seconds:.1f} s", file=sys.stderr)
    batch = f"{prompts} prompts x {samples} samples, {new_tokens} new tokens, {threads} torch threads"
    return [
        ("codegrpo.evaluation.evaluator.generate tokens/s, best of rounds", best["ours"], batch),
        ("model.generate directly tokens/s, best of rounds", best["direct"], "the same batch"),
        ("ratio ours / direct", best["ours"] / best["direct"], "target >= 0.95"),
    ]


def run(args: argparse.Namespace) -> list[Row]:
    return bench_generation()
