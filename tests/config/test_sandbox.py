"""The sandbox group (codegrpo.config.sandbox): every option of every backend, with its range or the reason,
checked when the config is read (issue 40, item 6)."""

from __future__ import annotations

import pytest

from codegrpo.config.sandbox import MIN_MEMORY_MB
from codegrpo.config.values import host_memory_mb
from codegrpo.errors import UsageError
from tests.helpers.config_errors import refusal


@pytest.mark.parametrize("config_class", ["LocalSandboxConfig", "SuperserveSandboxConfig"])
def test_max_concurrency_below_1_is_refused_when_the_config_is_read(compose_cfg, config_class):
    from codegrpo.config import sandbox

    with pytest.raises(UsageError) as raised:
        getattr(sandbox, config_class)(max_concurrency=0)
    assert str(raised.value) == "sandbox.max_concurrency must be at least 1, not 0"
    backend = "local" if config_class == "LocalSandboxConfig" else "superserve"
    with pytest.raises(UsageError, match=r"^sandbox.max_concurrency must be at least 1, not -2$"):
        compose_cfg(f"sandbox={backend}", "sandbox.max_concurrency=-2")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["sandbox.memory_mb=-5"],
            f"sandbox.memory_mb=-5 must be from {MIN_MEMORY_MB} (a sandbox's worker needs it to "
            f"start) to {host_memory_mb()} (this machine's memory)",
        ),
        (
            ["sandbox.memory_mb=4"],
            f"sandbox.memory_mb=4 must be from {MIN_MEMORY_MB} (a sandbox's worker needs it to "
            f"start) to {host_memory_mb()} (this machine's memory)",
        ),
        (
            ["sandbox.python=/nope/python3"],
            "sandbox.python=/nope/python3 does not exist: name a python3 executable every user can run (its tree is "
            "bound "
            "read-only into the sandbox), or leave it empty for this Python's own",
        ),
        (
            ["sandbox.python=python3"],
            "sandbox.python=python3 is not an absolute path: name a python3 executable every "
            "user can run (its tree is bound read-only into the sandbox), or leave it empty for this Python's own",
        ),
        (
            ["sandbox.python=/etc"],
            "sandbox.python=/etc is not an executable file: name a python3 "
            "executable every user can run (its tree is bound read-only into the sandbox), or leave it empty for this "
            "Python's own",
        ),
        (
            ["sandbox.max_processes=2"],
            "sandbox.max_processes=2 must be an integer of at least 3 (the runner and the program it starts; 2 "
            "cannot start "
            "one)",
        ),
        (
            ["sandbox.open_files=3"],
            "sandbox.open_files=3 must be an integer of at least 11 (the Python harness needs 11)",
        ),
        (
            ["sandbox.stdout_limit_bytes=0"],
            "sandbox.stdout_limit_bytes=0 must be an integer of at least 64 (a program's answer is its output)",
        ),
        (["sandbox.stderr_limit_bytes=-1"], "sandbox.stderr_limit_bytes=-1 must be an integer of at least 0"),
        (
            ["sandbox.file_size_limit_bytes=-1"],
            "sandbox.file_size_limit_bytes=-1 must be an integer of at least 0 (0: no file may be written)",
        ),
        (
            ["sandbox.tmpfs_limit_bytes=0"],
            "sandbox.tmpfs_limit_bytes=0 must be an integer of at least 1 (the size of the program's /tmp)",
        ),
        (["sandbox.uid=-1"], "sandbox.uid=-1 must be a host uid from 0 to 4294967294"),
        (
            ["sandbox.allow_out=[10.0.0.0/8]"],
            "sandbox.allow_out=['10.0.0.0/8']: sandbox=local gives programs no network at all (a network namespace of "
            "their own); allow_out applies to sandbox=superserve",
        ),
        (
            ["sandbox=superserve", "sandbox.deny_out=['']"],
            "sandbox.deny_out=['']: each rule is an address or a network such as 10.0.0.0/8, not an empty string",
        ),
        (
            ["sandbox=superserve", "sandbox.programs_per_sandbox=0"],
            "sandbox.programs_per_sandbox=0 must be an integer of at least 1",
        ),
        (["sandbox=superserve", "sandbox.max_retries=-1"], "sandbox.max_retries=-1 must be an integer of at least 0"),
        (
            ["sandbox=superserve", "sandbox.command_timeout_s=0"],
            "sandbox.command_timeout_s=0.0 must be a number of seconds above 0 and at most 3600",
        ),
        (
            ["sandbox=superserve", "sandbox.backoff_base_s=nan"],
            "sandbox.backoff_base_s=nan must be a finite number above 0",
        ),
        (
            ["sandbox=superserve", "sandbox.backoff_max_s=0.1"],
            "sandbox.backoff_max_s=0.1 must be at least sandbox.backoff_base_s=0.5 (the longest wait between retries)",
        ),
    ],
)
def test_every_sandbox_option_is_checked_when_the_config_is_read(compose_cfg, overrides, message):
    assert refusal(compose_cfg, *overrides) == message


def test_the_shortest_superserve_sandbox_must_fit_one_program(monkeypatch):
    from codegrpo.config.sandbox import SuperserveSandboxConfig
    from codegrpo.sandbox.superserve import SuperserveSandbox

    monkeypatch.setenv("KEY_FOR_THE_TEST", "ss_live_x")
    with pytest.raises(UsageError) as raised:
        SuperserveSandbox(SuperserveSandboxConfig(api_key_env="KEY_FOR_THE_TEST", sandbox_timeout_s=30))
    assert str(raised.value) == (
        "sandbox.sandbox_timeout_s=30 must be at least 75: a program of sandbox.timeout_s=10, "
        "the runner's start (5 s) and the margin before the sandbox's own timeout (60 s)"
    )
