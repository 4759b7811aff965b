"""sampler=difficulty (codegrpo.training.sampling): the draw is reproducible from the seed, prefers problems with
reward spread, never runs dry, agrees across real torch.distributed ranks, survives a checkpoint, and a
real TRL run with the offline model logs sampler/* and resumes exactly. Bad input is one line."""

from __future__ import annotations

import dataclasses
import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from codegrpo.config.choices import SamplerKind
from codegrpo.config.sampler import SamplerConfig
from codegrpo.errors import UsageError
from codegrpo.reward.verdict import Scored, Status, Verdict
from codegrpo.training.sampling import STATE_FILE, DifficultySampler, Online
from tests import wandb_offline

IDS = [f"p{i}" for i in range(12)]
DIFFICULTY = SamplerConfig(kind=SamplerKind.difficulty)


def outcome(problem: int, sample: int) -> bool:
    """A fixed world: p0-p3 always pass, p4-p7 never, p8-p11 pass one sample in two."""
    return problem < 4 or (problem >= 8 and sample % 2 == 0)


def scored(problem: int, samples: range) -> list[Scored]:
    return [
        Scored(
            IDS[problem], "", Verdict(Status.PASSED, 1.0) if outcome(problem, s) else Verdict(Status.FAILED, 0.0), 0.1
        )
        for s in samples
    ]


def sampler_of(online: Online, batch: int = 3, generations: int = 2, repeat: int = 1) -> DifficultySampler:
    return online.sampler(
        type("Layout", (), {"batch_size": batch, "mini_repeat_count": generations, "repeat_count": repeat})()
    )


def run(
    online: Online,
    steps: int,
    start: int = 0,
    ranks: int = 1,
    rank: int = 0,
    gather=None,
    save_at: int | None = None,
    save_dir: Path | None = None,
) -> list[list[int]]:
    """The trainer's order of events: batch k is drawn (prefetched) before batch k-1 is scored."""
    sampler = sampler_of(online)
    drawn = {k: sampler.draw(k) for k in range(start, start + 1)}
    for k in range(start, start + steps):
        drawn[k + 1] = sampler.draw(k + 1)  # the dataloader's prefetch of the next batch
        for problem in drawn[k]:  # each rank scores its share of each group's 2 samples
            online.rates.observe(scored(problem, range(rank, 2, ranks)))
        online.rates.end_generation(gather)
        if save_at is not None and k + 1 == save_at:
            online.save(save_dir)
    return [drawn[k] for k in range(start, start + steps)]


def test_the_draw_is_reproducible_from_the_seed_and_prefers_problems_with_spread():
    first, again, other = (run(Online(DIFFICULTY, IDS, seed), 40) for seed in (1, 1, 2))
    assert first == again and first != other
    assert all(len(set(batch)) == 3 for batch in first)  # distinct prompts in a batch
    late = [p for batch in first[10:] for p in batch]
    learning = sum(p >= 8 for p in late) / len(late)  # 4 of 12 problems, weight 1 against 0.1
    assert learning > 0.6, learning
    assert sum(p < 8 for p in late) > 0  # solved and unsolved ones are still revisited


