"""Loading a model: resolve the configured one (a Hub id, a local dir, or the offline GGUF package) and load it,
with its LoRA adapter when the run trains one."""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo.config.choices import Dtype
from codegrpo.config.model import ModelConfig
from codegrpo.config.runs import saved_dir
from codegrpo.config.trainer import LoraSchema
from codegrpo.errors import ModelNotFoundError, UsageError
from codegrpo.models.chat_templates import apply_chat_template_choice
from codegrpo.models.conversion import convert_gguf
from codegrpo.models.saving import ADAPTER_CONFIG

if TYPE_CHECKING:  # imported where used: the commands that load no model must not pay for torch
    import torch
    from peft import LoraConfig
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


class ModelSource(enum.Enum):
    hub = "hub"  # a Hub id, downloaded or cached
    local = "local"  # a directory: a run's final_model or checkpoint, or a download
    gguf = "gguf"  # the offline model: a GGUF file inside a Python package, converted once


@dataclass(frozen=True)
class ModelChoice:
    """The model a config names: where it comes from, and its Hub id, directory or package file."""

    source: ModelSource
    name: str


# A Hub id: "name" or "owner/name" (huggingface_hub's rule); anything else is a path.
_HUB_ID = re.compile(r"[A-Za-z0-9_][\w.-]{0,95}(/[A-Za-z0-9_][\w.-]{0,95})?")


def model_choice(cfg: ModelConfig) -> ModelChoice:
    """The model to load. ``model.name_or_path``, when set, is it, on any model group: the offline GGUF
    package is the model only when no other is named. A name that is a path (or no Hub id) must be a
    directory. Raises ModelNotFoundError in one line, before anything loads."""
    name = cfg.name_or_path
    if name:
        local = Path(name).expanduser()
        if local.exists() or not _HUB_ID.fullmatch(name) or name.startswith((".", "~")):
            if not local.is_dir():
                what = "is not a directory" if local.exists() else "does not exist"
                raise ModelNotFoundError(
                    f"model.name_or_path={name}: {local.absolute()} {what}; name a directory "
                    "holding a model (a run's final_model or checkpoint-N) or a Hub id "
                    "(owner/name)"
                )
            return ModelChoice(ModelSource.local, str(local))
        return ModelChoice(ModelSource.hub, name)
    if cfg.gguf_package:
        return ModelChoice(ModelSource.gguf, f"{cfg.gguf_package}/{cfg.gguf_file}")
    raise ModelNotFoundError("set model.name_or_path (a Hub id or a local directory) or model.gguf_package")


def check_model(cfg: ModelConfig) -> None:
    """The model a config names is one (model_choice; a directory holds a model): one line, before a run
    starts. A Hub id is models.hub.check_hub_model's to check."""
    choice = model_choice(cfg)
    if choice.source is ModelSource.local:
        _check_holds_model(choice.name)


def check_checkpoint(checkpoint: str | None) -> None:
    """``checkpoint=`` names a model dir (or "base", the model group's): one line if it is missing."""
    if (saved := saved_dir(checkpoint)) is not None:
        try:
            model_choice(ModelConfig(name_or_path=saved))
        except ModelNotFoundError as error:
            raise UsageError(str(error).replace("model.name_or_path=", "checkpoint=", 1)) from None


def _check_holds_model(path: str) -> None:
    local = Path(path).expanduser()
    if local.is_dir() and not (local / "config.json").is_file() and not is_adapter_dir(path):
        # transformers would fail on the tokenizer with a ValueError about sentencepiece.
        raise ModelNotFoundError(
            f"{local.absolute()} holds no model (no config.json or {ADAPTER_CONFIG}): name a "
            "run's final_model or checkpoint-N directory, or a Hub id"
        )


def resolve_model(cfg: ModelConfig) -> str:
    """What to pass to from_pretrained: a local dir, a Hub id, or the converted GGUF dir (``model_choice``)."""
    choice = model_choice(cfg)
    return str(convert_gguf(cfg)) if choice.source is ModelSource.gguf else choice.name


