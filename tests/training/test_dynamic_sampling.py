"""DAPO's dynamic sampling (codegrpo.training.dynamic_sampling): which groups agree, how generation outputs of
different widths merge, how a batch is refilled round by round, and a real GRPO step with it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from codegrpo.config.sampler import SamplerConfig
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.training.dynamic_sampling import DynamicSampling, agreeing, check, merge, take_groups

PAD = 9
G = 2  # completions a group, in these tests


def _output(widths: tuple[int, int], groups: int, tag: float) -> dict:
    """A generation output as TRL returns one: ``groups`` groups of G rows, prompts ``widths[0]`` wide (left
    padded), completions ``widths[1]`` wide; every value of row r is tag + r, so rows can be traced."""
    rows = G * groups
    base = torch.arange(rows, dtype=torch.float).unsqueeze(1) + tag
    prompt, completion = widths
    return {
        "prompt_ids": base.expand(rows, prompt).long(),
        "prompt_mask": torch.ones(rows, prompt, dtype=torch.long),
        "completion_ids": base.expand(rows, completion).long(),
        "completion_mask": torch.ones(rows, completion, dtype=torch.long),
        "advantages": base.squeeze(1),
        "old_per_token_logps": base.expand(rows, completion).clone(),
        "num_items_in_batch": torch.tensor(float(rows * completion)),
    }


def test_a_group_agrees_when_its_correctness_rewards_are_all_equal_or_fewer_than_two_are_known():
    nan = math.nan
    correct = torch.tensor([1, 1, 0, 1, 0, 0, nan, 1, nan, 0, 0.5, 0.5 + 1e-12])
    assert agreeing(correct, G).tolist() == [True, False, True, True, True, True]
    assert agreeing(torch.tensor([nan, 1, 0, nan, 1, 1]), 3).tolist() == [False, True]  # NaN left out


def test_outputs_of_different_widths_merge_padded_as_trl_pads_them():
    narrow, wide = _output((2, 3), 1, 0), _output((4, 5), 1, 100)
    merged = merge([take_groups(narrow, [0], G), take_groups(wide, [0], G)], PAD, total=lambda t: t)
    assert merged["prompt_ids"].tolist()[0] == [PAD, PAD, 0, 0]  # prompts padded on the left
    assert merged["prompt_mask"].tolist()[0] == [0, 0, 1, 1]
    assert merged["completion_ids"].tolist()[1] == [1, 1, 1, PAD, PAD]  # completions on the right
    assert merged["completion_mask"].tolist()[1] == [1, 1, 1, 0, 0]
    assert merged["old_per_token_logps"].tolist()[0] == [0, 0, 0, 0, 0]
    assert merged["advantages"].tolist() == [0, 1, 100, 101]
    assert merged["num_items_in_batch"].item() == 2 * 3 + 2 * 5  # the loss tokens recounted, padding not


def test_a_generation_with_an_unknown_field_is_refused():
    output = _output((1, 1), 1, 0) | {"pixel_values": torch.zeros(2, 3)}
    with pytest.raises(UsageError, match="text models"):
        take_groups(output, [0], G)


def _sampler(max_rounds: int = 3) -> DynamicSampling:
    return DynamicSampling(SamplerConfig(dynamic=True, max_rounds=max_rounds), G, 50, 0, 0, PAD)


def test_a_batch_keeps_its_spread_groups_and_generates_more_until_it_is_full():
    sampler = _sampler()
    first = _output((2, 2), 3, 0)  # groups: agree, spread, agree
    first_correct = torch.tensor([1.0, 1, 0, 1, 0, 0])
    more = iter(
        [
            (_output((3, 4), 3, 100), torch.tensor([0.0, 0, 1, 1, 1, 1])),  # agree, agree, agree
            (_output((2, 3), 3, 200), torch.tensor([1.0, 0, 0, 1, 1, 0])),  # spread x 3: two are needed
        ]
    )
    drawn = []

    def generate(indices):
        drawn.append(indices)
        return next(more)

    batch = sampler.fill(first, first_correct, generate, fewest=lambda n: n, total=lambda t: t)
    assert batch["advantages"].tolist() == [2, 3, 200, 201, 202, 203]  # the spread groups, in the order drawn
    assert batch["completion_ids"].shape == (6, 3) and batch["prompt_ids"].shape == (6, 2)  # an empty round adds none
    assert sampler.last is not None and (sampler.last.rounds, sampler.last.groups, sampler.last.spread) == (3, 9, 4)
    assert sampler.last.filler == 0
    # Each round draws as many rows as the batch has, whole groups: each prompt repeated for its group.
    assert [len(d) for d in drawn] == [6, 6] and all(d[0] == d[1] and d[2] == d[3] for d in drawn)
    assert all(0 <= i < 50 for d in drawn for i in d)


def test_after_max_rounds_the_agreeing_groups_fill_the_batch():
    sampler = _sampler(max_rounds=2)
    first = _output((2, 2), 2, 0)
    batch = sampler.fill(
        first,
        torch.tensor([1.0, 1, 1, 0]),  # agree, spread
        lambda indices: (_output((2, 2), 2, 100), torch.tensor([0.0, 0, 1, 1])),  # agree, agree
        fewest=lambda n: n,
        total=lambda t: t,
    )
    assert batch["advantages"].tolist() == [2, 3, 0, 1]  # the spread group, then the first agreeing one
    assert sampler.last is not None and (sampler.last.rounds, sampler.last.filler) == (2, 1)


def test_every_process_takes_another_round_while_any_is_short():
    sampler = _sampler()
    rounds = []

    def generate(indices):
        rounds.append(indices)
        return _output((2, 2), 1, 100), torch.tensor([1.0, 0])

    # This process is full at once; another one is short until the second round.
    others = iter([0, 1])
    batch = sampler.fill(
        _output((2, 2), 1, 0),
        torch.tensor([1.0, 0]),
        generate,
        fewest=lambda n: min(n, next(others)),
        total=lambda t: t,
    )
    assert len(rounds) == 1 and batch["advantages"].tolist() == [0, 1]  # its own first group, nothing more


def _refills(sampler: DynamicSampling, steps: range) -> dict[int, list[list[int]]]:
    """The prompts each step's refills drew, with every group agreeing (so every round draws)."""
    drawn: dict[int, list[list[int]]] = {}
    for step in steps:

        def generate(indices, step=step):
            drawn.setdefault(step, []).append(indices)
            return _output((2, 2), 2, 100), torch.tensor([1.0, 1, 0, 0])

        sampler.fill(_output((2, 2), 2, 0), torch.tensor([1.0, 1, 0, 0]), generate, lambda n: n, lambda t: t, step)
    return drawn


