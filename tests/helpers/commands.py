"""Running the project's commands as a user would: a fresh interpreter in the checkout."""

from __future__ import annotations

import subprocess
import sys

from codegrpo.resources import PROJECT_ROOT


def command(*args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python [flags] -m args...`` from the project root."""
    return subprocess.run(
        [sys.executable, *flags, "-m", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )


def imported_modules(stderr: str) -> set[str]:
    """Every module a ``python -X importtime`` run imported, from its report on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
