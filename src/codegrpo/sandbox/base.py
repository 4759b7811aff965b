"""The one interface every sandbox backend implements: run these programs, return the results."""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass


class Outcome(str, enum.Enum):
    """How a program's run ended, as seen by the sandbox (not by the program)."""

    EXITED = "exited"  # the program ended by itself; see exit_code
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SIGNALED = "signaled"  # killed by a signal we did not send
    SANDBOX_ERROR = "sandbox_error"  # infrastructure failure: the program's fault is unknown


@dataclass(frozen=True)
class Program:
    """A self-contained program to run in a fresh sandbox.

    ``source`` is written to ``/tmp/<filename>`` and ``command`` runs it. Its first ``prelude_chars``
    characters may be trusted code that many programs share (the harness), whole lines: a warm worker
    compiles them once.
    """

    source: str
    filename: str = "solution.py"
    command: tuple[str, ...] = ("python3", "/tmp/solution.py")
    timeout_s: float = 10.0
    prelude_chars: int = 0


@dataclass(frozen=True)
class RunResult:
    outcome: Outcome
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: str = ""  # what went wrong, for SANDBOX_ERROR

    @property
    def is_infra_failure(self) -> bool:
        return self.outcome is Outcome.SANDBOX_ERROR


def classify_exit(returncode: int | None, stderr: str) -> tuple[Outcome, int | None]:
    """The outcome of a program that ended by itself; a death by signal N is exit status 128 + N."""
    if returncode is None:
        return Outcome.SANDBOX_ERROR, None
    if returncode < 0 or returncode > 128:
        return Outcome.SIGNALED, returncode
    if returncode != 0 and stderr.rstrip().endswith("MemoryError"):
        return Outcome.MEMORY_LIMIT, returncode
    return Outcome.EXITED, returncode


class SandboxFatalError(RuntimeError):
    """A fault that retrying cannot fix (bad credentials, missing binary): stop the run."""


class SandboxBackend(abc.ABC):
    """Runs untrusted programs in isolation, at most ``max_concurrency`` at a time."""

    @abc.abstractmethod
    async def run_many(self, programs: Sequence[Program]) -> list[RunResult]:
        """Run every program and return one result per program, in order.

        Transient infrastructure faults come back as ``Outcome.SANDBOX_ERROR``;
        fatal ones raise ``SandboxFatalError``.
        """

    async def aclose(self) -> None:  # noqa: B027 - an optional hook: most backends hold nothing to release
        """Release every resource the backend holds. Safe to call twice."""

    def stats(self) -> dict[str, float]:
        """Counters worth logging (sandboxes created and killed, for example)."""
        return {}

    def limits(self) -> list[tuple[str, str, str]]:
        """Each limit on a program, its value, and what enforces it (``python -m codegrpo.limits``)."""
        return []


def format_limits(rows: list[tuple[str, str, str]]) -> str:
    """The limits table, as the limits command prints it and the trainer logs it."""
    if not rows:
        return "(this sandbox reports no limits)"
    rows = [("limit", "value", "enforced by"), *rows]
    width = max(len(name) for name, _, _ in rows), max(len(value) for _, value, _ in rows)
    return "\n".join(f"{name:<{width[0]}}  {value:<{width[1]}}  {how}" for name, value, how in rows)