def test_a_resumed_run_refills_with_the_prompts_the_uninterrupted_run_drew():
    """Issue 52, item 6: the refill drew from a generator seeded once per process and never checkpointed, so a
    run resumed at step 2 drew what a fresh run draws at step 0. Each round's draw now comes from the step and
    the round (the trainer's global_step is in the checkpoint)."""
    uninterrupted = _refills(_sampler(), range(4))
    resumed = _refills(_sampler(), range(2, 4))  # a new process: nothing of the first run's draws
    assert resumed == {step: uninterrupted[step] for step in (2, 3)}
    assert uninterrupted[2] != uninterrupted[0] and uninterrupted[2][0] != uninterrupted[2][1]  # each round its own
    other_rank = DynamicSampling(SamplerConfig(dynamic=True, max_rounds=3), G, 50, 0, 1, PAD)
    assert _refills(other_rank, range(2, 3))[2] != uninterrupted[2]  # each process draws its own prompts


def test_the_refill_follows_the_active_samplers_weights():
    """sampler=difficulty weighs problems by pool; the refill drew uniformly from the whole set. With weights
    only on problems 7, 9 and 11, every refilled prompt is one of them, distinct within a round."""
    weights = np.zeros(50)
    weights[[7, 9, 11]] = [0.5, 0.25, 0.25]
    weighted = DynamicSampling(SamplerConfig(dynamic=True, max_rounds=3), G, 50, 0, 0, PAD, lambda: weights)
    rounds = [indices for step in _refills(weighted, range(3)).values() for indices in step]
    assert len(rounds) == 6 and all(set(indices) <= {7, 9, 11} for indices in rounds)
    assert all(indices[0] != indices[2] for indices in rounds)  # 2 prompts a round, without replacement
    uniform = DynamicSampling(SamplerConfig(dynamic=True, max_rounds=3), G, 50, 0, 0, PAD, lambda: None)
    assert _refills(uniform, range(3)) == _refills(_sampler(), range(3))  # sampler=uniform: as without weights


