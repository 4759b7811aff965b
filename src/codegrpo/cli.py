"""Shared entry-point plumbing for the Hydra commands (train, score, validate, evaluate)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "conf")



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
