"""The evaluate task (codegrpo.tasks.evaluate): one evaluation of a model in the real sandbox (eval.json), two
eval files compared (comparison.json), the protocol's breakdown and the paper's figure beside the run's, and
the user's mistakes refused before a model loads."""

from __future__ import annotations

import json

import pytest
import yaml

from codegrpo.data.problems import parse_problem
from codegrpo.errors import UsageError
from codegrpo.evaluation.results import Evaluation, save
from codegrpo.resources import PROJECT_ROOT
from codegrpo.tasks.evaluate import evaluate, protocol_results, protocol_summary
from tests.helpers.evaluations import evaluation_of

LIVECODEBENCH = ("protocol=livecodebench", "problems.data_files=problems/livecodebench_cpu.jsonl")
RECIPE = {
    "name": "deepcoder",
    "reported_for": "org/paper-model",
    "reported": {"livecodebench/pass@1": 60.0, "humaneval_plus/pass@1": 40.0},
    "reported_base": {"livecodebench/pass@1": 50.0},
}


def _problem(pid: str, difficulty: str):
    record = {"id": pid, "prompt": "p", "fn_name": "f", "tests": [{"input": [1], "output": 1}]}
    return parse_problem(record | {"difficulty": difficulty, "released": "2024-09-01"}, pid)


def _results() -> tuple[Evaluation, list]:
    """Four problems of two samples: the hard ones pass 1 of 2 and 0 of 2, the easy ones 2 and 1."""
    results = evaluation_of({"h1": (1, 1, 0), "e1": (2, 0, 0), "h2": (0, 2, 0), "e2": (1, 0, 1)})
    return results, [_problem("h1", "hard"), _problem("e1", "easy"), _problem("h2", "hard"), _problem("e2", "easy")]


def test_protocol_results_break_pass1_down_and_say_where_the_run_differs_from_the_paper(compose_cfg):
    cfg = compose_cfg(*LIVECODEBENCH, "evaluation.limit=4", config_name="evaluate")
    results, problems = _results()
    found = protocol_results(cfg, results, problems, {"recipe": RECIPE}, base=False)
    assert found["name"] == "livecodebench" and found["by"]["attribute"] == "difficulty"
    assert found["by"]["values"] == {
        "easy": {"problems": 2, "pass@1": 0.75},
        "hard": {"problems": 2, "pass@1": 0.25},
    }
    paper = found["beside_paper"]
    assert (paper["paper"], paper["run"], paper["model"]) == (60.0, 50.0, "trained from org/paper-model")
    assert paper["differ"][:2] == [
        "the problems: problems/livecodebench_cpu.jsonl stands in for the benchmark's "
        "hf://datasets/livecodebench/code_generation_lite/test*.jsonl",
        "evaluation.limit=4: the first 4 problems",
    ]


def test_protocol_results_of_the_base_model_are_beside_the_papers_base_figure(compose_cfg):
    cfg = compose_cfg("protocol=livecodebench", config_name="evaluate")  # the benchmark itself, every problem
    results, problems = _results()
    paper = protocol_results(cfg, results, problems, {"recipe": RECIPE}, base=True)["beside_paper"]
    assert (paper["paper"], paper["model"], paper["differ"]) == (50.0, "base: org/paper-model", [])


def test_protocol_results_of_a_model_of_no_run_have_no_paper_beside_them(compose_cfg):
    cfg = compose_cfg(*LIVECODEBENCH, config_name="evaluate")
    results, problems = _results()
    assert set(protocol_results(cfg, results, problems, None, base=True)) == {"name", "by"}
    plus = compose_cfg("protocol=humaneval_plus", config_name="evaluate")  # no breakdown
    assert protocol_results(plus, results, problems, None, base=True) == {"name": "humaneval_plus"}


