"""What every command shares (codegrpo.commands): each run as users run it (light imports, nothing run on
import, its own --help, paths from where the user stands, hostile files and settings one line), and in process:
``run`` hands the task its typed config and reports a user's error in one line with status 2, a missing setting
is named, Hydra's errors are one line, and a run dir holding only Hydra's files is removed. Each command's own
behaviour is in tests/commands/test_commands_<name>.py, its task's in tests/tasks/."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException, OverrideParseException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError

from codegrpo.commands import (
    CONFIG_DIR,
    check_mandatory,
    compose_error_line,
    discard_empty_run_dir,
    entry_point,
    exit_usage,
    one_line_errors,
    parse_error_line,
    run,
)
from codegrpo.config.runs import ScoreConfig
from codegrpo.errors import ProblemError, UsageError
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import command, imported_modules


@pytest.mark.parametrize("name", ["score", "validate", "limits"])
def test_companion_commands_never_import_torch_transformers_or_trl(tmp_path, name):
    path = tmp_path / "c.jsonl"
    path.write_text('{"problem_id": "is_prime", "completion": "def is_prime(n):\\n    return n > 1"}\n')
    args = {"score": [f"completions={path}"], "validate": [], "limits": []}[name]
    done = command(f"codegrpo.commands.{name}", "problems=seed", *args, flags=("-X", "importtime"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"score": '"status": "failed"', "validate": "seed: 4/4", "limits": "enforced by"}[name] in done.stdout
    modules = imported_modules(done.stderr)
    assert {"codegrpo.build", "codegrpo.sandbox.workers"} <= modules  # the report covers the sandbox too
    assert not {m.split(".")[0] for m in modules} & {"torch", "transformers", "trl"}


IMPORT_THEN_RUN = """
import copy, json, os, sys, warnings
from importlib import import_module
environ = dict(os.environ)
for name in ("evaluate", "limits", "pass_rates", "score", "train", "validate"):
    import_module("codegrpo.commands." + name)
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

def state():
    store = ConfigStore.instance()
    return {
        "schemas": [key for key in ("base_score.yaml", "sandbox", "trainer") if key in store.repo],
        "resolvers": [n for n in ("auto_concurrency", "codegrpo_cwd", "codegrpo_help") if OmegaConf.has_resolver(n)],
        "patched": copy.deepcopy(store) is store,
        "filtered": any(f[1] is not None and "searchpath" in f[1].pattern for f in warnings.filters),
        "environ": dict(os.environ) == environ,
    }

imported = state()
sys.argv = ["train.py", "--cfg", "job"]
sys.modules["codegrpo.commands.train"].main()
print(json.dumps([imported, state()]))
"""


def test_importing_the_commands_runs_nothing_their_entry_point_prepares_hydra():
    """Importing every command stores no schema, registers no resolver, patches nothing and leaves the
    environment as it was; train's entry point does all of it before Hydra starts (prepare_hydra), and
    gives back the environment (HYDRA_FULL_ERROR, set while Hydra composes)."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_THEN_RUN], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    imported, entered = json.loads(done.stdout.splitlines()[-1])
    nothing = {"schemas": [], "resolvers": [], "patched": False, "filtered": False, "environ": True}
    assert imported == nothing
    assert entered == {
        "schemas": ["base_score.yaml", "sandbox", "trainer"],
        "resolvers": ["auto_concurrency", "codegrpo_cwd", "codegrpo_help"],
        "patched": True,
        "filtered": True,
        "environ": True,
    }


# -- hostile input files and settings: one line and exit status 2, before anything runs ---------------------


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    return line


