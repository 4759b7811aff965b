"""The trainer group's fields (codegrpo.config.trainer_fields): GRPOConfig's type hints as types OmegaConf can
validate and back, defaults, the field cache read and written for the installed trl and transformers, and the
renamed fields moved to their current names."""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
import json
from pathlib import Path
from typing import Any, Literal, Optional, Union

import pytest

from codegrpo.config import trainer_fields as module
from codegrpo.config.trainer_fields import (
    CACHE,
    EXCLUDED,
    PACKAGES,
    REGENERATE,
    TrainerField,
    _default,
    current_names,
    installed_versions,
    python_type,
    read_cache,
    reflect,
    renamed_fields,
    trainer_fields,
    type_name,
    write_cache,
)


class Strategy(str, enum.Enum):
    steps = "steps"
    epoch = "epoch"


class Mode(str, enum.Enum):
    fast = "fast"


class Level(enum.Enum):
    high = 3


@pytest.mark.parametrize(
    ("hint", "name"),
    [
        (bool, "bool"),
        (int, "int"),
        (float, "float"),
        (str, "str"),
        (Optional[int], "Optional[int]"),  # noqa: UP045 (GRPOConfig's own spelling)
        (float | None, "Optional[float]"),
        (list[int], "list[int]"),
        (Optional[list[str]], "Optional[list[str]]"),  # noqa: UP045
        (Union[str, Strategy], "str"),  # noqa: UP007 (an enum of strings: TRL takes either)
        (Strategy | str | None, "Optional[str]"),
        (int | str, "Any"),
        (Union[str, Strategy, int], "Any"),  # noqa: UP007
        (Strategy | Mode, "Any"),  # enums of strings, but str itself is not one of them
        (dict | None, "Any"),  # not Optional[Any]
        (dict, "Any"),
        (list[dict], "Any"),
        (list[list[int]], "Any"),
        (list, "Any"),
        (Literal["a", "b"], "Any"),
        (type(None), "Any"),
    ],
)
def test_a_type_hint_is_written_as_a_type_omegaconf_can_validate(hint, name):
    assert type_name(hint) == name


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("bool", bool),
        ("str", str),
        ("Any", Any),
        ("Optional[int]", Optional[int]),  # noqa: UP045
        ("list[float]", list[float]),
        ("Optional[list[str]]", Optional[list[str]]),  # noqa: UP045
    ],
)
def test_a_written_type_is_read_back_as_its_annotation(name, hint):
    assert python_type(name) == hint


@pytest.mark.parametrize("name", ["dict", "Optional[dict]", "list[dict]", "Optional[int", "tuple[int]", ""])
def test_a_written_type_it_does_not_know_says_to_regenerate_the_cache(name):
    with pytest.raises(ValueError, match=rf"not a trainer field type: .* \(regenerate the cache: {REGENERATE}\)"):
        python_type(name)


def test_a_default_is_the_fields_default_its_factorys_value_or_an_enums_value():
    @dataclasses.dataclass
    class Config:
        required: int
        plain: int = 3
        made: list = dataclasses.field(default_factory=lambda: [1, 2])
        strategy: Strategy = Strategy.epoch
        level: Level = Level.high

    required, plain, made, strategy, level = dataclasses.fields(Config)
    assert (_default(plain), _default(made), _default(strategy), _default(level)) == (3, [1, 2], "epoch", 3)
    assert type(_default(strategy)) is str  # the value, not the member
    with pytest.raises(ValueError, match=r"GRPOConfig\.required has no default: the trainer group could not leave it"):
        _default(required)


def test_the_installed_versions_are_read_from_the_metadata_and_a_missing_package_is_none(monkeypatch):
    assert installed_versions() == {name: importlib.metadata.version(name) for name in PACKAGES}
    assert PACKAGES == ("trl", "transformers")
    monkeypatch.setattr(module, "PACKAGES", ("trl", "no-such-package-codegrpo"))
    assert installed_versions() == {"trl": importlib.metadata.version("trl"), "no-such-package-codegrpo": None}


def _cache(path, versions, fields) -> None:
    path.write_text(json.dumps({"versions": versions, "fields": fields}))


def test_a_cache_is_read_as_its_versions_and_fields(tmp_path):
    path = tmp_path / "fields.json"
    _cache(path, {"trl": "1.0", "transformers": "5.0", "other": "9"}, [{"name": "lr", "type": "float", "default": 0.1}])
    assert read_cache(path) == ({"trl": "1.0", "transformers": "5.0"}, [TrainerField("lr", "float", 0.1)])
    _cache(path, {"trl": "1.0"}, [])
    assert read_cache(path) == ({"trl": "1.0", "transformers": None}, [])


