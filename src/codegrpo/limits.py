"""Print the configured sandbox's limits and what enforces each one on this machine.

    python -m codegrpo.limits                          # the default local sandbox
    python -m codegrpo.limits sandbox.use_cgroups=false

It starts the sandbox (and its preflight) as training would, so the table is the one a run gets; the
trainer logs the same table at start and keeps it in run_info.json.
"""

from __future__ import annotations

import asyncio
import sys

import hydra
from omegaconf import DictConfig

from codegrpo.cli import CONFIG_DIR, run_friendly
from codegrpo.config import register_configs
from codegrpo.sandbox import build_sandbox, format_limits


def limits(cfg: DictConfig) -> int:
    sandbox = build_sandbox(cfg.sandbox)
    try:
        print(format_limits(sandbox.limits()))
    finally:
        asyncio.run(sandbox.aclose())
    return 0


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="limits")
def main(cfg: DictConfig) -> None:
    sys.exit(run_friendly(lambda: limits(cfg)))


if __name__ == "__main__":
    register_configs()
    main()
