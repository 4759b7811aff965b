"""The train task (codegrpo.tasks.train) in steps, each alone: prepare builds every piece and trains nothing;
finalize saves and records whatever model it is given; the ExitStack closes the sandbox. (fit alone:
tests/test_preemption.py.)"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from codegrpo.errors import UsageError
from codegrpo.reward.functions import reward_name
from codegrpo.tasks.train import Fitted, finalize, prepare
from codegrpo.train.preemption import Guard, parse_signals
from tests.helpers.commands import TINY
from tests.helpers.sandbox import child_pids, run_cgroups


def test_prepare_builds_everything_then_finalize_saves_the_model_it_is_given(compose_cfg):
    import torch
    from safetensors.torch import load_file

    before, groups_before = child_pids(), set(run_cgroups())

    cfg = compose_cfg(*TINY, "reward.functions=[code_reward,think_format_reward]", "reward.weights=[1.0,0.5]")
    run_dir = Path(cfg.run_dir)
    with Guard(parse_signals(["SIGUSR1"])) as guard, ExitStack() as stack:
        prepared = prepare(cfg, stack, guard)
        trainer = prepared.trainer
        assert trainer.state.global_step == 0 and prepared.checkpoint is None
        assert [reward_name(f) for f in trainer.reward_funcs] == ["code_reward", "think_format_reward"]
        assert trainer.args.reward_weights == [1.0, 0.5] and trainer.args.output_dir == str(run_dir)
        assert trainer.args.seed == cfg.seed and trainer.stop_on_signal.guard is guard
        assert json.loads((run_dir / "run_info.json").read_text())["resumed_from"] is None
        # Each epoch's prompt order comes from (seed, epoch): a resumed run draws the order an uninterrupted
        # one drew, where TRL's sampler continues one generator that a resume starts afresh.
        sampler = trainer._get_train_sampler()
        orders = {}
        for epoch in (0, 1, 2, 1):
            sampler.set_epoch(epoch)
            orders.setdefault(epoch, []).append(list(sampler))
        assert all(first == again for first, *others in orders.values() for again in others)

        metrics = finalize(prepared, Fitted({"final_reward_mean": 0.5}, None))
        assert metrics == {"final_reward_mean": 0.5}
        saved = load_file(run_dir / "final_model" / "model.safetensors")
        model = trainer.model.state_dict()
        assert all(torch.equal(tensor, model[name]) for name, tensor in saved.items())
        assert json.loads((run_dir / "log_history.json").read_text()) == []
    # Leaving the stack closed the sandbox (processes there before, a session fixture's workers, are not its).
    assert child_pids() <= before and set(run_cgroups()) <= groups_before


def test_prepare_refuses_a_missing_resume_checkpoint_before_the_model_loads(compose_cfg, tmp_path):
    before = child_pids()
    cfg = compose_cfg(*TINY, f"resume={tmp_path / 'checkpoint-3'}")
    with Guard([]) as guard, ExitStack() as stack, pytest.raises(UsageError) as error:
        prepare(cfg, stack, guard)
    assert "not a complete checkpoint-N directory" in str(error.value)
    assert child_pids() <= before


def test_prepare_refuses_an_objective_the_run_cannot_have_before_the_model_loads(compose_cfg):
    cfg = compose_cfg(*TINY, "optimized_metric=eval_change")
    with Guard([]) as guard, ExitStack() as stack, pytest.raises(UsageError, match="optimized_metric=eval_change"):
        prepare(cfg, stack, guard)
    assert not Path(cfg.run_dir).exists()  # refused before the run dir, let alone the model
