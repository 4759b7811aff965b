"""DAPO's dynamic sampling (``sampler.dynamic``; Yu et al., arXiv 2503.14476, section 3.2, Eq. 11, Algorithm 1).

A group whose completions are all correct or all wrong has zero advantage: it costs a generation and teaches
nothing, and it shrinks the batch the others are averaged over. With ``sampler.dynamic`` a generation batch
keeps only its groups whose correctness (``code_reward``) differs; more prompts are drawn from the training
set, generated and scored until the batch is full again, at most ``sampler.max_rounds`` generations a batch.
If it is still short then, the agreeing groups fill it (they carry no advantage: the step is what it would
have been without dynamic sampling, for that share).

The refill's prompts follow the active sampler: uniform (with replacement) over the training set, or under
``sampler=difficulty`` by its pools' weights (without replacement within a round). Each round's draw comes from
(seed, rank, the optimizer step, the round) alone, as the difficulty sampler's batches come from (seed, batch):
nothing to checkpoint, and a resumed run draws what the uninterrupted run drew at the same step.

Each process keeps and drops whole groups of its own generation batch, so that batch must hold whole groups
(``check``); the processes generate the same number of rounds (every process takes another round while any is
short), since generation and scoring gather across them. The output TRL's loss reads is merged field by field:
prompts padded on the left as TRL pads them, completions and their per-token fields on the right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from codegrpo.config.sampler import SamplerConfig
from codegrpo.errors import UsageError

# TRL's generation output (GRPOTrainer._generate_and_score_completions), text models: what is padded where.
PROMPT_SIDE = ("prompt_ids", "prompt_mask")
PER_COMPLETION = ("advantages",)
COMPLETION_SIDE = (
    "completion_ids",
    "completion_mask",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "importance_sampling_ratio",
    "tool_mask",
)
TOTAL = "num_items_in_batch"  # the generation batch's loss tokens over every process: recounted after a merge
KNOWN = (*PROMPT_SIDE, *PER_COMPLETION, *COMPLETION_SIDE, TOTAL)


def check(sampler: SamplerConfig, per_device: int, steps_per_generation: int, num_generations: int) -> None:
    """Before the model loads: a process's generation batch must hold whole groups to keep or drop them."""
    if not sampler.dynamic:
        return
    local = per_device * steps_per_generation
    if local % num_generations:
        raise UsageError(
            f"sampler.dynamic keeps or drops whole groups of each process's generation batch: "
            f"trainer.per_device_train_batch_size x steps_per_generation = {local} must be a multiple of "
            f"trainer.num_generations={num_generations}"
        )


def agreeing(correct: torch.Tensor, num_generations: int) -> torch.Tensor:
    """For each group (``num_generations`` consecutive completions): whether its correctness rewards all agree
    (NaN, a sandbox failure, counts as no reward: a group with fewer than two rewards agrees)."""
    groups = correct.view(-1, num_generations)
    known = ~torch.isnan(groups)
    low = torch.where(known, groups, torch.inf).min(dim=1).values
    high = torch.where(known, groups, -torch.inf).max(dim=1).values
    return (known.sum(dim=1) < 2) | torch.isclose(low, high)


def take_groups(output: dict[str, Any], groups: list[int], num_generations: int) -> dict[str, Any]:
    """The rows of ``groups`` (indices of whole groups) of a generation output; the total is left to ``merge``."""
    rows = torch.tensor([g * num_generations + i for g in groups for i in range(num_generations)], dtype=torch.long)
    taken = {}
    for key, value in output.items():
        if key == TOTAL:
            continue
        if key not in KNOWN:
            raise UsageError(f"sampler.dynamic reads text models' generations; this one has {key!r}")
        if isinstance(value, torch.Tensor):
            taken[key] = value.index_select(0, rows.to(value.device))
    return taken


def _pad(tensors: list[torch.Tensor], value: float, left: bool) -> torch.Tensor:
    width = max(t.shape[1] for t in tensors)
    padded = []
    for t in tensors:
        missing = width - t.shape[1]
        if missing:
            filler = torch.full((t.shape[0], missing, *t.shape[2:]), value, dtype=t.dtype, device=t.device)
            t = torch.cat([filler, t] if left else [t, filler], dim=1)
        padded.append(t)
    return torch.cat(padded, dim=0)


