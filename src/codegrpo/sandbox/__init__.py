"""Sandbox backends behind one interface (base.SandboxBackend); codegrpo.build picks one from the config.
MemoryBackend executes nothing: it answers from a function, for tests."""

from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend, SandboxFatalError, format_limits
from codegrpo.sandbox.memory import MemoryBackend

__all__ = [
    "MemoryBackend",
    "Outcome",
    "Program",
    "RunResult",
    "SandboxBackend",
    "SandboxFatalError",
    "format_limits",
]
