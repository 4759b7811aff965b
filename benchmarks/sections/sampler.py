"""j. sampler: sampler=uniform vs sampler=difficulty vs sampler.dynamic=true (DAPO's dynamic sampling) on
trivial + basics, same seeds and steps: the share of zero-spread groups trained on, the generations a step took,
the reward curve, held-out pass@1 before -> after with the paired 95% interval, the wall time (`--only sampler`;
35-45 min a run on one core, six runs at the defaults: not in the default run; `--sampler-seeds 1` halves it,
`--sampler-arms uniform,dynamic` picks the arms)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.common import Row, in_scratch, ints, model_overrides, timed
from codegrpo.data.files import load_problems
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward import metric_names as keys

TITLE = "j. sampler=uniform vs difficulty vs dynamic (trivial + basics)"
# Each arm's overrides: which problems a batch draws (sampler=) and whether all-agree groups are dropped.
ARMS = {
    "uniform": ["sampler=uniform"],
    "difficulty": ["sampler=difficulty"],
    "dynamic": ["sampler=uniform", "sampler.dynamic=true"],
}


def sampler_mix(path: Path) -> Path:
    """trivial + basics in one problem file: easy and hard problems for the offline model (basics' ids
    get a prefix, one of them repeats a trivial id)."""
    from codegrpo.data.files import write_problems

    easy = load_problems("problems/trivial.jsonl")
    hard = [replace(p, id=f"basics/{p.id}") for p in load_problems("problems/basics.jsonl")]
    write_problems(easy + hard, path)
    return path


def _sampler_run(run_dir: Path) -> dict[str, object]:
    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if keys.REWARD in row]
    comparison = json.loads((run_dir / "comparison.json").read_text())
    # The zero-spread groups trained on: TRL's share of those generated, or under dynamic sampling (whose
    # generations include the dropped groups) the share of the batch agreeing groups had to fill.
    trained = keys.DYNAMIC_FILLER_SHARE if keys.DYNAMIC_FILLER_SHARE in steps[0] else keys.FRAC_REWARD_ZERO_STD
    return {
        "zero_spread": sum(r[trained] for r in steps) / len(steps),
        "generations": sum(r.get(keys.DYNAMIC_ROUNDS, 1.0) for r in steps) / len(steps),
        "rewards": [round(r[keys.REWARD], 3) for r in steps],
        "before": comparison[keys.PASS1_BEFORE],
        "after": comparison[keys.PASS1_AFTER],
        "change": comparison[keys.CHANGE],
        "ci95": comparison["ci95"],
        "train_s": next(row[keys.TRAIN_RUNTIME] for row in history if keys.TRAIN_RUNTIME in row),
    }


def bench_sampler(
    steps: int,
    seeds: list[int],
    eval_limit: int,
    eval_samples: int,
    generations: int,
    prompts: int,
    arms: list[str],
    scratch: Path,
    model_path: str | None = None,
) -> list[Row]:
    """The arms (ARMS) on trivial + basics (train split; the held-out eval split is scored before and after),
    same seeds and steps, alternated so drift in machine load hits each alike. Per run: the share of
    zero-spread groups trained on, averaged over the steps, the generations a step took, the reward curve,
    held-out pass@1 before -> after with the paired 95% interval, and the wall time. ``model_path``: a local
    model in place of the offline one (common.model_overrides)."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    mix = sampler_mix(scratch / "mix.jsonl")
    common = [
        sys.executable,
        "train.py",
        "logger=none",
        "save_model=false",
        "plots=false",
        "trainer.log_completions=false",
        "problems=jsonl",
        f"problems.path={mix}",
        "problems.split=train",
        f"trainer.max_steps={steps}",
        f"trainer.per_device_train_batch_size={prompts * generations}",
        f"trainer.num_generations={generations}",
        "trainer.max_completion_length=96",
        "trainer.learning_rate=1e-5",  # learn_cpu's lr
        "evaluation.before=true",
        "evaluation.after=true",
        f"evaluation.limit={eval_limit}",
        f"evaluation.num_samples={eval_samples}",
        "evaluation.temperature=1.0",
        "evaluation.max_new_tokens=96",
        *model_overrides(model_path),
    ]
    runs: dict[str, list[dict[str, object]]] = {arm: [] for arm in arms}
    for seed in seeds:
        for kind in runs:
            run_dir = scratch / f"{kind}-{seed}"
            seconds, _ = timed(
                lambda k=kind, s=seed, d=run_dir: subprocess.run(
                    [*common, *ARMS[k], f"seed={s}", f"hydra.run.dir={d}"],
                    cwd=PROJECT_ROOT,
                    env=env,
                    check=True,
                    capture_output=True,
                    timeout=7200,
                )
            )
            result = _sampler_run(run_dir) | {"wall_s": seconds, "seed": seed}
            runs[kind].append(result)
            print(f"[sampler] {kind} seed {seed}: {json.dumps(result)}", file=sys.stderr)
    rows = []
    for kind, results in runs.items():
        mean = {
            key: sum(r[key] for r in results) / len(results)
            for key in ("zero_spread", "generations", "change", "wall_s")
        }
        intervals = "; ".join(
            f"seed {r['seed']}: {r['before']:.3f} -> {r['after']:.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"
            for r in results
        )
        rows += [
            (f"{kind}: zero-spread share of groups", mean["zero_spread"], f"{steps} steps, {len(seeds)} seeds"),
            (f"{kind}: generations a step", mean["generations"], "dynamic sampling's rounds; 1 otherwise"),
            (f"{kind}: held-out pass@1 change", mean["change"], intervals),
            (f"{kind}: wall time (s)", mean["wall_s"], "training and both evaluations"),
            (
                f"{kind}: reward at the last step",
                results[0]["rewards"][-1],
                f"curve of seed {results[0]['seed']}: {results[0]['rewards']}",
            ),
        ]
    flat = {kind: sum(r["zero_spread"] for r in results) for kind, results in runs.items()}
    ratios = [
        (f"ratio zero-spread {kind} / uniform", flat[kind] / max(1e-9, flat["uniform"]), "target <= 0.5")
        for kind in flat
        if kind != "uniform" and "uniform" in flat
    ]
    return [*rows, *ratios]


def run(args: argparse.Namespace) -> list[Row]:
    return in_scratch(
        lambda scratch: bench_sampler(
            args.sampler_steps,
            ints(args.sampler_seeds),
            args.sampler_eval_limit,
            args.sampler_eval_samples,
            args.sampler_generations,
            args.sampler_prompts,
            [arm.strip() for arm in args.sampler_arms.split(",")],
            scratch,
        )
    )
