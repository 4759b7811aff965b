"""Reward functions for the preemption tests, named in reward.functions as tests.helpers.preempt:<name>.

``get_signal_at`` sends this process a signal from inside a training step (the scoring of that step then
runs with the signal pending), so a test stops a real run at a step of its choosing; ``length_reward``
gives every group reward spread, so the weights really move.
"""

from __future__ import annotations

import os
import signal

from codegrpo.reward.extraction import completion_text


def length_reward(completions, **_) -> list[float]:
    return [len(completion_text(c)) / 100 for c in completions]


def get_signal_at(call: int = 1, name: str = "SIGTERM", times: int = 1, rank: int | None = None):
    """A reward of 0 that sends ``name`` to this process ``times`` times on its ``call``-th call (one call
    per optimizer step here), on every rank or only on ``rank``; ``call`` 0 never sends."""
    calls = 0

    def signal_at(completions, **_) -> list[float]:
        nonlocal calls
        calls += 1
        if calls == call and rank in (None, int(os.environ.get("RANK", "0"))):
            for _ in range(times):
                os.kill(os.getpid(), signal.Signals[name])
        return [0.0] * len(completions)

    return signal_at
