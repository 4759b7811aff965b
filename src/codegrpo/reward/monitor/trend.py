"""The rates of flagged completions per batch (hacks/* metrics), and the warning when they rise."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence

from codegrpo.reward.metric_names import HACKS_ANY, HACKS_COUNT, hacks
from codegrpo.reward.monitor.categories import CATEGORIES


def hack_metrics(flags: Sequence[Sequence[str]]) -> dict[str, float]:
    """``hacks/any`` and ``hacks/<category>``: the fraction of completions flagged; ``hacks/count`` the number."""
    total = len(flags)
    flagged = sum(1 for item in flags if item)
    metrics = {HACKS_ANY: flagged / total if total else 0.0, HACKS_COUNT: float(flagged)}
    for category in CATEGORIES:
        metrics[hacks(category)] = sum(category in item for item in flags) / total if total else 0.0
    return metrics


class HackTrend:
    """Warns once when the flagged rate over the last ``window`` batches rises above the window before it
    by ``rise`` (absolute) and doubles; again only after it fell back."""

    def __init__(self, window: int = 10, rise: float = 0.05) -> None:
        self.window = window
        self.rise = rise
        self.rates: deque[float] = deque(maxlen=2 * window)
        self.warned = False

    def update(self, rate: float) -> str | None:
        self.rates.append(rate)
        if len(self.rates) < 2 * self.window:
            return None
        rates = list(self.rates)
        before = sum(rates[: self.window]) / self.window
        now = sum(rates[self.window :]) / self.window
        rising = now - before >= self.rise and now >= 2 * before
        message = None
        if rising and not self.warned:
            message = (
                f"reward hacking is rising: {now:.1%} of completions flagged over the last {self.window} "
                f"batches, {before:.1%} over the {self.window} before (hacks/* in the logs)"
            )
        self.warned = rising or (self.warned and now > before)
        return message


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)
