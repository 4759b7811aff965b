"""Hydra's side of the config (codegrpo.config.registration): the resolvers the YAML files use (an episode's
tokens and a turn's cap under rollout=feedback, the run dir) and every schema in the ConfigStore, the trainer's
only when asked for."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from codegrpo.config.registration import register_configs, run_dir
from codegrpo.config.rollout import FEEDBACK_TOKENS

register_configs()


def _trainer(kind: str | None = None, max_turns: int = 3, **trainer) -> dict:
    """The trainer group of a root config composed with rollout ``kind`` (None: no rollout group), resolved."""
    root = OmegaConf.create(
        {
            "trainer": {
                "max_completion_length": "${episode_tokens:128}",
                "generation_kwargs": "${turn_limit:128}",
            }
            | trainer,
            **({"rollout": {"kind": kind, "max_turns": max_turns}} if kind else {}),
        }
    )
    return OmegaConf.to_container(root.trainer, resolve=True)


@pytest.mark.parametrize("kind", [None, "single"])
def test_one_turn_gets_n_tokens_and_no_cap(kind):
    assert _trainer(kind) == {"max_completion_length": 128, "generation_kwargs": None}


def test_a_feedback_episode_holds_every_turn_and_the_feedback_between_them():
    trainer = _trainer("feedback", max_turns=3)
    assert trainer["max_completion_length"] == 3 * 128 + 2 * FEEDBACK_TOKENS
    assert trainer["generation_kwargs"] == {"max_new_tokens": 128}
    assert _trainer("feedback", max_turns=1)["max_completion_length"] == 128


@pytest.mark.parametrize("key", ["max_new_tokens", "max_tokens"])
def test_an_episode_counts_the_turn_cap_the_user_set_in_place_of_n(key):
    trainer = _trainer("feedback", max_turns=2, generation_kwargs={key: 50})
    assert trainer["max_completion_length"] == 2 * 50 + FEEDBACK_TOKENS


def test_under_vllm_a_turns_cap_is_vllms_max_tokens():
    assert _trainer("feedback", use_vllm=True)["generation_kwargs"] == {"max_tokens": 128}
    assert _trainer("feedback", use_vllm=False)["generation_kwargs"] == {"max_new_tokens": 128}


def test_the_composed_configs_rollout_kind_an_enum_is_read_too(compose_cfg):
    single = compose_cfg("trainer=cpu").trainer
    assert (single.max_completion_length, single.generation_kwargs) == (128, None)
    feedback = compose_cfg("trainer=cpu", "rollout=feedback", "rollout.max_turns=2").trainer
    assert feedback.max_completion_length == 2 * 128 + FEEDBACK_TOKENS
    assert feedback.generation_kwargs == {"max_new_tokens": 128}


def test_the_run_dir_is_hydras_output_dir_else_the_planned_one():
    assert run_dir("outputs/run", "outputs/planned") == "outputs/run"
    assert run_dir(None, "outputs/planned") == "outputs/planned"
    assert run_dir("", "outputs/planned") == ""  # only a missing output dir is replaced


def test_every_resolver_and_schema_is_registered_and_registering_again_changes_nothing():
    for name in ("auto_concurrency", "codegrpo_run_dir", "episode_tokens", "turn_limit"):
        assert OmegaConf.has_resolver(name)
    repo = ConfigStore.instance().repo
    before = {group: sorted(repo[group]) for group in ("sandbox", "trainer", "model", "rollout")}
    register_configs()
    assert {group: sorted(repo[group]) for group in before} == before
    assert before["sandbox"] == ["base_local.yaml", "base_ray.yaml", "base_sandbox.yaml", "base_superserve.yaml"]
    assert before["trainer"] == ["base_trainer.yaml"]
    assert {"base_train.yaml", "base_score.yaml", "base_evaluate.yaml", "base_pass_rates.yaml"} <= set(repo)
    for group in ("problems", "reward", "logger", "peft", "sampler"):
        assert len(repo[group]) == 1


def test_without_the_trainer_no_trainer_schema_is_stored_and_trl_never_imported():
    code = (
        "import sys\n"
        "from hydra.core.config_store import ConfigStore\n"
        "from codegrpo.config.registration import register_configs\n"
        "register_configs(trainer=False)\n"
        "repo = ConfigStore.instance().repo\n"
        "print('trainer' in repo, 'base_train.yaml' in repo, 'trl' in sys.modules, 'torch' in sys.modules)\n"
        "register_configs()\n"
        "print(sorted(repo['trainer']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False True False False", "['base_trainer.yaml']"]
