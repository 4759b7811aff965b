"""A paper's recipe at run time (``recipe:`` of conf/experiment/<paper>.yaml; docs/recipes.md): a recipe at the
paper's scale that cannot start here says so naming its CPU twin, and one launched on another number of GPUs
than the paper's says how its batch differs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from codegrpo.config.choices import RecipeScale
from codegrpo.config.runs import RecipeConfig
from codegrpo.config.trainer import TrainerConfig
from codegrpo.errors import CodegrpoError, ModelNotFoundError

log = logging.getLogger(__name__)


@contextmanager
def naming_the_twin(recipe: RecipeConfig | None) -> Iterator[None]:
    """Inside: a check that fails (no GPU, a Hub model or dataset out of reach) on a paper-scale recipe
    fails with the same one line plus where to go instead, its CPU twin."""
    try:
        yield
    except CodegrpoError as error:
        if recipe is None or recipe.scale is not RecipeScale.paper:
            raise
        if recipe.starts_from and isinstance(error, ModelNotFoundError):  # the earlier stage has not run
            raise ModelNotFoundError(
                f"this stage of {recipe.name}'s recipe trains from experiment={recipe.starts_from}'s final model, "
                f"which is not there: run experiment={recipe.starts_from} first, or set model.name_or_path to its "
                f"final_model (what stopped it: {error})"
            ) from None
        raise type(error)(
            f"{recipe.name}'s recipe runs at the paper's scale ({recipe.gpus} GPUs, the Hub's model and data), which "
            f"this machine cannot: its CPU twin trains the same algorithm here, python train.py "
            f"experiment={recipe.twin} (what stopped it: {error})"
        ) from None


def paper_batch(trainer: TrainerConfig, processes: int) -> int:
    """Completions one generation samples: per-device batch x processes x steps_per_generation (TRL's default for
    the last: gradient_accumulation_steps)."""
    steps = getattr(trainer, "steps_per_generation", None) or getattr(trainer, "gradient_accumulation_steps", 1)
    per_device = getattr(trainer, "per_device_train_batch_size", 8)
    return int(per_device) * processes * int(steps or 1)


def warn_if_scaled(recipe: RecipeConfig | None, trainer: TrainerConfig, processes: int) -> str | None:
    """A warning (logged and returned) when a paper-scale recipe runs on another number of processes than the
    paper's GPUs: its per-device batch then makes another batch than the paper's."""
    if recipe is None or recipe.scale is not RecipeScale.paper or processes == recipe.gpus:
        return None
    message = (
        f"experiment={recipe.name} is sized for {recipe.gpus} GPUs and runs on {processes} process(es): a "
        f"generation samples {paper_batch(trainer, processes)} completions, the paper's "
        f"{paper_batch(trainer, recipe.gpus)} (raise trainer.steps_per_generation and "
        f"trainer.gradient_accumulation_steps to match, or launch as the paper did: {recipe.launch})"
    )
    log.warning(message)
    return message
