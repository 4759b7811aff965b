"""codegrpo-train (``python train.py`` in a checkout): GRPO training with sandboxed test rewards.

Everything heavy (torch, transformers, trl, datasets) is imported by the task, so ``--help``, ``--cfg job``
and a config that does not compose answer at once (tests/test_startup.py).
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, entry_point, one_line_errors, run
from codegrpo.config.requirements import check_dependencies
from codegrpo.tracking.runinfo import rerun_arguments


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def train_command(cfg: DictConfig) -> float | None:
    """Train: python train.py [group=option ...] [key=value ...] (--help lists the groups)."""
    from codegrpo.tasks.train import settle_failed_run, train_objective

    # A run that fails before its first step leaves no run dir; any other failure leaves a FAILED file.
    # The value of optimized_metric (conf/hparams_search) is what an Optuna sweep optimises.
    return run(train_objective, cfg, on_failure=partial(settle_failed_run, Path(cfg.run_dir)))


# With the trainer schema (every trl.GRPOConfig field), which only train.yaml composes.
_train_main = entry_point(train_command, trainer=True)


def main() -> None:
    """``rerun=<run dir>`` repeats a recorded run into a new dir (tracking.runinfo.rerun_arguments)."""
    with one_line_errors():
        # Before _train_main registers the trainer schema, which reads trl's GRPOConfig when the field cache is
        # for other versions: an out-of-range trl or transformers is this one line, not an error inside it.
        check_dependencies()
        sys.argv = [sys.argv[0], *rerun_arguments(sys.argv[1:])]
    _train_main()


if __name__ == "__main__":
    main()
