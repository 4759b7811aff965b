"""The trainer group's checks (codegrpo.config.trainer): GRPO's constraints, each a named rule refused in one line
when the config is read (issue 40, item 5), not as a traceback from TRL after the model loads."""

from __future__ import annotations

import pytest

from codegrpo.config.trainer import RULES
from tests.helpers.config_errors import refusal


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["trainer.num_generations=3"],
            "trainer.num_generations=3 must divide the generation batch of 4 completions "
            "(trainer.per_device_train_batch_size"
            "=4 x 1 process x gradient_accumulation_steps=1): each prompt's completions are one group of a batch",
        ),
        (
            ["trainer.temperature=0"],
            "trainer.temperature=0.0 must be a finite number above 0 (GRPO samples each prompt's completions; at 0 "
            "they "
            "would all be one greedy completion)",
        ),
        (
            ["trainer.learning_rate=-1"],
            "trainer.learning_rate=-1.0 must be a finite number above 0 (a negative one climbs the loss, 0 trains "
            "nothing)",
        ),
        (
            ["trainer.max_steps=-3"],  # read by transformers as "train the epochs": hours, not 3 steps
            "trainer.max_steps=-3 must be an integer of at least 1 (or -1 to train trainer.num_train_epochs epochs)",
        ),
        (
            ["trainer.max_steps=0"],
            "trainer.max_steps=0 must be an integer of at least 1 (or -1 to train trainer.num_train_epochs epochs)",
        ),
        (
            ["trainer.num_generations=1", "trainer.per_device_train_batch_size=1"],
            "trainer.num_generations=1 must be at least 2: GRPO's advantage compares each completion with the others "
            "of "
            "its prompt",
        ),
        (
            ["trainer.generation_batch_size=8", "trainer.steps_per_generation=2"],
            "trainer.generation_batch_size=8 and trainer.steps_per_generation=2: set one of them (the other follows "
            "from it)",
        ),
        (
            ["trainer.generation_batch_size=6"],
            "trainer.generation_batch_size=6 must be a multiple of the global batch, "
            "trainer.per_device_train_batch_size=4 "
            "x 1 process",
        ),
        (
            ["trainer.generation_batch_size=12", "trainer.num_generations=8"],
            "trainer.num_generations=8 must divide the generation batch of 12 completions "
            "(trainer.generation_batch_size="
            "12): each prompt's completions are one group of a batch",
        ),
        (["trainer.max_completion_length=0"], "trainer.max_completion_length=0 must be an integer of at least 1"),
        (["trainer.top_p=0"], "trainer.top_p=0.0 must be above 0 and at most 1"),
        (
            ["trainer.loss_type=ppo"],
            "trainer.loss_type=ppo must be one of grpo, dr_grpo, dapo, bnpo, cispo, sapo, luspo, vespo",
        ),
        (
            ["trainer.auto_find_batch_size=true"],
            "trainer.auto_find_batch_size=true: GRPO cannot shrink its batch on out-of-memory (each batch holds "
            "whole groups "
            "of num_generations); lower trainer.per_device_train_batch_size",
        ),
        (
            ["trainer.sync_ref_model=true"],
            "trainer.sync_ref_model=true with trainer.beta=0: there is no reference model to sync; set trainer.beta "
            "above "
            "0, or sync_ref_model=false",
        ),
        (
            ["trainer.vllm_importance_sampling_clip_min=3"],
            "trainer.vllm_importance_sampling_clip_min=3.0 must be below trainer.vllm_importance_sampling_clip_max=3.0",
        ),
        (
            ["trainer.log_completions=false", "trainer.log_completions_hub_repo=me/completions"],
            "trainer.log_completions_hub_repo is set but trainer.log_completions=false: enable it, or unset the repo",
        ),
    ],
)
def test_grpo_settings_that_cannot_train_fail_when_the_config_is_read(compose_cfg, overrides, message):
    assert refusal(compose_cfg, *overrides) == message


def test_the_batch_check_counts_the_processes_of_a_launch(compose_cfg, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert compose_cfg("trainer.num_generations=8").trainer.num_generations == 8  # 4 x 2 processes
    assert refusal(compose_cfg, "trainer.num_generations=6").startswith(
        "trainer.num_generations=6 must divide the generation batch of 8 completions (trainer."
        "per_device_train_batch_size=4 x 2 processes x "
    )


def test_every_shipped_trainer_and_experiment_passes_the_checks(compose_cfg):
    for overrides in (["trainer=gpu"], ["experiment=guide"], ["experiment=feedback_cpu"], ["debug=fast"]):
        compose_cfg(*overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["trainer.min_p=2"], "trainer.min_p=2.0 must be from 0 to 1"),
        (["trainer.top_k=-1"], "trainer.top_k=-1 must be an integer of at least 0 (0: no top-k cut)"),
        (["trainer.beta=-1"], "trainer.beta=-1.0 must be a finite number at least 0 (the KL coefficient; 0: none)"),
        (["trainer.steps_per_generation=0"], "trainer.steps_per_generation=0 must be an integer of at least 1"),
        (
            ["trainer.do_eval=true", "trainer.eval_strategy=steps", "trainer.per_device_eval_batch_size=3"],
            "trainer.per_device_eval_batch_size x 1 process = 3 must be a multiple of the evaluation's "
            "num_generations (4)",
        ),
        (
            ["trainer.vllm_max_model_length=128"],
            "trainer.vllm_max_model_length=128 must be above trainer.max_completion_length=128: the prompt and its "
            "completion share it",
        ),
        (
            ["trainer.generation_kwargs={max_new_tokens:0}"],
            "trainer.generation_kwargs.max_new_tokens=0 must be an integer of at least 1",
        ),
        (
            ["trainer.vllm_importance_sampling_clip_max=null", "trainer.vllm_importance_sampling_mode=token_truncate"],
            "trainer.vllm_importance_sampling_mode=token_truncate needs trainer.vllm_importance_sampling_clip_min or "
            "_clip_max",
        ),
        (
            ["trainer.vllm_importance_sampling_clip_min=1", "trainer.vllm_importance_sampling_cap=0.5"],
            "trainer.vllm_importance_sampling_clip_min=1.0 must be below trainer.vllm_importance_sampling_clip_max=0.5",
        ),
        (
            ["+trainer.liger_kernel_config={fused_linear_cross_entropy:true}"],
            "trainer.liger_kernel_config.fused_linear_cross_entropy=true is not supported by GRPOTrainer (it replaces "
            "the model's forward, which GRPO patches)",
        ),
    ],
)
def test_the_other_rules_say_their_values_in_their_message(compose_cfg, overrides, message):
    assert refusal(compose_cfg, *overrides) == message


def test_each_rule_has_a_name_of_its_own_and_a_one_line_message():
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    assert all(rule.message and "\n" not in rule.message for rule in RULES)
