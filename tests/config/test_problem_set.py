"""The problems group (codegrpo.config.problem_set): counts, the split and the Hub configs, refused when the config
is read."""

from __future__ import annotations

import pytest

from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.errors import UsageError


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        # A slice took -1 as "all but the last problem", silently.
        (
            ["problems.limit=-1"],
            r"problems.limit=-1 must be an integer of at least 1 \(the first N problems; null: all\)",
        ),
        (["problems.max_tests=0"], "problems.max_tests=0 must be an integer of at least 1"),
        (["problems.min_tests=0"], "problems.min_tests=0 must be an integer of at least 1"),
        (["problems.eval_fraction=1.0"], "problems.eval_fraction=1.0 must be a fraction between 0 and 1"),
    ],
)
def test_problem_settings_that_cannot_select_fail_when_the_config_is_read(compose_cfg, overrides, message):
    with pytest.raises(UsageError, match=message):
        compose_cfg(*overrides)


def test_several_hub_configs_are_hub_names_alone():
    with pytest.raises(UsageError, match=r"^problems.hub_name='taco' and problems.hub_names=\['taco'\]: set one"):
        ProblemsConfig(name="x", path="", hub_name="taco", hub_names=["taco"])
    with pytest.raises(UsageError, match=r"a local copy of several is one problems.data_files glob"):
        ProblemsConfig(name="x", path="", hub_names=["taco"], data_files="x.parquet")
