"""Which problems each GRPO step trains on: uniform (TRL's own shuffled order) or difficulty-aware.

A group whose completions all pass or all fail has zero advantage: it costs a generation and teaches
nothing. ``sampler=difficulty`` tracks each problem's recent pass rate from the reward calls themselves
(``PassRates``: an observer of the rewards' SharedBatch, no extra generation) and draws each generation batch
with a share per pool: problems whose estimate is strictly between 0 and 1 (``learning``), problems never seen
(``explore``), and solved or unsolved ones (``revisit``, small but above zero, so their estimates stay
current and the pool never empties). An empty pool's share goes to the others.

Every rank must put the same prompts in the same groups. The observations of one generation are gathered
from every rank before they count, and the draw of generation batch k is a function of the seed, k and the
observations of batches < k - 1 alone (a numpy generator seeded with [seed, k]), never of a rank's own
RNG or of when the dataloader happened to ask: the batch after next is prefetched before this one is
scored. The state (each problem's recent rates and the observations not folded in yet) is saved in every
checkpoint, so a resumed run draws what an uninterrupted one would.

``sampler=uniform`` keeps TRL's RepeatSampler; the pass rates are tracked and logged all the same, so the
two compare on the same ``sampler/*`` metrics.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codegrpo.config.choices import SamplerKind
from codegrpo.config.sampler import SamplerConfig
from codegrpo.errors import UsageError
from codegrpo.reward.metric_names import (
    SAMPLER_GROUPS,
    SAMPLER_PASS_RATE_MEAN,
    SAMPLER_ZERO_SPREAD_SHARE,
    sampler_pool,
)
from codegrpo.reward.verdict import Scored, Status

STATE_FILE = "sampler_state.json"
HISTOGRAM_BINS = 5  # the pass-rate histogram's bins over [0, 1]
# One completion as observed: (problem index, passed, reward or None where the sandbox failed).
Observation = tuple[int, bool, float | None]


def check_batch(cfg: SamplerConfig, num_problems: int, prompts_per_batch: int) -> None:
    """One line, before the model loads, when the problem set cannot fill one generation batch."""
    if num_problems < prompts_per_batch:
        raise UsageError(
            f"sampler={cfg.kind}: the problem set has {num_problems} problems, fewer than one generation batch "
            f"of {prompts_per_batch} prompts (trainer.generation_batch_size / trainer.num_generations, the batch "
            "per_device_train_batch_size x processes x steps_per_generation): raise problems.limit, or lower "
            "trainer.steps_per_generation or trainer.per_device_train_batch_size"
        )


class PassRates:
    """Each problem's pass rate over its last ``window`` generation batches, agreed by every rank."""

    def __init__(self, problem_ids: Sequence[str], window: int) -> None:
        self.ids = list(problem_ids)
        self.index = {pid: i for i, pid in enumerate(self.ids)}
        self.window = window
        self.recent: list[list[float]] = [[] for _ in self.ids]
        self.local: list[Observation] = []  # this rank's completions of the generation being scored
        self.pending: dict[int, list[Observation]] = {}  # every rank's, by generation, not folded in yet
        self.generations = 0  # generation batches recorded
        self.applied = 0  # generations < applied are folded into ``recent``
        self._groups = 0  # since the last metrics(): groups seen, and those without reward spread
        self._flat = 0

    def observe(self, scored: Sequence[Scored]) -> None:
        """The Scorer's observer: every verdict of one reward call on this rank."""
        for s in scored:
            if s.problem_id in self.index:
                self.local.append((self.index[s.problem_id], s.verdict.status is Status.PASSED, s.verdict.reward))

    def end_generation(self, gather: Callable[[list], list] | None = None) -> None:
        """Record one generation batch: every rank's observations (``gather``: accelerate's gather_object)."""
        observed, self.local = self.local, []
        if gather is not None:
            observed = [tuple(o) for o in gather(observed)]
        self.pending[self.generations] = observed
        self.generations += 1
        for rewards in _by_problem(observed, lambda o: o[2]).values():
            values = [r for r in rewards if r is not None]
            if len(values) >= 2:
                self._groups += 1
                self._flat += max(values) == min(values)

    def fold(self, until: int) -> None:
        """Fold the recorded generations < ``until`` into the estimates, in order."""
        while self.applied < until and self.applied in self.pending:
            for i, passed in _by_problem(self.pending.pop(self.applied), lambda o: o[1]).items():
                self.recent[i] = ([*self.recent[i], sum(passed) / len(passed)])[-self.window :]
            self.applied += 1

    def estimates(self) -> list[float | None]:
        return [sum(r) / len(r) if r else None for r in self.recent]

    def pools(self) -> np.ndarray:
        """Each problem's pool: 0 unseen, 1 learning (0 < rate < 1), 2 solved, 3 unsolved."""
        return np.array([0 if e is None else 2 if e >= 1.0 else 3 if e <= 0.0 else 1 for e in self.estimates()])

    def metrics(self) -> dict[str, float]:
        """sampler/*: the zero-spread share of the groups since the last call (popped), the pools, the mean."""
        pools = np.bincount(self.pools(), minlength=4)
        seen = [e for e in self.estimates() if e is not None]
        metrics = {
            sampler_pool(name): float(n)
            for name, n in zip(("unseen", "learning", "solved", "unsolved"), pools, strict=True)
        }
        if seen:
            metrics[SAMPLER_PASS_RATE_MEAN] = float(np.mean(seen))
        if self._groups:
            metrics[SAMPLER_ZERO_SPREAD_SHARE] = self._flat / self._groups
            metrics[SAMPLER_GROUPS] = float(self._groups)
        self._groups = self._flat = 0
        return metrics

    def histogram(self) -> np.ndarray:
        """Counts of the seen problems' estimates in HISTOGRAM_BINS equal bins over [0, 1]."""
        seen = [e for e in self.estimates() if e is not None]
        return np.histogram(seen, bins=HISTOGRAM_BINS, range=(0.0, 1.0))[0]

    def state(self) -> dict[str, Any]:
        return {
            "ids": self.ids,
            "window": self.window,
            "recent": self.recent,
            "generations": self.generations,
            "applied": self.applied,
            "pending": {str(g): obs for g, obs in self.pending.items()},
        }

    def load(self, state: dict[str, Any], where: str) -> None:
        if state.get("ids") != self.ids:
            raise UsageError(f"{where}: the sampler state is of another problem set (its problem ids differ)")
        self.recent = [list(r)[-self.window :] for r in state["recent"]]
        self.generations, self.applied = int(state["generations"]), int(state["applied"])
        self.pending = {int(g): [tuple(o) for o in obs] for g, obs in state["pending"].items()}


