"""Sampling an evaluation with vLLM (evaluation.backend=vllm): the model in vLLM's engine samples each turn's
token-id prompts as ``evaluate.generate_ids`` does with transformers, each reply up to
evaluation.max_new_tokens at evaluation's temperature and top-p, ending with its end-of-turn token.

The backend changes the speed, not what is sampled: the model's own generation config (top-k, min-p,
repetition penalty), which transformers' generate() applies, is passed to vLLM too. The seed is the
engine's, one per evaluation as torch.manual_seed is for transformers: a seed per request would make a
problem's n samples one sample n times. Only codegrpo-evaluate and codegrpo-pass-rates load an engine; in
training the trained model holds the GPU (config.runs.TrainConfig refuses evaluation.backend=vllm there)."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codegrpo.errors import UsageError

if TYPE_CHECKING:
    from codegrpo.config.evaluation import EvaluationConfig
    from codegrpo.config.model import ModelConfig

VLLM_EXTRA = "pip install -e '.[vllm]' (an installed codegrpo: pip install 'codegrpo[vllm]')"

# What transformers' generate() takes from a model's generation config beyond evaluation's own settings (the
# names are vLLM's too). Greedy decoding ignores all but the repetition penalty, in both.
MODEL_SAMPLING = ("top_k", "min_p", "repetition_penalty")

Turn = Callable[[list[list[int]]], tuple[list[list[int]], None]]


@dataclass
class VllmModel:
    """A model loaded into vLLM, with the transformers configs evaluation reads of a model (its context, its
    end-of-turn tokens and its sampling defaults)."""

    llm: Any  # vllm.LLM
    path: str
    config: Any  # transformers.PretrainedConfig
    generation_config: Any  # transformers.GenerationConfig


def check_vllm() -> None:
    """UsageError in one line, before anything loads, where evaluation.backend=vllm cannot run."""
    if importlib.util.find_spec("vllm") is None:
        raise UsageError(
            f"evaluation.backend=vllm needs the vllm package, which is not installed: {VLLM_EXTRA} on the GPU "
            "machine, or evaluation.backend=transformers"
        )


def load_vllm(cfg: ModelConfig, settings: EvaluationConfig) -> tuple[VllmModel, Any]:
    """(the model in vLLM, its tokenizer) for ``cfg`` (a checkpoint is its name_or_path, as build.model sets it)."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig
    from vllm import LLM

    from codegrpo.models.loading import is_adapter_dir, resolve_model

    path = resolve_model(cfg)
    if is_adapter_dir(path):
        raise UsageError(
            f"{path} is a LoRA adapter: evaluation.backend=vllm loads whole models (save the run merged with "
            "peft.merge_on_save=true), or set evaluation.backend=transformers"
        )
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=cfg.trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = AutoConfig.from_pretrained(path, trust_remote_code=cfg.trust_remote_code)
    try:
        generation_config = GenerationConfig.from_pretrained(path)
    except OSError:  # a model saved without one
        generation_config = GenerationConfig.from_model_config(config)
    llm = LLM(
        model=path,
        tokenizer=path,
        dtype=cfg.dtype.value,  # auto: the checkpoint's own (bf16 mostly), as inference wants
        seed=settings.seed,
        max_model_len=settings.vllm_max_model_len,
        trust_remote_code=cfg.trust_remote_code,
    )
    return VllmModel(llm, path, config, generation_config), tokenizer


def sampling_params(model: VllmModel, settings: EvaluationConfig, eos: set[int]) -> Any:
    """One sample of evaluation's settings per request (a turn's prompts repeat each problem n times), ending
    at the end-of-turn tokens transformers' generate() ends at."""
    from vllm import SamplingParams

    own = {
        name: value for name in MODEL_SAMPLING if (value := getattr(model.generation_config, name, None)) is not None
    }
    return SamplingParams(
        n=1,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_tokens=settings.max_new_tokens,
        stop_token_ids=sorted(eos),
        **own,
    )


def vllm_turn(model: VllmModel, settings: EvaluationConfig, eos: set[int], generated: Any = None) -> Turn:
    """A turn's generation in vLLM: token-id prompts in, each reply's token ids out, up to its end-of-turn
    token (vLLM stops there, the token kept, as generate_ids cuts). ``generated`` (evaluate.Generated) adds up
    the tokens generated and the seconds they took."""
    params = sampling_params(model, settings, eos)

    def turn(prompt_ids: list[list[int]]) -> tuple[list[list[int]], None]:
        began = time.perf_counter()
        outputs = model.llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False)
        rows = [list(output.outputs[0].token_ids) for output in outputs]
        if generated is not None:
            generated.add(rows, eos, time.perf_counter() - began)
        return rows, None

    return turn
