"""The reward group: how a completion is scored (kind, extraction, checker, budget) and the reward functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from codegrpo.config.choices import Checker, Extract, RewardKind
from codegrpo.config.values import MAX_BUDGET_S, check_seconds, check_tolerance


@dataclass
class RewardConfig:
    kind: RewardKind = RewardKind.binary  # binary | partial
    extract: Extract = Extract.first  # which fenced code block to score: first | last
    # Reward functions summed with `weights` (None: all 1.0): code_reward (the sandbox, configured by kind and
    # extract above), a trl.rewards name (think_format_reward, get_soft_overlong_punishment, ...) or
    # "pkg.module:function". get_* names are factories, called with args.<function name> (codegrpo.reward.functions).
    functions: list[str] = field(default_factory=lambda: ["code_reward"])
    weights: Optional[list[float]] = None
    args: dict[str, Any] = field(default_factory=dict)
    # stdin/stdout problems: how printed output is compared with the expected (docs/reward-design.md).
    checker: Checker = Checker.tokens
    float_tolerance: float = 1e-6  # numbers equal within this, relative or absolute (checker=tokens)
    # Input/output problems: all the tests of one completion together get at most this many seconds.
    time_budget_s: float = 60.0
    # kind=binary, input/output problems: a completion's tests stop at its first failing one; the verdict
    # (status, reward, reason) is the same (docs/reward-design.md). partial and rollout=feedback's public
    # tests always run every test.
    fail_fast: bool = True

    def __post_init__(self) -> None:
        check_seconds("reward.time_budget_s", self.time_budget_s, MAX_BUDGET_S)
        check_tolerance("reward.float_tolerance", self.float_tolerance)
