"""The rollout group (codegrpo.config.rollout): rollout=feedback brings an episode budget that holds every turn,
and one that holds no second turn is refused when the config is read (issue 40, item 4)."""

from __future__ import annotations

import pytest

from codegrpo.config.rollout import FEEDBACK_TOKENS
from tests.helpers.config_errors import refusal


@pytest.mark.parametrize(
    ("overrides", "turn", "key"),
    [
        (["rollout=feedback"], 128, "max_new_tokens"),
        (["rollout=feedback", "trainer=gpu"], 512, "max_new_tokens"),
        (["rollout=feedback", "trainer=gpu", "vllm=colocate"], 512, "max_tokens"),
        (["rollout=feedback", "debug=fast"], 32, "max_new_tokens"),  # it refused: a 32-token episode, 128-token turns
        (
            ["rollout=feedback", "rollout.max_turns=5", "trainer.generation_kwargs={max_new_tokens:64}"],
            64,
            "max_new_tokens",
        ),
    ],
)
def test_rollout_feedback_brings_a_budget_that_holds_every_turn(compose_cfg, overrides, turn, key):
    cfg = compose_cfg(*overrides)
    turns = cfg.rollout.max_turns
    assert cfg.trainer.generation_kwargs == {key: turn}
    assert cfg.trainer.max_completion_length == turns * turn + (turns - 1) * FEEDBACK_TOKENS


def test_a_single_turn_keeps_the_trainers_own_length(compose_cfg):
    for trainer, length in (("cpu", 128), ("gpu", 512)):
        cfg = compose_cfg(f"trainer={trainer}")
        assert cfg.trainer.max_completion_length == length and cfg.trainer.generation_kwargs is None
    cfg = compose_cfg("experiment=feedback_cpu")  # its own numbers, as it sets them
    assert cfg.trainer.max_completion_length == 576 and cfg.trainer.generation_kwargs == {"max_new_tokens": 96}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["rollout=feedback", "trainer.max_completion_length=128"],
            f"rollout=feedback: trainer.max_completion_length=128 cannot hold rollout.max_turns=3 turns of trainer."
            f"generation_kwargs.max_new_tokens=128 and the feedback between them ({FEEDBACK_TOKENS} tokens each): "
            f"set it to "
            f"at least {3 * 128 + 2 * FEEDBACK_TOKENS}, or lower rollout.max_turns or the turn's tokens",
        ),
        (
            ["rollout=feedback", "trainer.generation_kwargs=null"],
            "rollout=feedback: trainer.max_completion_length=608 is an episode's budget, every turn and the feedback "
            "between "
            "them, and no turn is capped, so the first can take it all: set trainer.generation_kwargs.max_new_tokens "
            "(a "
            "turn's tokens; 'max_tokens' with vLLM)",
        ),
    ],
)
def test_a_feedback_budget_that_holds_no_second_turn_fails_when_the_config_is_read(compose_cfg, overrides, message):
    assert refusal(compose_cfg, *overrides) == message


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["rollout.max_turns=0"], "rollout.max_turns=0: must be at least 1"),
        (["rollout.truncate_chars=5000"], "rollout.truncate_chars=5000: at most 4096"),
    ],
)
def test_a_rollout_that_shows_nothing_or_too_much_is_refused(compose_cfg, overrides, message):
    assert refusal(compose_cfg, *overrides) == message
