"""The limits task: the configured sandbox's limits on this machine (codegrpo-limits' work)."""

from __future__ import annotations

from codegrpo import build
from codegrpo.config.runs import ScoreConfig
from codegrpo.sandbox.base import format_limits


def limits(cfg: ScoreConfig) -> int:
    with build.sandbox(cfg.sandbox) as sandbox:
        print(format_limits(sandbox.limits()))
    return 0
