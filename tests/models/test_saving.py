"""The final model on disk (codegrpo.models.saving): its save dtype, the cast of saved weights, the rounding
warning, and the final save of full models and LoRA adapters, on a small real Llama and a stand-in trainer."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from codegrpo.config.choices import SaveDtype
from codegrpo.config.model import ModelConfig
from codegrpo.errors import UsageError
from codegrpo.models.saving import (
    MAX_ROUNDING,
    RMS_ROUNDING,
    cast_saved_weights,
    check_save_dtype,
    rounding_warning,
    save_final_model,
)
from codegrpo.reward.metric_names import RELATIVE_NORM
from tests.helpers.small_llama import small_llama

SMALL_UPDATE = [{RELATIVE_NORM: 1e-4}] * 8 + [{"train_runtime": 1.0}]  # 8e-4 in all: less than bf16 rounds


@pytest.fixture
def full_run(compose_cfg):
    """A run dir whose final_model is a small real Llama as the trainer saved it, and its config (bf16 on disk)."""
    cfg = compose_cfg("model.save_dtype=bfloat16")
    run_dir = Path(cfg.run_dir)
    final = run_dir / "final_model"
    model = small_llama()
    model.save_pretrained(final)
    return cfg, run_dir, final, model


class Trainer:
    """What save_final_model uses of TRL's trainer: save_model (which writes what the model's save_pretrained
    writes, and keeps a copy of each file's bytes), the model, the accelerator's unwrap_model, the log history."""

    def __init__(self, model, log_history: list[dict] | None = None) -> None:
        self.model = model
        self.accelerator = SimpleNamespace(unwrap_model=lambda model: model)
        self.state = SimpleNamespace(log_history=log_history or [])
        self.saved: dict[str, bytes] = {}
        self.saved_to: list[str] = []

    def save_model(self, output_dir: str) -> None:
        self.saved_to.append(output_dir)
        self.model.save_pretrained(output_dir)
        self.saved = files(Path(output_dir))


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def weights(directory: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(directory / "model.safetensors")


def dtypes(directory: Path) -> set[str]:
    return {str(t.dtype).removeprefix("torch.") for t in weights(directory).values()}


def saving_logs(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "codegrpo.models.saving"]


def test_full_models_are_saved_in_bf16(full_run):
    import torch
    from safetensors.torch import load_file

    cfg, _, final, model = full_run
    before = (final / "model.safetensors").stat().st_size
    cast_saved_weights(final, cfg.model.save_dtype)
    weights = load_file(final / "model.safetensors")
    assert {t.dtype for t in weights.values()} == {torch.bfloat16}
    assert (final / "model.safetensors").stat().st_size < 0.55 * before
    assert json.loads((final / "config.json").read_text())["dtype"] == "bfloat16"
    for name, param in model.state_dict().items():
        if name in weights:
            assert torch.equal(weights[name], param.to(torch.bfloat16)), name


def test_saving_in_bf16_warns_when_the_run_moved_the_weights_less_than_bf16_rounds_them():
    small = [{"update/relative_norm": 1e-4}] * 8 + [{"train_runtime": 1.0}]
    warning = rounding_warning(small, "bfloat16")
    assert warning and "model.save_dtype=float32" in warning and "8.0e-04" in warning
    assert rounding_warning(small, "float16") is None  # fp16 resolves 4.9e-04
    assert rounding_warning([{"update/relative_norm": 1e-2}], "bfloat16") is None
    assert rounding_warning(small, "float32") is None


def test_every_save_dtype_is_accepted_and_any_other_is_one_usage_error():
    for dtype in SaveDtype:
        check_save_dtype(ModelConfig(save_dtype=dtype))
    check_save_dtype(ModelConfig(save_dtype="bfloat16"))  # type: ignore[arg-type]  # as a script writes it
    with pytest.raises(UsageError) as raised:
        check_save_dtype(ModelConfig(save_dtype="int8"))  # type: ignore[arg-type]
    assert str(raised.value) == "model.save_dtype must be one of auto, float32, bfloat16, float16, not 'int8'"


def test_the_warning_gives_the_rounding_and_the_whole_update_and_how_to_keep_the_weights():
    assert rounding_warning([{RELATIVE_NORM: 1e-4}], "float16") == (
        "final_model is saved in float16 (model.save_dtype), which rounds each weight by up to 4.9e-04 of its "
        "size (2.0e-04 in norm), more than this run's whole update (at most 1.0e-04 in norm): the saved weights "
        "differ from the trained ones by more than training moved them. The after-training evaluation used the "
        "trained weights; to keep them on disk, set model.save_dtype=float32."
    )
    assert (MAX_ROUNDING["bfloat16"], MAX_ROUNDING["float16"]) == (2.0**-8, 2.0**-11)


def test_no_warning_for_an_update_as_large_as_the_rounding_or_a_run_that_logged_none():
    rms = RMS_ROUNDING["bfloat16"]
    assert rounding_warning([{RELATIVE_NORM: rms}], "bfloat16") is None
    assert rounding_warning([{RELATIVE_NORM: rms / 2}, {RELATIVE_NORM: rms / 2}], "bfloat16") is None
    assert rounding_warning([{RELATIVE_NORM: rms * 0.999}], "bfloat16") is not None
    assert rounding_warning([], "bfloat16") is None
    assert rounding_warning([{"train_runtime": 1.0}], "bfloat16") is None  # no update logged: nothing to compare
    assert rounding_warning(SMALL_UPDATE, "auto") is None


def test_a_cast_keeps_integer_and_adapter_tensors_the_files_metadata_and_a_sharded_index_true(tmp_path):
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    first = {"a": torch.ones(4, 4), "ids": torch.arange(3)}
    save_file(first, str(tmp_path / "model-00001-of-00002.safetensors"), metadata={"format": "pt", "note": "kept"})
    save_file({"b": torch.ones(2, dtype=torch.float64)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    save_file({"lora": torch.ones(2)}, str(tmp_path / "adapter_model.safetensors"))
    index = {"metadata": {"total_size": 999}, "weight_map": {"a": "model-00001-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "float32", "model_type": "llama"}))

    cast_saved_weights(tmp_path, "float16")

    shard = load_file(tmp_path / "model-00001-of-00002.safetensors")
    assert (shard["a"].dtype, shard["ids"].dtype) == (torch.float16, torch.int64)
    assert torch.equal(shard["ids"], torch.arange(3))
    assert load_file(tmp_path / "model-00002-of-00002.safetensors")["b"].dtype == torch.float16
    assert load_file(tmp_path / "adapter_model.safetensors")["lora"].dtype == torch.float32
    with safe_open(str(tmp_path / "model-00001-of-00002.safetensors"), framework="pt") as handle:
        assert handle.metadata() == {"format": "pt", "note": "kept"}
    assert json.loads((tmp_path / "model.safetensors.index.json").read_text()) == {
        "metadata": {"total_size": 16 * 2 + 3 * 8 + 2 * 2},  # a and b in fp16, ids still int64
        "weight_map": {"a": "model-00001-of-00002.safetensors"},
    }
    assert (tmp_path / "config.json").read_text() == '{\n  "dtype": "float16",\n  "model_type": "llama"\n}\n'


def test_a_full_model_is_saved_as_it_trained_by_default(compose_cfg, tmp_path, caplog):
    import torch

    model = small_llama()
    trainer = Trainer(model, SMALL_UPDATE)
    path = tmp_path / "final_model"
    assert save_final_model(trainer, compose_cfg(), path) is model
    assert trainer.saved_to == [str(path)]
    assert files(path) == trainer.saved  # nothing rewritten: fp32 weights, bit for bit
    saved = weights(path)
    assert all(torch.equal(saved[name], param) for name, param in model.state_dict().items() if name in saved)
    assert saving_logs(caplog) == []


def test_a_full_model_is_cast_to_its_save_dtype_with_a_warning_when_that_rounds_away_the_update(
    compose_cfg, tmp_path, caplog
):
    cfg = compose_cfg("model.save_dtype=bfloat16")
    path = tmp_path / "final_model"
    save_final_model(Trainer(small_llama(), SMALL_UPDATE), cfg, path)
    assert dtypes(path) == {"bfloat16"}
    assert json.loads((path / "config.json").read_text())["dtype"] == "bfloat16"
    assert saving_logs(caplog) == [rounding_warning(SMALL_UPDATE, "bfloat16")]
    assert caplog.records[-1].levelno == logging.WARNING

    caplog.clear()
    save_final_model(Trainer(small_llama(), [{RELATIVE_NORM: 1e-2}]), cfg, tmp_path / "moved")
    assert dtypes(tmp_path / "moved") == {"bfloat16"} and saving_logs(caplog) == []


def test_only_the_main_process_casts_and_a_save_dtype_the_model_trained_in_rewrites_nothing(compose_cfg, tmp_path):
    import torch

    trainer = Trainer(small_llama(), SMALL_UPDATE)
    save_final_model(trainer, compose_cfg("model.save_dtype=bfloat16"), tmp_path / "rank1", is_main_process=False)
    assert files(tmp_path / "rank1") == trainer.saved and dtypes(tmp_path / "rank1") == {"float32"}

    trained = small_llama().to(torch.float16)  # its dtype is its first weight's: float16
    trained.model.norm.float()  # a weight kept in float32, which a cast to float16 would round
    trainer = Trainer(trained)
    save_final_model(trainer, compose_cfg("model.save_dtype=float16"), tmp_path / "same")
    assert files(tmp_path / "same") == trainer.saved and dtypes(tmp_path / "same") == {"float16", "float32"}


def lora(model):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))


def test_a_lora_run_saves_its_adapter_alone_uncast(compose_cfg, tmp_path, caplog):
    adapted = lora(small_llama())
    trainer = Trainer(adapted, SMALL_UPDATE)
    path = tmp_path / "final_model"
    assert save_final_model(trainer, compose_cfg("peft=lora", "model.save_dtype=bfloat16"), path) is adapted
    assert files(path) == trainer.saved
    assert {"adapter_config.json", "adapter_model.safetensors"} <= set(trainer.saved)
    assert not (path / "model.safetensors").exists() and saving_logs(caplog) == []


def test_a_merged_lora_run_saves_the_merged_full_model_in_its_save_dtype_without_the_adapter(
    compose_cfg, tmp_path, caplog
):
    import torch

    trainer = Trainer(lora(small_llama()), SMALL_UPDATE)
    path = tmp_path / "final_model"
    cfg = compose_cfg("peft=lora", "peft.merge_on_save=true", "model.save_dtype=bfloat16")
    merged = save_final_model(trainer, cfg, path)
    assert type(merged).__name__ == "LlamaForCausalLM"
    assert not (path / "adapter_config.json").exists() and not (path / "adapter_model.safetensors").exists()
    saved = weights(path)
    assert {str(t.dtype) for t in saved.values()} == {"torch.bfloat16"}
    base = small_llama().state_dict()["model.layers.0.self_attn.q_proj.weight"]
    q_proj = merged.state_dict()["model.layers.0.self_attn.q_proj.weight"]
    assert not torch.equal(q_proj, base)  # the adapter's update is in the merged weights
    assert torch.equal(saved["model.layers.0.self_attn.q_proj.weight"], q_proj.to(torch.bfloat16))
    assert saving_logs(caplog) == []  # relative_norm was the adapter's: it says nothing about the merged weights
