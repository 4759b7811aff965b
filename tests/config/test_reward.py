"""The reward group (codegrpo.config.reward): a tolerance or a time budget that would turn a check off is refused
when the config is read."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("reward.float_tolerance=nan", "reward.float_tolerance=nan must be a finite number at least 0"),
        ("reward.float_tolerance=-1", "reward.float_tolerance=-1.0 must be a finite number at least 0"),
        ("reward.float_tolerance=inf", "reward.float_tolerance=inf must be a finite number at least 0"),
        ("reward.time_budget_s=0", "reward.time_budget_s=0.0 must be a number of seconds above 0 and at most 3600"),
        ("reward.time_budget_s=-5", "reward.time_budget_s=-5.0 must be a number of seconds above 0 and at most 3600"),
    ],
)
def test_reward_settings_that_would_turn_a_check_off_fail_when_the_config_is_read(compose_cfg, override, message):
    # float_tolerance=nan or -1 matched no number within a tolerance, silently; 0 compares exactly.
    from codegrpo.errors import UsageError

    with pytest.raises(UsageError) as raised:
        compose_cfg(override)
    assert str(raised.value) == message
    assert compose_cfg("reward.float_tolerance=0").reward.float_tolerance == 0.0
