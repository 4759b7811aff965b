"""A tiny random model with the offline model's tokenizer and chat template, made once per machine beside the
offline model's conversion, under a lock as the conversion is (pytest-xdist workers and torchrun ranks share it).

The tests of mechanics (steps, checkpoints, resume, signals, timing, records, samplers, recipes' settings) train
it at a fraction of a second a step, where the 135M model takes 3-15 s on two busy cores. What only a real model
shows (it learns, bf16 master weights, the README's scripts, one end-to-end run, evaluation) keeps the real one."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from codegrpo.models.conversion import offline_model

# Two layers of width 32 (the offline model's vocabulary holds most of its 1.6M weights): every code path of a
# Llama model, little of its cost. Random weights rarely end a completion: completions run to their limit.
SHAPE = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
}


def tiny_model() -> Path:
    """The tiny model's directory (a plain checkpoint from_pretrained reads), made on first use."""
    source = Path(offline_model())
    target = source.with_name(f"{source.name}-tiny-random")
    if (target / "config.json").is_file():
        return target
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "config.json").is_file():
            _make(source, target)
    return target


def tiny_model_overrides() -> list[str]:
    """The overrides that train the tiny model in place of the offline one."""
    return [f"model.name_or_path={tiny_model()}", "model.gguf_package=", "model.gguf_file="]


def _make(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(source)
    config.update(SHAPE)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    AutoTokenizer.from_pretrained(source).save_pretrained(staging)
    staging.replace(target)  # atomic: a reader sees no model or a whole one
