"""The rollout group: one turn, turns of feedback on the public tests, or an agent's tool calls in a workspace;
and the episode's budgets."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegrpo.config.choices import RolloutKind
from codegrpo.config.trainer import TrainerConfig, turn_cap
from codegrpo.config.values import MAX_SHOWN_CHARS, MAX_TIMEOUT_S, check_at_least, check_positive, check_seconds
from codegrpo.errors import UsageError


@dataclass
class Budgets:
    """What one agent's episode may spend (rollout=tools: rollout.budgets.*; codegrpo.agents.workspace)."""

    tool_calls: int = 16
    sandbox_s: float = 60.0  # the shell commands' sandbox time, all together
    command_s: float = 10.0  # one command's
    output_chars: int = 2000  # of one call's observation
    workspace_bytes: int = 1 << 20
    workspace_files: int = 200

    def __post_init__(self) -> None:
        for name in ("tool_calls", "output_chars", "workspace_bytes", "workspace_files"):
            check_at_least(f"rollout.budgets.{name}", getattr(self, name), 1)
        check_positive("rollout.budgets.sandbox_s", self.sandbox_s)
        check_seconds("rollout.budgets.command_s", self.command_s, MAX_TIMEOUT_S)


@dataclass
class RolloutConfig:
    """rollout=single | feedback | tools: one turn; turns that show the model its code's results on the public
    tests and score its last code on the hidden ones (codegrpo.rollout.feedback); or an agent's episode of
    tool calls in a repository task's workspace, judged on the hidden tests (codegrpo.agents)."""

    kind: RolloutKind = RolloutKind.single
    max_turns: int = 3  # model turns per episode (feedback; tools: TRL's max_tool_calling_iterations)
    max_failures: int = 3  # failing tests one feedback message shows
    truncate_chars: int = 400  # of each input, expected output, output and error shown
    show_expected: bool = True  # show the failing tests' expected outputs
    budgets: Budgets = field(default_factory=Budgets)  # tools

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_failures", "truncate_chars"):
            if getattr(self, name) < 1:
                raise UsageError(f"rollout.{name}={getattr(self, name)}: must be at least 1")
        if self.truncate_chars > MAX_SHOWN_CHARS:
            raise UsageError(f"rollout.truncate_chars={self.truncate_chars}: at most {MAX_SHOWN_CHARS}")


# The tokens one feedback message takes, at the least, in an episode's budget: its fixed text and one short
# failing test (113 to 153 tokens measured for problems=feedback with SmolLM2's tokenizer).
FEEDBACK_TOKENS = 112


def between_turns(rollout: RolloutConfig) -> int:
    """The tokens an episode spends between two model turns: a feedback message's (rollout=feedback), or
    under rollout=tools a tool call's result at its longest, rollout.budgets.output_chars characters (code and
    command output run about 3 characters a token) in its message's frame."""
    if rollout.kind is RolloutKind.tools:
        return rollout.budgets.output_chars // 3 + TOOL_FRAME_TOKENS
    return FEEDBACK_TOKENS


TOOL_FRAME_TOKENS = 16  # a tool message's role, name and the cut notice


def episode_budget(rollout: RolloutConfig, turn: int) -> int:
    """The completion tokens an episode of ``rollout.max_turns`` turns of at most ``turn`` tokens needs: every
    turn and what comes between each two (trainer.max_completion_length bounds it)."""
    return rollout.max_turns * turn + (rollout.max_turns - 1) * between_turns(rollout)


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
    needed = episode_budget(rollout, cap)
    if budget < needed:
        raise UsageError(
            f"rollout=feedback: trainer.max_completion_length={budget} cannot hold rollout.max_turns="
            f"{rollout.max_turns} turns of trainer.generation_kwargs.max_new_tokens={cap} and the "
            f"feedback between them ({FEEDBACK_TOKENS} tokens each): set it to at least {needed}, or "
            f"lower rollout.max_turns or the turn's tokens"
        )
