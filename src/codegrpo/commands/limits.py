"""codegrpo-limits: the configured sandbox's limits, and what enforces each one on this machine.

    codegrpo-limits                          # the default local sandbox
    codegrpo-limits sandbox.use_cgroups=false sandbox.memory_mb=1024

Input: none but the sandbox group's settings. It opens the sandbox as training does, so the table is the
one a run gets; the trainer logs the same table at start and keeps it in run_info.json.

Main options: sandbox=local|superserve|ray, sandbox.memory_mb, sandbox.timeout_s, sandbox.use_cgroups,
sandbox.max_concurrency.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, entry_point, run
from codegrpo.tasks.limits import limits

GROUPS_READ = ("sandbox",)  # --help: its config composes problems and reward for ScoreConfig, unread


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="limits")
def limits_command(cfg: DictConfig) -> None:
    sys.exit(run(limits, cfg))


main = entry_point(limits_command)


if __name__ == "__main__":
    main()
