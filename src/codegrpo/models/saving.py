"""The final model on disk: its save dtype, the cast of the saved weights, the warning when rounding would
erase a short run's update, and the trainer's final save (an adapter or full weights)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from codegrpo.config.choices import SaveDtype
from codegrpo.config.model import ModelConfig
from codegrpo.errors import UsageError
from codegrpo.reward.metric_names import RELATIVE_NORM

log = logging.getLogger(__name__)
ADAPTER_CONFIG = "adapter_config.json"


def check_save_dtype(cfg: ModelConfig) -> None:
    """Hydra checks the choice at compose time; a config built in a script is checked here."""
    if cfg.save_dtype not in set(SaveDtype):
        raise UsageError(f"model.save_dtype must be one of {', '.join(SaveDtype)}, not {cfg.save_dtype!r}")


def cast_saved_weights(model_dir: Path, dtype_name: str) -> None:
    """Rewrite a saved full model's floating-point weights in `dtype_name` (and say so in config.json).
    After the trainer's own save, so every backend (DeepSpeed, FSDP) has already gathered the weights."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    dtype = getattr(torch, dtype_name)
    files = [f for f in sorted(model_dir.glob("*.safetensors")) if not f.name.startswith("adapter_")]
    sizes = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            metadata = handle.metadata() or {"format": "pt"}
            tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118 (safe_open is not a dict)
        tensors = {k: v.to(dtype) if v.is_floating_point() else v for k, v in tensors.items()}
        save_file(tensors, str(file), metadata=metadata)
        sizes.update({k: v.numel() * v.element_size() for k, v in tensors.items()})
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():  # sharded: keep the index's total size true
        data = json.loads(index.read_text())
        data.setdefault("metadata", {})["total_size"] = sum(sizes.values())
        index.write_text(json.dumps(data, indent=2))
    config = model_dir / "config.json"
    if config.is_file():
        data = json.loads(config.read_text())
        data["dtype"] = dtype_name
        data.pop("torch_dtype", None)
        config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


# Rounding a weight to a 7-bit (bf16) or 10-bit (fp16) mantissa errs by up to half a spacing, 2**-8 or
# 2**-11 of its size; the root mean square over weights is about 2**-8.5 / sqrt(3) (2**-11.5 / sqrt(3)).
MAX_ROUNDING = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
RMS_ROUNDING = {"bfloat16": 2.0**-8.5 / 3**0.5, "float16": 2.0**-11.5 / 3**0.5}


def rounding_warning(history: list[dict[str, Any]], dtype_name: str) -> str | None:
    """A warning when the whole run moved the weights less than saving in `dtype_name` rounds them: the
    saved model then differs from the trained one by more than training changed it (at the CPU defaults,
    lr 1e-6 for 8 steps, it does). Uses the per-step ||delta theta|| / ||theta|| the trainer logs."""
    rms = RMS_ROUNDING.get(dtype_name)
    # The sum of the per-step relative norms bounds the whole run's ||delta theta|| / ||theta||.
    total = sum(row.get(RELATIVE_NORM, 0.0) for row in history)
    if rms is None or not total or total >= rms:
        return None
    return (
        f"final_model is saved in {dtype_name} (model.save_dtype), which rounds each weight by up to "
        f"{MAX_ROUNDING[dtype_name]:.1e} of its size ({rms:.1e} in norm), more than this run's whole update "
        f"(at most {total:.1e} in norm): the saved weights differ from the trained ones by more than training "
        "moved them. The after-training evaluation used the trained weights; to keep them on disk, set "
        "model.save_dtype=float32."
    )


def save_final_model(trainer: Any, cfg: Any, path: Path, is_main_process: bool = True) -> Any:
    """Save the trained model the way users expect and return the model to use afterwards.

    LoRA: the adapter alone (adapter_model.safetensors, a few MB), or with peft.merge_on_save the merged
    full model. Full models in model.save_dtype: by default (auto) in the dtype they trained in, so the
    file holds the trained weights bit for bit; bf16 halves the disk but may round away a short run's
    update (a warning says when). The tokenizer is saved alongside either way. Every rank calls this (the
    trainer's save gathers sharded weights).
    """
    trainer.save_model(str(path))
    model = trainer.model
    merge = cfg.peft is not None and cfg.peft.merge_on_save
    if merge:
        # In place: the merged model computes what base + adapter computed, so it serves the after-eval too.
        model = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()
        if is_main_process:
            for name in (ADAPTER_CONFIG, "adapter_model.safetensors"):
                (path / name).unlink(missing_ok=True)
            model.save_pretrained(str(path))
    trained = str(trainer.accelerator.unwrap_model(model).dtype).removeprefix("torch.")
    if is_main_process and (cfg.peft is None or merge) and cfg.model.save_dtype not in ("auto", trained):
        cast_saved_weights(path, cfg.model.save_dtype)
        # relative_norm is of the trainable weights: for a merged adapter it says nothing about the base's.
        warning = cfg.peft is None and rounding_warning(trainer.state.log_history, cfg.model.save_dtype)
        if warning:
            log.warning(warning)
    return model
