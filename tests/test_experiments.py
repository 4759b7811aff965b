"""Every experiment and debug config composes; a 2-job multirun of one step each runs offline."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from codegrpo.commands import CONFIG_DIR
from codegrpo.config.choices import Loader
from codegrpo.data.files import load_problems
from codegrpo.data.repo_tasks import load_repo_tasks
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import train as run_train

EXPERIMENTS = sorted(p.stem for p in (Path(CONFIG_DIR) / "experiment").glob("*.yaml"))
DEBUGS = sorted(p.stem for p in (Path(CONFIG_DIR) / "debug").glob("*.yaml"))


def test_guide_experiment_has_the_guides_settings(compose_cfg):
    cfg = compose_cfg("experiment=guide")
    assert cfg.model.name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert cfg.problems.name == "seed"
    trainer = cfg.trainer
    assert (trainer.num_generations, trainer.per_device_train_batch_size) == (4, 4)
    assert (trainer.max_completion_length, trainer.max_steps, trainer.logging_steps) == (256, 50, 1)


@pytest.mark.parametrize("trainer", ["cpu", "gpu"])
@pytest.mark.parametrize("name", DEBUGS)
def test_a_smoke_config_saves_no_model_and_no_checkpoint_on_any_trainer(compose_cfg, name, trainer):
    cfg = compose_cfg(f"debug={name}", f"trainer={trainer}")
    assert cfg.save_model is False and cfg.trainer.save_strategy == "no"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_and_its_problems_load(compose_cfg, name):
    cfg = compose_cfg(f"experiment={name}")
    if cfg.problems.hub_path:  # a dataset from the Hub: the experiment's own test loads it offline
        assert cfg.problems.name
        return
    if cfg.problems.loader is Loader.repo_tasks:  # an agents' experiment: a folder of repository tasks
        assert load_repo_tasks(cfg.problems.path)[0]
        return
    assert load_problems(cfg.problems.path, cfg.problems.limit)


def test_a_second_stage_without_its_first_stages_model_is_one_line(tmp_path):
    command = ["experiment=deepcoder_32k", "trainer=cpu", "trainer.use_vllm=false", f"hydra.run.dir={tmp_path}"]
    done = run_train(*command)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: this stage of deepcoder's recipe trains from experiment=deepcoder's final model")
    assert "run experiment=deepcoder first" in last and "outputs/runs/deepcoder-16k/final_model" in last
    assert "does not exist" in last


@pytest.mark.parametrize("name", DEBUGS)
def test_debug_config_composes(compose_cfg, name):
    cfg = compose_cfg(f"debug={name}")
    assert cfg.trainer.max_steps == 1 and cfg.logger.backend == "none"


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_vllm_configs_compose(compose_cfg, mode):
    cfg = compose_cfg("trainer=gpu", f"vllm={mode}")
    assert cfg.trainer.use_vllm is True and cfg.trainer.vllm_mode == mode


@pytest.mark.slow
def test_two_job_multirun_offline(tmp_path):
    command = [
        sys.executable,
        "train.py",
        "--multirun",
        "debug=fast",
        "reward=binary,partial",
        f"hydra.sweep.dir={tmp_path}",
    ]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # Job dirs are named by their number and overrides; the sweep ends with a table of every job.
    for job, kind in (("0_debug=fast,reward=binary", "binary"), ("1_debug=fast,reward=partial", "partial")):
        assert (tmp_path / job / "log_history.json").is_file()
        assert f"kind: {kind}" in (tmp_path / job / "config.yaml").read_text()
    with open(tmp_path / "sweep_summary.csv", newline="") as handle:
        summary = [(row["job"], row["status"]) for row in csv.DictReader(handle)]
    assert summary == [("0_debug=fast,reward=binary", "done"), ("1_debug=fast,reward=partial", "done")]
    assert "Sweep summary" in done.stdout


def test_transfer_experiment_evaluates_families_it_never_trains_on(compose_cfg):
    import json

    from codegrpo.build import eval_problems
    from codegrpo.data.sets import load_problem_set

    cfg = compose_cfg("experiment=transfer_cpu")
    assert cfg.problems.name == "transfer" and cfg.problems.split == "train" and cfg.reward.kind == "binary"
    assert cfg.evaluation.before and cfg.evaluation.after and cfg.evaluation.num_samples >= 8
    family = {}
    for name in ("transfer", "transfer_unseen"):
        for line in (PROJECT_ROOT / "problems" / f"{name}.jsonl").read_text().splitlines():
            record = json.loads(line)
            family[record["id"]] = record["family"]
    trained = {family[p.id] for p in load_problem_set(cfg.problems)}
    evaluated = {family[p.id] for p in eval_problems(cfg)}
    assert len(trained) >= 30 and len(evaluated) >= 10 and not trained & evaluated


def test_the_agents_recipe_composes_as_a_tool_calling_run_of_qwen_coder_on_one_gpu():
    """`python train.py experiment=agents_qwen_coder --cfg job`: the Hub and the GPU are out of reach here."""
    done = subprocess.run(
        [sys.executable, "train.py", "experiment=agents_qwen_coder", "--cfg", "job", "--resolve"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for line in (
        "name_or_path: Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "kind: tools",
        "loader: repo_tasks",
        "max_completion_length: 6144",
        "max_new_tokens: 512",
        "  bf16: true",
    ):
        assert line in done.stdout, line