def test_the_pool_never_empties_when_every_problem_is_solved_or_unsolved():
    online = Online(DIFFICULTY, IDS[:8], 0)  # p0-p3 always pass, p4-p7 never
    sampler = sampler_of(online)
    for k in range(30):
        for problem in sampler.draw(k):
            online.rates.observe(scored(problem, range(2)))
        online.rates.end_generation()
    assert all(len(set(sampler.draw(k))) == 3 for k in range(30, 60))
    metrics = online.rates.metrics()
    pools = {name: metrics[f"sampler/pool_{name}"] for name in ("learning", "solved", "unsolved", "unseen")}
    assert pools == {"learning": 0, "solved": 4, "unsolved": 4, "unseen": 0}
    assert metrics["sampler/zero_spread_share"] == 1.0
    assert len(list(sampler)) == len(sampler) == (8 // 3) * 3 * 2  # RepeatSampler's length and layout


def test_a_state_saved_mid_run_resumes_to_the_same_draws(tmp_path):
    whole = run(Online(DIFFICULTY, IDS, 7), 20)
    first = Online(DIFFICULTY, IDS, 7)
    assert run(first, 8, save_at=8, save_dir=tmp_path) == whole[:8]
    resumed = Online(DIFFICULTY, IDS, 7)
    resumed.load(tmp_path)
    # A resumed trainer draws (and skips) the batches it already trained on, then continues.
    assert run(resumed, 12, start=8) == whole[8:]
    with pytest.raises(UsageError, match="another problem set"):
        Online(DIFFICULTY, IDS[:5], 7).load(tmp_path)


def _rank(rank: int, world: int, init: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)

    def gather(items: list) -> list:
        parts: list = [None] * world
        dist.all_gather_object(parts, items)
        return [item for part in parts for item in part]

    order = run(Online(DIFFICULTY, IDS, 3), 25, ranks=world, rank=rank, gather=gather)
    Path(out, f"{rank}.json").write_text(json.dumps(order))
    dist.destroy_process_group()


def test_every_rank_draws_the_same_prompts_from_its_own_share_of_the_verdicts(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(2, f"file://{tmp_path}/rendezvous", str(tmp_path)), nprocs=2)
    orders = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(2)]
    assert orders[0] == orders[1] == run(Online(DIFFICULTY, IDS, 3), 25)  # as one process seeing everything


def test_bad_sampler_settings_are_one_line_at_compose_time(compose_cfg):
    for override, needle in (("sampler.revisit=0", "above 0"), ("sampler.window=0", "at least 1")):
        with pytest.raises(UsageError, match=needle) as refused:
            compose_cfg("sampler=difficulty", override)
        assert "\n" not in str(refused.value)
    assert compose_cfg().sampler.kind is SamplerKind.uniform


def test_a_problem_set_smaller_than_one_batch_is_refused_before_the_model_loads(compose_cfg):
    from codegrpo.tasks.train import prepare
    from codegrpo.training.preemption import Guard

    cfg = compose_cfg(
        "sampler=difficulty",
        "logger=none",
        "problems.limit=3",
        "trainer.num_generations=2",
        "trainer.per_device_train_batch_size=8",
    )
    with Guard([]) as guard, ExitStack() as stack, pytest.raises(UsageError) as refused:
        prepare(cfg, stack, guard)
    message = str(refused.value)
    assert "\n" not in message and "3 problems, fewer than one generation batch of 4 prompts" in message


TINY = [
    "logger=none",
    "plots=false",
    "save_model=false",
    "problems.limit=6",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=4",
    "trainer.max_completion_length=16",
    "trainer.log_completions=false",
    "trainer.temperature=1.2",
    "sampler=difficulty",
    "sampler.window=2",
]


