"""LoRA end to end, in process: train() with peft=lora and several rewards trains only the adapter, saves
it alone, pushes only the model files (the upload replaced at its network boundary), and the saved adapter
loads in the evaluate command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegrpo import build
from codegrpo.reward.extraction import completion_text
from tests.helpers.hub import record_hub_uploads

TINY = [
    "trainer.max_steps=2",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=2",
    "trainer.max_completion_length=16",
    "problems.limit=2",
    "logger=none",
    "plots=false",
]


def length_reward(completions, **_) -> list[float]:
    """Characters in the completion: sampled completions differ, so every group has reward spread (the
    sandbox reward alone is often flat at 16 tokens, and with no advantage LoRA's B stays at zero)."""
    return [float(len(completion_text(c))) for c in completions]


@pytest.mark.slow
def test_lora_trains_only_the_adapter_saves_it_pushes_it_and_evaluate_loads_it(
    compose_cfg, tmp_path, monkeypatch, tiny_model
):
    """On the tiny model (LoRA's mechanics, not what it learns: every Llama projection is there)."""
    import torch

    import codegrpo.tasks.train as train_module
    import codegrpo.training.trl_adapter as trainer_module
    from codegrpo.models.loading import load_model_and_tokenizer
    from codegrpo.tasks.evaluate import evaluate

    cfg = compose_cfg(
        *TINY,
        *tiny_model,
        "peft=lora",
        "peft.r=4",
        "peft.lora_alpha=8",
        "completions_every=2",
        "reward.functions=[code_reward,think_format_reward,get_soft_overlong_punishment,tests.test_peft:length_reward]",
        "reward.weights=[1.0,0.5,1.0,0.01]",
        "trainer.push_to_hub=true",
        "trainer.hub_model_id=someone/codegrpo-lora",
    )
    run_dir = Path(cfg.run_dir)

    # Observe the trainer train() builds (nothing replaced), and the upload at its network boundary.
    trainers = []
    real_class = trainer_module.make_trainer_class

    def observed_class():
        cls = real_class()

        class Observed(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                trainers.append(self)

        return Observed

    monkeypatch.setattr(trainer_module, "make_trainer_class", observed_class)  # build.trainer imports it at call time
    uploads = record_hub_uploads(monkeypatch)
    run_dir.mkdir(parents=True)
    (run_dir / "git.diff").write_text("diff --git a/secret b/secret\n")  # what a dirty tree leaves
    train_module.train(cfg)

    # Only the adapter moved: every base weight is bit-identical to the base model's.
    [trainer] = trainers
    base, _ = load_model_and_tokenizer(cfg.model)
    base_weights = dict(base.named_parameters())
    lora, frozen = {}, 0
    for name, param in trainer.model.named_parameters():
        if "lora_" in name:
            lora[name] = param
            continue
        key = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        assert torch.equal(param.detach(), base_weights[key].detach()), name
        assert not param.requires_grad
        frozen += 1
    assert frozen == len(base_weights) and lora
    assert any(bool(p.detach().abs().sum() > 0) for n, p in lora.items() if "lora_B" in n)  # B starts at 0

    # Each reward is logged under its own name; completion tables only every 2nd step.
    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if "reward" in row]
    assert len(steps) == 2
    for name in ("code_reward", "think_format_reward", "soft_overlong_punishment_reward", "length_reward"):
        assert all(f"rewards/{name}/mean" in row for row in steps), name
    assert [p.name for p in run_dir.glob("completions/*.parquet")] == ["completions_00002.parquet"]

    # final_model is the adapter alone, with its tokenizer.
    final = run_dir / "final_model"
    names = {p.name for p in final.iterdir()}
    assert {"adapter_model.safetensors", "adapter_config.json", "tokenizer.json"} <= names
    assert "model.safetensors" not in names and "training_args.bin" in names
    assert (final / "adapter_model.safetensors").stat().st_size < 5 << 20

    # The push: exactly the model files and a card, nothing of the run dir.
    assert uploads[0][:3] == ("create_repo", "someone/codegrpo-lora", None)
    assert uploads[1] == (
        "upload_folder",
        "someone/codegrpo-lora",
        [
            "README.md",
            "adapter_config.json",
            "adapter_model.safetensors",
            "chat_template.jinja",
            "tokenizer.json",
            "tokenizer_config.json",
        ],
    )
    card = uploads[2][1]
    info = json.loads((run_dir / "run_info.json").read_text())
    assert info["problems_sha256"] in card and "SmolLM2-135M-Instruct" in card and "library_name: peft" in card
    assert "think_format_reward" in card and "```yaml" in card and "Command:" in card
    assert not (run_dir / ".hub_staging").exists()

    # The evaluate command loads the adapter dir (base from adapter_config.json, adapter merged in).
    eval_cfg = compose_cfg(
        f"checkpoint={final}",
        "problems=trivial",
        "evaluation.split=eval",
        "evaluation.limit=1",
        "evaluation.max_new_tokens=16",
        config_name="evaluate",
    )
    results = evaluate(eval_cfg)
    assert results.num_problems == 1 and 0.0 <= results.pass_at[1] <= 1.0
    merged, _ = build.model(cfg.model, str(final))
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(dict(merged.named_parameters())[q], base_weights[q])  # the adapter is in


def test_the_peft_group_is_off_by_default_and_lora_composes(compose_cfg):
    from peft import LoraConfig

    from codegrpo.models.loading import build_peft_config

    assert compose_cfg().peft is None and build_peft_config(compose_cfg().peft) is None
    cfg = compose_cfg("peft=lora", "peft.r=8", "peft.merge_on_save=true")
    assert (cfg.peft.r, cfg.peft.lora_alpha, cfg.peft.merge_on_save) == (8, 32, True)
    lora = build_peft_config(cfg.peft)
    assert isinstance(lora, LoraConfig) and lora.r == 8 and lora.lora_dropout == 0.05
    assert set(lora.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert build_peft_config(compose_cfg("peft=lora", "peft.target_modules=[all-linear]").peft).target_modules == (
        "all-linear"
    )
