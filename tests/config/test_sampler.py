"""The sampler group (codegrpo.config.sampler): a window, weights and rounds that cannot draw are refused when the
config is read."""

from __future__ import annotations

import pytest

from codegrpo.config.sampler import SamplerConfig
from codegrpo.errors import UsageError


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"window": 0}, "sampler.window=0: needs at least 1 generation batch"),
        (
            {"revisit": 0},
            "sampler weights must be above 0 (a pool of weight 0 could empty the draw): "
            "{'explore': 0.2, 'learning': 0.7, 'revisit': 0}",
        ),
        (
            {"max_rounds": 0},
            "sampler.max_rounds=0 must be an integer of at least 1 (generations a batch, the first included)",
        ),
    ],
)
def test_a_sampler_that_cannot_draw_is_refused(settings, message):
    with pytest.raises(UsageError) as raised:
        SamplerConfig(**settings)
    assert str(raised.value) == message