def test_problem_and_completions_files_that_are_not_utf8_json_name_their_line(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_bytes(b'{"id": "a", "prompt": "f().", "test": "f()", "expected": "1"}\n{"id": "\xff"}\n')
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={problems}")
    assert _one_error_line(done) == f"error: {problems}:2: not UTF-8 text (byte 9 of the line)"
    completions = tmp_path / "c.jsonl"
    for line, why in (
        (b"[" * 50_000, "not valid JSON (nested too deep)"),
        (b'{"problem_id": "is_prime", "completion": "\xfe"}', "not UTF-8 text (byte 43 of the line)"),
    ):
        completions.write_bytes(b'{"problem_id": "is_prime", "completion": "x"}\n' + line + b"\n")
        done = command("codegrpo.commands.score", f"completions={completions}", "problems=seed")
        assert _one_error_line(done) == f"error: {completions}:2: {why}"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "sandbox.timeout_s=1e10",
            "sandbox.timeout_s=10000000000.0 must be a number of seconds above 0 and at most 60",
        ),
        ("sandbox.timeout_s=nan", "sandbox.timeout_s=nan must be"),
        ("reward.time_budget_s=nan", "reward.time_budget_s=nan must be a number of seconds above 0 and at most 3600"),
    ],
)
def test_timeouts_that_are_not_seconds_stop_the_command_before_it_runs(override, message):
    assert message in _one_error_line(command("codegrpo.commands.validate", "problems=seed", override))


