"""Research workflow: reproducibility, resume, plots, evaluation, sweeps and distributed launches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegrpo.evaluation.results import pass_at_k
from codegrpo.resources import PROJECT_ROOT
from tests import wandb_offline

TINY = [
    "trainer.max_steps=1",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=2",
    "trainer.max_completion_length=32",
    "problems.limit=2",
    "save_model=false",
]


def launch(*args: str, env: dict[str, str] | None = None, python: bool = True) -> subprocess.CompletedProcess:
    command = [sys.executable, *args] if python else list(args)
    environment = {k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "CODEGRPO_RUN_DIR")}
    return subprocess.run(
        command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900, env=environment | (env or {})
    )


def first_step(run_dir: Path) -> dict:
    return next(r for r in json.loads((run_dir / "log_history.json").read_text()) if "reward" in r)


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(1, 1, 1) == 1.0 and pass_at_k(1, 0, 1) == 0.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - (7 * 6 * 5 * 4 * 3) / (10 * 9 * 8 * 7 * 6))
    assert pass_at_k(5, 4, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 5)


@pytest.mark.slow
def test_same_seed_same_first_step_reproducibility_record_and_resume_auto(tmp_path, tiny_model):
    """Two fresh runs of one step agree; then the first resumes from its checkpoint to step 2, continuing
    its W&B run (one test, so the first run serves both and the suite launches one model fewer)."""
    runs = [tmp_path / "a", tmp_path / "b"]
    saving = ["trainer.save_strategy=steps", "trainer.save_steps=1"]
    for run_dir, logger in zip(runs, ("logger=wandb", "logger=none"), strict=True):
        done = launch("train.py", f"hydra.run.dir={run_dir}", logger, *TINY, *tiny_model, *saving)
        assert done.returncode == 0, done.stderr[-3000:]
    a, b = (first_step(r) for r in runs)
    for key in ("rewards/code_reward/mean", "completions/mean_length", "entropy", "num_tokens"):
        assert a[key] == b[key], key
    run_dir = runs[0]
    info = json.loads((run_dir / "run_info.json").read_text())
    assert info["seed"] == 42 and info["packages"]["trl"] and len(info["problems_sha256"]) == 64
    assert "git_commit" in info and "git_dirty" in info
    assert (run_dir / ".hydra" / "overrides.yaml").is_file() and (run_dir / "config.yaml").is_file()
    assert (run_dir / "reward_curve.png").stat().st_size > 1000
    # The README's repeat command composes the same config from the run's own dir.
    again = launch("train.py", "--config-dir", str(run_dir / ".hydra"), "--config-name", "config", "--cfg", "job")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "max_completion_length: 32" in again.stdout and "limit: 2" in again.stdout

    assert (run_dir / "checkpoint-1" / "optimizer.pt").is_file()
    assert not (run_dir / "README.md").exists()  # TRL's boilerplate card ("a fine-tuned version of [None]")
    run_id = (run_dir / "wandb_run_id.txt").read_text()
    second = launch(
        "train.py",
        f"hydra.run.dir={run_dir}",
        "logger=wandb",
        *TINY[1:],
        *tiny_model,
        *saving,
        "trainer.max_steps=2",
        "resume=auto",
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "missing keys" not in second.stderr  # SmolLM2's lm_head is its embeddings, saved once: not missing
    assert json.loads((run_dir / "run_info.json").read_text())["resumed_from"].endswith("checkpoint-1")
    steps = [r["step"] for r in json.loads((run_dir / "log_history.json").read_text()) if "reward" in r]
    assert steps == [1, 2]  # step 1 comes from the checkpoint's state, step 2 is new
    assert (run_dir / "wandb_run_id.txt").read_text() == run_id
    run_files = list(run_dir.glob(f"wandb/offline-run-*-{run_id}/run-{run_id}.wandb"))
    assert len(run_files) == 2  # the same W&B run id, continued
    assert any("train/reward" in row for row in wandb_offline.history(sorted(run_files)[-1]))


@pytest.mark.slow
def test_evaluate_command_writes_pass_at_k(tmp_path):
    done = launch(
        "-m",
        "codegrpo.commands.evaluate",
        f"hydra.run.dir={tmp_path}",
        "evaluation.limit=2",
        "evaluation.max_new_tokens=48",
        "evaluation.num_samples=2",
        "evaluation.temperature=0.8",
        "evaluation.k=[1,2]",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "eval.json").read_text())
    assert results["num_problems"] == 2 and results["num_samples"] == 2
    assert 0.0 <= results["pass@1"] <= results["pass@2"] <= 1.0
    assert sum(results["status_counts"].values()) == 4
    # The record to repeat it: the model that loaded, the problem set and its hash, sampling, k, the commit.
    record = results["record"]
    assert record["model"]["source"] == "gguf" and record["model"]["parameters"] > 1e8
    assert record["problems"]["name"] == "humaneval" and record["problems"]["count"] == 2
    assert len(record["problems"]["sha256"]) == 64 and record["checkpoint"] is None
    assert record["sampling"] == {
        "num_samples": 2,
        "k": [1, 2],
        "temperature": 0.8,
        "top_p": 1.0,
        "max_new_tokens": 48,
        "seed": 0,
        "backend": "transformers",
        "from": "config",
        "limit": 2,
    }
    assert record["rollout"] == "single" and "codegrpo_commit" in record
    log = (tmp_path / "evaluate.log").read_text()
    assert f"results in {tmp_path / 'eval.json'}" in log and "pass@1 " in log  # what the console showed


def test_distributed_launch_without_a_pinned_run_dir_fails_clearly(tmp_path):
    done = launch("train.py", f"hydra.run.dir={tmp_path}", "logger=none", env={"WORLD_SIZE": "2", "RANK": "0"})
    assert done.returncode == 2
    assert "CODEGRPO_RUN_DIR" in done.stderr


def test_hparams_search_and_slurm_launcher_compose():
    printed = {}
    for override in ("hparams_search=optuna", "hydra/launcher=submitit_slurm"):
        done = launch("train.py", override, "--cfg", "hydra")
        assert done.returncode == 0, done.stderr[-2000:]
        printed[override] = done.stdout
    optuna = printed["hparams_search=optuna"]
    assert "OptunaSweeper" in optuna and "trainer.learning_rate" in optuna
    assert "SlurmLauncher" in printed["hydra/launcher=submitit_slurm"]