def test_protocol_summary_is_a_line_per_breakdown_and_per_paper_figure(compose_cfg):
    cfg = compose_cfg(*LIVECODEBENCH, "evaluation.limit=4", "evaluation.bootstrap=200", config_name="evaluate")
    results, problems = _results()
    found = protocol_results(cfg, results, problems, {"recipe": RECIPE}, base=False)
    low, high = found["beside_paper"]["ci95"]
    assert protocol_summary(cfg.protocol, found, "run/final_model").splitlines() == [
        "run/final_model: livecodebench pass@1 by difficulty: easy 0.750 (2 problems), hard 0.250 (2 problems)",
        f"run/final_model: beside the paper (deepcoder, trained from org/paper-model): livecodebench/pass@1 50.0 "
        f"[{low:.1f}, {high:.1f}] here against 60.0 reported: -10.0 points",
        "  differs: the problems: problems/livecodebench_cpu.jsonl stands in for the benchmark's "
        "hf://datasets/livecodebench/code_generation_lite/test*.jsonl",
        "  differs: evaluation.limit=4: the first 4 problems",
    ]
    assert protocol_summary(cfg.protocol, {"name": "livecodebench"}, "base") == ""


def test_compare_takes_exactly_two_items(compose_cfg, tmp_path):
    with pytest.raises(UsageError, match="compare takes two eval files or checkpoints, got 3"):
        evaluate(compose_cfg("compare=[a.json,b.json,c.json]", config_name="evaluate"))


def test_compare_names_an_eval_file_that_is_not_there(compose_cfg, tmp_path):
    save(evaluation_of({"p": (1, 1, 0)}), tmp_path / "a.json")
    with pytest.raises(UsageError, match=f"compare: no such eval file {tmp_path / 'b.json'}"):
        evaluate(compose_cfg(f"compare=[{tmp_path / 'a.json'},{tmp_path / 'b.json'}]", config_name="evaluate"))


def test_two_eval_files_are_compared_without_a_model_or_sandbox(compose_cfg, tmp_path, capsys):
    ids = [f"p{i}" for i in range(4)]
    save(evaluation_of(dict.fromkeys(ids, (0, 2, 0))), tmp_path / "a.json")
    save(evaluation_of(dict.fromkeys(ids, (1, 1, 0))), tmp_path / "b.json")
    items = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    cfg = compose_cfg(f"compare=[{items[0]},{items[1]}]", "model.name_or_path=/nonexistent", config_name="evaluate")
    comparison = evaluate(cfg)
    assert comparison.change == 0.5 and comparison.compared == items
    run_dir = tmp_path / "evaluate"
    assert json.loads((run_dir / "comparison.json").read_text())["change"] == 0.5
    assert json.loads((run_dir / "eval_b.json").read_text()) == json.loads((tmp_path / "b.json").read_text())
    assert not (run_dir / "eval.json").exists()
    assert f"results in {run_dir / 'comparison.json'}" in capsys.readouterr().out


def test_a_protocol_on_problems_without_its_fields_stops_before_the_model_loads(compose_cfg, tiny_model):
    small = ("evaluation.limit=1", "evaluation.num_samples=1", "evaluation.max_new_tokens=1")  # were it to run
    cfg = compose_cfg(*tiny_model, "protocol=livecodebench", "problems=trivial", *small, config_name="evaluate")
    with pytest.raises(UsageError, match="protocol=livecodebench needs each problem's 'released' field"):
        evaluate(cfg)


def test_a_missing_checkpoint_is_named_before_anything_loads(compose_cfg, tmp_path):
    missing = tmp_path / "no" / "final_model"
    with pytest.raises(UsageError, match=f"checkpoint={missing}: .*does not exist"):
        evaluate(compose_cfg(f"checkpoint={missing}", config_name="evaluate"))


def test_the_base_model_is_evaluated_in_the_sandbox_into_eval_json(compose_cfg, tmp_path, capsys, tiny_model):
    cfg = compose_cfg(
        *tiny_model,
        "problems=trivial",
        "evaluation.split=eval",
        "evaluation.limit=2",
        "evaluation.num_samples=2",
        "evaluation.temperature=1.0",
        "evaluation.max_new_tokens=4",
        config_name="evaluate",
    )
    results = evaluate(cfg)
    assert results.num_problems == 2 and results.num_samples == 2 and len(results.samples) == 4
    assert {s["reward"] for s in results.samples} <= {0.0, 1.0} and results.protocol is None
    assert results.record["sampling"]["num_samples"] == 2
    saved = json.loads((tmp_path / "evaluate" / "eval.json").read_text())
    assert saved["num_problems"] == 2 and saved["record"] == json.loads(json.dumps(results.record))
    assert capsys.readouterr().out.strip().endswith(f"on 2 problems; results in {tmp_path / 'evaluate' / 'eval.json'}")


