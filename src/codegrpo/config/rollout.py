"""The rollout group: one turn, or turns of feedback on the public tests; and the episode's token budget."""

from __future__ import annotations

from dataclasses import dataclass

from codegrpo.config.choices import RolloutKind
from codegrpo.config.trainer import TrainerConfig, turn_cap
from codegrpo.config.values import MAX_SHOWN_CHARS
from codegrpo.errors import UsageError


@dataclass
class RolloutConfig:
    """rollout=single | feedback: one turn, or turns that show the model its code's results on the public
    tests and score its last code on the hidden ones (codegrpo.rollout.feedback)."""

    kind: RolloutKind = RolloutKind.single
    max_turns: int = 3  # model turns per episode (feedback)
    max_failures: int = 3  # failing tests one feedback message shows
    truncate_chars: int = 400  # of each input, expected output, output and error shown
    show_expected: bool = True  # show the failing tests' expected outputs

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_failures", "truncate_chars"):
            if getattr(self, name) < 1:
                raise UsageError(f"rollout.{name}={getattr(self, name)}: must be at least 1")
        if self.truncate_chars > MAX_SHOWN_CHARS:
            raise UsageError(f"rollout.truncate_chars={self.truncate_chars}: at most {MAX_SHOWN_CHARS}")


# The tokens one feedback message takes, at the least, in an episode's budget: its fixed text and one short
# failing test (113 to 153 tokens measured for problems=feedback with SmolLM2's tokenizer).
FEEDBACK_TOKENS = 112


def episode_budget(max_turns: int, turn: int) -> int:
    """The completion tokens an episode of ``max_turns`` turns of at most ``turn`` tokens needs: every turn and
    a feedback message between each two (rollout=feedback; trainer.max_completion_length bounds it)."""
    return max_turns * turn + (max_turns - 1) * FEEDBACK_TOKENS


def check_episode_budget(trainer: TrainerConfig, rollout: RolloutConfig) -> None:
    """rollout=feedback: trainer.max_completion_length bounds a whole episode, so it must hold rollout.max_turns
    turns of trainer.generation_kwargs.max_new_tokens and the feedback between them; else every episode would
    be cut at its first turn and the run would train single turns, silently."""
    if rollout.kind is not RolloutKind.feedback or rollout.max_turns < 2 or trainer.max_completion_length is None:
        return
    budget = trainer.max_completion_length
    cap = turn_cap(getattr(trainer, "generation_kwargs", None))
    if cap is None:
        raise UsageError(
            f"rollout=feedback: trainer.max_completion_length={budget} is an episode's budget, every "
            f"turn and the feedback between them, and no turn is capped, so the first can take it all: "
            f"set trainer.generation_kwargs.max_new_tokens (a turn's tokens; 'max_tokens' with vLLM)"
        )
    needed = episode_budget(rollout.max_turns, cap)
    if budget < needed:
        raise UsageError(
            f"rollout=feedback: trainer.max_completion_length={budget} cannot hold rollout.max_turns="
            f"{rollout.max_turns} turns of trainer.generation_kwargs.max_new_tokens={cap} and the "
            f"feedback between them ({FEEDBACK_TOKENS} tokens each): set it to at least {needed}, or "
            f"lower rollout.max_turns or the turn's tokens"
        )
