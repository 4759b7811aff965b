"""Shared entry-point plumbing for the Hydra commands (train, score, validate, evaluate)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from codegrpo.resources import config_dir

# The repo's conf/ in a checkout, the copy inside the package when installed from a wheel.
CONFIG_DIR = str(config_dir())


class UsageError(RuntimeError):
    """A setting that cannot work as given; the message says what to change."""


def user_errors() -> tuple[type[BaseException], ...]:
    from codegrpo.models import ModelNotFoundError
    from codegrpo.problems import ProblemError
    from codegrpo.sandbox import SandboxFatalError

    return ProblemError, SandboxFatalError, ModelNotFoundError, UsageError


def run_friendly(function: Callable[[], Any]) -> Any:
    """Run a command; a user-fixable error ends it with one line on stderr and exit status 2."""
    try:
        return function()
    except user_errors() as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def _hydra_command(module: str) -> None:
    """Run a command module's Hydra ``main`` the way ``python -m codegrpo.<module>`` does."""
    import importlib

    from codegrpo.config import register_configs

    register_configs()  # the typed schemas must be in Hydra's ConfigStore before it composes
    command = importlib.import_module(f"codegrpo.{module}")
    if hasattr(command, "accept_flags"):
        sys.argv = command.accept_flags(sys.argv)
    command.main()


def evaluate_command() -> None:
    """codegrpo-evaluate: pass@k of a model or checkpoint (python -m codegrpo.evaluate)."""
    _hydra_command("evaluate")


def score_command() -> None:
    """codegrpo-score: score completions against a problem set (python -m codegrpo.score)."""
    _hydra_command("score")


def validate_command() -> None:
    """codegrpo-validate: check a problem set's references pass (python -m codegrpo.validate)."""
    _hydra_command("validate")
