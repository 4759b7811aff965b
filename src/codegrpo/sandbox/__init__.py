"""Sandbox backends behind one interface; ``build_sandbox`` picks one from the config."""

from __future__ import annotations

from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend, SandboxFatalError, format_limits

__all__ = [
    "Outcome", "Program", "RunResult", "SandboxBackend", "SandboxFatalError", "build_sandbox", "format_limits",
    "share_concurrency",
]  # fmt: skip


def share_concurrency(value: int, ranks: int) -> int:
    """One training process's share of ``sandbox.max_concurrency`` when ``ranks`` train on this machine."""
    return max(1, value // ranks)


def build_sandbox(cfg) -> SandboxBackend:
    """Create the backend that ``cfg.backend`` names. Raises SandboxFatalError if it cannot work here."""
    if cfg.backend == "local":
        from codegrpo.sandbox.local import LocalSandbox

        return LocalSandbox(cfg)
    if cfg.backend == "superserve":
        from codegrpo.sandbox.superserve import SuperserveSandbox

        return SuperserveSandbox(cfg)
    raise SandboxFatalError(f"unknown sandbox backend {cfg.backend!r}; choose sandbox=local or sandbox=superserve")
