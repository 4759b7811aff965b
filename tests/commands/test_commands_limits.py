"""codegrpo-limits (codegrpo.commands.limits) as a user runs it: its own --help naming only the sandbox group
it reads, the table on stdout with status 0, and a setting out of range one line with status 2."""

from __future__ import annotations

from tests.helpers.commands import command

LIMITS = "codegrpo.commands.limits"


def test_help_is_limits_own_and_lists_only_the_sandbox_group():
    done = command(LIMITS, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codegrpo-limits: the configured sandbox's limits")
    groups = done.stdout.split("== Groups it reads (group=option, the default first) ==\n")[1]
    assert [line.split()[0] for line in groups.splitlines() if line.startswith("  ") and "--" not in line] == [
        "sandbox",
        "Docs:",
    ]


def test_the_table_is_printed_with_status_0():
    done = command(LIMITS, "sandbox.max_concurrency=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["limit", "value", "enforced", "by"]
    assert "2 programs" in done.stdout and not done.stderr.strip()


def test_a_setting_out_of_range_is_one_line_with_status_2():
    done = command(LIMITS, "sandbox.max_concurrency=0")
    assert done.returncode == 2 and not done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: sandbox.max_concurrency")


def test_a_misspelt_key_is_one_line_with_status_2():
    done = command(LIMITS, "sandbox.memory=1")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: Could not override 'sandbox.memory'")
