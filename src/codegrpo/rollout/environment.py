"""What the model is told after each turn: the protocol an environment meets (in the style of verifiers'
``MultiTurnEnv.env_response``), so the engine plays any of them. codegrpo's one environment is the feedback
on public tests (codegrpo.rollout.feedback)."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from codegrpo.reward.reports import ProgramReport
from codegrpo.rollout.episode import Episode, Stop


@dataclass(frozen=True)
class Response:
    """The environment's answer to an episode's last turn: what its code did (None: nothing ran), and either
    the next user message or why the episode stops (one of Stop.UNTESTED, FAULT, SOLVED)."""

    report: ProgramReport | None
    message: str = ""
    stop: Stop | None = None

    def __post_init__(self) -> None:
        if self.stop is None and not self.message:
            raise ValueError("an environment's Response poses a message or stops the episode")


class Environment(Protocol):
    def code(self, reply: str) -> str:
        """A reply's code: what the environment runs and the reward scores."""
        ...

    def respond(self, episodes: Sequence[Episode]) -> Coroutine[Any, Any, list[Response]]:
        """One Response per episode, for its last turn (``episode.codes[-1]``), all of them together (one
        sandbox batch). It never stops an episode for the budget or the turn count: the engine does."""
        ...
