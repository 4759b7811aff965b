"""The composition root (codegrpo.build): each piece of a run built from the typed config. The problems an
evaluation scores, a rank's share of the sandbox, the scorer's settings, the checkpoint in the model group's
place, the dataset's columns, what the reward scores under rollout=feedback, the reward functions and their
weights, the rollout, the sampler's state and trl.GRPOConfig's arguments. Nothing here loads a model or trains."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from codegrpo import build
from codegrpo.config.choices import Form, RewardKind, Split
from codegrpo.config.model import ModelConfig
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.problems import IOTest, Problem
from codegrpo.errors import UsageError
from codegrpo.sandbox.base import Outcome, Program, RunResult
from codegrpo.sandbox.memory import MemoryBackend


def _never(program: Program, stdin: str | None) -> RunResult:
    return RunResult(Outcome.EXITED, 0, stdout="", duration_s=0.0)


def _echo(*inputs: str, public: int = 1) -> Problem:
    tests = tuple(IOTest(i, i) for i in inputs)
    return Problem("echo", "Print it.", "", Form.stdio, tests=tests, public_tests=tests[:public])


# -- the problems -------------------------------------------------------------------------------------------


def test_the_problems_are_the_configured_split_of_the_problem_set(compose_cfg):
    cfg = compose_cfg()
    train = build.problems(cfg.problems)
    every = build.problems(dataclasses.replace(cfg.problems, split=Split.all))
    assert cfg.problems.split is Split.train and 0 < len(train) < len(every)
    assert {p.id for p in train} < {p.id for p in every}


def test_an_evaluation_scores_the_held_out_split_of_every_problem_whatever_problems_limit_says(compose_cfg):
    cfg = compose_cfg("problems.limit=3")
    train = build.problems(cfg.problems)
    held_out = build.eval_problems(cfg)
    every = build.problems(dataclasses.replace(cfg.problems, split=Split.all, limit=None))
    assert len(train) == 3 and len(held_out) > 3
    assert {p.id for p in held_out} == {p.id for p in every} - {
        p.id for p in build.problems(dataclasses.replace(cfg.problems, limit=None))
    }


def test_evaluation_limit_keeps_the_first_problems(compose_cfg):
    everything = build.eval_problems(compose_cfg())
    assert [p.id for p in build.eval_problems(compose_cfg("evaluation.limit=4"))] == [p.id for p in everything[:4]]


@pytest.mark.parametrize(
    ("overrides", "warns"),
    [
        ([], False),  # problems.split=train, evaluation.split=eval: held out
        (["problems.split=all"], True),
        (["problems.split=eval"], True),
        (["problems.split=all", "evaluation.split=all"], False),  # asked for everything
    ],
)
def test_an_evaluation_that_overlaps_the_training_problems_warns(compose_cfg, caplog, overrides, warns):
    with caplog.at_level(logging.WARNING, logger="codegrpo.build"):
        build.eval_problems(compose_cfg(*overrides))
    assert ("overlap the training problems" in caplog.text) is warns


def test_an_evaluation_file_is_split_by_the_problem_sets_eval_fraction_and_limited(compose_cfg, tmp_path):
    path = tmp_path / "eval.jsonl"
    rows = [{"id": f"p{n}", "prompt": "f", "test": f"{n}", "expected": f"{n}"} for n in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    everything = build.eval_problems(compose_cfg(f"evaluation.problems_path={path}", "evaluation.split=all"))
    assert [p.id for p in everything] == [r["id"] for r in rows]
    held_out = build.eval_problems(compose_cfg(f"evaluation.problems_path={path}"))
    assert 0 < len(held_out) < 40 and {p.id for p in held_out} < {r["id"] for r in rows}
    limited = build.eval_problems(compose_cfg(f"evaluation.problems_path={path}", "evaluation.limit=2"))
    assert limited == held_out[:2]


# -- the sandbox and the scorer -----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "ranks", "share"), [(8, 1, 8), (8, 2, 4), (5, 2, 2), (3, 4, 1), (1, 1, 1)])
def test_a_rank_gets_its_share_of_the_concurrency_cap_and_at_least_one(value, ranks, share):
    assert build.share_concurrency(value, ranks) == share


def test_a_local_sandbox_is_built_with_this_ranks_share_leaving_the_config_as_it_was():
    cfg = LocalSandboxConfig(max_concurrency=4)
    assert build.sandbox(cfg).cfg.max_concurrency == 4
    assert build.sandbox(cfg, ranks=2).cfg.max_concurrency == 2
    assert cfg.max_concurrency == 4


def test_a_sandbox_runs_programs_of_the_language_asked_for():
    assert [r.value for r in build.sandbox(LocalSandboxConfig(max_concurrency=1)).runtimes] == ["python"]
    assert [r.value for r in build.sandbox(LocalSandboxConfig(max_concurrency=1), "javascript").runtimes] == ["node"]


def test_the_scorer_takes_the_reward_groups_settings_and_the_sandboxs_timeout(compose_cfg):
    cfg = compose_cfg("reward=partial", "sandbox.timeout_s=3", "reward.extract=last", "reward.checker=lines")
    problems = build.problems(cfg.problems)
    scorer = build.scorer(cfg, problems, MemoryBackend(_never))
    assert (scorer.kind, scorer.timeout_s, scorer.extract.value, scorer.checker.value) == (
        RewardKind.partial,
        3.0,
        "last",
        "lines",
    )
    assert set(scorer.problems) == {p.id for p in problems}


def test_a_kind_given_overrides_the_reward_groups_and_leaves_the_config_as_it_was(compose_cfg):
    cfg = compose_cfg("reward=partial")
    scorer = build.scorer(cfg, [], MemoryBackend(_never), kind=RewardKind.binary)
    assert scorer.kind is RewardKind.binary and cfg.reward.kind is RewardKind.partial


# -- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("checkpoint", [None, "", "base"])
def test_no_checkpoint_or_base_is_the_model_group_itself(checkpoint):
    model = ModelConfig(name_or_path="HuggingFaceTB/SmolLM2-135M-Instruct", gguf_package="pkg")
    assert build._checkpoint_of(model, checkpoint) is model


def test_a_checkpoint_takes_the_model_groups_place_without_its_gguf_package():
    model = ModelConfig(name_or_path="HuggingFaceTB/SmolLM2-135M-Instruct", gguf_package="pkg")
    saved = build._checkpoint_of(model, "outputs/run/checkpoint-10")
    assert (saved.name_or_path, saved.gguf_package) == ("outputs/run/checkpoint-10", "")
    assert dataclasses.replace(saved, name_or_path=model.name_or_path, gguf_package="pkg") == model


def test_logger_none_starts_no_tracking_run(compose_cfg, tmp_path):
    assert build.tracking(compose_cfg("logger=none"), tmp_path, "train") is None


# -- the dataset and what the reward scores -----------------------------------------------------------------


def test_the_dataset_has_a_chat_prompt_and_the_test_columns_of_each_problem_in_order(compose_cfg):
    cfg = compose_cfg()
    problems = build.problems(cfg.problems)[:3]
    data = build.dataset(problems, cfg.problems)
    assert data.column_names == ["prompt", "problem_id", "test", "expected", "entry_point"]
    assert data["problem_id"] == [p.id for p in problems]
    assert data["test"] == [p.test for p in problems] and data["expected"] == [p.expected for p in problems]
    assert data[0]["prompt"][-1]["role"] == "user" and problems[0].prompt in data[0]["prompt"][-1]["content"]


def test_one_turn_shows_nothing_and_scores_every_test(compose_cfg):
    problems = [_echo("1\n", "2\n", "3\n")]
    sides = build.sides(compose_cfg(), problems)
    assert sides.public == [] and sides.hidden is problems


def test_rollout_feedback_shows_the_public_tests_and_scores_only_the_others(compose_cfg):
    cfg = compose_cfg("rollout=feedback")
    [shown], [scored] = build.sides(cfg, [_echo("1\n", "2\n", "3\n")])
    assert [t.input for t in shown.tests] == ["1\n"] and shown.public_tests == ()
    assert [t.input for t in scored.tests] == ["2\n", "3\n"] and [t.input for t in scored.public_tests] == ["1\n"]
    expression = Problem("add", "f", "add(1, 2)", Form.expression, expected="3")
    assert build.sides(cfg, [expression]).hidden == [expression]


def test_the_split_reads_the_reward_groups_checker(compose_cfg):
    # "1.0" and "1" are one test to the tokens checker (it cannot pay one and not the other): public both;
    # the exact checker tells them apart, so the second stays hidden.
    problem = dataclasses.replace(_echo("1\n"), tests=(IOTest("1\n", "1\n"), IOTest("1\n", "1.0\n")))
    tokens = build.sides(compose_cfg("rollout=feedback"), [problem])
    exact = build.sides(compose_cfg("rollout=feedback", "reward.checker=exact"), [problem])
    assert len(tokens.hidden[0].tests) == 2 and tokens.public[0].tests == ()
    assert [t.output for t in exact.hidden[0].tests] == ["1.0\n"]


# -- the rewards --------------------------------------------------------------------------------------------


def test_the_scorers_rewards_are_served_by_it_and_others_are_their_functions(compose_cfg):
    checked = build.check_reward_functions(
        compose_cfg("reward.functions=[code_reward,hack_penalty,think_format_reward]")
    )
    assert checked[:2] == [None, None] and callable(checked[2])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["reward.functions=[]"], r"^reward\.functions is empty: list at least one reward, e\.g\. \[code_reward\]$"),
        (["+reward.args.think_format_reward={}"], r"^reward\.args names \['think_format_reward'\], which reward"),
        (["reward.weights=[1.0,2.0]"], r"^reward\.weights has 2 values for 1 reward functions \(code_reward\)$"),
        (["trainer.reward_weights=[1.0,2.0]"], r"^reward\.weights has 2 values for 1 reward functions"),
    ],
)
def test_reward_settings_that_cannot_work_are_refused_in_one_line(compose_cfg, overrides, message):
    with pytest.raises(UsageError, match=message):
        build.check_reward_functions(compose_cfg(*overrides))


def test_the_weights_are_the_reward_groups_else_the_trainers_as_floats_else_none(compose_cfg):
    scorer = build.scorer(compose_cfg(), [], MemoryBackend(_never))
    functions, weights = build.reward_functions(compose_cfg(), scorer)
    assert [f.__name__ for f in functions] == ["code_reward"] and weights is None
    [weight] = build.reward_functions(compose_cfg("trainer.reward_weights=[2]"), scorer)[1]
    assert weight == 2.0 and type(weight) is float
    both = compose_cfg("reward.weights=[3]", "trainer.reward_weights=[2]")
    assert build.reward_functions(both, scorer)[1] == [3.0]


def test_two_rewards_logging_under_one_name_are_refused(compose_cfg):
    scorer = build.scorer(compose_cfg(), [], MemoryBackend(_never))
    cfg = compose_cfg("reward.functions=[code_reward,think_format_reward,think_format_reward]")
    with pytest.raises(UsageError, match=r"two functions log under the same name \['think_format_reward'\]"):
        build.reward_functions(cfg, scorer)


def test_under_rollout_feedback_the_scorers_rewards_score_each_episodes_final_code(compose_cfg):
    cfg = compose_cfg("rollout=feedback", "reward.functions=[code_reward,think_format_reward]")
    functions, _ = build.reward_functions(cfg, build.scorer(cfg, [], MemoryBackend(_never)))
    plain, _ = build.reward_functions(compose_cfg(), build.scorer(compose_cfg(), [], MemoryBackend(_never)))
    assert functions[0].__name__ == "code_reward" and functions[0] is not plain[0]
    assert functions[0].__module__ == "codegrpo.training.rollout_func"
    assert functions[1].__module__ != "codegrpo.training.rollout_func"  # TRL's own reward: the completion as it is


# -- the rollout and the sampler ----------------------------------------------------------------------------


def test_one_turn_is_trls_own_generation(compose_cfg):
    assert build.rollout(compose_cfg(), [], None) is None


def test_rollout_feedback_needs_the_runs_scorer_and_makes_a_rollout_func(compose_cfg):
    cfg = compose_cfg("rollout=feedback")
    with pytest.raises(UsageError, match=r"^rollout=feedback needs the run's scorer$"):
        build.rollout(cfg, [], None)
    public, hidden = build.sides(cfg, [_echo("1\n", "2\n")])
    assert callable(build.rollout(cfg, public, build.scorer(cfg, hidden, MemoryBackend(_never))))


def test_the_sampler_state_follows_the_problem_sets_order_and_resumes_from_a_checkpoint(compose_cfg, tmp_path):
    cfg = compose_cfg("seed=7")
    problems = [dataclasses.replace(_echo("1\n"), id=name) for name in ("b", "a", "c")]
    ids = [p.id for p in problems]
    state = build.sampler_state(cfg, ids)
    assert state.rates.ids == ["b", "a", "c"] and state.seed == 7 and state.cfg == cfg.sampler
    state.rates.recent = [[1.0], [], [0.5]]
    state.rates.generations = state.rates.applied = 1
    state.save(tmp_path)
    resumed = build.sampler_state(cfg, ids, tmp_path)
    assert resumed.rates.recent == [[1.0], [], [0.5]] and resumed.rates.generations == 1
    (tmp_path / "fresh").mkdir()
    assert build.sampler_state(cfg, ids, tmp_path / "fresh").rates.recent == [[], [], []]


def test_the_rewards_are_made_together_the_scorer_on_the_hidden_tests_the_rollout_on_the_public(compose_cfg):
    cfg = compose_cfg("rollout=feedback", "reward.functions=[code_reward,hack_penalty]")
    judged = build.rewards(cfg, build.TrainingSet(problems=[_echo("1\n", "2\n", "3\n")]), MemoryBackend(_never))
    assert judged.scorer is not None and judged.environment_factory is None
    assert [t.input for t in judged.scorer.problems["echo"].tests] == ["2\n", "3\n"]
    assert [f.__name__ for f in judged.functions] == ["code_reward", "hack_penalty"] and judged.weights is None
    assert judged.online.rates.ids == ["echo"] and callable(judged.rollout_func)
    assert build.rewards(compose_cfg(), build.TrainingSet([_echo("1\n")]), MemoryBackend(_never)).rollout_func is None


# -- before a training run starts ----------------------------------------------------------------------------


def test_a_distributed_launch_without_one_run_dir_is_refused_before_anything_loads(compose_cfg, monkeypatch):
    monkeypatch.delenv("CODEGRPO_RUN_DIR", raising=False)
    build.check_train(compose_cfg(), ranks=1)
    with pytest.raises(UsageError, match=r"^a distributed launch needs one run dir for every rank: set CODEGRPO_RUN"):
        build.check_train(compose_cfg(), ranks=2)
    monkeypatch.setenv("CODEGRPO_RUN_DIR", "outputs/runs/one")
    build.check_train(compose_cfg(), ranks=2)


def test_a_resume_is_none_a_complete_checkpoint_or_one_line(compose_cfg, tmp_path):
    sha256 = build.TrainingSet([_echo("1\n")]).sha256
    assert build.resume(compose_cfg(), tmp_path, sha256) is None
    assert build.resume(compose_cfg("resume=auto"), tmp_path, sha256) is None  # nothing to resume: fresh
    with pytest.raises(UsageError, match=r"^resume=.*: not a complete checkpoint-N directory \(or use resume=auto\)$"):
        build.resume(compose_cfg(f"resume={tmp_path / 'checkpoint-3'}"), tmp_path, sha256)


# -- trl.GRPOConfig -----------------------------------------------------------------------------------------


def test_grpo_config_writes_into_the_run_dir_and_never_pushes_or_keeps_a_token(compose_cfg, tmp_path):
    cfg = compose_cfg(
        "logger=none", "seed=5", "trainer.push_to_hub=true", "trainer.hub_token=secret", "trainer.report_to=none"
    )
    args = build.grpo_config(cfg, tmp_path, reward_weights=[1.0])
    assert (args.output_dir, args.seed, args.push_to_hub, args.hub_token) == (str(tmp_path), 5, False, None)
    assert args.report_to == [] and args.reward_weights == [1.0]
    assert build.grpo_config(compose_cfg("logger=none"), tmp_path).reward_weights is None
    reported = build.grpo_config(compose_cfg("logger=wandb", "trainer.report_to=[none]"), tmp_path).report_to
    assert reported == ["wandb"]
    both = compose_cfg("logger=none", "trainer=gpu", "trainer.use_cpu=false", "trainer.bf16=true", "trainer.fp16=true")
    with pytest.raises(UsageError) as error:  # GRPOConfig's own ValueError, in one line
        build.grpo_config(both, tmp_path)
    assert str(error.value).startswith("trainer: ") and "\n" not in str(error.value)


# -- rollout=tools: agents on repository tasks ----------------------------------------------------------------


def test_rollout_tools_trains_on_the_shipped_repository_tasks_with_a_tool_round_per_turn_after_the_first(
    compose_cfg, tmp_path
):
    cfg = compose_cfg("rollout=tools", "rollout.max_turns=3")
    assert cfg.problems.name == "repo_tasks" and cfg.model.chat_template == "auto"
    build.check_train(cfg, ranks=1)
    training = build.training_set(cfg, ranks=1, main=True)
    assert training.ids == ["add-triangle-area", "fix-median", "slugify-test"] and not training.problems
    assert len(training.sha256) == 64 and training.sha256 != build.TrainingSet(tasks=training.tasks[:2]).sha256
    assert build.grpo_config(cfg, tmp_path).max_tool_calling_iterations == 2
    limited = build.training_set(compose_cfg("rollout=tools", "problems.limit=1"), ranks=1, main=True)
    assert limited.ids == ["add-triangle-area"]


def test_an_episodes_token_budget_holds_its_turns_and_the_tool_results_between_them(compose_cfg):
    cfg = compose_cfg("rollout=tools", "rollout.max_turns=3", "rollout.budgets.output_chars=300")
    assert cfg.trainer.generation_kwargs == {"max_new_tokens": 128}  # a turn's cap
    assert cfg.trainer.max_completion_length == 3 * 128 + 2 * (300 // 3 + 16)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["problems=repo_tasks"], r"^problems=repo_tasks holds repository tasks, for agents: add rollout=tools$"),
        (
            ["rollout=tools", "problems=trivial"],
            r"^rollout=tools works on repository tasks, not problems=trivial: use problems=",
        ),
        (["rollout=tools", "trainer.max_tool_calling_iterations=3"], r"under rollout=tools set rollout.max_turns"),
        (["rollout=tools", "sampler=difficulty"], r"^rollout=tools draws tasks uniformly"),
        (["rollout=tools", "sampler.dynamic=true"], r"^rollout=tools draws tasks uniformly"),
        (["rollout=tools", "evaluation.after=true"], r"^rollout=tools: evaluation.before and evaluation.after"),
    ],
)
def test_what_rollout_tools_cannot_do_is_one_line_before_anything_loads(compose_cfg, overrides, message):
    with pytest.raises(UsageError, match=message) as raised:
        build.check_train(compose_cfg(*overrides), ranks=1)
    assert "\n" not in str(raised.value)


def test_rollout_tools_on_a_transformers_without_environments_is_one_line_naming_the_version(compose_cfg, monkeypatch):
    import transformers

    monkeypatch.setattr(transformers, "__version__", "5.1.0")
    with pytest.raises(UsageError, match=r"^rollout=tools needs transformers>=5.2.0 .* this is 5.1.0: pip install"):
        build.check_train(compose_cfg("rollout=tools"), ranks=1)


def test_a_task_folder_that_holds_nothing_it_can_run_or_is_broken_is_one_line(compose_cfg, tmp_path):
    from codegrpo.errors import ProblemError

    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match=r"holds no task"):
        build.training_set(compose_cfg("rollout=tools", f"problems.path={tmp_path / 'empty'}"), ranks=1, main=True)
    image = tmp_path / "image" / "needs-node"
    for name, text in {
        "instruction.md": "Fix it.",
        "task.toml": "[metadata]\n",
        "environment/Dockerfile": "FROM node:20\n",
        "tests/test.sh": "pytest\n",
        "tests/test_it.py": "def test_it():\n    pass\n",
    }.items():
        (image / name).parent.mkdir(parents=True, exist_ok=True)
        (image / name).write_text(text)
    with pytest.raises(UsageError, match=r"every task was skipped \(1; the log says why\)$"):
        build.training_set(compose_cfg("rollout=tools", f"problems.path={tmp_path / 'image'}"), ranks=1, main=True)
    broken = tmp_path / "broken" / "bad-toml"
    broken.mkdir(parents=True)
    (broken / "instruction.md").write_text("Fix it.")
    (broken / "task.toml").write_text("[metadata\n")
    with pytest.raises(ProblemError, match=r"task.toml") as raised:
        build.training_set(compose_cfg("rollout=tools", f"problems.path={tmp_path / 'broken'}"), ranks=1, main=True)
    assert "\n" not in str(raised.value)


def test_the_problem_commands_refuse_a_folder_of_repository_tasks_in_one_line(compose_cfg):
    with pytest.raises(UsageError, match=r"^problems=repo_tasks is a folder of repository tasks, for agents: train"):
        build.problems(compose_cfg("problems=repo_tasks").problems)


def test_a_model_template_that_cannot_render_tool_calls_names_the_setting_that_fixes_it(compose_cfg):
    cfg = compose_cfg("rollout=tools", "model.chat_template=own")
    with pytest.raises(UsageError, match=r"cannot render tool calls, .* use model.chat_template=tool_chatml"):
        build.check_tool_template(cfg.model)
    build.check_tool_template(compose_cfg("rollout=tools").model)  # auto: ChatML with tool calls for SmolLM2
