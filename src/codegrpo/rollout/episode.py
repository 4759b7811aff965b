"""An episode: one completion's turns, as tokens the trainer trains on and as what each turn's code did, and
the conditions that end it."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from codegrpo.data.problems import Problem
from codegrpo.reward.reports import ProgramReport


class Stop(enum.Enum):
    """Why an episode ended. The engine checks them after each turn, in this order: the first that holds."""

    BUDGET = "budget"  # the turn, or the message after it, did not fit the completion budget or the context
    UNTESTED = "untested"  # the environment had nothing to run (a problem without public tests): one turn
    FAULT = "fault"  # the sandbox failed: the episode's final code is not scored (reward None)
    SOLVED = "solved"  # the environment is satisfied: every public test passed
    TURNS = "turns"  # the last turn max_turns allows


@dataclass
class Episode:
    """One completion's turns: its tokens (model and feedback), and what each turn's code did."""

    problem: Problem  # public tests only
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1 on the model's tokens, 0 on the environment's
    logprobs: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # each turn's reply, decoded
    codes: list[str] = field(default_factory=list)  # each turn's code
    public: list[ProgramReport | None] = field(default_factory=list)  # each turn's; None: nothing was run
    messages: list[str] = field(default_factory=list)  # the environment's messages
    feedback_tokens: int = 0
    stop: Stop | None = None  # None while it goes on

    @property
    def done(self) -> bool:
        return self.stop is not None

    @property
    def cut(self) -> bool:
        """Stopped by the completion budget (or the context): a turn or its feedback did not fit."""
        return self.stop is Stop.BUDGET

    @property
    def fault(self) -> bool:
        """A sandbox failure in some turn: its final code is not scored (reward None)."""
        return any(r is not None and r.fault for r in self.public)

    def add(self, ids: Sequence[int], mask: int, logprobs: Sequence[float] | None) -> None:
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)
