"""The limits task (codegrpo.tasks.limits): the configured sandbox opened as training opens it, and its limits
printed as a table of what enforces each."""

from __future__ import annotations

import os

from codegrpo.tasks.limits import limits
from tests.helpers.commands import command


def test_limits_prints_the_configured_sandboxs_table_and_returns_0(compose_cfg, capsys):
    cfg = compose_cfg(
        "sandbox.use_cgroups=false", "sandbox.max_concurrency=5", "sandbox.memory_mb=700", config_name="limits"
    )
    assert limits(cfg) == 0
    rows = {line.split("  ")[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["limit"] == ["limit", "value", "enforced", "by"]
    assert rows["at once"][2:4] == ["5", "programs"] and rows["memory"][1:3] == ["700", "MiB"]


# Moved from tests/test_commands.py.


def test_limits_prints_what_enforces_each_limit():
    done = command("codegrpo.commands.limits", "sandbox.use_cgroups=false", "sandbox.max_concurrency=3")
    assert done.returncode == 0, done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert rows["limit"].split() == ["limit", "value", "enforced", "by"]
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    assert rows["processes"].endswith(f"RLIMIT_NPROC as uid {uid}") and rows["memory"].endswith("RLIMIT_AS")
    assert "3 programs" in rows["at once"] and f"uid {uid}" in rows["user"]
    # one clear line, no traceback
    assert command("codegrpo.commands.limits", "sandbox.max_concurrency=0").returncode == 2
