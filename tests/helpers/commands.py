"""Running the project's commands as a user would: a fresh interpreter in the checkout."""

from __future__ import annotations

import os
import subprocess
import sys

from codegrpo.resources import PROJECT_ROOT

# The overrides of the smallest training run: two problems, one group of two, 16 tokens, nothing logged.
TINY = [
    "logger=none",
    "plots=false",
    "problems.limit=2",
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=2",
    "trainer.max_completion_length=16",
]


def command(*args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python [flags] -m args...`` from the project root."""
    return subprocess.run(
        [sys.executable, *flags, "-m", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )


def train(*overrides: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python train.py overrides...`` from the project root, ``env`` added to this process's environment."""
    return subprocess.run(
        [sys.executable, "train.py", *overrides],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ | (env or {}),
    )


def imported_modules(stderr: str) -> set[str]:
    """Every module a ``python -X importtime`` run imported, from its report on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
