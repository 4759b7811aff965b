"""RepoEnvironment as TRL uses it: its tools as TRL finds them, episodes on real bwrap, get_reward judged in one
batch, and GRPOTrainer(environment_factory=...) training a step whose tool calls run in the sandbox."""

from __future__ import annotations

import inspect

import pytest

from codegrpo.agents.environment import RepoEnvironment, task_dataset_rows
from codegrpo.errors import UsageError


@pytest.fixture(scope="module")
def make(repo_tasks):
    factory = RepoEnvironment.factory(list(repo_tasks.values()))
    yield factory
    factory.session.close()


def test_trl_finds_the_four_tools_and_renders_each_ones_schema(make):
    from transformers.utils import get_json_schema

    env = make()
    public = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction) if not n.startswith("_")]
    assert public == ["bash", "get_reward", "read_file", "reset", "run_tests", "write_file"]  # TRL's discovery
    schemas = {name: get_json_schema(getattr(env, name))["function"] for name in ("bash", "read_file", "write_file")}
    assert schemas["write_file"]["parameters"]["required"] == ["path", "content"]
    assert get_json_schema(env.run_tests)["function"]["parameters"]["properties"] == {}


def test_episodes_on_the_shipped_tasks_reward_the_reference_and_not_the_rest(make, repo_tasks):
    tasks = list(repo_tasks.values())
    envs = [make() for _ in range(len(tasks) + 1)]
    for env, task in zip(envs, [*tasks, tasks[0]], strict=True):
        assert env.reset(**task_dataset_rows([task], "sys")[0]) == task.instruction
    for env, task in zip(envs[:3], tasks, strict=True):
        assert env.bash(task.solution).startswith("exit code 0")
    assert "passed" in envs[0].run_tests()  # the public tests, after the fix
    backend = make.session.backend
    before = backend.stats().get("sandbox/runs", 0) if hasattr(backend, "stats") else 0
    rewards = [env.get_reward() for env in envs]
    assert rewards == [1.0, 1.0, 1.0, 0.0]  # the last episode never touched its workspace
    assert all(env.judgment is not None for env in envs)
    assert backend.stats().get("sandbox/runs", 0) - before == len(envs)  # one batch: a run per test file each
    envs[3].reset(task_id=tasks[0].id)  # reused, as TRL's pool reuses it: a fresh workspace, no old verdict
    assert envs[3].judgment is None and envs[3].calls == [] and envs[3].get_reward() == 0.0


def test_a_row_without_a_known_task_and_a_tool_before_reset_are_clear_errors(make):
    env = make()
    with pytest.raises(UsageError, match="task_id 'nope' is not among its tasks"):
        env.reset(task_id="nope", prompt=[])
    with pytest.raises(UsageError, match="a tool was called before reset"):
        make().bash("ls")
    assert make().get_reward() is None


@pytest.mark.slow
def test_grpo_trains_a_step_through_the_environment_and_its_tool_calls_run_in_the_sandbox(repo_tasks, tmp_path):
    import os

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from tests.helpers.tiny_agent import COMMAND, tiny_agent

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    tasks = list(repo_tasks.values())
    factory = RepoEnvironment.factory(tasks)
    path = tiny_agent()
    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        max_steps=1,
        logging_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=96,
        max_tool_calling_iterations=2,
        beta=0.0,
        report_to="none",
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path),
        processing_class=AutoTokenizer.from_pretrained(path),
        args=args,
        train_dataset=Dataset.from_list(task_dataset_rows(tasks)),
        environment_factory=factory,
    )
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] > 0 and logged["tools/failure_frequency"] == 0
    assert logged["rewards/RepoEnvironment/mean"] == 0.0  # `ls` fixes nothing: the hidden tests fail
    episodes = [env for env in factory.session.environments if env.calls]
    assert episodes and all(call.tool == "bash" and call.argument == COMMAND for env in episodes for call in env.calls)
    for env in episodes:  # the observation is the sandbox's listing of that episode's own workspace
        top = {name.split("/")[0] for name in env._task.files}
        assert env.calls[0].observation == "exit code 0\n" + "".join(f"{name}\n" for name in sorted(top))
    factory.session.close()


@pytest.mark.slow
def test_the_docs_script_trains_as_it_is_written(tmp_path):
    """docs/agents.md's TRL script, run verbatim in an empty dir with the offline model."""
    import json
    import os
    import subprocess
    import sys

    from codegrpo.resources import PROJECT_ROOT

    text = (PROJECT_ROOT / "docs" / "agents.md").read_text()
    script = text.split("```python\n", 1)[1].split("```", 1)[0]
    script += "\nimport json\nprint('HISTORY', json.dumps(trainer.state.log_history))\n"
    (tmp_path / "agents.py").write_text(script)
    env = os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src"), "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run(
        [sys.executable, "agents.py"], cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 tasks, 0 skipped" in done.stdout.splitlines()  # wandb may say its mode first
    history = json.loads(done.stdout.split("HISTORY ", 1)[1])
    steps = [entry for entry in history if "rewards/RepoEnvironment/mean" in entry]
    assert len(steps) == 2 and all("tools/call_frequency" in entry for entry in steps)
