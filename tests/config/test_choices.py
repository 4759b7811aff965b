"""The closed choices (codegrpo.config.choices): each value the plain string the YAML and problem files hold, a
typo refused naming the allowed values, each choice matching what it names, and Form's two properties."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from codegrpo.config import choices
from codegrpo.config.choices import (
    ChatTemplate,
    Checker,
    Dtype,
    Extract,
    Form,
    GenerationBackend,
    LanguageName,
    Loader,
    LoggerBackend,
    ProblemAttribute,
    Protocol,
    RecipeScale,
    RewardKind,
    RolloutKind,
    SamplerKind,
    SamplingFrom,
    SaveDtype,
    Split,
    WandbMode,
)
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.programs import LANGUAGES

# Each choice's values in the order a typo's error lists them (choices.TestSelection by its module's name: pytest
# would collect a Test* class imported by name).
VALUES = {
    RewardKind: ["binary", "partial"],
    Extract: ["first", "last"],
    Protocol: ["livecodebench", "humaneval_plus", "codecontests"],
    ProblemAttribute: ["released", "difficulty"],
    RecipeScale: ["paper", "cpu"],
    GenerationBackend: ["transformers", "vllm"],
    SamplingFrom: ["config", "recipe"],
    Split: ["all", "train", "eval"],
    Checker: ["tokens", "lines", "exact"],
    choices.TestSelection: ["first", "shortest", "longest"],
    LoggerBackend: ["wandb", "none"],
    WandbMode: ["online", "offline", "disabled", "shared"],
    Dtype: ["auto", "float32", "bfloat16", "float16"],
    SaveDtype: ["auto", "float32", "bfloat16", "float16"],
    LanguageName: ["python", "javascript"],
    SamplerKind: ["uniform", "difficulty"],
    RolloutKind: ["single", "feedback", "tools"],
    Form: ["expression", "humaneval", "stdio", "call"],
    Loader: [
        "apps",
        "taco",
        "code_contests",
        "livecodebench",
        "deepcoder",
        "verifiable_coding",
        "humaneval_plus",
        "leetcode",
        "repo_tasks",
    ],
    ChatTemplate: ["auto", "own", "tool_chatml"],
}


def test_every_choice_of_the_module_is_listed_here():
    defined = {
        value for value in vars(choices).values() if isinstance(value, type) and issubclass(value, choices.enum.Enum)
    }
    assert defined == set(VALUES)


@pytest.mark.parametrize("choice", list(VALUES), ids=lambda c: c.__name__)
def test_each_choice_allows_exactly_its_values_in_order(choice):
    assert [member.value for member in choice] == VALUES[choice]
    assert [member.name for member in choice] == VALUES[choice]  # a member is named as its value is spelled


@pytest.mark.parametrize("choice", list(VALUES), ids=lambda c: c.__name__)
def test_each_value_is_the_plain_string_the_files_hold(choice):
    for value in VALUES[choice]:
        member = choice(value)
        assert member is getattr(choice, value) and member == value and isinstance(member, str)
        assert (str(member), f"{member}", json.dumps(member)) == (value, value, f'"{value}"')


def test_a_value_that_is_no_choice_is_refused_naming_the_allowed_ones():
    @dataclasses.dataclass
    class Settings:
        kind: RewardKind = RewardKind.binary
        selection: choices.TestSelection = choices.TestSelection.first

    settings = OmegaConf.structured(Settings)
    settings.kind = "partial"
    assert settings.kind is RewardKind.partial
    with pytest.raises(ValidationError, match=r"Invalid value 'binry', expected one of \[binary, partial\]"):
        settings.kind = "binry"
    with pytest.raises(ValidationError, match=r"expected one of \[first, shortest, longest\]"):
        settings.selection = "shortst"
    with pytest.raises(ValueError, match="'Stdio' is not a valid Form"):
        Form("Stdio")


@pytest.mark.parametrize(
    ("group", "key", "choice"),
    [
        ("reward", "kind", RewardKind),
        ("rollout", "kind", RolloutKind),
        ("sampler", "kind", SamplerKind),
        ("logger", "backend", LoggerBackend),
        ("protocol", "protocol.name", Protocol),
    ],
)
def test_each_config_group_has_one_option_per_choice_named_as_it(group, key, choice):
    options = {}
    for path in (PROJECT_ROOT / "conf" / group).glob("*.yaml"):
        value = yaml.safe_load(path.read_text())
        for part in key.split("."):
            value = value[part]
        options[path.stem] = value
    assert options == {member.value: member.value for member in choice}


def test_the_choices_that_name_other_things_name_them_all():
    from codegrpo.data.problems import Problem
    from codegrpo.data.public_datasets import SCHEMAS
    from codegrpo.reward.programs import LANGUAGES

    # A folder of repository tasks is read by data/repo_tasks.py, not by a dataset's schema.
    assert set(LANGUAGES) == set(LanguageName) and set(SCHEMAS) | {Loader.repo_tasks} == set(Loader)
    fields = {field.name for field in dataclasses.fields(Problem)}
    assert {attribute.value for attribute in ProblemAttribute} <= fields


@pytest.mark.parametrize(
    ("form", "per_test", "harnessed"),
    [
        (Form.expression, False, True),
        (Form.humaneval, False, True),
        (Form.stdio, True, False),  # a plain program: its input on stdin
        (Form.call, True, True),
    ],
)
def test_which_forms_run_once_per_test_and_which_inside_the_harness(form, per_test, harnessed):
    assert form.per_test is per_test and form.harnessed is harnessed


def test_every_language_name_is_a_language_programs_can_assemble():
    assert set(LanguageName) == set(LANGUAGES)
