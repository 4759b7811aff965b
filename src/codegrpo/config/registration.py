"""Hydra's side of the config: every group's schema (codegrpo.config.<group>) in the ConfigStore, and the resolvers
the YAML files use. Only the commands (and tests that compose) import it, so the library path
(``from codegrpo import code_reward``) never loads Hydra or OmegaConf."""

from __future__ import annotations

import functools
from typing import Any, cast

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from codegrpo.config.choices import RolloutKind
from codegrpo.config.logger import LoggerConfig
from codegrpo.config.model import ModelConfig
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.config.reward import RewardConfig
from codegrpo.config.rollout import RolloutConfig, episode_budget
from codegrpo.config.runs import EvaluateConfig, PassRatesConfig, ScoreConfig, TrainConfig
from codegrpo.config.sampler import SamplerConfig
from codegrpo.config.sandbox import (
    LocalSandboxConfig,
    RaySandboxConfig,
    SandboxConfig,
    SuperserveSandboxConfig,
    auto_concurrency,
)
from codegrpo.config.trainer import LoraSchema, turn_cap


def _turns_root(root: Any) -> RolloutConfig | None:
    """The composed config's rollout group when its episodes take turns (rollout=feedback or tools), else None."""
    rollout = OmegaConf.select(root, "rollout", default=None)
    kind = OmegaConf.select(root, "rollout.kind", default=None) if rollout is not None else None
    if str(getattr(kind, "value", kind)) not in (RolloutKind.feedback.value, RolloutKind.tools.value):
        return None
    return cast(RolloutConfig, OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(RolloutConfig), rollout)))


def episode_tokens(tokens: int, *, _root_: Any) -> int:
    """``${episode_tokens:N}`` (a trainer's max_completion_length): N, one completion's tokens; under
    rollout=feedback or tools an episode's, rollout.max_turns turns of a turn's cap (trainer.generation_kwargs'
    max_new_tokens, else N) and the feedback or tool results between them."""
    rollout = _turns_root(_root_)
    if rollout is None:
        return int(tokens)
    cap = turn_cap(OmegaConf.select(_root_, "trainer.generation_kwargs", default=None))
    return episode_budget(rollout, cap if cap is not None else int(tokens))


def turn_limit(tokens: int, *, _root_: Any) -> DictConfig | None:
    """``${turn_limit:N}`` (a trainer's generation_kwargs): None, or under rollout=feedback or tools a cap of N
    tokens on each turn (max_new_tokens; vLLM's max_tokens under trainer.use_vllm). A DictConfig, not a dict:
    an Any field takes only a node in place (OmegaConf.resolve, as --cfg job --resolve does)."""
    if _turns_root(_root_) is None:
        return None
    vllm = bool(OmegaConf.select(_root_, "trainer.use_vllm", default=False))
    return OmegaConf.create({"max_tokens" if vllm else "max_new_tokens": int(tokens)})


def run_dir(output_dir: str | None, planned: str) -> str:
    """``${codegrpo_run_dir:...}`` (RUN_DIR): Hydra's output dir for this job; under ``--cfg job --resolve``,
    where no job runs and Hydra has none, the dir a run would get (hydra.run.dir)."""
    return output_dir if output_dir is not None else planned


def register_configs(trainer: bool = True) -> None:
    """Register every schema and resolver. Idempotent, so tests and commands may call it freely (each
    schema is stored once).

    ``trainer=False`` leaves out the trainer schema, which may import trl (when the trainer field cache is
    for other versions, codegrpo.config.trainer_fields): the commands that compose no trainer group (score,
    validate, limits, evaluate) then never start torch."""
    OmegaConf.register_new_resolver("auto_concurrency", auto_concurrency, replace=True)
    OmegaConf.register_new_resolver("codegrpo_run_dir", run_dir, replace=True)
    OmegaConf.register_new_resolver("episode_tokens", episode_tokens, replace=True)
    OmegaConf.register_new_resolver("turn_limit", turn_limit, replace=True)
    _store_schemas()
    if trainer:
        _store_trainer_schema()


@functools.cache
def _store_schemas() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_train", node=TrainConfig)
    cs.store(name="base_score", node=ScoreConfig)
    cs.store(name="base_evaluate", node=EvaluateConfig)
    cs.store(name="base_pass_rates", node=PassRatesConfig)
    cs.store(group="model", name="base_model", node=ModelConfig)
    cs.store(group="problems", name="base_problems", node=ProblemsConfig)
    cs.store(group="reward", name="base_reward", node=RewardConfig)
    cs.store(group="sandbox", name="base_sandbox", node=SandboxConfig)
    cs.store(group="sandbox", name="base_local", node=LocalSandboxConfig)
    cs.store(group="sandbox", name="base_superserve", node=SuperserveSandboxConfig)
    cs.store(group="sandbox", name="base_ray", node=RaySandboxConfig)
    cs.store(group="logger", name="base_logger", node=LoggerConfig)
    cs.store(group="peft", name="base_lora", node=LoraSchema)
    cs.store(group="sampler", name="base_sampler", node=SamplerConfig)
    cs.store(group="rollout", name="base_rollout", node=RolloutConfig)


@functools.cache
def _store_trainer_schema() -> None:
    from codegrpo.config.grpo_schema import GRPOTrainerConfig  # built on import: may import trl (register_configs)

    ConfigStore.instance().store(group="trainer", name="base_trainer", node=GRPOTrainerConfig)