def test_livecodebench_completions_get_its_graders_imports_and_keep_their_line_numbers(tmp_path):
    starter = "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
    solution = (
        "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i\n"
    )
    rows = [
        {"problem_id": "livecodebench/two-sum", "completion": f"```python\n{starter}{solution}```"},
        {"problem_id": "livecodebench/two-sum", "completion": f"```python\n{starter}        return [0, 1\n```"},
        {
            "problem_id": "livecodebench/abc001_a",
            "completion": "a, b = map(int, stdin.readline().split())\nprint(a + b)",
        },
        {"problem_id": "livecodebench/abc001_a", "completion": "if True:\nprint(1)"},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = PROJECT_ROOT / "tests" / "data" / "code_datasets" / "livecodebench.jsonl"
    done = command(
        "codegrpo.commands.score",
        f"completions={path}",
        "problems=livecodebench",
        "problems.hub_path=json",
        f"problems.data_files={data}",
        "--reasons",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    kept, broken, stdio, indented = (json.loads(line) for line in done.stdout.splitlines())
    assert (kept["status"], kept["flags"], stdio["status"], stdio["flags"]) == ("passed", [], "passed", [])
    assert broken["reason"].endswith("SyntaxError: '[' was never closed (<completion>, line 3)")
    assert indented["reason"].endswith("IndentationError: expected an indented block after 'if' statement on line 1")


@pytest.mark.parametrize("name", ["evaluate", "score", "validate", "limits", "pass_rates"])
def test_each_companion_commands_help_is_its_own(name):
    """What it does, its input with an example, its main options and the groups it reads, as train.py's
    --help is written for it (Hydra's generic "is powered by Hydra" page before)."""
    done = command(f"codegrpo.commands.{name}", "--help")
    assert done.returncode == 0, done.stderr
    script = f"codegrpo-{name.replace('_', '-')}"
    assert done.stdout.startswith(f"{script}: ") and "powered by Hydra" not in done.stdout
    assert "\nInput: " in done.stdout and "\nMain options: " in done.stdout and f"    {script} " in done.stdout
    groups = done.stdout.split("== Groups it reads (group=option, the default first) ==\n")[1]
    assert "  sandbox    local, ray, superserve\n" in groups and f"{script} --cfg job" in groups
    assert ("  problems " in groups) is (name != "limits")  # limits composes problems for its schema, unread
    # The examples as they are typed: a JSON string's \n escapes and a shell line's continuation kept.
    kept = {
        "score": '"```python\\ndef is_prime(n): ...\\n```"}\n',
        "validate": '"def add(a, b):\\n    return a + b"',
        "evaluate": "evaluation.num_samples=8 \\\n",
    }
    assert kept.get(name, "") in done.stdout


def test_relative_paths_are_taken_from_where_the_user_stands_and_shipped_sets_still_load(tmp_path):
    """cd ~/data && codegrpo-validate problems=jsonl problems.path=mine.jsonl read <checkout>/mine.jsonl."""
    (tmp_path / "mine.jsonl").write_text(
        '{"id": "mine", "prompt": "add(a, b).", "test": "add(2, 3)", '
        '"expected": "5", "reference": "def add(a, b):\\n    return a + b"}\n'
    )
    env = os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src")}
    for overrides, says in (
        (["problems=jsonl", "problems.path=mine.jsonl"], "1/1 references pass"),
        (["problems=seed"], "seed: 4/4"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "codegrpo.commands.validate", *overrides, "weak_tests=false"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert done.returncode == 0 and says in done.stdout, done.stdout + done.stderr[-2000:]


def test_an_experiment_of_the_users_own_project_is_found_from_where_they_stand(tmp_path):
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 1234\n")
    env = os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src"), "PWD": "/"}  # a stale PWD is not read
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "train.py"), "experiment=mine", "--cfg", "job"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0 and "\nseed: 1234\n" in done.stdout, done.stderr[-2000:]
    elsewhere = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "train.py"), "--cfg", "job"],
        cwd=tmp_path.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert elsewhere.returncode == 0 and "\nseed: 42\n" in elsewhere.stdout and not elsewhere.stderr.strip()


# -- in process: run, the one-line errors, the mandatory settings, the run dir -----------------------------


@pytest.fixture
def score_dictconfig():
    """score.yaml composed as Hydra hands it to a command: a DictConfig, not yet the typed dataclass."""

    def _compose(*overrides: str):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            return compose(config_name="score", overrides=list(overrides))

    yield _compose
    GlobalHydra.instance().clear()


def test_run_hands_the_task_its_typed_config_and_returns_what_it_returns(score_dictconfig):
    seen = []
    assert run(lambda cfg: seen.append(cfg) or 3, score_dictconfig("batch_size=5")) == 3
    [cfg] = seen
    assert isinstance(cfg, ScoreConfig) and cfg.batch_size == 5


def test_run_ends_a_users_error_in_one_line_with_status_2_after_on_failure(score_dictconfig, capsys):
    failures = []

    def task(cfg):
        raise ProblemError("no such file")

    with pytest.raises(SystemExit) as ended:
        run(task, score_dictconfig(), on_failure=failures.append)
    assert ended.value.code == 2 and capsys.readouterr().err == "error: no such file\n"
    assert [str(error) for error in failures] == ["no such file"]


@pytest.mark.parametrize("users", [None, "1"])
def test_hydra_full_error_is_set_while_composing_and_off_once_the_task_starts(monkeypatch, score_dictconfig, users):
    """The entry point sets it (Hydra then raises a composition error for it to put in one line) and run takes
    it off: the task's errors are Hydra's to report, in full only where the user set it, which is left as it was."""
    monkeypatch.setattr(sys, "argv", ["codegrpo-score"])
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    if users:
        monkeypatch.setenv("HYDRA_FULL_ERROR", users)
    cfg, seen = score_dictconfig(), []

    def hydra_main():
        seen.append(os.environ.get("HYDRA_FULL_ERROR"))
        run(lambda _: seen.append(os.environ.get("HYDRA_FULL_ERROR")), cfg)

    entry_point(hydra_main)()
    assert seen == ["1", users] and os.environ.get("HYDRA_FULL_ERROR") == users


def test_run_lets_a_bug_through_as_itself(score_dictconfig):
    failures = []

    def task(cfg):
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run(task, score_dictconfig(), on_failure=failures.append)
    assert len(failures) == 1 and isinstance(failures[0], KeyError)


def test_run_refuses_a_missing_setting_before_the_task_and_without_on_failure(score_dictconfig, capsys):
    started, failures = [], []
    with pytest.raises(SystemExit) as ended:
        run(started.append, score_dictconfig("problems=jsonl"), on_failure=failures.append)
    assert ended.value.code == 2 and not started and not failures
    assert capsys.readouterr().err.startswith("error: problems.path is not set")


def test_check_mandatory_names_every_missing_key_with_its_hint():
    check_mandatory(OmegaConf.create({"a": 1}))
    with pytest.raises(UsageError) as one:
        check_mandatory(OmegaConf.create({"problems": {"path": "???"}}))
    assert str(one.value) == (
        "problems.path is not set (problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl)"
    )
    with pytest.raises(UsageError) as two:
        check_mandatory(OmegaConf.create({"b": "???", "a": {"x": "???"}}))
    assert str(two.value) == "a.x, b are not set (set a.x=...; set b=...)"


def test_exit_usage_is_one_masked_line_and_status_2(capsys):
    token = "hf_" + "a" * 34
    with pytest.raises(SystemExit) as ended:
        exit_usage(f"bad token {token}")
    assert ended.value.code == 2 and capsys.readouterr().err == "error: bad token ***\n"
    with pytest.raises(SystemExit):
        exit_usage(f"kept {token}", mask=False)
    assert capsys.readouterr().err == f"error: kept {token}\n"


def test_one_line_errors_ends_a_codegrpo_error_and_passes_anything_else(capsys):
    with pytest.raises(SystemExit) as ended, one_line_errors():
        raise UsageError("set x")
    assert ended.value.code == 2 and capsys.readouterr().err == "error: set x\n"
    with pytest.raises(ValueError), one_line_errors():
        raise ValueError("a bug")


def test_a_run_dir_holding_only_hydras_files_is_removed_and_any_other_kept(tmp_path):
    hydra_only, kept = tmp_path / "a", tmp_path / "b"
    for run_dir in (hydra_only, kept):
        (run_dir / ".hydra").mkdir(parents=True)
        (run_dir / "evaluate.log").write_text("")
    (kept / "eval.json").write_text("{}")
    discard_empty_run_dir(hydra_only, "evaluate.log")
    discard_empty_run_dir(kept, "evaluate.log")
    discard_empty_run_dir(tmp_path / "never", "evaluate.log")
    assert not hydra_only.exists() and (kept / "eval.json").is_file()
    assert (kept / "evaluate.log").is_file()  # another command's log name is not Hydra's here
    discard_empty_run_dir(kept, "train.log")
    assert kept.is_dir()


def test_a_composition_error_is_one_line_of_hydras_message_and_its_cause():
    cause = ConfigKeyError("Key 'learning_rte' not in 'GRPOTrainerConfig'\n    full_key: trainer.learning_rte\n")
    error = ConfigCompositionException(
        "Could not override 'trainer.learning_rte'.\nTo append to your config use +trainer.learning_rte=1"
    )
    error.__cause__ = cause
    assert compose_error_line(error) == (
        "Could not override 'trainer.learning_rte': Key 'learning_rte' not in 'GRPOTrainerConfig'"
    )
    listed = ConfigCompositionException(
        "In 'train': Could not find 'reward/nope'\n\nAvailable options in 'reward':\n\tbase_reward\n\tbinary\n"
        "\tpartial\nConfig search path:\n\tprovider=hydra, path=pkg://hydra.conf"
    )
    assert compose_error_line(listed) == (
        "In 'train': Could not find 'reward/nope' Available options in 'reward': binary, partial"
    )


def test_an_override_the_grammar_cannot_read_is_named_in_one_line():
    message = "LexerNoViableAltException: x=~/a b\n    ^\nSee https://hydra.cc/docs/1.2/advanced/override_grammar/basic"
    line = parse_error_line(OverrideParseException("x=~/a b", message))  # as Hydra raises it
    assert line.startswith("cannot read the override x=~/a b: quote a value with characters Hydra's grammar")
    assert "\n" not in line
