"""codegrpo-evaluate (codegrpo.commands.evaluate) as a user runs it: its own --help, a config that does not
compose and a failed evaluation each one line with status 2, and a failed evaluation leaves no run dir."""

from __future__ import annotations

from codegrpo.evaluation.results import save
from tests.helpers.commands import command
from tests.helpers.evaluations import evaluation_of

EVALUATE = "codegrpo.commands.evaluate"


def _one_error_line(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    return line


def test_help_is_evaluates_own():
    done = command(EVALUATE, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codegrpo-evaluate: pass@k of a model or checkpoint")


def test_a_misspelt_key_is_one_line_before_anything_runs(tmp_path):
    line = _one_error_line(command(EVALUATE, f"hydra.run.dir={tmp_path / 'o'}", "evaluation.num_sample=3"))
    assert line.startswith("error: Could not override 'evaluation.num_sample'")
    assert not (tmp_path / "o").exists()


def test_a_failed_evaluation_is_one_line_and_leaves_no_run_dir(tmp_path):
    out = tmp_path / "o"
    done = command(EVALUATE, f"hydra.run.dir={out}", f"compare=[{tmp_path / 'a.json'},{tmp_path / 'b.json'}]")
    assert _one_error_line(done) == f"error: compare: no such eval file {tmp_path / 'a.json'}"
    assert not out.exists()


def test_two_eval_files_compared_leave_their_results_and_the_log_in_the_run_dir(tmp_path):
    for name, counts in (("a", (0, 1, 1)), ("b", (1, 1, 0))):
        save(evaluation_of({"p": counts, "q": counts}), tmp_path / f"{name}.json")
    out = tmp_path / "o"
    done = command(EVALUATE, f"hydra.run.dir={out}", f"compare=[{tmp_path / 'a.json'},{tmp_path / 'b.json'}]")
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"comparison.json", "eval_a.json", "eval_b.json", "evaluate.log"} <= {p.name for p in out.iterdir()}
