"""codegrpo: GRPO training of code-writing language models with sandboxed test rewards.

The reward as a library, for any TRL script::

    from codegrpo import code_reward            # the guide's reward function, sandboxed
    from codegrpo import CodeReward             # the same, configured: CodeReward(kind="partial", sandbox="superserve")
    import codegrpo; codegrpo.score(code, test="add(2, 3)", expected="5")   # one program, one verdict
    GRPOTrainer(model=codegrpo.offline_model(), ...)   # the offline model's dir, on a laptop without the Hub
    codegrpo.MemoryBackend(handler)             # a SandboxBackend that runs nothing, for your own tests

Importing the package imports nothing heavy: each name loads on first use, and none of them imports torch,
transformers or trl (tests/reward/test_code_reward.py checks it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AsyncCodeReward",
    "CodeReward",
    "LocalSandboxConfig",
    "MemoryBackend",
    "Outcome",
    "Problem",
    "Program",
    "RaySandboxConfig",
    "RunResult",
    "SandboxBackend",
    "SandboxConfig",
    "Scored",
    "Status",
    "SuperserveSandboxConfig",
    "Verdict",
    "code_reward",
    "offline_model",
    "score",
]

_WHERE = {
    "AsyncCodeReward": "codegrpo.reward.code_reward",
    "CodeReward": "codegrpo.reward.code_reward",
    "code_reward": "codegrpo.reward.code_reward",
    "score": "codegrpo.reward.code_reward",
    "offline_model": "codegrpo.models.conversion",
    "Problem": "codegrpo.data.problems",
    "Scored": "codegrpo.reward.verdict",
    "Status": "codegrpo.reward.verdict",
    "Verdict": "codegrpo.reward.verdict",
    "MemoryBackend": "codegrpo.sandbox.memory",
    "Outcome": "codegrpo.sandbox.base",
    "Program": "codegrpo.sandbox.base",
    "RunResult": "codegrpo.sandbox.base",
    "SandboxBackend": "codegrpo.sandbox.base",
    "SandboxConfig": "codegrpo.config.sandbox",
    "LocalSandboxConfig": "codegrpo.config.sandbox",
    "SuperserveSandboxConfig": "codegrpo.config.sandbox",
    "RaySandboxConfig": "codegrpo.config.sandbox",
}

if TYPE_CHECKING:
    from codegrpo.config.sandbox import LocalSandboxConfig, RaySandboxConfig, SandboxConfig, SuperserveSandboxConfig
    from codegrpo.data.problems import Problem
    from codegrpo.models.conversion import offline_model
    from codegrpo.reward.code_reward import AsyncCodeReward, CodeReward, code_reward, score
    from codegrpo.reward.verdict import Scored, Status, Verdict
    from codegrpo.sandbox.base import Outcome, Program, RunResult, SandboxBackend
    from codegrpo.sandbox.memory import MemoryBackend


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'codegrpo' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
