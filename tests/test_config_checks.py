"""Issue 40: settings that cannot work are one line when the config is read (exit 2 from a command), not a
traceback after the model loads: GRPO's own constraints, rollout=feedback's episode budget, and every sandbox
option with its range or the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codegrpo.config.schema import FEEDBACK_TOKENS, MIN_MEMORY_MB, host_memory_mb
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT


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
