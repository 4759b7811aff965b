"""The end of a sweep: one table of each job's final metrics, printed and kept as sweep_summary.csv.

Hydra calls ``SweepSummary.on_multirun_end`` once every job of ``--multirun`` is done (conf/train.yaml
registers it under ``hydra.callbacks``). It reads what each job left in its dir, so it works the same
for local, SLURM and Optuna sweeps, and for jobs that failed.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from codegrpo.reward.metric_names import CHANGE, EVAL_CHANGE, PASS_RATE, REWARD, REWARD_MEAN, STEP

log = logging.getLogger(__name__)
# The last logged step's REWARD (TRL's) and PASS_RATE, and comparison.json's CHANGE.
COLUMNS = ("job", "status", "steps", "final_reward", PASS_RATE, EVAL_CHANGE)


def job_row(job_dir: Path) -> dict[str, Any]:
    """One job's final metrics from its dir: log_history.json, comparison.json, a FAILED marker."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    row["job"] = job_dir.name
    history_file = job_dir / "log_history.json"
    if (job_dir / "FAILED").exists():
        row["status"] = "failed"
    elif not history_file.is_file():
        row["status"] = "no result"
    else:
        steps = [e for e in json.loads(history_file.read_text()) if REWARD_MEAN in e or REWARD in e]
        row["status"] = "done"
        if steps:
            last = steps[-1]
            row["steps"] = last.get(STEP, len(steps))
            row["final_reward"] = last.get(REWARD, last.get(REWARD_MEAN))
            row[PASS_RATE] = last.get(PASS_RATE, "")
    comparison = job_dir / "comparison.json"
    if comparison.is_file():
        row[EVAL_CHANGE] = json.loads(comparison.read_text()).get(CHANGE, "")
    return row


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    """Rows for every job dir of a sweep (a dir with Hydra's .hydra inside), in job order, written to
    sweep_summary.csv there."""
    jobs = [d for d in sweep_dir.iterdir() if (d / ".hydra").is_dir()]
    jobs.sort(key=lambda d: int(d.name.partition("_")[0]) if d.name.partition("_")[0].isdigit() else 1 << 30)
    rows = [job_row(d) for d in jobs]
    with open(sweep_dir / "sweep_summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    table = [list(COLUMNS), *[[cell(row[c]) for c in COLUMNS] for row in rows]]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)) for line in table)


class SweepSummary(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        rows = summarize(sweep_dir)
        print(f"Sweep summary ({sweep_dir / 'sweep_summary.csv'}):\n{format_rows(rows)}", flush=True)
