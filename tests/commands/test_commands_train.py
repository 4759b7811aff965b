"""codegrpo-train (codegrpo.commands.train; ``python train.py``) as a user runs it: it composes train.yaml,
``rerun=<run dir>`` repeats a recorded run's overrides, and a misspelt key, a dir that is not a run and a run
that fails before its first step are each one line with status 2, the last leaving no run dir."""

from __future__ import annotations

from tests.helpers.commands import command

TRAIN = "codegrpo.commands.train"


def _one_error_line(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    return line


def test_it_composes_the_training_config():
    done = command(TRAIN, "--cfg", "job")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\ntrainer:\n" in done.stdout and "\nseed: 42\n" in done.stdout and "\nrecipe:" in done.stdout


def test_rerun_composes_the_recorded_overrides_then_the_new_ones(tmp_path):
    record = tmp_path / "run" / ".hydra"
    record.mkdir(parents=True)
    (record / "overrides.yaml").write_text("- seed=7\n- problems.limit=3\n")
    (record / "hydra.yaml").write_text("hydra:\n  job:\n    config_name: train\n")
    done = command(TRAIN, f"rerun={tmp_path / 'run'}", "problems.limit=5", "--cfg", "job")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\nseed: 7\n" in done.stdout and "\n  limit: 5\n" in done.stdout


def test_rerun_of_a_dir_that_is_not_a_run_is_one_line():
    line = _one_error_line(command(TRAIN, "rerun=/nonexistent/run"))
    assert line.startswith("error: rerun=/nonexistent/run: not a run dir (no .hydra/overrides.yaml and hydra.yaml)")


def test_a_misspelt_key_is_one_line():
    line = _one_error_line(command(TRAIN, "trainer.learning_rte=1"))
    assert line == "error: Could not override 'trainer.learning_rte': Key 'learning_rte' not in 'GRPOTrainerConfig'"


def test_a_run_that_fails_before_its_first_step_is_one_line_and_leaves_no_run_dir(tmp_path):
    missing, run = tmp_path / "missing.jsonl", tmp_path / "run"
    done = command(TRAIN, "logger=none", "problems=jsonl", f"problems.path={missing}", f"hydra.run.dir={run}")
    assert _one_error_line(done) == f"error: problem file {missing} does not exist (set problems.path)"
    assert not run.exists()
