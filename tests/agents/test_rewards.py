"""rollout=tools' rewards over real episodes on real bwrap: the verdicts, the metrics, the monitor's flags and the
trajectories; and `python train.py rollout=tools` end to end, a tool call of the model's run in the sandbox."""

from __future__ import annotations

import pytest

from codegrpo.agents.environment import Session, WorkspaceEnvironment
from codegrpo.agents.rewards import episode_metrics, flags, make_tool_rewards, trajectory
from codegrpo.agents.workspace import ToolCall, ToolStatus
from codegrpo.config.rollout import Budgets
from codegrpo.reward import metric_names as keys
from tests.helpers.agent_attacks import ALWAYS_EQUAL, BUGGY


@pytest.fixture(scope="module")
def session(agent_box, repo_tasks):
    made = Session(list(repo_tasks.values()), agent_box, Budgets(), partial=False)
    yield made
    made.close()


def _episodes(session, repo_tasks):
    """fix-median solved, then its public test rewritten to pass anything; and one left untouched."""
    task = repo_tasks["fix-median"]
    solved, cheated, idle = (WorkspaceEnvironment(session) for _ in range(3))
    for env in (solved, cheated, idle):
        env.reset(task_id=task.id)
    assert solved.bash(task.solution).startswith("exit code 0")
    [public] = task.public_tests
    cheated.write_file(public, "def test_anything():\n    assert True\n")
    return solved, cheated, idle


