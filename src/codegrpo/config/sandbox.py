"""The sandbox group: every backend's settings and limits (SandboxConfig), then local's, superserve's and ray's."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from codegrpo.config.cgroupfs import usable_cores
from codegrpo.config.values import (
    MAX_BUDGET_S,
    MAX_TIMEOUT_S,
    MISSING,
    check_at_least,
    check_positive,
    check_seconds,
    host_memory_mb,
    is_count,
    is_positive,
)
from codegrpo.errors import UsageError

# The least each sandbox limit may be, measured with the local sandbox (cgroup v1, Python 3.11): a worker
# started at 12 MiB and not at 10 (32 leaves room for other Pythons and cgroup v2's accounting); a program
# started with 3 processes and 7 open files, not 2 and 6, but the Python harness (every expression, call and
# HumanEval completion) opens four pipes: it ran with 11 open files and not 10 (the start-up check found 8
# scoring every such completion 0: "Too many open files").
MIN_MEMORY_MB = 32
MIN_PROCESSES = 3
MIN_OPEN_FILES = 11
MIN_STDOUT_BYTES = 64
MAX_ID = (1 << 32) - 2  # the largest uid or gid; -1 (2**32 - 1) means "unchanged" to the kernel


@dataclass
class SandboxConfig:
    """Every backend's settings: which backend (``_target_``), how many programs at once, and each program's limits."""

    # The backend: a codegrpo.sandbox.base.SandboxBackend subclass, called with this config (a user's own
    # backend plugs in with a conf/sandbox/<name>.yaml naming its class).
    _target_: str = MISSING
    max_concurrency: int = 8  # the guide's MAX_SANDBOXES
    # False: each of the ranks training on one machine gets its share of max_concurrency (build.sandbox).
    cap_is_the_jobs: ClassVar[bool] = False
    timeout_s: float = 10.0  # wall-clock limit per program
    allow_out: list[str] = field(default_factory=list)
    deny_out: list[str] = field(default_factory=lambda: ["0.0.0.0/0"])
    # Each program's limits, in every backend (harness/protocol.py; memory is the local sandbox's or the VM's).
    max_processes: int = 32
    stdout_limit_bytes: int = 1 << 20
    stderr_limit_bytes: int = 1 << 20
    file_size_limit_bytes: int = 2 << 20
    tmpfs_limit_bytes: int = 64 << 20
    open_files: int = 64

    def __post_init__(self) -> None:
        # Checked here, for every backend (codegrpo's and a user's), when the config is read: each with its
        # range, where a bad value would fail later as an OS error or a worker that never starts.
        if self.max_concurrency < 1:
            raise UsageError(f"sandbox.max_concurrency must be at least 1, not {self.max_concurrency}")
        check_seconds("sandbox.timeout_s", self.timeout_s, MAX_TIMEOUT_S)
        for name, least, why in (
            ("max_processes", MIN_PROCESSES, "the runner and the program it starts; 2 cannot start one"),
            ("open_files", MIN_OPEN_FILES, "the Python harness needs 11"),
            ("stdout_limit_bytes", MIN_STDOUT_BYTES, "a program's answer is its output"),
            ("stderr_limit_bytes", 0, ""),
            ("file_size_limit_bytes", 0, "0: no file may be written"),
            ("tmpfs_limit_bytes", 1, "the size of the program's /tmp"),
        ):
            check_at_least(f"sandbox.{name}", getattr(self, name), least, why)
        for name in ("allow_out", "deny_out"):
            for rule in getattr(self, name):
                if not isinstance(rule, str) or not rule.strip():
                    raise UsageError(
                        f"sandbox.{name}={list(getattr(self, name))}: each rule is an address or a "
                        "network such as 10.0.0.0/8, not an empty string"
                    )


@dataclass
class LocalSandboxConfig(SandboxConfig):
    """sandbox=local: bubblewrap on this machine (codegrpo.sandbox.local), with its memory, user and cgroup settings."""

    _target_: str = "codegrpo.sandbox.local.LocalSandbox"
    bwrap: str = "bwrap"
    python: str = ""  # interpreter inside the sandbox; empty means this Python's base interpreter
    extra_ro_paths: list[str] = field(default_factory=list)
    memory_mb: int = 1024
    uid: int = 65534  # as root, sandboxes run as this unprivileged host uid and gid (nobody, nogroup)
    gid: int = 65534
    # Programs run as root of the sandbox's own user namespace, with its capabilities, as in a cloud VM
    # (still an unprivileged host uid): the Superserve fake's mode. Never on for model code run locally.
    vm_root: bool = False
    use_cgroups: bool = True  # memory and process limits through a writable cgroup; rlimits when false or absent
    warm: bool = True  # Python programs run in long-lived sandboxes, a fresh process each (docs/security.md)

    def __post_init__(self) -> None:
        super().__post_init__()
        most = host_memory_mb()
        if not is_count(self.memory_mb, MIN_MEMORY_MB) or self.memory_mb > max(most, MIN_MEMORY_MB):
            raise UsageError(
                f"sandbox.memory_mb={self.memory_mb} must be from {MIN_MEMORY_MB} (a sandbox's worker "
                f"needs it to start) to {most} (this machine's memory)"
            )
        for name in ("uid", "gid"):
            value = getattr(self, name)
            if not is_count(value, 0) or value > MAX_ID:
                raise UsageError(f"sandbox.{name}={value} must be a host {name} from 0 to {MAX_ID}")
        if self.python:
            path = self.python
            if not os.path.isabs(path) or not os.path.isfile(path) or not os.access(path, os.X_OK):
                why = (
                    "is not an absolute path"
                    if not os.path.isabs(path)
                    else "does not exist"
                    if not os.path.exists(path)
                    else "is not an executable file"
                )
                raise UsageError(
                    f"sandbox.python={path} {why}: name a python3 executable every user can run (its "
                    "tree is bound read-only into the sandbox), or leave it empty for this Python's own"
                )
        if self.allow_out:
            raise UsageError(
                f"sandbox.allow_out={list(self.allow_out)}: sandbox=local gives programs no network at "
                "all (a network namespace of their own); allow_out applies to sandbox=superserve"
            )


@dataclass
class SuperserveSandboxConfig(SandboxConfig):
    """sandbox=superserve: Superserve's cloud microVMs (codegrpo.sandbox.superserve), with the key, retries and programs
    per VM."""

    _target_: str = "codegrpo.sandbox.superserve.SuperserveSandbox"
    api_key_env: str = "SUPERSERVE_API_KEY"
    base_url: str | None = None  # None: the SDK's default (or SUPERSERVE_BASE_URL)
    name: str = "codegrpo-reward"
    from_template: str | None = None
    sandbox_timeout_s: int = 300  # the sandbox auto-pauses after this, then is deleted at once
    command_timeout_s: float = 30.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    # Programs run one after another in one sandbox by a trusted runner (1: a fresh sandbox per program).
    programs_per_sandbox: int = 16

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least("sandbox.programs_per_sandbox", self.programs_per_sandbox, 1)
        check_at_least("sandbox.max_retries", self.max_retries, 0)
        check_at_least("sandbox.sandbox_timeout_s", self.sandbox_timeout_s, 1)
        check_seconds("sandbox.command_timeout_s", self.command_timeout_s, MAX_BUDGET_S)
        check_positive("sandbox.backoff_base_s", self.backoff_base_s)
        check_positive("sandbox.backoff_max_s", self.backoff_max_s)
        if self.backoff_max_s < self.backoff_base_s:
            raise UsageError(
                f"sandbox.backoff_max_s={self.backoff_max_s} must be at least sandbox.backoff_base_s="
                f"{self.backoff_base_s} (the longest wait between retries)"
            )


@dataclass
class RaySandboxConfig(LocalSandboxConfig):
    """sandbox=ray: the local sandbox (every setting above, on each node) on a Ray cluster's nodes
    (codegrpo.sandbox.ray_cluster); max_concurrency programs at once split among the actors."""

    _target_: str = "codegrpo.sandbox.ray_cluster.RaySandbox"
    # max_concurrency is the whole job's: every rank of a distributed launch shares one pool of actors.
    cap_is_the_jobs: ClassVar[bool] = True
    # auto: the cluster ray.init finds (RAY_ADDRESS, or one `ray start` began here); ray://host:port or
    # host:port: that cluster; local: a Ray instance of this process's own, to try it.
    address: str = "auto"
    actors: int = 2  # sandbox actors, each a local sandbox on the node Ray places it on
    # Custom Ray resources each actor needs (sandbox.resources={sandbox:1}): offered only by CPU nodes, they keep
    # actors off the GPU nodes (ray start --resources='{"sandbox": 8}'). null: none (a dict default would refuse
    # the override's new key).
    resources: Any = None  # a dict of amounts, typed Any: OmegaConf cannot merge a dict into a None Dict node
    # A pool of actors named on purpose, shared by every job that names it (their settings must agree). null: the
    # job's own (all its ranks', named after the job; docs/scaling.md).
    pool: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_at_least("sandbox.actors", self.actors, 1)
        if self.pool is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(self.pool)):
            raise UsageError(f"sandbox.pool={self.pool} must be a name of letters, digits, '_', '.' and '-'")
        if self.max_concurrency < self.actors:
            raise UsageError(
                f"sandbox.max_concurrency={self.max_concurrency} is split among sandbox.actors={self.actors}: "
                "give each actor a program at least (fewer actors, or more concurrency)"
            )
        if not isinstance(self.address, str) or not self.address.strip():
            raise UsageError("sandbox.address must be auto, local, ray://host:port or host:port")
        if self.resources is not None and not isinstance(self.resources, Mapping):
            raise UsageError(
                f"sandbox.resources={self.resources} must be a dict of amounts: sandbox.resources={{sandbox:1}}"
            )
        for name, amount in (self.resources or {}).items():
            if not is_positive(amount):
                raise UsageError(f"sandbox.resources.{name}={amount} must be a positive number")


# The sandbox kinds, by the name of their conf/sandbox/ option (CodeReward(sandbox="local") takes the same names;
# tests/reward/test_code_reward.py checks the folder against it).
SANDBOX_KINDS: dict[str, type[SandboxConfig]] = {
    "local": LocalSandboxConfig,
    "superserve": SuperserveSandboxConfig,
    "ray": RaySandboxConfig,
}


def auto_concurrency() -> int:
    """``${auto_concurrency:}``: programs at once for the local sandbox, the usable cores less one for the
    trainer (at least 2)."""
    return max(2, usable_cores() - 1)
