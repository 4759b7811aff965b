"""The trainer group's schema, GRPOTrainerConfig: TrainerConfig with every trl.GRPOConfig field but output_dir and
seed, built when this module is imported (from trainer_fields: its cache, else trl itself). A module of its own
so that pickle finds the class by name, in a fresh process too (a launcher's job): importing it builds it."""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any

from codegrpo.config.trainer import TrainerConfig
from codegrpo.config.trainer_fields import python_type, trainer_fields


def _field(value: Any) -> Any:
    # A list or dict default is made afresh for each instance, as dataclasses require.
    if isinstance(value, (list, dict)):
        return dataclasses.field(default_factory=functools.partial(copy.deepcopy, value))
    return dataclasses.field(default=value)


GRPOTrainerConfig: type[TrainerConfig] = dataclasses.make_dataclass(
    "GRPOTrainerConfig",
    [(f.name, python_type(f.type), _field(f.default)) for f in trainer_fields()],
    bases=(TrainerConfig,),
)
GRPOTrainerConfig.__module__ = __name__