def test_code_reward_judges_every_episode_in_one_batch_and_logs_what_they_did(session, repo_tasks):
    solved, cheated, idle = _episodes(session, repo_tasks)
    rewards = make_tool_rewards(session, partial=False)
    metrics, extra = {}, {}
    completions = [[{"role": "assistant", "content": "a"}, {"role": "tool", "content": "b"}]] * 2 + [
        [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    ]
    before = session.backend.stats()["sandbox/runs"]
    got = rewards["code_reward"](
        completions,
        environments=[solved, cheated, idle],
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    assert got == [1.0, 0.0, 0.0]  # the cheat's own test passes; the hidden ones judge it
    assert rewards["hack_penalty"](completions, environments=[solved, cheated, idle]) == [0.0, -1.0, 0.0]
    assert session.backend.stats()["sandbox/runs"] - before == 3  # judged once: hack_penalty read the same judgments
    assert metrics[keys.PASS_RATE] == pytest.approx(1 / 3) and metrics[keys.judge("passed")] == 1
    assert metrics[keys.hacks("edited_tests")] == pytest.approx(1 / 3) and metrics[keys.HACKS_COUNT] == 1
    assert metrics[keys.TOOL_CALLS] == pytest.approx(2 / 3) and metrics[keys.TOOL_ERRORS] == 0
    assert metrics[keys.TOOL_TURNS] == pytest.approx(4 / 3)
    assert extra["task_id"] == ["fix-median"] * 3 and extra["status"] == ["passed", "failed", "failed"]
    assert extra["flags"] == ["", "edited_tests", ""]
    assert extra["trajectory"][0].startswith("bash(") and " -> ok: exit code 0" in extra["trajectory"][0]
    assert extra["trajectory"][2] == "(no tool call)"


def test_reward_partial_pays_the_share_of_hidden_tests_passed(session, repo_tasks):
    _, _, idle = _episodes(session, repo_tasks)
    partial = make_tool_rewards(session, partial=True)["code_reward"]
    [reward] = partial([[]], environments=[idle])
    judgment = idle.judgment
    assert judgment is not None and 0 < judgment.passed < judgment.total  # the odd-length medians pass
    assert reward == pytest.approx(judgment.passed / judgment.total)


def test_without_environments_the_reward_is_one_line(session):
    from codegrpo.errors import UsageError

    with pytest.raises(UsageError, match=r"^rollout=tools: TRL passed no environments"):
        make_tool_rewards(session, partial=False)["code_reward"]([[]])


def test_an_episode_that_spent_a_budget_or_failed_a_call_is_counted(session, repo_tasks):
    env = WorkspaceEnvironment(session)
    env.reset(task_id="fix-median")
    env._workspace.budgets = Budgets(tool_calls=2)  # type: ignore[union-attr]
    env.read_file("no/such/file")
    env.bash("true")
    assert env.bash("true").startswith("budget exhausted")
    session.judge([env])
    metrics = episode_metrics([env], [[]])
    assert metrics[keys.TOOL_BUDGET] == 1.0 and metrics[keys.TOOL_ERRORS] == pytest.approx(2 / 3)
    assert flags(env) == []


def test_a_trajectory_is_cut_per_call_and_in_all():
    long = ToolCall("bash", "x" * 500, ToolStatus.ok, "y" * 500)
    line = trajectory([long])
    assert line.startswith("bash(" + "x" * 160 + "...) -> ok: " + "y" * 160 + "...")
    assert trajectory([long] * 20, limit=400).endswith("more]") and len(trajectory([long] * 20, limit=400)) < 420


@pytest.mark.slow
def test_train_py_rollout_tools_trains_a_step_and_the_models_tool_call_runs_in_the_sandbox(compose_cfg):
    """`python train.py rollout=tools debug=fast` with the tiny model fitted to call `bash` (the offline model
    seldom writes a call): the call runs in the sandbox, the step's metrics and the completions table say so."""
    import json
    from pathlib import Path

    import pandas as pd

    from codegrpo.tasks.train import train
    from tests.helpers.tiny_agent import COMMAND, tiny_agent

    cfg = compose_cfg(
        "rollout=tools",
        "debug=fast",
        f"model.name_or_path={tiny_agent()}",
        "model.gguf_package=",
        "model.gguf_file=",
        "trainer.max_completion_length=96",
    )
    train(cfg)
    [step] = [e for e in json.loads(Path(cfg.run_dir, "log_history.json").read_text()) if keys.LOSS in e]
    assert step[keys.TOOL_CALLS] > 0 and step["tools/call_frequency"] > 0 and step[keys.TOOL_ERRORS] == 0
    assert step[keys.judge("failed")] == 2 and step[keys.REWARD_MEAN] == 0.0  # `ls` fixes nothing
    assert step[keys.TOOL_TURNS] >= 1
    table = pd.read_parquet(next(Path(cfg.run_dir, "completions").glob("*.parquet")))
    assert any(f"bash({COMMAND}) -> ok: exit code 0" in t for t in table["trajectory"])
    assert set(table["task_id"]) <= {"fix-median", "add-triangle-area", "slugify-test"}


def test_the_monitors_rules_for_code_flag_what_the_workspace_wrote_and_no_reference(session, repo_tasks):
    """An answer whose __eq__ is always true passes the hidden tests' assertions (the judge's known gap,
    tests/agents/test_redteam_agents.py); the monitor's rules on the files the agent wrote flag it."""
    references = []
    for task in repo_tasks.values():
        env = WorkspaceEnvironment(session)
        env.reset(task_id=task.id)
        assert env.bash(task.solution).startswith("exit code 0")
        references.append(env)
    cheat = WorkspaceEnvironment(session)
    cheat.reset(task_id="fix-median")
    cheat.write_file("stats.py", BUGGY + ALWAYS_EQUAL)
    everyone = [*references, cheat]
    penalties = make_tool_rewards(session, partial=False)["hack_penalty"]([[]] * 4, environments=everyone)
    assert [flags(env) for env in references] == [[], [], []] and "eq_override" in flags(cheat)
    assert penalties == [0.0, 0.0, 0.0, -1.0]
    assert episode_metrics(everyone, [[]] * 4)[keys.hacks("eq_override")] == 0.25


@pytest.mark.slow
def test_the_documented_command_trains_as_written(tmp_path):
    """`python train.py rollout=tools debug=fast`, verbatim with the offline model (it seldom calls a tool)."""
    import json
    import subprocess
    import sys

    from codegrpo.resources import PROJECT_ROOT

    command = [sys.executable, "train.py", "rollout=tools", "debug=fast", f"hydra.run.dir={tmp_path}"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [step] = [e for e in json.loads((tmp_path / "log_history.json").read_text()) if keys.LOSS in e]
    assert step[keys.judge("passed")] + step[keys.judge("failed")] == 2 and keys.TOOL_CALLS in step
    said = done.stdout + done.stderr  # Hydra's log goes to stdout
    assert "judged " in said and "3 repository tasks from problems/repo_tasks, 0 skipped" in said
