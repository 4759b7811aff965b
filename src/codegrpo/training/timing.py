"""Where a training step's time goes: the ``timing/*`` metrics of every logged step (reward/metric_names.py
says what each holds; the trainer drops TRL's own step_time, which times training_step alone).

Each phase's clock counts only its own seconds: a phase that starts inside another pauses the outer one
(TRL generates and scores inside its training_step; rollout=feedback runs public tests inside generation), so
no second counts twice and the five parts sum to ``step_s``. Time is booked to the logged step during which
it was spent: a step that reuses a buffered generation batch (steps_per_generation > 1) has no generation
time, and with gradient accumulation or logging_steps > 1 a logged step holds all its micro-batches.
On CUDA the trainer waits for the GPU where a phase ends on work it queued: the update's end, and before the
rewards, where TRL has just queued the old and reference log-prob passes (else their tail is booked as reward
time). Standard library only (and the metric table): rollout=feedback books its public tests here without
importing torch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from codegrpo.reward.metric_names import GENERATION_S, OTHER_S, REWARD_S, SAVE_S, STEP_S, TOKENS_PER_S, UPDATE_S

GENERATION, REWARD, UPDATE, SAVE = "generation", "reward", "update", "save"
PHASES = (GENERATION, REWARD, UPDATE, SAVE)
SECONDS = {GENERATION: GENERATION_S, REWARD: REWARD_S, UPDATE: UPDATE_S, SAVE: SAVE_S}  # each phase's metric


class Clock:
    """The seconds of each phase, and the tokens generated, since the last logged step (``lap``)."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self.start()

    def start(self) -> None:
        """Training begins now: the first step's time counts from here."""
        self._open: list[str] = []  # the phases going on, innermost last
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._tokens = 0
        self._lap = self._since = self._now()

    def _book(self, now: float) -> None:
        # Only the innermost open phase is running: it gets the seconds since the last change.
        if self._open:
            self._seconds[self._open[-1]] += now - self._since
        self._since = now

    def enter(self, phase: str) -> None:
        if phase not in self._seconds:
            raise ValueError(f"unknown phase {phase!r}: one of {', '.join(PHASES)}")
        self._book(self._now())
        self._open.append(phase)

    def exit(self, phase: str) -> None:
        self._book(self._now())
        if phase in self._open:  # the innermost of that name (phases nest, so it is the last open one)
            del self._open[len(self._open) - 1 - self._open[::-1].index(phase)]

    @contextmanager
    def phase(self, phase: str) -> Iterator[None]:
        self.enter(phase)
        try:
            yield
        finally:
            self.exit(phase)

    def generated(self, tokens: int) -> None:
        """``tokens`` the model generated (its own, not rollout=feedback's feedback tokens)."""
        self._tokens += tokens

    def lap(self) -> dict[str, float]:
        """The timing/* metrics of the logged step that ends now; the next one starts."""
        now = self._now()
        self._book(now)
        step = now - self._lap
        metrics = {SECONDS[phase]: seconds for phase, seconds in self._seconds.items()}
        metrics[OTHER_S] = max(0.0, step - sum(self._seconds.values()))
        metrics[STEP_S] = step
        if self._tokens and self._seconds[GENERATION] > 0:
            metrics[TOKENS_PER_S] = self._tokens / self._seconds[GENERATION]
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._tokens = 0
        self._lap = now
        return metrics


def phase(clock: Clock | None, name: str) -> AbstractContextManager[None]:
    """``clock.phase(name)``, or nothing without a clock (a trainer other than CodeGRPOTrainer)."""
    return clock.phase(name) if clock is not None else nullcontext()
