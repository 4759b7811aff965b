"""TRL behind one adapter: each method of TRL's or transformers' that is not public and that
codegrpo.training.trl_adapter overrides is still there, where the adapter expects it, with the parameters the
override takes, and does what the override assumes. A TRL or transformers upgrade that changes one fails
here, not in the middle of a run (pyproject.toml bounds both to the versions these tests pass on)."""

from __future__ import annotations

import importlib
import inspect

import pytest
from transformers import Trainer
from trl import GRPOTrainer

from codegrpo.training.trl_adapter import PRIVATE_OVERRIDES, CodeGRPOTrainer, make_trainer_class


def owner_class(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def parameters(function: object) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(PRIVATE_OVERRIDES))
def test_each_private_override_matches_the_method_it_overrides(name):
    override = PRIVATE_OVERRIDES[name]
    owner = owner_class(override.owner)
    assert name in vars(owner), f"{override.owner} no longer defines {name}"
    # The method super() reaches from CodeGRPOTrainer is the owner's: no class between them defines it.
    reached = next(cls for cls in GRPOTrainer.__mro__ if name in vars(cls))
    assert reached is owner, f"{name} now comes from {reached.__module__}.{reached.__qualname__}"
    assert parameters(vars(owner)[name]) == override.parameters, f"{override.owner}.{name} changed its signature"
    assert parameters(vars(CodeGRPOTrainer)[name]) == override.parameters  # the table says what the override takes


def test_the_table_covers_every_private_method_the_adapter_defines():
    private = {
        name
        for name, value in vars(CodeGRPOTrainer).items()
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and callable(value)
    }
    assert private == set(PRIVATE_OVERRIDES)
    assert make_trainer_class() is CodeGRPOTrainer


def test_what_the_overrides_rely_on_still_holds():
    from trl.trainer.utils import RepeatSampler

    # _get_output_dir: transformers writes the checkpoint into the dir it returns.
    assert "self._get_output_dir(trial=trial)" in inspect.getsource(Trainer._save_checkpoint)
    # _get_train_sampler: TRL's sampler, with what the reseeding and the difficulty sampler read.
    assert "RepeatSampler(" in inspect.getsource(vars(GRPOTrainer)["_get_train_sampler"])
    sampler = RepeatSampler(list(range(8)), mini_repeat_count=2, batch_size=4, repeat_count=1, shuffle=True, seed=3)
    for attribute in ("batch_size", "mini_repeat_count", "repeat_count", "shuffle", "seed", "generator"):
        assert hasattr(sampler, attribute), attribute
    assert not hasattr(sampler, "set_epoch")  # else TRL reseeds each epoch itself, and the adapter's is moot
    # log: TRL writes a completions table when the trainer's log_completions is set (the adapter sets it).
    assert "self.log_completions" in inspect.getsource(vars(GRPOTrainer)["log"])
    assert parameters(vars(GRPOTrainer)["log"]) == parameters(vars(CodeGRPOTrainer)["log"])
    # _generate and _calculate_rewards (timing/*): TRL samples and scores inside training_step (its _prepare_inputs),
    # so the clock books them to themselves and the rest of training_step to the update; _generate's third item is
    # the mask of the model's own tokens, which tokens_per_s counts.
    assert "inputs = self._prepare_inputs(inputs)" in inspect.getsource(Trainer.training_step)
    assert "self._generate_and_score_completions(" in inspect.getsource(vars(GRPOTrainer)["_prepare_inputs"])
    scoring = inspect.getsource(vars(GRPOTrainer)["_generate_and_score_completions"])
    assert "= self._generate(prompts)" in scoring and "= self._calculate_rewards(inputs, prompts, " in scoring
    assert "return prompt_ids, completion_ids, tool_mask, " in inspect.getsource(vars(GRPOTrainer)["_generate"])