@pytest.mark.parametrize(
    "text",
    [
        None,  # no file
        "{not json",
        '{"fields": []}',
        '{"versions": {}, "fields": [{"name": "lr"}]}',
        '{"versions": [], "fields": []}',
        '{"versions": {}, "fields": 3}',
        "[]",
    ],
)
def test_a_missing_or_malformed_cache_is_no_cache(tmp_path, text):
    path = tmp_path / "fields.json"
    if text is not None:
        path.write_text(text)
    assert read_cache(path) is None


def test_a_cache_for_the_installed_versions_is_used_with_defaults_of_its_own_each_time(tmp_path):
    path = tmp_path / "fields.json"
    _cache(path, installed_versions(), [{"name": "only_here", "type": "list[str]", "default": ["a"]}])
    [field] = trainer_fields(path)
    assert field == TrainerField("only_here", "list[str]", ["a"])
    field.default.append("b")  # a schema that changed its default in place
    assert trainer_fields(path)[0].default == ["a"]


def test_a_cache_for_other_versions_is_passed_over_for_the_installed_grpo_config(tmp_path):
    path = tmp_path / "fields.json"
    _cache(path, installed_versions() | {"trl": "0.0.1"}, [{"name": "only_here", "type": "int", "default": 1}])
    names = [f.name for f in trainer_fields(path)]
    assert "only_here" not in names and "learning_rate" in names


def test_the_written_cache_is_the_installed_grpo_configs_fields_a_line_each(tmp_path):
    from trl import GRPOConfig

    path = tmp_path / "fields.json"
    fields = write_cache(path)
    assert read_cache(path) == (installed_versions(), fields)
    names = [f.name for f in dataclasses.fields(GRPOConfig) if f.init]
    assert [f.name for f in fields] == [name for name in names if name not in EXCLUDED]
    assert {"output_dir", "seed"} == EXCLUDED and {"learning_rate", "num_generations"} <= set(names)
    assert all(python_type(f.type) is not None for f in fields)
    lines = path.read_text().splitlines()
    assert lines[0] == f'{{"generated_by": "{REGENERATE}",' and len(lines) == 3 + len(fields) + 1 and lines[-1] == "]}"


@dataclasses.dataclass
class Renamed:
    new_name: int | None = None
    old_name: int | None = dataclasses.field(default=None, metadata={"help": "Deprecated alias of `new_name`."})
    stray: int = dataclasses.field(default=0, metadata={"help": "Deprecated alias of `not_a_field`."})
    itself: int = dataclasses.field(default=0, metadata={"help": "Deprecated alias of `itself`."})


@dataclasses.dataclass
class Redeclared(Renamed):
    old_name: int = dataclasses.field(default=7, metadata={"help": "Its own help."})


def test_only_an_alias_of_another_field_of_the_class_is_renamed():
    assert renamed_fields(Renamed) == {"old_name": "new_name"}
    assert renamed_fields(Redeclared) == {"old_name": "new_name"}  # the base class's help counts


def test_an_alias_moves_to_its_current_name_unless_that_is_set():
    given = {"old_name": 3, "new_name": None, "other": 1}
    assert current_names(given, Renamed) == {"new_name": 3, "other": 1}
    assert given == {"old_name": 3, "new_name": None, "other": 1}  # the caller's dict is left as it was
    assert current_names({"old_name": 3, "new_name": 4}, Renamed) == {"new_name": 4}
    assert current_names({"old_name": None, "new_name": None}, Renamed) == {"new_name": None}
    assert current_names({"old_name": 3}, Renamed) == {"new_name": 3}
    assert current_names({"old_name": None}, Renamed) == {}  # an unset alias sets nothing
    assert current_names({"stray": 1, "itself": 2}, Renamed) == {"stray": 1, "itself": 2}


def test_the_trainer_field_cache_is_the_pinned_grpo_config():
    """grpo_fields.json holds GRPOConfig's fields for the trl and transformers that constraints.txt pins, and
    those fields are the installed GRPOConfig's wherever those versions are installed: after `make
    constraints` moves either, regenerate it with `python -m codegrpo.config.trainer_fields`. Under other
    versions (the oldest-versions run) the schema reads trl itself."""
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