def test_a_process_batch_of_partial_groups_is_refused_before_the_model_loads():
    on = SamplerConfig(dynamic=True)
    check(on, 4, 4, 8)  # 16 rows: two whole groups
    check(SamplerConfig(), 3, 1, 8)  # off: nothing to check
    with pytest.raises(UsageError, match=r"per_device_train_batch_size x steps_per_generation = 6"):
        check(on, 3, 2, 4)
    with pytest.raises(UsageError, match="max_rounds=0"):
        SamplerConfig(dynamic=True, max_rounds=0)


@pytest.mark.slow
def test_a_grpo_step_with_dynamic_sampling_trains_on_the_refilled_batch(tmp_path, tiny_model):
    """Real TRL, the tiny model, the sandbox: two steps on the trivial set with 2 prompts x 4 a generation,
    each batch refilled by dynamic sampling (as many rounds as it takes, at most 3)."""
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "train.py",
        *tiny_model,
        "sampler.dynamic=true",
        "sampler.max_rounds=3",
        "trainer.max_steps=2",
        "trainer.num_generations=4",
        "trainer.per_device_train_batch_size=8",
        "trainer.max_completion_length=48",
        "trainer.temperature=1.0",
        "logger=none",
        "save_model=false",
        f"hydra.run.dir={run_dir}",
    ]
    environment = {k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"}
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900, env=environment)
    assert done.returncode == 0, done.stderr[-4000:]
    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if "loss" in row]
    assert len(steps) == 2
    # The random model writes no code: every group agrees (reward 0), so each step takes its 3 rounds and
    # trains on fillers (the mix of spread and filler groups is tested above, with rewards set by the test).
    for row in steps:
        assert row["sampler/dynamic_rounds"] == 3 and math.isfinite(row["loss"]), row
        assert (row["sampler/dynamic_spread_share"], row["sampler/dynamic_filler_share"]) == (0, 1), row


@pytest.mark.slow
def test_two_processes_take_their_rounds_in_lockstep_in_one_run_dir(tmp_path, tiny_model):
    """accelerate's 2-process CPU launch, a group on each process: each keeps its own groups, and both generate
    another round while either is short (a process that stopped alone would leave the other's gather hanging).
    The launch is also the workflow's two-process run: one run dir for both ranks, one W&B run (rank 0's)."""
    run_dir = tmp_path / "ddp"
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        "accelerate/cpu2.yaml",
        "train.py",
        *tiny_model,
        "sampler.dynamic=true",
        "sampler.max_rounds=3",
        "trainer.max_steps=2",
        "trainer.num_generations=2",
        "trainer.per_device_train_batch_size=2",
        "trainer.max_completion_length=32",
        "trainer.temperature=1.0",
        "logger=wandb",
        "save_model=false",
    ]
    environment = {k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "CODEGRPO_RUN_DIR")}
    done = subprocess.run(
        command,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=environment | {"CODEGRPO_RUN_DIR": str(run_dir)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert list(tmp_path.iterdir()) == [run_dir]
    assert len(list(run_dir.glob("wandb/offline-run-*"))) == 1  # only rank 0 logs
    steps = [row for row in json.loads((run_dir / "log_history.json").read_text()) if "loss" in row]
    # The random model's groups all agree: each step takes its 3 rounds, on both processes together.
    assert len(steps) == 2 and all(row["sampler/dynamic_rounds"] == 3 for row in steps), steps
