"""codegrpo-pass-rates (codegrpo.commands.pass_rates) as a user runs it: its own --help, a finished rates file
re-filtered with status 0 (no model loaded), and bounds the wrong way round or another problem set's file
each one line with status 2."""

from __future__ import annotations

import json

from codegrpo import build
from codegrpo.data.sets import problem_set_hash
from tests.helpers.commands import command

PASS_RATES = "codegrpo.commands.pass_rates"
NO_MODEL = ("model.gguf_package=", "model.name_or_path=/nonexistent")  # nothing a run could load


def _rates_file(compose_cfg, tmp_path, sha256: str) -> str:
    problems = build.problems(compose_cfg("problems.limit=2", config_name="pass_rates").problems)
    lines = [{"problem_set_sha256": sha256 or problem_set_hash(problems)}] + [
        {"id": p.id, "passed": 1, "samples": 2, "pass_rate": 0.5} for p in problems
    ]
    (tmp_path / "rates.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(tmp_path / "rates.jsonl")


def test_help_is_pass_rates_own():
    done = command(PASS_RATES, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codegrpo-pass-rates: each problem's pass rate under a model")


def test_a_finished_rates_file_is_refiltered_with_status_0(compose_cfg, tmp_path):
    rates, kept = _rates_file(compose_cfg, tmp_path, ""), tmp_path / "kept.jsonl"
    overrides = ("problems.limit=2", f"rates={rates}", f"filtered={kept}", f"hydra.run.dir={tmp_path / 'o'}")
    done = command(PASS_RATES, *overrides, *NO_MODEL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"kept 2/2 problems with 0.0 < pass rate < 1.0 in {kept}" in done.stdout
    assert len(kept.read_text().splitlines()) == 2


def test_another_problem_sets_rates_file_is_one_line_with_status_2(compose_cfg, tmp_path):
    rates = _rates_file(compose_cfg, tmp_path, "0" * 64)
    done = command(PASS_RATES, "problems.limit=2", f"rates={rates}", f"hydra.run.dir={tmp_path / 'o'}", *NO_MODEL)
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {rates} holds the pass rates of another problem set (sha256 000000000000")


def test_bounds_the_wrong_way_round_are_one_line_with_status_2(tmp_path):
    done = command(PASS_RATES, "lo=0.5", "hi=0.5", f"hydra.run.dir={tmp_path / 'o'}")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "no pass rate is kept" in line


def test_a_misspelt_key_is_one_line_with_status_2(tmp_path):
    done = command(PASS_RATES, "low=0.1", f"hydra.run.dir={tmp_path / 'o'}")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: Could not override 'low'") and not (tmp_path / "o").exists()
