"""The sweep summary: each job's final metrics in one table when a --multirun ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from codegrpo.errors import UsageError
from codegrpo.tracking.sweep import SweepSummary, format_rows, summarize


def _job(sweep: Path, name: str, history: list[dict] | None = None, failed: bool = False) -> Path:
    job = sweep / name
    (job / ".hydra").mkdir(parents=True)
    if history is not None:
        (job / "log_history.json").write_text(json.dumps(history))
    if failed:
        (job / "FAILED").write_text("the sandbox could not start\n")
    return job


def test_the_summary_has_one_row_per_job_in_job_order(tmp_path, capsys):
    steps = [{"step": 1, "reward": 0.25, "pass_rate": 0.25}, {"step": 2, "reward": 0.5, "pass_rate": 0.5}]
    done = _job(tmp_path, "10_reward=partial", steps)
    (done / "comparison.json").write_text(json.dumps({"change": 0.125}))
    _job(tmp_path, "2_reward=binary", [{"step": 1, "reward": 0.0, "pass_rate": 0.0}])
    _job(tmp_path, "3_trainer.learning_rate=1", failed=True)
    (tmp_path / "not-a-job").mkdir()

    rows = summarize(tmp_path)
    assert [r["job"] for r in rows] == ["2_reward=binary", "3_trainer.learning_rate=1", "10_reward=partial"]
    assert [r["status"] for r in rows] == ["done", "failed", "done"]
    assert rows[2]["final_reward"] == 0.5 and rows[2]["steps"] == 2 and rows[2]["eval_change"] == 0.125
    assert (tmp_path / "sweep_summary.csv").read_text().splitlines()[0] == (
        "job,status,steps,final_reward,pass_rate,eval_change"
    )
    assert "0.500" in format_rows(rows).splitlines()[-1]

    SweepSummary().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}}))
    printed = capsys.readouterr().out
    assert "Sweep summary" in printed and "10_reward=partial" in printed


def test_train_config_registers_the_callback():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from codegrpo.commands import CONFIG_DIR

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="train", return_hydra_config=True)
    GlobalHydra.instance().clear()
    callback = instantiate(cfg.hydra.callbacks.sweep_summary)
    assert isinstance(callback, SweepSummary)


def test_the_sweep_optimizes_the_metric_it_names_which_the_run_has(compose_cfg):
    """hparams_search=optuna names its objective, optimized_metric (the default run's too: final_reward_mean):
    a metric of the run's result, checked before the model loads; train returns its value."""
    from codegrpo.build import check_optimized_metric
    from codegrpo.reward.metric_names import FINAL_REWARD_MEAN
    from codegrpo.tasks.train import optimized_value

    for overrides in ((), ("hparams_search=optuna",)):
        cfg = compose_cfg(*overrides)
        assert cfg.optimized_metric == FINAL_REWARD_MEAN
        check_optimized_metric(cfg)
        assert optimized_value({FINAL_REWARD_MEAN: 0.5, "train_runtime": 2.0}, cfg.optimized_metric) == 0.5
    cfg = compose_cfg(
        "hparams_search=optuna", "optimized_metric=eval_change", "evaluation.before=true", "evaluation.after=true"
    )
    check_optimized_metric(cfg)
    assert optimized_value({"eval_change": 0.125}, cfg.optimized_metric) == 0.125
    assert optimized_value({}, compose_cfg("optimized_metric=null").optimized_metric) is None  # returns nothing


def test_a_metric_the_run_cannot_have_or_did_not_have_is_one_line_naming_it(compose_cfg):
    from codegrpo.build import check_optimized_metric
    from codegrpo.tasks.train import optimized_value

    with pytest.raises(UsageError) as error:
        check_optimized_metric(compose_cfg("hparams_search=optuna", "optimized_metric=val/acc_best"))
    assert str(error.value).startswith("optimized_metric=val/acc_best is not a metric of a training run's result")
    assert "final_reward_mean, eval_change" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(UsageError, match="set both to true"):  # evaluation.before and .after are off by default
        check_optimized_metric(compose_cfg("optimized_metric=eval_change"))
    # After training: a run that logged no step has no final reward.
    with pytest.raises(UsageError) as error:
        optimized_value(
            {"train_runtime": 2.0, "train_loss": 0.0}, compose_cfg("hparams_search=optuna").optimized_metric
        )
    assert str(error.value) == (
        "optimized_metric=final_reward_mean: the run's result has no final_reward_mean, only train_loss, train_runtime"
    )
