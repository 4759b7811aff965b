"""f. logging: a default train.py run with its logging on (W&B offline, completions tables, plots) vs off (logger=none,
no tables, no plots), same seed and work: the time per step, side by side."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import Row, in_scratch, model_overrides, timed
from codegrpo.resources import PROJECT_ROOT
from codegrpo.reward import metric_names as keys

TITLE = "f. logging overhead per step"


def bench_logging(steps: int, rounds: int, scratch: Path, model_path: str | None = None) -> list[Row]:
    """Default run, logging on vs off, alternated; the per-step time comes from TRL's train_runtime (the
    training loop, where per-step logging happens), the fixed cost (W&B start and finish, plots) from the
    wall time. Same seed, so both generate the same completions. Neither saves the model (not logging).
    ``model_path``: a local model in place of the offline one (common.model_overrides)."""
    env = {k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"} | {"PYTHONUNBUFFERED": "1"}
    common = [sys.executable, "train.py", f"trainer.max_steps={steps}", "save_model=false"]
    common += model_overrides(model_path)
    commands = {
        "on": ([*common, "logger=wandb", "logger.mode=offline"], env),
        "off": ([*common, "logger=none", "trainer.log_completions=false", "plots=false"], env),
    }
    step_s: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(rounds):
        for name, (command, environment) in commands.items():
            run_dir = scratch / f"logging-{name}-{round_}"
            seconds, _ = timed(
                lambda c=command, e=environment, d=run_dir: subprocess.run(
                    [*c, f"hydra.run.dir={d}"], cwd=PROJECT_ROOT, env=e, check=True, capture_output=True, timeout=3600
                )
            )
            history = json.loads((run_dir / "log_history.json").read_text())
            runtime = next(row[keys.TRAIN_RUNTIME] for row in history if keys.TRAIN_RUNTIME in row)
            step_s[name].append(runtime / steps)
            wall[name].append(seconds)
            print(
                f"[logging] round {round_ + 1}: logging {name}: {runtime / steps:.2f} s/step, wall {seconds:.1f} s",
                file=sys.stderr,
            )
    on, off = min(step_s["on"]), min(step_s["off"])
    return [
        ("default step, logging on (s), best of rounds", on, "W&B offline, completions table, console quiet"),
        ("default step, logging off (s), best of rounds", off, "logger=none, log_completions=false"),
        ("ratio step time on / off", on / off, "target <= 1.05"),
        (
            "fixed cost of logging per run (s)",
            min(wall["on"]) - min(wall["off"]),
            "W&B start/finish and plots, wall time difference",
        ),
    ]


def run(args: argparse.Namespace) -> list[Row]:
    return in_scratch(lambda scratch: bench_logging(args.train_steps, args.train_rounds, scratch))