@pytest.mark.slow
def test_training_with_the_difficulty_sampler_logs_sampler_metrics_and_resumes_exactly(
    compose_cfg, tmp_path, tiny_model
):
    from codegrpo.tasks.train import finalize, fit, prepare
    from codegrpo.training.preemption import Guard

    def train_run(name: str, *overrides: str):
        cfg = dataclasses.replace(compose_cfg(*TINY, *tiny_model, *overrides), run_dir=str(tmp_path / name))
        with Guard([]) as guard, ExitStack() as stack:
            prepared = prepare(cfg, stack, guard)
            finalize(prepared, fit(prepared))  # writes log_history.json
            return prepared.trainer

    steps = ["trainer.max_steps=4", "trainer.save_strategy=steps", "trainer.save_steps=2"]
    whole = train_run("whole", *steps, "logger=wandb", "logger.mode=offline")
    history = [row for row in json.loads((tmp_path / "whole" / "log_history.json").read_text()) if "reward" in row]
    assert len(history) == 4
    assert all(
        {"sampler/pool_unseen", "sampler/pool_learning", "sampler/zero_spread_share"} <= row.keys() for row in history
    )
    assert history[0]["sampler/pool_unseen"] == 6 and history[-1]["sampler/pool_unseen"] < 6
    [run_file] = (tmp_path / "whole").glob("wandb/offline-run-*/run-*.wandb")
    logged = [row for row in wandb_offline.history(run_file) if "train/reward" in row]
    assert [r["train/sampler/pool_learning"] for r in logged] == [r["sampler/pool_learning"] for r in history]
    # The histogram of the seen problems' estimates, in the same row (wandb.Histogram: values and bins).
    assert all(r["train/sampler/pass_rate_hist/_type"] == "histogram" for r in logged)
    assert [sum(r["train/sampler/pass_rate_hist/values"]) for r in logged] == [
        6 - r["sampler/pool_unseen"] for r in history
    ]
    saved = json.loads((tmp_path / "whole" / "checkpoint-2" / STATE_FILE).read_text())
    assert saved["generations"] == 2 and saved["ids"] == [row["problem_id"] for row in whole.train_dataset]

    # Resume from step 2 of a copy: the same rewards and the same pass-rate state at the end.
    import shutil

    shutil.copytree(tmp_path / "whole" / "checkpoint-2", tmp_path / "resumed" / "checkpoint-2")
    resumed = train_run("resumed", *steps, "resume=auto")
    rows = [row for row in resumed.state.log_history if "reward" in row]
    assert [(r["step"], r["reward"], r["sampler/pool_learning"]) for r in rows[-2:]] == [
        (r["step"], r["reward"], r["sampler/pool_learning"]) for r in history[-2:]
    ]
    assert resumed.online.rates.state() == whole.online.rates.state()


def test_pass_rate_bounds_the_wrong_way_round_are_one_line_at_compose_time(compose_cfg):
    with pytest.raises(UsageError, match="no pass rate is kept") as refused:
        compose_cfg("lo=0.5", "hi=0.5", config_name="pass_rates")
    assert "\n" not in str(refused.value)


@pytest.mark.slow
def test_pass_rates_filter_resume_and_refuse_another_problem_set(compose_cfg, tmp_path, capsys, tiny_model):
    from codegrpo.data.sets import load_problem_set
    from codegrpo.tasks.pass_rates import pass_rates

    small = [
        *tiny_model,
        "problems.limit=4",
        "evaluation.num_samples=3",
        "evaluation.max_new_tokens=48",
        "evaluation.batch_size=2",
        f"rates={tmp_path}/rates.jsonl",
        f"filtered={tmp_path}/kept.jsonl",
    ]
    kept = pass_rates(compose_cfg(*small, config_name="pass_rates"))
    rates_file = tmp_path / "rates.jsonl"
    header, *lines = [json.loads(line) for line in rates_file.read_text().splitlines()]
    problems = load_problem_set(compose_cfg(*small, config_name="pass_rates").problems)
    assert [line["id"] for line in lines] == [p.id for p in problems]
    assert all(line["samples"] == 3 and line["pass_rate"] == line["passed"] / 3 for line in lines)
    # The random model passes nothing, so nothing is kept (tasks/test_pass_rates.py keeps 0 < rate < 1).
    assert [p.id for p in kept] == [line["id"] for line in lines if 0 < line["pass_rate"] < 1] == []
    assert "rated 4/4 problems" in capsys.readouterr().err

    # Interrupted after its first batch: the rerun rates the last two only, with the same seeded samples.
    rates_file.write_text("".join(json.dumps(x) + "\n" for x in [header, *lines[:2]]))
    pass_rates(compose_cfg(*small, config_name="pass_rates"))
    assert "rating 2 of 4 problems (2 already" in capsys.readouterr().err
    assert [json.loads(line) for line in rates_file.read_text().splitlines()][1:] == lines
    # A finished file re-filters without the model (which is not even loadable here), with new bounds.
    kept = pass_rates(
        compose_cfg(
            *small, "model.gguf_package=", "model.name_or_path=/nonexistent", "lo=-1", "hi=2", config_name="pass_rates"
        )
    )
    assert len(kept) == 4
    with pytest.raises(UsageError, match="another problem set") as refused:
        pass_rates(compose_cfg(*small, "problems.limit=3", config_name="pass_rates"))
    assert "\n" not in str(refused.value)