def test_a_runs_checkpoint_is_evaluated_under_a_protocol_beside_its_recipes_figure(compose_cfg, tmp_path, tiny_model):
    from tests.helpers.tiny_model import tiny_model as tiny_model_dir

    run = tmp_path / "run"
    run.mkdir()
    (run / "final_model").symlink_to(tiny_model_dir())
    (run / "config.yaml").write_text(yaml.safe_dump({"recipe": RECIPE}))
    sample = PROJECT_ROOT / "tests" / "data" / "code_datasets" / "humaneval_plus.jsonl"
    cfg = compose_cfg(
        *tiny_model,
        "protocol=humaneval_plus",
        "problems.hub_path=json",
        f"problems.data_files={sample}",
        "evaluation.limit=2",
        "evaluation.max_new_tokens=4",
        "evaluation.bootstrap=100",
        f"checkpoint={run / 'final_model'}",
        config_name="evaluate",
    )
    results = evaluate(cfg)
    assert results.num_problems == 2 and results.protocol["name"] == "humaneval_plus"
    paper = results.protocol["beside_paper"]
    assert (paper["paper"], paper["model"]) == (40.0, "trained from org/paper-model")
    assert paper["differ"] == [
        f"the problems: {sample} stands in for the benchmark's evalplus/humanevalplus",
        "evaluation.limit=2: the first 2 problems",
    ]
    saved = json.loads((tmp_path / "evaluate" / "eval.json").read_text())
    assert saved["protocol"]["beside_paper"]["paper"] == 40.0


# -- rollout=tools: an agent's episodes on repository tasks ------------------------------------------------


def test_an_agents_evaluation_plays_episodes_and_judges_their_workspaces(compose_cfg):
    """codegrpo-evaluate rollout=tools, with the tiny model fitted to call `bash ls` then stop: each episode's
    call runs in the sandbox on its own workspace, nothing is fixed, pass@k is 0 and the samples say why."""
    from tests.helpers.tiny_agent import COMMAND, tiny_agent

    overrides = [f"model.name_or_path={tiny_agent()}", "model.gguf_package=", "model.gguf_file="]
    sampling = ["evaluation.num_samples=2", "evaluation.k=[1,2]", "evaluation.temperature=1.0"]
    sampling += ["evaluation.max_new_tokens=48"]
    cfg = compose_cfg("rollout=tools", *overrides, *sampling, config_name="evaluate")
    results = evaluate(cfg)
    assert results.pass_at == {1: 0.0, 2: 0.0} and results.num_problems == 3 and results.num_samples == 2
    assert results.per_problem == {"add-triangle-area": 0, "fix-median": 0, "slugify-test": 0}
    assert results.status_counts == {"failed": 6} and results.feedback is not None
    assert results.feedback["episodes/tool_calls"] == 1.0 and results.feedback["episodes/turns"] == 2.0
    for sample in results.samples:
        assert sample["status"] == "failed" and sample["turns"] == 2 and sample["reply"].startswith("Done.")
        assert sample["trajectory"].startswith(f"bash({COMMAND}) -> ok: exit code 0")
    saved = json.loads((PROJECT_ROOT / cfg.run_dir / "eval.json").read_text())
    assert saved["record"]["rollout"] == "tools" and saved["record"]["problems"]["count"] == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["problems=repo_tasks"], r"^problems=repo_tasks holds repository tasks, for agents: add rollout=tools$"),
        (["rollout=tools", "problems=trivial"], r"^rollout=tools works on repository tasks, not problems=trivial"),
        (["rollout=tools", "evaluation.backend=vllm"], r"^rollout=tools evaluates with evaluation.backend=transf"),
        (["rollout=tools", "model.chat_template=own"], r"cannot render tool calls, .*model.chat_template=tool_chatml"),
    ],
)
def test_what_an_agents_evaluation_cannot_do_is_one_line_before_a_model_loads(compose_cfg, overrides, message):
    with pytest.raises(UsageError, match=message) as raised:
        evaluate(compose_cfg(*overrides, config_name="evaluate"))
    assert "\n" not in str(raised.value)


def test_an_agents_evaluation_of_a_missing_checkpoint_names_the_checkpoint(compose_cfg, tmp_path):
    with pytest.raises(UsageError, match=r"^checkpoint="):
        evaluate(compose_cfg("rollout=tools", f"checkpoint={tmp_path / 'final_model'}", config_name="evaluate"))
