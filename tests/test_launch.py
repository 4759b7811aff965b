"""Instant, clean failures: bad choices at compose time, missing values and an unreachable Hub model in a
check before anything heavy loads, one line, no traceback, and no run dir left behind."""

from __future__ import annotations

import subprocess
import time

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ValidationError

from tests.helpers.commands import train as run_train


def _train(*overrides: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = run_train(*overrides, env=env)
    return done, time.monotonic() - started


@pytest.mark.parametrize(
    "override",
    [
        "reward.kind=partal",
        "reward.extract=middle",
        "problems.split=test",
        "logger.backend=tensorboard",
        "evaluation.split=dev",
    ],
)
def test_a_misspelt_choice_fails_at_compose_naming_the_choices(compose_cfg, override):
    with pytest.raises((ConfigCompositionException, ValidationError)) as caught:
        compose_cfg(override)
    assert "expected one of" in f"{caught.value} {caught.value.__cause__}"  # Hydra prints both


def test_choices_stay_plain_strings(compose_cfg):
    cfg = compose_cfg("reward=partial")
    assert cfg.reward.kind == "partial" and f"{cfg.reward.kind}" == "partial"


def test_missing_problem_path_fails_in_one_line_and_leaves_no_run_dir(tmp_path):
    run_dir = tmp_path / "run"
    done, _ = _train(f"hydra.run.dir={run_dir}", "problems=jsonl", "logger=none")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "error: problems.path is not set (problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl)"
    )
    assert "Traceback" not in done.stderr and not run_dir.exists()


def test_a_hub_model_out_of_reach_fails_at_once_with_one_message(tmp_path):
    run_dir = tmp_path / "run"
    done, seconds = _train(
        f"hydra.run.dir={run_dir}",
        "model=qwen0.5b",
        "logger=none",
        env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "'Qwen/Qwen2.5-0.5B-Instruct' is not in the Hugging Face cache" in line
    assert "Loading weights" not in done.stderr and "sandbox limits" not in done.stdout + done.stderr
    assert not run_dir.exists() and seconds < 120  # composing (trl's import) is most of it; no retries
