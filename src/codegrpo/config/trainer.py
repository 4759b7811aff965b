"""The trainer group: TrainerConfig (the GRPOConfig fields codegrpo reads), GRPO's constraints as a table of named
rules (RULES), and peft=lora's LoraSchema. The schema with every GRPOConfig field is grpo_schema.py's."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

from codegrpo.config.values import MISSING, is_count, is_positive
from codegrpo.errors import UsageError


@dataclass
class LoraSchema:
    """peft=lora: train LoRA adapters (peft.LoraConfig) instead of every weight."""

    r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    # Module names to adapt; [all-linear] is peft's every-linear-layer-but-the-head shortcut.
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    bias: str = "none"
    # true: final_model is the merged full model (model.save_dtype); false: the adapter alone.
    merge_on_save: bool = False


@dataclass
class TrainerConfig:
    """The trainer group's typed view: the trl.GRPOConfig fields codegrpo itself reads, so they type-check
    statically. Its schema, grpo_schema.GRPOTrainerConfig, subclasses this with every GRPOConfig field and TRL's
    defaults (these MISSING ones are always replaced; tests/config/test_grpo_schema.py checks the types agree)."""

    max_completion_length: Optional[int] = MISSING
    reward_weights: Optional[list[float]] = MISSING
    push_to_hub: bool = MISSING
    hub_model_id: Optional[str] = MISSING
    hub_token: Optional[str] = MISSING
    hub_private_repo: Optional[bool] = MISSING
    hub_revision: Optional[str] = MISSING
    max_tool_calling_iterations: Optional[int] = MISSING

    def __post_init__(self) -> None:
        if hasattr(self, "num_generations"):  # the schema with every GRPOConfig field (GRPOTrainerConfig)
            check_trainer(self)


def turn_cap(generation_kwargs: Any) -> int | None:
    """The most tokens one generate() call makes by trainer.generation_kwargs (max_new_tokens, or vLLM's
    max_tokens); None where it does not say."""
    if isinstance(generation_kwargs, Mapping):
        for key in ("max_new_tokens", "max_tokens"):
            value = generation_kwargs.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _made(t: _Trainer) -> str:
    if t.generation_batch_size is not None:
        return f"trainer.generation_batch_size={t.generation_batch_size}"
    steps = "gradient_accumulation_steps" if t.steps_per_generation is None else "steps_per_generation"
    return f"trainer.per_device_train_batch_size={t.per_device_train_batch_size} x {t.processes} x {steps}={t.steps}"


# What follows from a trainer config's fields, for the rules and their messages.
_DERIVED: dict[str, Callable[[_Trainer], Any]] = {
    "world": lambda t: _world_size(),
    "processes": lambda t: f"{t.world} process{'es' if t.world != 1 else ''}",
    "global_batch": lambda t: t.per_device_train_batch_size * t.world,
    # The optimizer steps one generation batch lasts, and the completions it holds (what it is made of).
    "steps": lambda t: t.gradient_accumulation_steps if t.steps_per_generation is None else t.steps_per_generation,
    "batch_size": lambda t: t.global_batch * t.steps if t.generation_batch_size is None else t.generation_batch_size,
    "made": _made,
    "eval_generations": lambda t: t.num_generations_eval or t.num_generations,
    "eval_batch": lambda t: t.per_device_eval_batch_size * t.world,
    "cap": lambda t: turn_cap(t.generation_kwargs),
    # vllm_importance_sampling_cap, where set, replaces _clip_max.
    "clip_max": lambda t: (
        t.vllm_importance_sampling_clip_max
        if t.vllm_importance_sampling_cap is None
        else t.vllm_importance_sampling_cap
    ),
}


class _Trainer:
    """A trainer config as the rules read it: its fields and the values _DERIVED from them, each worked out when a
    rule first reads it (after the rules before it have checked what it is made of)."""

    def __init__(self, config: Any) -> None:
        self.config = config

    def __getattr__(self, name: str) -> Any:
        value = _DERIVED[name](self) if name in _DERIVED else getattr(self.config, name)
        setattr(self, name, value)
        return value

    __getitem__ = __getattr__  # a message (str.format_map) names fields and derived values alike


class Rule(NamedTuple):
    """One of GRPO's constraints: ``broken`` tells a trainer config that breaks it, ``message`` says how in one
    line (a str.format template of the config's fields and derived values)."""

    name: str
    broken: Callable[[_Trainer], Any]
    message: str


def _one_of(name: str, *choices: str) -> Rule:
    """trainer.<name> is one of TRL's ``choices``: GRPOTrainer refuses another value mid-training, or ignores it."""
    return Rule(
        f"{name}_is_trls",
        lambda t: getattr(t, name) is not None and str(getattr(t, name)) not in choices,
        f"trainer.{name}={{{name}}} must be one of {', '.join(choices)}",
    )


# GRPO's own constraints, in the order they are checked: the ones TRL checks (trl 1.16's GRPOConfig.__post_init__
# and GRPOTrainer.__init__) and the ones it leaves to torch and transformers (a learning rate or a temperature
# that cannot train). Laid out as a table, a rule a row: its name and test, then its message.
# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("learning_rate_trains", lambda t: not is_positive(t.learning_rate),
         "trainer.learning_rate={learning_rate} must be a finite number above 0 (a negative one climbs the loss, "
         "0 trains nothing)"),
    Rule("temperature_samples", lambda t: not is_positive(t.temperature),
         "trainer.temperature={temperature} must be a finite number above 0 (GRPO samples each prompt's "
         "completions; at 0 they would all be one greedy completion)"),
    Rule("top_p_in_range", lambda t: not isinstance(t.top_p, (int, float)) or not 0 < t.top_p <= 1,
         "trainer.top_p={top_p} must be above 0 and at most 1"),
    Rule("min_p_in_range", lambda t: t.min_p is not None and not 0 <= t.min_p <= 1,
         "trainer.min_p={min_p} must be from 0 to 1"),
    Rule("top_k_counts", lambda t: not is_count(t.top_k, 0),
         "trainer.top_k={top_k} must be an integer of at least 0 (0: no top-k cut)"),
    Rule("repetition_penalty_positive", lambda t: not is_positive(t.repetition_penalty),
         "trainer.repetition_penalty={repetition_penalty} must be a finite number above 0 (1.0: none)"),
    Rule("beta_finite", lambda t: not isinstance(t.beta, (int, float)) or not 0 <= t.beta < math.inf,
         "trainer.beta={beta} must be a finite number at least 0 (the KL coefficient; 0: none)"),
    Rule("num_iterations_counts", lambda t: not is_count(t.num_iterations, 1),
         "trainer.num_iterations={num_iterations} must be an integer of at least 1"),
    # -1 trains num_train_epochs; transformers read any other negative the same way, silently.
    Rule("max_steps_counts", lambda t: t.max_steps != -1 and not is_count(t.max_steps, 1),
         "trainer.max_steps={max_steps} must be an integer of at least 1 (or -1 to train trainer.num_train_epochs "
         "epochs)"),
    Rule("groups_compare", lambda t: not is_count(t.num_generations, 2),
         "trainer.num_generations={num_generations} must be at least 2: GRPO's advantage compares each completion "
         "with the others of its prompt"),
    Rule("per_device_batch_counts", lambda t: not is_count(t.per_device_train_batch_size, 1),
         "trainer.per_device_train_batch_size={per_device_train_batch_size} must be an integer of at least 1"),
    Rule("accumulation_counts", lambda t: not is_count(t.gradient_accumulation_steps, 1),
         "trainer.gradient_accumulation_steps={gradient_accumulation_steps} must be an integer of at least 1"),
    Rule("one_batch_setting", lambda t: t.generation_batch_size is not None and t.steps_per_generation is not None,
         "trainer.generation_batch_size={generation_batch_size} and trainer.steps_per_generation="
         "{steps_per_generation}: set one of them (the other follows from it)"),
    Rule("steps_per_generation_counts", lambda t: t.generation_batch_size is None and not is_count(t.steps, 1),
         "trainer.steps_per_generation={steps} must be an integer of at least 1"),
    Rule("generation_batch_counts",
         lambda t: t.generation_batch_size is not None and not is_count(t.generation_batch_size, 1),
         "trainer.generation_batch_size={generation_batch_size} must be an integer of at least 1"),
    Rule("generation_batch_of_global_batches",
         lambda t: t.generation_batch_size is not None and t.generation_batch_size % t.global_batch,
         "trainer.generation_batch_size={generation_batch_size} must be a multiple of the global batch, "
         "trainer.per_device_train_batch_size={per_device_train_batch_size} x {processes}"),
    Rule("groups_fill_the_batch", lambda t: t.batch_size % t.num_generations,
         "trainer.num_generations={num_generations} must divide the generation batch of {batch_size} completions "
         "({made}): each prompt's completions are one group of a batch"),
    Rule("groups_fill_the_eval_batch",
         lambda t: t.do_eval and str(t.eval_strategy) != "no" and t.eval_batch % t.eval_generations,
         "trainer.per_device_eval_batch_size x {processes} = {eval_batch} must be a multiple of the evaluation's "
         "num_generations ({eval_generations})"),
    Rule("max_completion_length_counts",
         lambda t: t.max_completion_length is not None and not is_count(t.max_completion_length, 1),
         "trainer.max_completion_length={max_completion_length} must be an integer of at least 1"),
    Rule("vllm_length_holds_the_completion",
         lambda t: t.max_completion_length is not None and t.vllm_max_model_length is not None
         and t.vllm_max_model_length <= t.max_completion_length,
         "trainer.vllm_max_model_length={vllm_max_model_length} must be above trainer.max_completion_length"
         "={max_completion_length}: the prompt and its completion share it"),
    Rule("turn_cap_counts", lambda t: t.cap is not None and not is_count(t.cap, 1),
         "trainer.generation_kwargs.max_new_tokens={cap} must be an integer of at least 1"),
    _one_of("loss_type", "grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"),
    _one_of("scale_rewards", "group", "batch", "none"),
    _one_of("importance_sampling_level", "token", "sequence"),
    _one_of("vllm_importance_sampling_mode", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask"),
    _one_of("multi_objective_aggregation", "sum_then_normalize", "normalize_then_sum"),
    Rule("no_auto_find_batch_size", lambda t: t.auto_find_batch_size,
         "trainer.auto_find_batch_size=true: GRPO cannot shrink its batch on out-of-memory (each batch holds whole "
         "groups of num_generations); lower trainer.per_device_train_batch_size"),
    Rule("completions_repo_logs_them", lambda t: t.log_completions_hub_repo is not None and not t.log_completions,
         "trainer.log_completions_hub_repo is set but trainer.log_completions=false: enable it, or unset the repo"),
    Rule("clip_min_below_clip_max",
         lambda t: t.vllm_importance_sampling_clip_min is not None and t.clip_max is not None
         and t.vllm_importance_sampling_clip_min >= t.clip_max,
         "trainer.vllm_importance_sampling_clip_min={vllm_importance_sampling_clip_min} must be below "
         "trainer.vllm_importance_sampling_clip_max={clip_max}"),
    Rule("truncation_has_a_clip",
         lambda t: t.vllm_importance_sampling_correction and t.vllm_importance_sampling_clip_min is None
         and t.clip_max is None and str(t.vllm_importance_sampling_mode).endswith("_truncate"),
         "trainer.vllm_importance_sampling_mode={vllm_importance_sampling_mode} needs "
         "trainer.vllm_importance_sampling_clip_min or _clip_max"),
    Rule("sync_needs_a_reference", lambda t: t.sync_ref_model and t.beta == 0,
         "trainer.sync_ref_model=true with trainer.beta=0: there is no reference model to sync; set trainer.beta "
         "above 0, or sync_ref_model=false"),
    Rule("no_fused_cross_entropy",
         lambda t: isinstance(t.liger_kernel_config, Mapping)
         and t.liger_kernel_config.get("fused_linear_cross_entropy"),
         "trainer.liger_kernel_config.fused_linear_cross_entropy=true is not supported by GRPOTrainer (it replaces "
         "the model's forward, which GRPO patches)"),
)
# fmt: on


def check_trainer(config: Any) -> None:
    """GRPO's constraints (RULES, in order) on a trainer config, checked when the config is read: one line each,
    not a traceback from GRPOConfig, from GRPOTrainer after the model loads, or from the first generation."""
    trainer = _Trainer(config)
    for rule in RULES:
        if rule.broken(trainer):
            raise UsageError(rule.message.format_map(trainer))