def describe_model(cfg: ModelConfig, model: Any) -> dict[str, Any]:
    """What loaded, for train.log and run_info.json: the model named (Hub id, directory or package file),
    its revision (the Hub commit, or the package's version), dtype and parameter count."""
    choice = model_choice(cfg)
    revision = getattr(getattr(model, "config", None), "_commit_hash", None)
    if choice.source is ModelSource.gguf:
        try:
            revision = f"{cfg.gguf_package} {metadata.version(cfg.gguf_package.replace('_', '-'))}"
        except metadata.PackageNotFoundError:
            revision = None
    if hasattr(model, "parameters"):
        parameters: int | None = sum(p.numel() for p in model.parameters())
        dtype = str(next(model.parameters()).dtype)
    else:  # in vLLM's engine (evaluation.backend=vllm): the checkpoint's dtype; the weights are the engine's
        parameters = None
        dtype = str(getattr(model.config, "dtype", None) or getattr(model.config, "torch_dtype", ""))
    return {
        "name_or_path": choice.name,
        "source": choice.source.value,
        "revision": revision,
        "dtype": dtype.removeprefix("torch."),
        "parameters": parameters,
    }


def context_length(model: Any) -> int | None:
    """The most tokens a model reads, prompt and completion together (its text config's
    ``max_position_embeddings``); None where its config does not say."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    return limit if isinstance(limit, int) else None


def load_dtype(cfg: ModelConfig) -> torch.dtype:
    """The dtype the weights are loaded in. `auto` is float32 whatever the trainer's precision: under
    bf16/fp16 training the trainable weights and AdamW's state must stay fp32 (autocast computes in
    bf16), or most small updates round away (at lr 1e-6, bf16 weights barely move). Pure reduced-precision
    weights only when asked for by name (model.dtype=bfloat16); DeepSpeed ZeRO keeps fp32 masters itself."""
    import torch

    return torch.float32 if cfg.dtype is Dtype.auto else getattr(torch, cfg.dtype)


def load_model_and_tokenizer(
    cfg: ModelConfig, bf16: bool = False, tools: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the model and its tokenizer, with model.chat_template's template (one for tool calls where ``tools``
    needs it). Weights are float32 unless model.dtype names another dtype, also when the trainer trains in bf16
    (`bf16` is accepted for callers, and logged): see load_dtype."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(cfg)
    dtype = load_dtype(cfg)
    from huggingface_hub.errors import HFValidationError

    if bf16 and cfg.dtype is Dtype.auto:
        log.info("Mixed precision: fp32 weights and optimizer state, bf16 autocast for compute")
    _check_holds_model(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=cfg.trust_remote_code)
        if is_adapter_dir(path):  # a LoRA run's final_model: the adapter and its tokenizer
            model = load_adapter_model(path, dtype, cfg.trust_remote_code)
        else:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=cfg.trust_remote_code)
    except (OSError, HFValidationError) as error:
        why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelNotFoundError(
            f"cannot load model {path!r}: {why}; Hub models need network access or a warm Hugging Face cache "
            "(HF_HUB_OFFLINE=1 with the files already downloaded); the offline default is model=smollm2-135m"
        ) from error
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer = apply_chat_template_choice(tokenizer, cfg.chat_template, tools)
    loaded = describe_model(cfg, model)
    log.info(
        "model: %s (%s, revision %s, %s, %.1fM parameters)",
        loaded["name_or_path"],
        loaded["source"],
        loaded["revision"] or "unknown",
        loaded["dtype"],
        loaded["parameters"] / 1e6,
    )
    return model, tokenizer


# --- LoRA (peft) and saving the final model ---------------------------------------------------------


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
        bias=cfg.bias,  # type: ignore[arg-type]  # peft's Literal; the schema's string is one of its values
        task_type="CAUSAL_LM",
    )


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