def _by_problem(observed: Sequence[Observation], value: Callable[[Observation], Any]) -> dict[int, list]:
    grouped: dict[int, list] = {}
    for o in observed:
        grouped.setdefault(o[0], []).append(value(o))
    return grouped


def shares(cfg: SamplerConfig) -> np.ndarray:
    """The pools' shares of a batch: unseen (explore), learning, solved or unsolved (revisit)."""
    return np.array([cfg.explore, cfg.learning, cfg.revisit], dtype=float)


def pool_weights(rates: PassRates, shares: np.ndarray) -> np.ndarray:
    """Each problem's weight: its pool's share split evenly over the pool (solved and unsolved are one pool,
    revisit), so a pool's share of a batch does not grow with its size; empty pools give theirs to the others."""
    pools = np.minimum(rates.pools(), 2)  # 0 unseen, 1 learning, 2 solved or unsolved
    sizes = np.bincount(pools, minlength=3)
    return shares[pools] / sizes[pools]


class DifficultySampler:
    """A torch Sampler with RepeatSampler's layout (each prompt ``mini_repeat_count`` times in a row, each
    batch of ``batch_size`` prompts ``repeat_count`` times) and its length, drawing each batch by pool."""

    def __init__(
        self,
        rates: PassRates,
        cfg: SamplerConfig,
        batch_size: int,
        mini_repeat_count: int,
        repeat_count: int,
        seed: int,
    ) -> None:
        self.rates = rates
        self.shares = shares(cfg)
        self.batch_size = batch_size
        self.mini_repeat_count = mini_repeat_count
        self.repeat_count = repeat_count
        self.seed = seed
        self.epoch = 0
        self.per_epoch = len(rates.ids) // batch_size  # batches per epoch, as RepeatSampler has

    def set_epoch(self, epoch: int) -> None:  # the trainer calls it at each epoch, a resumed one included
        self.epoch = epoch

    def __len__(self) -> int:
        return self.per_epoch * self.batch_size * self.mini_repeat_count * self.repeat_count

    def draw(self, k: int) -> list[int]:
        """Generation batch k: ``batch_size`` distinct problems, weighted by pool, from (seed, k) and the
        observations of batches < k - 1 (weighted sampling without replacement, Efraimidis-Spirakis keys)."""
        self.rates.fold(k - 1)
        weights = pool_weights(self.rates, self.shares)
        keys = np.log(np.random.default_rng([self.seed, k]).random(len(weights))) / weights
        return np.argsort(-keys, kind="stable")[: self.batch_size].tolist()

    def __iter__(self) -> Iterator[int]:
        for j in range(self.per_epoch):
            chunk = self.draw(self.epoch * self.per_epoch + j)
            for _ in range(self.repeat_count):
                for index in chunk:
                    yield from [index] * self.mini_repeat_count


class Online:
    """What the trainer holds: the pass rates, the sampler it asks for, its metrics and checkpointed state."""

    def __init__(self, cfg: SamplerConfig, problem_ids: Sequence[str], seed: int) -> None:
        self.cfg = cfg
        self.seed = seed
        self.rates = PassRates(problem_ids, cfg.window)

    def sampler(self, repeat_sampler: Any) -> Any:
        """TRL's RepeatSampler (uniform), or a DifficultySampler with its layout."""
        if self.cfg.kind is not SamplerKind.difficulty:
            return repeat_sampler
        return DifficultySampler(
            self.rates,
            self.cfg,
            repeat_sampler.batch_size,
            repeat_sampler.mini_repeat_count,
            repeat_sampler.repeat_count,
            self.seed,
        )

    def weights(self) -> np.ndarray | None:
        """What the sampler weighs each problem by now (sampler.dynamic's refill follows it); None: uniform."""
        if self.cfg.kind is not SamplerKind.difficulty:
            return None
        return pool_weights(self.rates, shares(self.cfg))

    def save(self, checkpoint: Path) -> None:
        (checkpoint / STATE_FILE).write_text(json.dumps(self.rates.state()))

    def load(self, checkpoint: Path) -> None:
        """A resumed run's state; a checkpoint written without one (an older run's) starts afresh."""
        path = checkpoint / STATE_FILE
        if path.is_file():
            self.rates.load(json.loads(path.read_text()), str(path))
