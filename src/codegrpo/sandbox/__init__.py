"""Sandbox backends behind one interface (base.SandboxBackend); codegrpo.build picks one from the config."""

from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend, SandboxFatalError, format_limits

__all__ = ["Outcome", "Program", "RunResult", "SandboxBackend", "SandboxFatalError", "format_limits"]