def merge(parts: list[dict[str, Any]], pad_token_id: int, total: Callable[[torch.Tensor], torch.Tensor]) -> dict:
    """Row-wise concatenation of generation outputs of whole groups, padded as TRL pads them, with the loss
    tokens recounted (``total``: a sum over every process)."""
    keys = [key for key in parts[0] if key != TOTAL]
    merged: dict[str, Any] = {}
    for key in keys:
        values = [part[key] for part in parts]
        if values[0].dim() == 1:
            merged[key] = torch.cat(values)
        else:
            pad = pad_token_id if key.endswith("_ids") else 0
            merged[key] = _pad(values, pad, left=key in PROMPT_SIDE)
    mask = merged["completion_mask"] * merged["tool_mask"] if "tool_mask" in merged else merged["completion_mask"]
    merged[TOTAL] = total(mask.sum())
    return merged


@dataclass
class Filled:
    """One generation batch's dynamic sampling: generations run, groups seen, of them with spread, and the
    agreeing groups that filled the batch."""

    rounds: int
    groups: int
    spread: int
    filler: int


class DynamicSampling:
    """Fills a process's generation batch with groups whose correctness differs (module docstring)."""

    def __init__(
        self,
        cfg: SamplerConfig,
        num_generations: int,
        dataset_size: int,
        seed: int,
        rank: int,
        pad_token_id: int,
        weights: Callable[[], np.ndarray | None] | None = None,
    ) -> None:
        self.max_rounds = cfg.max_rounds
        self.num_generations = num_generations
        self.dataset_size = dataset_size
        self.pad_token_id = pad_token_id
        self.seed, self.rank = seed, rank  # each process draws its own prompts
        self.weights = weights  # the active sampler's weight of each problem now (None, or it gives None: uniform)
        self.last: Filled | None = None

    def draw(self, rows: int, step: int, round_: int) -> list[int]:
        """Dataset indices of ``rows // num_generations`` prompts for round ``round_`` of ``step``'s generation,
        each repeated for its group, as TRL's sampler lays a generation batch out."""
        rng = np.random.default_rng([self.seed, self.rank, step, round_])
        count = rows // self.num_generations
        weights = None if self.weights is None else self.weights()
        if weights is None:
            prompts = rng.choice(self.dataset_size, size=count, replace=True)
        else:
            distinct = np.count_nonzero(weights) >= count
            prompts = rng.choice(self.dataset_size, size=count, replace=not distinct, p=weights / weights.sum())
        return [int(index) for index in prompts for _ in range(self.num_generations)]

    def fill(
        self,
        first: dict[str, Any],
        correct: torch.Tensor,
        generate: Callable[[list[int]], tuple[dict[str, Any], torch.Tensor]],
        fewest: Callable[[int], int],
        total: Callable[[torch.Tensor], torch.Tensor],
        step: int = 0,
    ) -> dict[str, Any]:
        """The batch ``first`` (and its correctness rewards) of optimizer step ``step`` refilled:
        ``generate(indices)`` generates and scores more prompts, ``fewest(n)`` is the least of n over the
        processes, ``total`` sums over them."""
        size = int(first["completion_ids"].shape[0])
        target = size // self.num_generations  # groups
        kept: list[dict[str, Any]] = []
        agreed: list[dict[str, Any]] = []
        rounds, groups, spread, have, output = 1, 0, 0, 0, first
        while True:
            agree = agreeing(correct, self.num_generations).tolist()
            good = [g for g, a in enumerate(agree) if not a][: target - have]
            kept.append(take_groups(output, good, self.num_generations))
            agreed.append(take_groups(output, [g for g, a in enumerate(agree) if a], self.num_generations))
            groups, spread, have = groups + len(agree), spread + agree.count(False), have + len(good)
            if fewest(have) >= target or rounds >= self.max_rounds:
                break
            output, correct = generate(self.draw(size, step, rounds))
            rounds += 1
        filler = 0
        if have < target:  # still short after max_rounds: agreeing groups, in the order drawn, fill the batch
            for part in agreed:
                count = min(part["completion_ids"].shape[0] // self.num_generations, target - have)
                kept.append(take_groups(part, list(range(count)), self.num_generations))
                have, filler = have + count, filler + count
        self.last = Filled(rounds, groups, spread, filler)
        return merge([part for part in kept if part["completion_ids"].shape[0]], self.pad_token_id, total)
