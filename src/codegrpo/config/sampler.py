"""The sampler group: which problems each generation batch draws (uniform, by difficulty; DAPO's dynamic sampling)."""

from __future__ import annotations

from dataclasses import dataclass

from codegrpo.config.choices import SamplerKind
from codegrpo.config.values import check_at_least
from codegrpo.errors import UsageError


@dataclass
class SamplerConfig:
    """sampler=uniform | difficulty: which problems each generation batch trains on (codegrpo.training.sampling)."""

    kind: SamplerKind = SamplerKind.uniform
    window: int = 4  # a problem's estimate: its pass rate over its last `window` generation batches
    # The share of each batch drawn from each pool (difficulty; relative, an empty pool's share goes to the
    # others): never seen, 0 < rate < 1, and rate 0 or 1 (revisited now and then so the estimate stays current).
    explore: float = 0.2
    learning: float = 0.7
    revisit: float = 0.1
    # DAPO's dynamic sampling (codegrpo.training.dynamic_sampling): a generation batch keeps the groups whose
    # correctness differs and generates more prompts until it is full, at most max_rounds generations a batch.
    dynamic: bool = False
    max_rounds: int = 4

    def __post_init__(self) -> None:
        check_at_least("sampler.max_rounds", self.max_rounds, 1, "generations a batch, the first included")
        if self.window < 1:
            raise UsageError(f"sampler.window={self.window}: needs at least 1 generation batch")
        weights = {"explore": self.explore, "learning": self.learning, "revisit": self.revisit}
        if any(not value > 0 for value in weights.values()):
            raise UsageError(f"sampler weights must be above 0 (a pool of weight 0 could empty the draw): {weights}")
