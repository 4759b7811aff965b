"""The evaluation block (codegrpo.config.evaluation): settings that cannot sample are refused when the config is
read, not after the model has loaded."""

from __future__ import annotations

import pytest

from codegrpo.errors import UsageError


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["evaluation.temperature=0", "evaluation.num_samples=2"], "temperature=0 is greedy"),
        (["evaluation.num_samples=2", "evaluation.k=[1,5]"], r"needs evaluation.num_samples >= 5"),
        (["evaluation.k=[0]"], r"evaluation.k=\[0\] must be integers of at least 1"),
        (["evaluation.limit=0"], "evaluation.limit=0 must be an integer of at least 1"),
        (["evaluation.batch_size=0"], "evaluation.batch_size=0 must be an integer of at least 1"),
        (["evaluation.top_p=0"], r"evaluation.top_p=0.0 must be in \(0, 1\]"),
    ],
)
def test_evaluation_settings_that_cannot_sample_fail_when_the_config_is_read(compose_cfg, overrides, message):
    with pytest.raises(UsageError, match=message):
        compose_cfg(*overrides)
