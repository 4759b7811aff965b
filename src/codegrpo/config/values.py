"""The checks every group's values share (seconds, counts, positive numbers, tolerances) and their bounds."""

from __future__ import annotations

import math
import os
from typing import Any

from codegrpo.errors import UsageError

# The longest one program, or one test of an input/output problem, may run: sandbox.timeout_s and a problem's
# timeout_s are at most this, a dataset's time limit is cut to it (docs/reward-design.md).
MAX_TIMEOUT_S = 60.0
MAX_SHOWN_CHARS = 4096  # of each public run's output and error the host keeps for rollout=feedback
MAX_BUDGET_S = 3600.0  # reward.time_budget_s: all the tests of one completion together
MISSING: Any = "???"  # OmegaConf's mark of a value the config must set (omegaconf.MISSING), without importing it


def check_seconds(name: str, value: float, maximum: float) -> None:
    """A wall-clock limit must be a number above 0 and at most ``maximum``: NaN, infinity or -1 would make
    the sandbox's worker crash, or every completion infra."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= maximum:
        raise UsageError(f"{name}={value} must be a number of seconds above 0 and at most {maximum:g}")


def host_memory_mb() -> int:
    """This machine's memory in MiB (the most one sandbox may be given)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20
    except (ValueError, OSError, AttributeError):  # not POSIX: no upper bound
        return 1 << 40


def is_count(value: Any, minimum: int) -> bool:
    """An integer (not a bool) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def is_positive(value: Any) -> bool:
    """A finite number (not a bool) above 0."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def check_at_least(name: str, value: int, minimum: int, why: str = "") -> None:
    """A count or a size in bytes: an integer of at least ``minimum``; ``why`` says what needs the minimum."""
    if not is_count(value, minimum):
        raise UsageError(f"{name}={value} must be an integer of at least {minimum}" + (f" ({why})" if why else ""))


def check_count(name: str, value: int | None, what: str) -> None:
    """An optional count: null (no limit) or an integer of at least 1; ``what`` says what it counts."""
    if value is not None:
        check_at_least(name, value, 1, what)


def check_positive(name: str, value: float, why: str = "") -> None:
    """A finite number above 0."""
    if not is_positive(value):
        raise UsageError(f"{name}={value} must be a finite number above 0" + (f" ({why})" if why else ""))


def check_tolerance(name: str, value: float) -> None:
    """How far apart two numbers may be and still match: NaN or -1 would silently turn it off (only the same
    text matches), infinity would match any two numbers. 0 compares exactly."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise UsageError(f"{name}={value} must be a finite number at least 0")
