"""Several rewards: reward.functions and reward.weights resolve (build.reward_functions) to TRL reward
functions, and every bad entry is a one-line UsageError before the model loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codegrpo.build import reward_functions
from codegrpo.data.sets import load_problem_set
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.functions import reward_name
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer


@pytest.fixture
def scorer(compose_cfg, local_sandbox):
    cfg = compose_cfg()
    return Scorer(load_problem_set(cfg.problems), local_sandbox, get_language("python"))


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(
        "def brevity(completions, **kwargs):\n    return [-len(c[0]['content']) / 100 for c in completions]\n"
        "def get_constant(value=1.0):\n    def constant(completions, **kwargs):\n"
        "        return [value] * len(completions)\n    return constant\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_rewards"


def test_the_default_is_the_guides_single_code_reward(compose_cfg, scorer):
    functions, weights = reward_functions(compose_cfg(), scorer)
    assert [reward_name(f) for f in functions] == ["code_reward"] and weights is None


def test_code_reward_trl_builtins_and_user_functions_with_weights(compose_cfg, scorer, user_module):
    cfg = compose_cfg(
        f"reward.functions=[code_reward,think_format_reward,get_soft_overlong_punishment,{user_module}:brevity,"
        f"{user_module}:get_constant]",
        "reward.weights=[1,0.5,0.2,0.1,0.3]",
        "+reward.args.get_constant={value:2.0}",
        "trainer.max_completion_length=64",
    )
    functions, weights = reward_functions(cfg, scorer)
    assert [reward_name(f) for f in functions] == [
        "code_reward",
        "think_format_reward",
        "soft_overlong_punishment_reward",
        "brevity",
        "constant",
    ]
    assert weights == [1.0, 0.5, 0.2, 0.1, 0.3]
    # The factory got the trainer's completion length; reward.args reached the user's factory.
    assert functions[2].max_completion_len == 64 and functions[2].soft_punish_cache == 16
    completion = [[{"role": "assistant", "content": "<think>x</think> y"}]]
    assert functions[1](completion) == [1.0] and functions[4](completion) == [2.0]
    assert functions[2](completion_ids=[[1] * 56]) == [-0.5]


def test_trainer_reward_weights_are_checked_too(compose_cfg, scorer):
    with pytest.raises(UsageError) as error:
        reward_functions(compose_cfg("trainer.reward_weights=[1.0,2.0]"), scorer)
    assert "reward.weights has 2 values for 1 reward functions" in str(error.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["reward.functions=[nope]"], "unknown reward 'nope'; use code_reward, one of trl.rewards"),
        (["reward.functions=[no_such_pkg.mod:f]"], "cannot import 'no_such_pkg.mod'"),
        (["reward.functions=[codegrpo.reward.scorer:no_such_function]"], "has no attribute 'no_such_function'"),
        (
            ["reward.functions=[code_reward,think_format_reward]", "reward.weights=[1.0]"],
            "reward.weights has 1 values for 2 reward functions",
        ),
        (["reward.functions=[]"], "reward.functions is empty"),
        (["reward.functions=[code_reward,code_reward]"], "the same name ['code_reward']"),
        (["+reward.args.think_format_reward={x:1}"], "does not list"),
        (
            ["reward.functions=[think_format_reward]", "+reward.args.think_format_reward={x:1}"],
            "only get_* factories take arguments",
        ),
        (
            ["reward.functions=[get_repetition_penalty_reward]", "+reward.args.get_repetition_penalty_reward={bad:1}"],
            "reward.args.get_repetition_penalty_reward: ",
        ),
    ],
)
def test_bad_entries_are_one_line_usage_errors(compose_cfg, scorer, overrides, message):
    with pytest.raises(UsageError) as error:
        reward_functions(compose_cfg(*overrides), scorer)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_reward_stops_train_py_before_the_model_loads(tmp_path):
    done = subprocess.run(
        [sys.executable, "train.py", f"hydra.run.dir={tmp_path}", "logger=none", "reward.functions=[code_reward,nope]"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert "unknown reward 'nope'" in line and "Loading weights" not in done.stderr
