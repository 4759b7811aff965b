"""GRPO on a public code-RL dataset's own schema, read from a local file: the stdin/stdout form through
a real (tiny, fitted) model, real TRL and the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

TACO = "tests/data/code_datasets/taco.arrow"


@pytest.mark.slow
def test_two_cpu_steps_on_taco_from_a_local_file_log_rewards_with_reasons(compose_cfg, tiny_coder):
    """On the tiny coder: its one program reads a line and prints it, which fails TACO's tests with a reason."""
    from codegrpo.tasks.train import train

    cfg = compose_cfg(
        *tiny_coder,
        "problems=taco",
        "problems.hub_path=arrow",
        f"problems.data_files={TACO}",
        "logger=none",
        "plots=false",
        "save_model=false",
        "trainer.max_steps=2",
        "trainer.max_completion_length=48",
        "trainer.num_generations=2",
        "trainer.per_device_train_batch_size=2",
        "trainer.log_completions=true",
        "completions_every=1",
        "reward=partial",
    )
    train(cfg)
    run_dir = Path(cfg.run_dir)
    steps = [row for row in json.loads((run_dir / "log_history.json").read_text()) if "reward" in row]
    assert len(steps) == 2
    for row in steps:
        statuses = sum(row[f"status/{s}"] for s in ("passed", "failed", "error", "timeout", "no_code", "infra"))
        assert statuses == 2 and row["status/infra"] == 0 and 0.0 <= row["reward"] <= 1.0
    tables = sorted(run_dir.glob("completions/completions_*.parquet"))
    assert len(tables) == 2
    table = pd.concat(pd.read_parquet(t) for t in tables)
    assert table["problem_id"].str.startswith("taco/").all()
    failed = table[table["status"] != "passed"]
    # Every completion that did not pass says why: which test and how, or that it had no code.
    assert len(failed) and all(reason for reason in failed["error"])
    ran = failed[failed["status"].isin(["failed", "error", "timeout"])]
    assert len(ran) and all(reason.startswith("test ") for reason in ran["error"]), ran["error"].tolist()
